/* Readers of kj_store_w_launch.h, and the rows of kj_store_w_rows.h. */
#include "kj_store_w_launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_store_w_internal.h"

struct kj_store_rows {
	sqlite3_stmt *st;
};

struct kj_store_rows *kj_store_rows_of(sqlite3_stmt *st)
{
	struct kj_store_rows *r;
	if (!st)
		return NULL;
	if (!(r = malloc(sizeof(*r)))) {
		sqlite3_finalize(st);
		return NULL;
	}
	r->st = st;
	return r;
}

sqlite3_stmt *kj_store_rows_stmt(const struct kj_store_rows *r)
{
	return r->st;
}

void kj_store_rows_close(struct kj_store_rows *r)
{
	if (!r)
		return;
	sqlite3_finalize(r->st);
	free(r);
}

sqlite3_stmt *kj_store_prepare_quiet(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

int64_t kj_store_first_process_device(sqlite3 *db, int64_t dflt)
{
	sqlite3_stmt *st = NULL;
	int64_t v = dflt;
	if (!kj_db_prepare(db, "SELECT device_id FROM process_device ORDER BY pid, ordinal LIMIT 1", &st)) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return v;
}

void kj_store_launch_free(struct kj_store_launch *l)
{
	free(l->mangled);
	free(l->blob);
	free(l->layout);
	memset(l, 0, sizeof(*l));
}

int kj_store_launch_read(sqlite3 *db, int64_t unique, int64_t lp_id, struct kj_store_launch *k)
{
	sqlite3_stmt *st = NULL;
	char sql[1536];
	int rc = KJ_ENOTFOUND;
	/* older runs may lack shmem_executed / carveout, cooperative, module_id */
	int have_split = kj_db_caps(db)->unique_kernel_shmem_executed;
	int have_coop = kj_db_caps(db)->unique_kernel_cooperative;
	int have_module = kj_db_caps(db)->launch_params_module_id;

	memset(k, 0, sizeof(*k));
	snprintf(sql, sizeof(sql),
		 "SELECT n.mangled, p.pid, p.launch_ns, p.grid_x, p.grid_y, p.grid_z, p.block_x,"
		 " p.block_y, p.block_z, p.cluster_x, p.cluster_y, p.cluster_z, p.shmem_dynamic,"
		 " p.layout, p.params, u.grid_x, u.grid_y, u.grid_z, u.block_x, u.block_y, u.block_z,"
		 " u.cluster_x, u.cluster_y, u.cluster_z, u.shmem_dynamic, p.correlation_id, u.id,"
		 " p.stream_id, u.registers, u.shmem_static, %s, %s, %s"
		 " FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"
		 " JOIN launch_params p ON p.unique_id = u.id"
		 " WHERE (?2 < 0 AND u.id = ?1) OR p.id = ?2"
		 /* the launch whose buffers were snapshotted, when there is one */
		 " ORDER BY NOT EXISTS (SELECT 1 FROM snapshot s WHERE s.pid = p.pid"
		 " AND s.correlation_id = p.correlation_id),"
		 " (p.iteration IS NOT NULL), p.ordinal, p.id LIMIT 1",
		 have_split ? "u.shmem_executed, u.carveout" : "NULL, NULL",
		 have_module ? "(SELECT l.hash FROM module_load l WHERE l.pid = p.pid AND"
			       " l.cupti_module_id = p.module_id ORDER BY l.load_ns DESC LIMIT 1)" : "NULL",
		 have_coop ? "u.cooperative" : "NULL");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, unique);
	sqlite3_bind_int64(st, 2, lp_id);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto out;
	const char *mangled = (const char *)sqlite3_column_text(st, 0);
	k->mangled = strdup(mangled ? mangled : "");
	k->pid = kj_db_col_i64(st, 1, -1);
	k->launch_ns = kj_db_col_i64(st, 2, -1);
	k->correlation = kj_db_col_i64(st, 25, -1);
	k->unique_id = kj_db_col_i64(st, 26, -1);
	k->stream_id = kj_db_col_i64(st, 27, -1);
	k->regs = (int)kj_db_col_i64(st, 28, -1);
	k->smem_static = (int)kj_db_col_i64(st, 29, -1);
	k->shmem_executed = (int)kj_db_col_i64(st, 30, -1);
	k->carveout = (int)kj_db_col_i64(st, 31, -1);
	k->cooperative = kj_db_col_i64(st, 33, 0) > 0;
	snprintf(k->module_hash, sizeof(k->module_hash), "%s",
		 sqlite3_column_text(st, 32) ? (const char *)sqlite3_column_text(st, 32) : "");
	for (int i = 0; i < 3; i++) {
		k->grid[i] = (unsigned)kj_db_col_i64(st, 3 + i, kj_db_col_i64(st, 15 + i, 1));
		k->block[i] = (unsigned)kj_db_col_i64(st, 6 + i, kj_db_col_i64(st, 18 + i, 1));
		k->cluster[i] = (unsigned)kj_db_col_i64(st, 9 + i, kj_db_col_i64(st, 21 + i, 0));
	}
	k->shmem = (unsigned)kj_db_col_i64(st, 12, kj_db_col_i64(st, 24, 0));
	k->blob_len = (size_t)sqlite3_column_bytes(st, 14);
	k->blob = malloc(k->blob_len + 8);
	if (!k->blob || !k->mangled) {
		rc = KJ_ENOMEM;
		goto out;
	}
	if (k->blob_len)
		memcpy(k->blob, sqlite3_column_blob(st, 14), k->blob_len);
	const char *layout = (const char *)sqlite3_column_text(st, 13);
	if (layout && !(k->layout = strdup(layout))) {
		rc = KJ_ENOMEM;
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	if (rc)
		kj_store_launch_free(k);
	return rc;
}

int kj_store_live_allocations(sqlite3 *db, int64_t pid, int64_t at_ns, kj_store_alloc_fn fn, void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db,
			  "SELECT id, address, bytes FROM allocation WHERE (?1 < 0 OR pid = ?1)"
			  " AND address > 0 AND bytes > 0"
			  " AND (?2 < 0 OR alloc_ns IS NULL OR alloc_ns <= ?2 OR kind = 'graph')"
			  " AND (?2 < 0 OR free_ns IS NULL OR free_ns > ?2)"
			  " ORDER BY alloc_ns, id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, at_ns);
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
			(uint64_t)sqlite3_column_int64(st, 2), ud);
	sqlite3_finalize(st);
	return rc;
}

