/* The tracks a trace names (processes, threads, GPU lanes), kernel tiers, and every event of a
 * run for kjoule api --jsonl (kj_store_e_timeline.h). */
#include "kj_store_e_timeline.h"

#include "kj_db.h"
#include "kj_error.h"

int kj_store_e_trace_processes(sqlite3 *db, int (*fn)(void *ctx, int64_t pid, const char *exe),
			       void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db,
			  "SELECT p.pid, coalesce(pr.exe, '') FROM (SELECT pid FROM process UNION"
			  " SELECT DISTINCT pid FROM api_call UNION SELECT DISTINCT pid FROM"
			  " kernel UNION SELECT DISTINCT pid FROM memcpy UNION SELECT DISTINCT pid"
			  " FROM nvtx_range) p LEFT JOIN process pr ON pr.pid = p.pid"
			  " WHERE p.pid IS NOT NULL",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int x = fn(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_trace_threads(sqlite3 *db, int (*fn)(void *ctx, int64_t pid, int64_t tid, int nvtx),
			     void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, kj_db_caps(db)->host_call
			  ? "SELECT DISTINCT pid, tid, 0 FROM api_call WHERE tid IS NOT NULL UNION"
			    " SELECT DISTINCT pid, tid, 0 FROM host_call WHERE tid IS NOT NULL AND op LIKE 'graph%' UNION"
			    " SELECT DISTINCT pid, tid, 1 FROM nvtx_range WHERE tid IS NOT NULL"
			  : "SELECT DISTINCT pid, tid, 0 FROM api_call WHERE tid IS NOT NULL UNION"
			    " SELECT DISTINCT pid, tid, 1 FROM nvtx_range WHERE tid IS NOT NULL",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int x = fn(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			   sqlite3_column_int(st, 2));
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_gpu_lanes(sqlite3 *db,
			 int (*fn)(void *ctx, int64_t pid, int64_t device_id, int64_t stream_id),
			 void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db,
			  "SELECT DISTINCT pid, coalesce(device_id, 0), coalesce(stream_id, -1) FROM"
			  " kernel UNION SELECT DISTINCT pid, coalesce(device_id, 0),"
			  " coalesce(stream_id, -1) FROM memcpy UNION SELECT DISTINCT pid,"
			  " coalesce(device_id, 0), coalesce(stream_id, -1) FROM memset",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int x = fn(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			   sqlite3_column_int64(st, 2));
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_unique_tiers(sqlite3 *db, int (*fn)(void *ctx, int64_t unique_id, const char *tier),
			    void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT id, tier FROM unique_kernel WHERE tier IS NOT NULL", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int x = fn(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_events(sqlite3 *db, int (*fn)(void *ctx, const struct kj_store_event *e), void *ctx)
{
	static const char *sql =
		"SELECT 'api', name, start_ns, end_ns, bytes, stream_id FROM api_call"
		" UNION ALL SELECT 'kernel', coalesce(n.demangled, n.mangled), k.start_ns, k.end_ns,"
		" NULL, k.stream_id FROM kernel k LEFT JOIN kernel_name n ON n.id = k.name_id"
		" UNION ALL SELECT 'memcpy', 'memcpy ' || coalesce(kind, ''), start_ns, end_ns, bytes,"
		" stream_id FROM memcpy"
		" UNION ALL SELECT 'memset', 'memset', start_ns, end_ns, bytes, stream_id FROM memset"
		" UNION ALL SELECT 'nvtx', name, start_ns, end_ns, NULL, NULL FROM nvtx_range"
		" UNION ALL SELECT 'alloc', coalesce(kind, 'allocation'), alloc_ns, free_ns, bytes,"
		" stream_id FROM allocation";
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_event e;
		e.type = (const char *)sqlite3_column_text(st, 0);
		e.name = (const char *)sqlite3_column_text(st, 1);
		e.has_start = kj_db_col_has_i64(st, 2, &e.start_ns);
		e.has_end = kj_db_col_has_i64(st, 3, &e.end_ns);
		e.has_bytes = kj_db_col_has_i64(st, 4, &e.bytes);
		e.has_stream = kj_db_col_has_i64(st, 5, &e.stream_id);
		int x = fn(ctx, &e);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: %s", sqlite3_errmsg(db));
		return KJ_EDB;
	}
	return 0;
}
