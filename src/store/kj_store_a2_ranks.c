/* Typed readers for the ranks of a multi-GPU job (kj_store_a2_ranks.h). */
#include "kj_store_a2_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"

int64_t kj_store_a2_unique_kernel_max_id(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT coalesce(max(id), 0) FROM unique_kernel", 0, 0);
}

int kj_store_a2_rank_replays_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, const char *cache,
							  double median_ns),
				  void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (!kj_db_has_row(db, "SELECT 1 FROM replay_kernel LIMIT 1"))
		return 0;
	if (kj_db_prepare(db, "SELECT unique_id, cache, median_ns FROM replay_kernel WHERE median_ns"
			      " IS NOT NULL AND coalesce(status, 'ok') NOT IN ('failed', 'timeout')", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
			sqlite3_column_double(st, 2));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a2_nccl_calls_each(sqlite3 *db, int64_t pid,
				int (*fn)(void *ud, const struct kj_store_a2_nccl_call *c), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, step = SQLITE_DONE;
	if (!kj_db_caps(db)->nccl_call)
		return 0;
	if (kj_db_prepare(db, "SELECT t_ns, op, count, datatype, bytes, nranks, peer, group_depth FROM nccl_call"
			      " WHERE pid = ?1 ORDER BY t_ns, rowid", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a2_nccl_call c = {0};
		const char *op = (const char *)sqlite3_column_text(st, 1);
		c.t_ns = sqlite3_column_int64(st, 0);
		if (op && strlen(op) < sizeof(c.op))
			snprintf(c.op, sizeof(c.op), "%s", op);
		c.count = sqlite3_column_int64(st, 2);
		c.datatype = sqlite3_column_int64(st, 3);
		c.bytes = kj_db_col_i64(st, 4, -1);
		c.nranks = kj_db_col_i64(st, 5, -1);
		c.peer = kj_db_col_i64(st, 6, -1);
		c.group_depth = sqlite3_column_int64(st, 7);
		rc = fn(ud, &c);
	}
	if (rc) {
		sqlite3_finalize(st);
		return rc;
	}
	return kj_db_walk_end(db, st, step, "NCCL calls");
}

int kj_store_a2_rank_acts_each(sqlite3 *db, int64_t pid, int (*fn)(void *ud, const struct kj_store_a2_rank_act *a),
			       void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, step = SQLITE_DONE;
	if (kj_db_prepare(db, "SELECT start_ns, end_ns, launch_ns, name_id, unique_id, 0 FROM kernel"
			      " WHERE pid = ?1 UNION ALL SELECT start_ns, end_ns, launch_ns, NULL, NULL,"
			      " 2 FROM memcpy WHERE pid = ?1 UNION ALL SELECT start_ns, end_ns,"
			      " launch_ns, NULL, NULL, 2 FROM memset WHERE pid = ?1", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_a2_rank_act a = {0};
		a.has_times = sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_type(st, 1) != SQLITE_NULL;
		a.start_ns = sqlite3_column_int64(st, 0);
		a.end_ns = sqlite3_column_int64(st, 1);
		a.has_launch = kj_db_col_has_i64(st, 2, &a.launch_ns);
		a.name_id = kj_db_col_i64(st, 3, -1);
		a.unique_id = kj_db_col_i64(st, 4, -1);
		a.kind = sqlite3_column_int(st, 5);
		rc = fn(ud, &a);
	}
	if (rc) {
		sqlite3_finalize(st);
		return rc;
	}
	return kj_db_walk_end(db, st, step, "ranks' kernels and copies");
}

int kj_store_a2_rank_ranges_each(sqlite3 *db, const char *name, int64_t pid,
				 int (*fn)(void *ud, int64_t start_ns, int has_end, int64_t end_ns), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT start_ns, end_ns FROM nvtx_range WHERE name = ?1 AND pid = ?2"
			      " AND start_ns IS NOT NULL AND (end_ns IS NULL OR end_ns >= start_ns)"
			      " ORDER BY start_ns", &st))
		return KJ_EDB;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pid);
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_type(st, 1) != SQLITE_NULL,
			sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a2_ranks_each(sqlite3 *db, int (*fn)(void *ud, int64_t pid, int64_t device_id, int64_t n_devices),
			   void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, step = SQLITE_DONE;
	if (kj_db_prepare(db, "SELECT pid, min(device_id), count(DISTINCT device_id) FROM (SELECT pid,"
			      " device_id FROM kernel UNION ALL SELECT pid, device_id FROM memcpy"
			      " UNION ALL SELECT pid, device_id FROM memset) WHERE pid IS NOT NULL"
			      " GROUP BY pid ORDER BY min(device_id), pid", &st))
		return KJ_EDB;
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), kj_db_col_i64(st, 1, -1), sqlite3_column_int64(st, 2));
	if (rc) {
		sqlite3_finalize(st);
		return rc;
	}
	return kj_db_walk_end(db, st, step, "ranks");
}

struct kj_store_a2_rank_reader {
	sqlite3_stmt *gpu, *end;
};

int kj_store_a2_rank_reader_open(sqlite3 *db, struct kj_store_a2_rank_reader **out)
{
	struct kj_store_a2_rank_reader *rd = calloc(1, sizeof(*rd));
	*out = NULL;
	if (!rd)
		return KJ_ENOMEM;
	if (kj_db_prepare(db, "SELECT coalesce(d.name, ''), (SELECT coalesce(ended_cleanly, 0) FROM"
			      " process WHERE pid = ?2) FROM (SELECT 1) LEFT JOIN device d ON d.id = ?1", &rd->gpu) ||
	    /* how it ended: ingest's row for a process that did not close its trace starts "ended "
	     * (kj_ingest_end.c); a run ingested before those rows existed has none */
	    kj_db_prepare(db, "SELECT what FROM problem WHERE pid = ?1 AND what LIKE 'ended %' ORDER BY id"
			      " LIMIT 1", &rd->end)) {
		kj_store_a2_rank_reader_close(rd);
		return KJ_EDB;
	}
	*out = rd;
	return 0;
}

int kj_store_a2_rank_gpu(struct kj_store_a2_rank_reader *rd, int64_t device_id, int64_t pid, char *gpu,
			 size_t len, int *ended_cleanly)
{
	sqlite3_reset(rd->gpu);
	sqlite3_bind_int64(rd->gpu, 1, device_id);
	sqlite3_bind_int64(rd->gpu, 2, pid);
	if (sqlite3_step(rd->gpu) != SQLITE_ROW)
		return 0;
	snprintf(gpu, len, "%s", (const char *)sqlite3_column_text(rd->gpu, 0));
	*ended_cleanly = sqlite3_column_int(rd->gpu, 1);
	return 1;
}

int kj_store_a2_rank_end(struct kj_store_a2_rank_reader *rd, int64_t pid, char *buf, size_t len)
{
	sqlite3_reset(rd->end);
	sqlite3_bind_int64(rd->end, 1, pid);
	if (sqlite3_step(rd->end) != SQLITE_ROW || !sqlite3_column_text(rd->end, 0))
		return 0;
	snprintf(buf, len, "%s", (const char *)sqlite3_column_text(rd->end, 0));
	return 1;
}

void kj_store_a2_rank_reader_close(struct kj_store_a2_rank_reader *rd)
{
	if (!rd)
		return;
	sqlite3_finalize(rd->gpu);
	sqlite3_finalize(rd->end);
	free(rd);
}
