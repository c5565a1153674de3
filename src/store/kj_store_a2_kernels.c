/* Typed readers for the per-kernel table (kj_store_a2_kernels.h). */
#include "kj_store_a2_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"

int kj_store_a2_launches_each(sqlite3 *db, int64_t pid, int (*fn)(void *ud, const struct kj_store_a2_launch *l),
			      void *ud)
{
	char sql[512];
	/* older runs may lack kernel.shmem_executed / carveout (the L1/shared split) and launch_type */
	snprintf(sql, sizeof(sql),
		 "SELECT device_id, start_ns, end_ns, unique_id, name_id, grid_x, grid_y, grid_z,"
		 " block_x, block_y, block_z, shmem_dynamic, shmem_static, registers, cluster_x,"
		 " cluster_y, cluster_z, %s, %s FROM kernel%s",
		 kj_db_caps(db)->kernel_shmem_executed ? "shmem_executed, carveout" : "NULL, NULL",
		 kj_db_caps(db)->kernel_launch_type ? "launch_type" : "NULL",
		 pid >= 0 ? " WHERE pid = ?1" : "");
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, sql, &st), step = SQLITE_DONE;
	if (rc)
		return rc;
	if (pid >= 0)
		sqlite3_bind_int64(st, 1, pid);
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a2_launch l;
		l.device_id = kj_db_col_i64(st, 0, -1);
		l.has_times = sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_type(st, 2) != SQLITE_NULL;
		l.start_ns = sqlite3_column_int64(st, 1);
		l.end_ns = sqlite3_column_int64(st, 2);
		l.has_unique = sqlite3_column_type(st, 3) != SQLITE_NULL;
		l.unique_id = kj_db_col_i64(st, 3, -1);
		l.name_id = kj_db_col_i64(st, 4, -1);
		for (int i = 0; i < 3; i++) {
			l.grid[i] = kj_db_col_i64(st, 5 + i, -1);
			l.block[i] = kj_db_col_i64(st, 8 + i, -1);
			l.cluster[i] = kj_db_col_i64(st, 14 + i, -1);
		}
		l.shmem_dynamic = kj_db_col_i64(st, 11, -1);
		l.shmem_static = kj_db_col_i64(st, 12, -1);
		l.registers = kj_db_col_i64(st, 13, -1);
		l.shmem_executed = kj_db_col_i64(st, 17, -1);
		l.carveout = kj_db_col_i64(st, 18, -1);
		l.has_launch_type = kj_db_col_has_i64(st, 19, &l.launch_type);
		rc = fn(ud, &l);
	}
	if (rc) {
		sqlite3_finalize(st);
		return rc;
	}
	return kj_db_walk_end(db, st, step, "kernels");
}

int kj_store_a2_copies_each(sqlite3 *db, int memset_table, int64_t pid,
			    int (*fn)(void *ud, const struct kj_store_a2_copy *c), void *ud)
{
	char sql[160];
	snprintf(sql, sizeof(sql), "%s%s",
		 memset_table ? "SELECT device_id, start_ns, end_ns, bytes, NULL FROM memset"
			      : "SELECT device_id, start_ns, end_ns, bytes, kind FROM memcpy",
		 pid >= 0 ? " WHERE pid = ?1" : "");
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, sql, &st), step = SQLITE_DONE;
	if (rc)
		return rc;
	if (pid >= 0)
		sqlite3_bind_int64(st, 1, pid);
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a2_copy c;
		c.device_id = kj_db_col_i64(st, 0, -1);
		c.has_times = sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_type(st, 2) != SQLITE_NULL;
		c.start_ns = sqlite3_column_int64(st, 1);
		c.end_ns = sqlite3_column_int64(st, 2);
		c.bytes = kj_db_col_i64(st, 3, -1);
		c.kind = (const char *)sqlite3_column_text(st, 4);
		rc = fn(ud, &c);
	}
	if (rc) {
		sqlite3_finalize(st);
		return rc;
	}
	return kj_db_walk_end(db, st, step, memset_table ? "memsets" : "memcpys");
}

struct kj_store_a2_names {
	sqlite3_stmt *uk, *nm;
};

int kj_store_a2_names_open(sqlite3 *db, struct kj_store_a2_names **out)
{
	struct kj_store_a2_names *n = calloc(1, sizeof(*n));
	int rc;
	*out = NULL;
	if (!n)
		return KJ_ENOMEM;
	rc = kj_db_prepare(db,
			   "SELECT u.key, u.keyed_by, u.tier, n.mangled, n.demangled"
			   " FROM unique_kernel u LEFT JOIN kernel_name n ON n.id = u.name_id"
			   " WHERE u.id = ?",
			   &n->uk);
	if (!rc)
		rc = kj_db_prepare(db, "SELECT mangled, demangled FROM kernel_name WHERE id = ?", &n->nm);
	if (rc) {
		kj_store_a2_names_close(n);
		return rc;
	}
	*out = n;
	return 0;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? strdup((const char *)t) : NULL;
}

int kj_store_a2_names_unique(struct kj_store_a2_names *nm, int64_t id, struct kj_store_a2_unique_name *out)
{
	sqlite3_reset(nm->uk);
	sqlite3_bind_int64(nm->uk, 1, id);
	if (sqlite3_step(nm->uk) != SQLITE_ROW)
		return 0;
	out->key = col_dup(nm->uk, 0);
	out->keyed_by = col_dup(nm->uk, 1);
	out->tier = col_dup(nm->uk, 2);
	out->mangled = col_dup(nm->uk, 3);
	out->demangled = col_dup(nm->uk, 4);
	return 1;
}

int kj_store_a2_names_of(struct kj_store_a2_names *nm, int64_t id, char **mangled, char **demangled)
{
	sqlite3_reset(nm->nm);
	sqlite3_bind_int64(nm->nm, 1, id);
	if (sqlite3_step(nm->nm) != SQLITE_ROW)
		return 0;
	*mangled = col_dup(nm->nm, 0);
	*demangled = col_dup(nm->nm, 1);
	return 1;
}

void kj_store_a2_names_close(struct kj_store_a2_names *nm)
{
	if (!nm)
		return;
	sqlite3_finalize(nm->uk);
	sqlite3_finalize(nm->nm);
	free(nm);
}
