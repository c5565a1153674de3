/* Typed readers of a run's recorded activity for the analyses (kj_store_a_run.h). */
#include "kj_store_a_run.h"

#include <stdio.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"

int kj_store_a_activity_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_activity *a), void *ud)
{
	/* copies and memsets carry the time of the call that issued them in runs recorded since
	 * host calls were (launch_ns); older runs key them by their start */
	static const char *sql_fmt =
		"SELECT 0, start_ns, end_ns, launch_ns, pid, device_id, stream_id, correlation_id,"
		" 0, unique_id, name_id, NULL FROM kernel"
		" UNION ALL SELECT 1, start_ns, end_ns, %s, pid, device_id, stream_id,"
		" correlation_id, bytes, NULL, NULL, kind FROM memcpy"
		" UNION ALL SELECT 2, start_ns, end_ns, %s, pid, device_id, stream_id,"
		" correlation_id, bytes, NULL, NULL, NULL FROM memset";
	char sql[512];
	sqlite3_stmt *st = NULL;
	int rc;

	snprintf(sql, sizeof(sql), sql_fmt, kj_db_caps(db)->memcpy_launch_ns ? "launch_ns" : "NULL",
		 kj_db_caps(db)->memset_launch_ns ? "launch_ns" : "NULL");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a_activity a;
		int stop;
		memset(&a, 0, sizeof(a));
		a.type = sqlite3_column_int(st, 0);
		a.has_times = sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_type(st, 2) != SQLITE_NULL;
		if (a.has_times) {
			a.start_ns = sqlite3_column_int64(st, 1);
			a.end_ns = sqlite3_column_int64(st, 2);
			a.launch_ns = kj_db_col_i64(st, 3, -1);
			a.pid = kj_db_col_i64(st, 4, 0);
			a.device_id = kj_db_col_i64(st, 5, 0);
			a.stream_id = kj_db_col_i64(st, 6, 0);
			a.correlation_id = kj_db_col_i64(st, 7, -1);
			a.bytes = kj_db_col_i64(st, 8, 0);
			a.unique_id = kj_db_col_i64(st, 9, -1);
			a.name_id = kj_db_col_i64(st, 10, -1);
			a.kind = (const char *)sqlite3_column_text(st, 11);
		}
		if ((stop = fn(ud, &a)) != 0) {
			sqlite3_finalize(st);
			return stop;
		}
	}
	return kj_db_walk_end(db, st, rc, "GPU activity");
}