int kj_store_modules_open(sqlite3 *db, const char *mangled, int64_t before_ns, const char *module_hash,
			  struct kj_store_rows **out)
{
	sqlite3_stmt *st = NULL;
	*out = NULL;
	if (kj_db_prepare(db,
			  "SELECT m.hash, m.format, m.codec, m.bytes, m.data,"
			  " (SELECT max(l.load_ns) FROM module_load l WHERE l.hash = m.hash AND l.load_ns <= ?2) b"
			  " FROM module_function f JOIN module m ON m.hash = f.hash"
			  " WHERE f.mangled = ?1 AND m.data IS NOT NULL"
			  " ORDER BY m.hash IS NOT ?3, b IS NULL, b DESC, m.hash", &st))
		return KJ_EDB;
	sqlite3_bind_text(st, 1, mangled, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, before_ns >= 0 ? before_ns : INT64_MAX);
	if (module_hash && module_hash[0])
		sqlite3_bind_text(st, 3, module_hash, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 3);
	return (*out = kj_store_rows_of(st)) ? 0 : KJ_ENOMEM;
}

int kj_store_modules_next(struct kj_store_rows *r, struct kj_store_module *m)
{
	sqlite3_stmt *st = r->st;
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	m->hash = (const char *)sqlite3_column_text(st, 0);
	m->format = (const char *)sqlite3_column_text(st, 1);
	m->codec = (const char *)sqlite3_column_text(st, 2);
	m->bytes = (size_t)kj_db_col_i64(st, 3, 0);
	m->data = sqlite3_column_blob(st, 4);
	m->len = (size_t)sqlite3_column_bytes(st, 4);
	return 1;
}

int kj_store_premem_open(sqlite3 *db, int graph, int64_t pid, int64_t stream, int64_t corr, int64_t unique,
			 struct kj_store_rows **out)
{
	/* graph: its kernels and memsets share the graph launch's correlation; eager: runs without
	 * memset destinations (memset.address) have none to repeat */
	sqlite3_stmt *st = kj_store_prepare_quiet(db, graph ?
		"WITH me(ks) AS (SELECT k.start_ns FROM kernel k WHERE k.pid = ?1 AND k.stream_id = ?2"
		"  AND k.correlation_id = ?3 AND k.unique_id = ?4 AND k.graph_node_id IS NOT NULL"
		"  ORDER BY k.start_ns LIMIT 1)"
		" SELECT m.address, m.value, m.element_bytes, m.bytes FROM memset m, me"
		" WHERE m.pid = ?1 AND m.stream_id = ?2 AND m.correlation_id = ?3 AND m.address IS NOT NULL"
		" AND m.end_ns <= me.ks AND m.start_ns >= coalesce((SELECT max(k.end_ns) FROM kernel k"
		"  WHERE k.pid = ?1 AND k.stream_id = ?2 AND k.correlation_id = ?3 AND k.end_ns <= me.ks), 0)"
		" ORDER BY m.start_ns" :
		"SELECT m.address, m.value, m.element_bytes, m.bytes FROM memset m"
		" WHERE m.pid = ?1 AND m.stream_id = ?2 AND m.address IS NOT NULL AND m.correlation_id < ?3"
		" AND m.correlation_id > coalesce((SELECT max(k.correlation_id) FROM kernel k WHERE k.pid = ?1"
		"  AND k.stream_id = ?2 AND k.correlation_id < ?3), -1)"
		" ORDER BY m.correlation_id");
	*out = NULL;
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, stream);
	sqlite3_bind_int64(st, 3, corr);
	if (sqlite3_bind_parameter_count(st) >= 4)
		sqlite3_bind_int64(st, 4, unique);
	*out = kj_store_rows_of(st);
	return 0;
}

int kj_store_premem_next(struct kj_store_rows *r, struct kj_store_memset *m)
{
	sqlite3_stmt *st = r->st;
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	m->address = (uint64_t)sqlite3_column_int64(st, 0);
	m->bytes = (size_t)sqlite3_column_int64(st, 3);
	m->value = (uint32_t)sqlite3_column_int64(st, 1);
	m->element_bytes = (int)sqlite3_column_int64(st, 2);
	return 1;
}

int kj_store_launch_in_graph(sqlite3 *db, int64_t pid, int64_t corr)
{
	sqlite3_stmt *st = kj_store_prepare_quiet(db, "SELECT 1 FROM kernel WHERE pid = ?1 AND correlation_id = ?2"
						    " AND graph_node_id IS NOT NULL LIMIT 1");
	int yes = 0;
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, corr);
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}
