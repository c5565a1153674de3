/* The timeline's event rows in a window: API calls, graph host calls, NVTX ranges, GPU work
 * (kj_store_e_timeline.h; the track lists and event listing are in kj_store_e_tracks.c). */
#include "kj_store_e_timeline.h"

#include "kj_db.h"
#include "kj_error.h"

/* ?1 = lo_ns, ?2 = hi_ns */
static void bind_window(sqlite3_stmt *st, int64_t lo_ns, int64_t hi_ns)
{
	sqlite3_bind_int64(st, 1, lo_ns);
	sqlite3_bind_int64(st, 2, hi_ns);
}

/* SQLITE_DONE -> 0, else KJ_EDB; finalizes */
static int walk_end(sqlite3_stmt *st, int rc)
{
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

int kj_store_e_api_calls_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			    int (*fn)(void *ctx, const struct kj_store_api_call *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT pid, tid, name, start_ns, end_ns, correlation_id, bytes, stream_id"
			  " FROM api_call WHERE start_ns IS NOT NULL AND coalesce(end_ns, start_ns)"
			  " >= ?1 AND start_ns <= ?2 ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, lo_ns, hi_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_api_call r;
		r.pid = sqlite3_column_int64(st, 0);
		r.tid = sqlite3_column_int64(st, 1);
		r.name = (const char *)sqlite3_column_text(st, 2);
		r.start_ns = sqlite3_column_int64(st, 3);
		r.has_end = kj_db_col_has_i64(st, 4, &r.end_ns);
		r.has_correlation = kj_db_col_has_i64(st, 5, &r.correlation_id);
		r.has_bytes = kj_db_col_has_i64(st, 6, &r.bytes);
		r.has_stream = kj_db_col_has_i64(st, 7, &r.stream_id);
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	return walk_end(st, rc);
}

int kj_store_e_api_spans_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			    int (*fn)(void *ctx, const struct kj_store_api_call *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db,
			  "SELECT tid, name, start_ns, coalesce(end_ns, start_ns) FROM api_call"
			  " WHERE start_ns <= ?2 AND coalesce(end_ns, start_ns) >= ?1"
			  " AND start_ns >= ?1 - 60000000000 ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, lo_ns, hi_ns);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_api_call r = {0};
		r.tid = sqlite3_column_int64(st, 0);
		r.name = (const char *)sqlite3_column_text(st, 1);
		r.start_ns = sqlite3_column_int64(st, 2);
		r.end_ns = sqlite3_column_int64(st, 3);
		r.has_end = 1;
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_graph_calls_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			      int (*fn)(void *ctx, const struct kj_store_graph_call *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (!kj_db_caps(db)->host_call)
		return 0;
	if (kj_db_prepare(db,
			  "SELECT h.pid, h.tid, h.op, h.start_ns, h.end_ns, h.correlation_id, h.graph_exec_id"
			  " FROM host_call h WHERE h.op LIKE 'graph%' AND h.end_ns >= ?1 AND h.start_ns <= ?2"
			  " AND NOT EXISTS (SELECT 1 FROM api_call a WHERE a.pid = h.pid"
			  " AND a.correlation_id = h.correlation_id) ORDER BY h.start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, lo_ns, hi_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_graph_call r;
		r.pid = sqlite3_column_int64(st, 0);
		r.tid = sqlite3_column_int64(st, 1);
		r.op = (const char *)sqlite3_column_text(st, 2);
		r.start_ns = sqlite3_column_int64(st, 3);
		r.end_ns = sqlite3_column_int64(st, 4);
		r.correlation_id = sqlite3_column_int64(st, 5);
		r.has_graph_exec = kj_db_col_has_i64(st, 6, &r.graph_exec_id);
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	return walk_end(st, rc);
}

int kj_store_e_nvtx_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
		       int (*fn)(void *ctx, const struct kj_store_nvtx_range *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT pid, tid, name, start_ns, end_ns, depth FROM nvtx_range WHERE"
			  " start_ns IS NOT NULL AND coalesce(end_ns, ?2) >= ?1 AND start_ns <= ?2"
			  " ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, lo_ns, hi_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_nvtx_range r;
		r.pid = sqlite3_column_int64(st, 0);
		r.tid = sqlite3_column_int64(st, 1);
		r.name = (const char *)sqlite3_column_text(st, 2);
		r.start_ns = sqlite3_column_int64(st, 3);
		r.has_end = kj_db_col_has_i64(st, 4, &r.end_ns);
		r.depth = sqlite3_column_int64(st, 5);
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	return walk_end(st, rc);
}

int kj_store_e_nvtx_inside(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			   int (*fn)(void *ctx, const struct kj_store_nvtx_range *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db,
			  "SELECT name, start_ns, end_ns, depth FROM nvtx_range WHERE end_ns IS NOT NULL"
			  " AND start_ns >= ?1 AND end_ns <= ?2 AND name IS NOT NULL ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, lo_ns, hi_ns);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_nvtx_range r = {0};
		r.name = (const char *)sqlite3_column_text(st, 0);
		r.start_ns = sqlite3_column_int64(st, 1);
		r.end_ns = sqlite3_column_int64(st, 2);
		r.has_end = 1;
		r.depth = sqlite3_column_int(st, 3);
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_gpu_work_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			   int (*fn)(void *ctx, const struct kj_store_gpu_work *r), void *ctx)
{
	static const char *sql =
		"SELECT 0, pid, coalesce(device_id, 0), coalesce(stream_id, -1), correlation_id,"
		" start_ns, end_ns, name_id, unique_id, grid_x, grid_y, grid_z, block_x, block_y,"
		" block_z, NULL, NULL FROM kernel WHERE start_ns IS NOT NULL AND end_ns >= ?1 AND"
		" start_ns <= ?2"
		" UNION ALL SELECT 1, pid, coalesce(device_id, 0), coalesce(stream_id, -1),"
		" correlation_id, start_ns, end_ns, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
		" bytes, kind FROM memcpy WHERE start_ns IS NOT NULL AND end_ns >= ?1 AND"
		" start_ns <= ?2"
		" UNION ALL SELECT 2, pid, coalesce(device_id, 0), coalesce(stream_id, -1),"
		" correlation_id, start_ns, end_ns, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
		" bytes, NULL FROM memset WHERE start_ns IS NOT NULL AND end_ns >= ?1 AND"
		" start_ns <= ?2";
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	bind_window(st, lo_ns, hi_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_gpu_work r;
		r.type = sqlite3_column_int(st, 0);
		r.pid = sqlite3_column_int64(st, 1);
		r.device_id = sqlite3_column_int64(st, 2);
		r.stream_id = sqlite3_column_int64(st, 3);
		r.has_correlation = kj_db_col_has_i64(st, 4, &r.correlation_id);
		r.start_ns = sqlite3_column_int64(st, 5);
		r.end_ns = sqlite3_column_int64(st, 6);
		r.has_name_id = kj_db_col_has_i64(st, 7, &r.name_id);
		r.has_unique_id = kj_db_col_has_i64(st, 8, &r.unique_id);
		r.has_grid = sqlite3_column_type(st, 9) != SQLITE_NULL;
		for (int k = 0; k < 3; k++) {
			r.grid[k] = sqlite3_column_int64(st, 9 + k);
			r.block[k] = sqlite3_column_int64(st, 12 + k);
		}
		r.has_bytes = kj_db_col_has_i64(st, 15, &r.bytes);
		r.kind = (const char *)sqlite3_column_text(st, 16);
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	return walk_end(st, rc);
}
