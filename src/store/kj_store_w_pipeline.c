/* Readers of kj_store_w_pipeline.h. */
#include "kj_store_w_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"

int kj_store_iter_ops(sqlite3 *db, int64_t it, struct kj_store_iter_op **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	char sql[600];
	int has_kernel = kj_db_caps(db)->sequence_op_kernel_id;
	int has_capture = has_kernel && kj_db_caps(db)->kernel_capture_range_id;
	*out = NULL;
	*n = 0;
	snprintf(sql, sizeof(sql),
		 "SELECT s.ordinal, coalesce(%s, l.launch_ns), s.correlation_id, s.op, %s, %s"
		 " FROM sequence_op s LEFT JOIN launch_params l ON l.id = s.launch_params_id%s"
		 " WHERE s.iteration = ? ORDER BY s.ordinal, s.id",
		 has_kernel ? "k.launch_ns" : "NULL", has_kernel ? "s.kernel_id" : "NULL",
		 has_capture ? "k.capture_range_id" : "NULL",
		 has_kernel ? " LEFT JOIN kernel k ON k.id = s.kernel_id" : "");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, it);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_iter_op *no = kj_grow(*out, &cap, *n, sizeof(*no), 256);
		if (!no) {
			sqlite3_finalize(st);
			free(*out);
			*out = NULL;
			*n = 0;
			return KJ_ENOMEM;
		}
		*out = no;
		struct kj_store_iter_op *o = &no[(*n)++];
		o->ordinal = sqlite3_column_int64(st, 0);
		o->t_ns = kj_db_col_i64(st, 1, -1);
		o->corr = kj_db_col_i64(st, 2, -1);
		const char *op = (const char *)sqlite3_column_text(st, 3);
		o->is_kernel = op && !strcmp(op, "kernel");
		o->has_kernel_id = sqlite3_column_type(st, 4) != SQLITE_NULL;
		o->capture_range_id = kj_db_col_i64(st, 5, -1);
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_nvtx_holding(sqlite3 *db, const char *name, int64_t pid, int64_t first_ns, int64_t last_ns,
			  int64_t out[4])
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT start_ns, coalesce(end_ns, 9223372036854775807), depth, tid FROM nvtx_range"
			  " WHERE name = ?1 AND (?2 < 0 OR pid = ?2) AND start_ns <= ?3"
			  " AND coalesce(end_ns, 9223372036854775807) >= ?4 ORDER BY start_ns DESC LIMIT 1", &st))
		return KJ_EDB;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, first_ns);
	sqlite3_bind_int64(st, 4, last_ns);
	int found = sqlite3_step(st) == SQLITE_ROW;
	for (int i = 0; found && i < 4; i++)
		out[i] = kj_db_col_i64(st, i, 0);
	sqlite3_finalize(st);
	return found;
}

int kj_store_nvtx_inside(sqlite3 *db, int64_t pid, const int64_t k[4], int depth, const char *region,
			 kj_store_nvtx_fn fn, void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, region ?
			  "SELECT id, start_ns, coalesce(end_ns, ?3), name FROM nvtx_range WHERE (?1 < 0 OR pid = ?1)"
			  " AND tid = ?5 AND start_ns >= ?2 AND start_ns <= ?3 AND name = ?4 ORDER BY start_ns" :
			  "SELECT id, start_ns, coalesce(end_ns, ?3), name FROM nvtx_range WHERE (?1 < 0 OR pid = ?1)"
			  " AND tid = ?5 AND start_ns >= ?2 AND start_ns <= ?3 AND depth = ?4 ORDER BY start_ns", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, k[0]);
	sqlite3_bind_int64(st, 3, k[1]);
	if (region)
		sqlite3_bind_text(st, 4, region, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_int64(st, 4, k[2] + depth);
	sqlite3_bind_int64(st, 5, k[3]);
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_nvtx_row r = {0};
		r.id = sqlite3_column_int64(st, 0);
		r.start_ns = sqlite3_column_int64(st, 1);
		r.end_ns = sqlite3_column_int64(st, 2);
		r.name = (const char *)sqlite3_column_text(st, 3);
		rc = fn(&r, ud);
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_capture_ranges(sqlite3 *db, int64_t iteration, kj_store_nvtx_fn fn, void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "WITH RECURSIVE anc(id) AS (SELECT DISTINCT k.capture_range_id FROM sequence_op s"
			  " JOIN kernel k ON k.id = s.kernel_id WHERE s.iteration = ?1 AND k.capture_range_id IS NOT NULL"
			  " UNION SELECT r.parent_id FROM anc a JOIN nvtx_range r ON r.id = a.id"
			  " WHERE r.parent_id IS NOT NULL)"
			  " SELECT r.id, coalesce(r.parent_id, -1), coalesce(r.depth, 0), r.name"
			  " FROM anc a JOIN nvtx_range r ON r.id = a.id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, iteration);
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_nvtx_row r = {0};
		r.id = sqlite3_column_int64(st, 0);
		r.parent = sqlite3_column_int64(st, 1);
		r.depth = sqlite3_column_int64(st, 2);
		r.name = (const char *)sqlite3_column_text(st, 3);
		rc = fn(&r, ud);
	}
	sqlite3_finalize(st);
	return rc;
}

int64_t kj_store_nvtx_max_depth(sqlite3 *db, int64_t dflt)
{
	return kj_db_one_i64(db, "SELECT max(depth) FROM nvtx_range", 0, dflt);
}
