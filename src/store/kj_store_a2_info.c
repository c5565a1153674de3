/* Typed readers for what `kjoule info` shows of a run (kj_store_a2_info.h). */
#include "kj_store_a2_info.h"

#include <stdio.h>

#include "kj_db.h"
#include "kj_error.h"

/* Column i of the current row as a cell. */
static void cell_of(sqlite3_stmt *st, int i, struct kj_store_a2_cell *c)
{
	c->name = sqlite3_column_name(st, i);
	c->i = 0;
	c->real = 0;
	c->text = NULL;
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		c->type = KJ_CELL_INT;
		c->i = sqlite3_column_int64(st, i);
		break;
	case SQLITE_FLOAT:
		c->type = KJ_CELL_REAL;
		c->real = sqlite3_column_double(st, i);
		break;
	case SQLITE_NULL:
		c->type = KJ_CELL_NULL;
		break;
	default:
		c->type = KJ_CELL_TEXT;
		c->text = (const char *)sqlite3_column_text(st, i);
		break;
	}
}

int kj_store_a2_info_rows_each(sqlite3 *db, enum kj_store_a2_rows which,
			       int (*fn)(void *ud, const struct kj_store_a2_cell *cells, int n), void *ud)
{
	static const char *const sql[] = {
		[KJ_INFO_PROCESSES] = "SELECT pid, ppid, exe, args, start_ns, end_ns, ended_cleanly,"
				      " cupti_status FROM process ORDER BY pid",
		[KJ_INFO_DEVICES] = "SELECT id, name, uuid, sm_count, power_limit_mw, memory_bytes,"
				    " cc_major, cc_minor, driver_version, cuda_version, pci_bus_id"
				    " FROM device ORDER BY id",
		[KJ_INFO_PROBLEMS] = "SELECT pid, t_ns, severity, what FROM problem ORDER BY id",
	};
	struct kj_store_a2_cell cells[16];
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, sql[which], &st))
		return KJ_EDB;
	int n = sqlite3_column_count(st);
	if (n > (int)(sizeof(cells) / sizeof(cells[0])))
		n = (int)(sizeof(cells) / sizeof(cells[0]));
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < n; i++)
			cell_of(st, i, &cells[i]);
		rc = fn(ud, cells, n);
	}
	sqlite3_finalize(st);
	return rc;
}

void kj_store_a2_info_scalar(sqlite3 *db, enum kj_store_a2_scalar which,
			     void (*fn)(void *ud, const struct kj_store_a2_cell *c), void *ud)
{
	static const char *const sql[] = {
		[KJ_INFO_MODULE_BYTES] = "SELECT coalesce(sum(bytes), 0) FROM module",
		[KJ_INFO_GPU_FIRST_START] = "SELECT min(start_ns) FROM gpu_activity",
		[KJ_INFO_GPU_LAST_END] = "SELECT max(end_ns) FROM gpu_activity",
		[KJ_INFO_GRAPH_LAUNCHES] = "SELECT count(*) FROM host_call WHERE op = 'graph_launch'",
		[KJ_INFO_SHMEM_SPLIT] = "SELECT EXISTS(SELECT 1 FROM kernel WHERE shmem_executed IS NOT NULL)",
	};
	struct kj_store_a2_cell c = {.type = KJ_CELL_NULL};
	sqlite3_stmt *st = NULL;
	if (which != KJ_INFO_SHMEM_SPLIT || kj_db_caps(db)->kernel_shmem_executed) {
		if (sqlite3_prepare_v2(db, sql[which], -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
			cell_of(st, 0, &c);
	}
	fn(ud, &c);
	sqlite3_finalize(st);
}

int kj_store_a2_graph_node_kinds_each(sqlite3 *db, int (*fn)(void *ud, const char *type, int64_t count), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (!kj_db_caps(db)->graph_node)
		return 0;
	if (kj_db_prepare(db, "SELECT type, count(*) FROM graph_node GROUP BY type ORDER BY count(*) DESC, type", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		if (sqlite3_column_text(st, 0))
			rc = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a2_kept_htod_copies(sqlite3 *db, int64_t *n, int64_t *with_bytes)
{
	int with_table = kj_db_caps(db)->copy_data;
	sqlite3_stmt *st = NULL;
	char sql[512];
	snprintf(sql, sizeof(sql), "SELECT count(*), %s FROM sequence_op s JOIN memcpy m ON m.correlation_id ="
		 " s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) WHERE s.op = 'memcpy' AND m.kind = 'HtoD'",
		 with_table ? "coalesce(sum(EXISTS(SELECT 1 FROM copy_data d WHERE d.memcpy_id = m.id)), 0)" : "0");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return KJ_EDB;
	}
	*n = sqlite3_column_int64(st, 0);
	*with_bytes = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	return 0;
}

void kj_store_a2_launch_modules(sqlite3 *db, struct kj_store_a2_launch_modules *m)
{
	*m = (struct kj_store_a2_launch_modules){0};
	m->has_module_id = kj_db_caps(db)->launch_params_module_id;
	if (m->has_module_id) {
		m->function_launches =
			kj_db_one_i64(db, "SELECT count(*) FROM launch_params WHERE handle_kind = 'function'", 0, 0);
		m->with_module = kj_db_one_i64(db, "SELECT count(*) FROM launch_params WHERE handle_kind = 'function'"
						   " AND module_id IS NOT NULL", 0, 0);
		m->kernel_launches =
			kj_db_one_i64(db, "SELECT count(*) FROM launch_params WHERE handle_kind = 'kernel'", 0, 0);
	} else {
		m->all_launches = kj_db_one_i64(db, "SELECT count(*) FROM launch_params", 0, 0);
	}
}