int kj_store_a_run_extent(sqlite3 *db, int64_t *t0_ns, int64_t *t1_ns)
{
	static const char *sql =
		"SELECT min(s), max(e) FROM ("
		" SELECT min(start_ns) s, max(end_ns) e FROM kernel"
		" UNION ALL SELECT min(start_ns), max(end_ns) FROM memcpy"
		" UNION ALL SELECT min(start_ns), max(end_ns) FROM memset"
		" UNION ALL SELECT min(start_ns), max(end_ns) FROM api_call"
		" UNION ALL SELECT min(start_ns), max(coalesce(end_ns, start_ns)) FROM nvtx_range"
		" UNION ALL SELECT min(alloc_ns), max(coalesce(free_ns, alloc_ns)) FROM allocation)";
	sqlite3_stmt *st = NULL;
	int rc = KJ_ENOTFOUND;
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*t0_ns = sqlite3_column_int64(st, 0);
		*t1_ns = sqlite3_column_type(st, 1) == SQLITE_NULL ? *t0_ns : sqlite3_column_int64(st, 1);
		if (*t1_ns < *t0_ns)
			*t1_ns = *t0_ns;
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_kernel_name_max_id(sqlite3 *db, int64_t *max_id)
{
	sqlite3_stmt *st = NULL;
	*max_id = -1;
	if (kj_db_prepare(db, "SELECT max(id) FROM kernel_name", &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW)
		*max_id = kj_db_col_i64(st, 0, -1);
	sqlite3_finalize(st);
	return 0;
}

int kj_store_a_kernel_names_each(sqlite3 *db,
				 int (*fn)(void *ud, int64_t id, const char *demangled, const char *mangled),
				 void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT id, demangled, mangled FROM kernel_name", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
			(const char *)sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_ranges_named_each(sqlite3 *db, const char *name,
				 int (*fn)(void *ud, const struct kj_store_a_range *r), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT start_ns, end_ns, pid, tid FROM nvtx_range"
			  " WHERE name = ? AND start_ns IS NOT NULL ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a_range r = {0};
		int stop;
		r.start_ns = sqlite3_column_int64(st, 0);
		r.has_end = sqlite3_column_type(st, 1) != SQLITE_NULL;
		r.end_ns = r.has_end ? sqlite3_column_int64(st, 1) : 0;
		r.pid = kj_db_col_i64(st, 2, 0);
		r.tid = kj_db_col_i64(st, 3, 0);
		if ((stop = fn(ud, &r)) != 0) {
			sqlite3_finalize(st);
			return stop;
		}
	}
	return kj_db_walk_end(db, st, rc, "NVTX ranges");
}

int kj_store_a_graph_launches_each(sqlite3 *db, int (*fn)(void *ud, int64_t start_ns, int64_t pid), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (!kj_db_has_row(db, "SELECT 1 FROM sqlite_master WHERE name = 'host_call'"))
		return KJ_ENOTFOUND;
	if (kj_db_prepare(db, "SELECT start_ns, pid FROM host_call WHERE op = 'graph_launch'", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_foreign_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_foreign *f), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (!kj_db_has_row(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'foreign_activity'"))
		return KJ_ENOTFOUND;
	rc = kj_db_prepare(db, "SELECT device_id, COALESCE(pid, -1), start_ns, end_ns, source"
			   " FROM foreign_activity WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL"
			   " AND (device_id IS NULL OR device_id IN (SELECT DISTINCT device_id FROM gpu_activity)"
			   "      OR NOT EXISTS (SELECT 1 FROM gpu_activity WHERE device_id IS NOT NULL))"
			   " ORDER BY start_ns", &st);
	if (rc)
		return rc;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_a_foreign f = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
					       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
					       (const char *)sqlite3_column_text(st, 4)};
		rc = fn(ud, &f);
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_cubins_each(sqlite3 *db,
			   int (*fn)(void *ud, const char *codec, const void *data, size_t len, size_t bytes),
			   void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT codec, bytes, data FROM module WHERE data IS NOT NULL AND format = 'cubin'", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		const char *codec = (const char *)sqlite3_column_text(st, 0);
		const void *data = sqlite3_column_blob(st, 2);
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		rc = fn(ud, codec, data, len, (size_t)sqlite3_column_int64(st, 1));
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_kernel_params_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_kernel_params *k),
				  void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT n.mangled, u.registers, (SELECT length(p.params) FROM launch_params p"
			      " WHERE p.unique_id = u.id LIMIT 1), u.id FROM unique_kernel u JOIN kernel_name n"
			      " ON n.id = u.name_id", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_a_kernel_params k;
		k.mangled = (const char *)sqlite3_column_text(st, 0);
		k.registers = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 1);
		k.params_bytes = sqlite3_column_type(st, 2) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 2);
		k.unique_id = sqlite3_column_int64(st, 3);
		rc = fn(ud, &k);
	}
	sqlite3_finalize(st);
	return rc;
}

int64_t kj_store_a_kernel_count(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT count(*) FROM kernel", 0, 0);
}

int kj_store_a_has_capture_status(sqlite3 *db)
{
	return kj_db_has_row(db, "SELECT 1 FROM meta WHERE key = 'capture_status'");
}

void kj_store_a_capture_window(sqlite3 *db, int64_t *start_ns, int64_t *end_ns)
{
	*start_ns = kj_db_one_i64(db, "SELECT min(start_ns) FROM capture_window", 0, -1);
	*end_ns = kj_db_one_i64(db, "SELECT max(end_ns) FROM capture_window", 0, -1);
}

int64_t kj_store_a_iteration_device(sqlite3 *db)
{
	int64_t d = kj_db_one_i64(db, "SELECT pd.device_id FROM process_device pd JOIN iteration_mark m"
				  " ON m.pid = pd.pid WHERE pd.device_id IN (SELECT device_id FROM power_sample)"
				  " LIMIT 1", 0, -1);
	if (d >= 0)
		return d;
	if (kj_db_one_i64(db, "SELECT count(DISTINCT device_id) FROM power_sample", 0, 0) == 1)
		return kj_db_one_i64(db, "SELECT device_id FROM power_sample LIMIT 1", 0, -1);
	return -1;
}

int kj_store_a_iteration_marks_each(sqlite3 *db, int64_t device_id,
				    int (*fn)(void *ud, int64_t pid, int64_t start_ns, int64_t end_ns, int captured),
				    void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	/* the processes that used the device, where the run names any for it; else every process */
	if (kj_db_prepare(db, "SELECT pid, start_ns, end_ns, captured FROM iteration_mark WHERE end_ns IS NOT NULL AND"
			  " (?1 < 0 OR pid IN (SELECT pid FROM process_device WHERE device_id = ?1) OR NOT EXISTS"
			  " (SELECT 1 FROM iteration_mark m JOIN process_device pd ON pd.pid = m.pid"
			  " WHERE pd.device_id = ?1)) ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, device_id);
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
			sqlite3_column_int(st, 3));
	sqlite3_finalize(st);
	return rc;
}
