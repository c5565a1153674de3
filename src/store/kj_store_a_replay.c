/* Typed readers of a run's replay results for compare (kj_store_a_replay.h). */
#include "kj_store_a_replay.h"

#include <stdio.h>
#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"

int kj_store_a_unique_kernels_each(sqlite3 *db, int (*fn)(void *ud, int64_t id, int64_t name_id, const char *tier),
				   void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT id, name_id, tier FROM unique_kernel", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), kj_db_col_i64(st, 1, -1), (const char *)sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_replay_medians_each(sqlite3 *db,
				   int (*fn)(void *ud, int64_t unique_id, const char *cache, double median_ns),
				   void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db,
			  "SELECT unique_id, lower(cache), median_ns FROM replay_kernel"
			  " WHERE median_ns IS NOT NULL AND median_ns > 0 AND (lower(status) IN"
			  " ('ok', 'relocated') OR (status IS NULL AND (error IS NULL OR error = '')))",
			  &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
			sqlite3_column_double(st, 2));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_replay_energy_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_replay_energy *e),
				  void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	char sql[400];
	/* runs replayed before each kernel's data was stored have no data column: unknown */
	snprintf(sql, sizeof(sql), "SELECT unique_id, energy_mj_per_launch,"
		 " coalesce(power_mw, energy_mj_per_launch * launches / nullif(seconds, 0)), %s, energy_unc_mj"
		 " FROM replay_energy WHERE energy_mj_per_launch IS NOT NULL AND energy_mj_per_launch >= 0",
		 kj_db_caps(db)->replay_energy_data ? "data, method" : "NULL, NULL");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_a_replay_energy e;
		e.unique_id = sqlite3_column_int64(st, 0);
		e.energy_mj = sqlite3_column_double(st, 1);
		e.has_power = sqlite3_column_type(st, 2) != SQLITE_NULL;
		e.power_mw = e.has_power ? sqlite3_column_double(st, 2) : 0;
		e.data = (const char *)sqlite3_column_text(st, 3);
		e.method = (const char *)sqlite3_column_text(st, 4);
		e.unc_mj = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 5);
		rc = fn(ud, &e);
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_has_replay_energy(sqlite3 *db)
{
	return kj_db_has_row(db, "SELECT 1 FROM replay_energy WHERE energy_mj_per_launch >= 0 LIMIT 1");
}

int kj_store_a_replay_energy_cold_each(sqlite3 *db,
				       int (*fn)(void *ud, int64_t unique_id, double energy_mj, double unc_mj,
						 double ns_per_launch),
				       void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT unique_id, energy_mj_per_launch, ns_per_launch, energy_unc_mj FROM"
			      " replay_energy_cold WHERE energy_mj_per_launch > 0", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1),
			sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 3),
			sqlite3_column_double(st, 2));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_replay_energy_b2b_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, double ns, double mhz),
				      void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT unique_id, ns_per_launch, sm_clock_mean_mhz FROM replay_energy_b2b"
			      " WHERE ns_per_launch > 0 AND sm_clock_mean_mhz > 0", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1), sqlite3_column_double(st, 2));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_traced_means_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, double mean_ns), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT unique_id, avg(end_ns - start_ns) FROM kernel"
			      " WHERE unique_id IS NOT NULL AND end_ns >= start_ns GROUP BY unique_id", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_replay_flagged_each(sqlite3 *db, const char *reason, const char *status, const char *error_part,
				   int (*fn)(void *ud, int64_t unique_id), void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	/* replay's reason code (schema 3; migrated runs have it filled from the text); runs read
	 * without it, by the text */
	if (kj_db_caps(db)->replay_kernel_reason) {
		if (kj_db_prepare(db, "SELECT DISTINCT unique_id FROM replay_kernel WHERE reason = ?1", &st))
			return KJ_EDB;
		sqlite3_bind_text(st, 1, reason, -1, SQLITE_STATIC);
	} else {
		char *like = sqlite3_mprintf("%%%s%%", error_part);
		if (!like)
			return KJ_ENOMEM;
		if (kj_db_prepare(db, "SELECT DISTINCT unique_id FROM replay_kernel WHERE lower(status) = ?1"
				      " AND error LIKE ?2", &st)) {
			sqlite3_free(like);
			return KJ_EDB;
		}
		sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, like, -1, sqlite3_free);
	}
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_replay_fill_notes_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, const char *note),
				      void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT unique_id, error FROM replay_kernel WHERE lower(cache) = 'warm'"
			      " AND error LIKE 'data: %'", &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	return rc;
}

int64_t kj_store_a_longest_kernel_ns(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT max(end_ns - start_ns) FROM kernel", 0, 0);
}

double kj_store_a_overlap_share(sqlite3 *db, int64_t unique_id, int64_t lookback_ns, int sample)
{
	sqlite3_stmt *st = NULL;
	double share = 0;
	if (kj_db_prepare(db, "SELECT count(*), sum(EXISTS (SELECT 1 FROM kernel b WHERE b.start_ns >= a.start_ns - ?2"
			      " AND b.start_ns < a.end_ns AND b.end_ns > a.start_ns AND b.stream_id != a.stream_id"
			      " AND b.device_id = a.device_id AND b.pid = a.pid))"
			      " FROM (SELECT * FROM kernel WHERE unique_id = ?1 LIMIT ?3) a", &st))
		return 0;
	sqlite3_bind_int64(st, 1, unique_id);
	sqlite3_bind_int64(st, 2, lookback_ns);
	sqlite3_bind_int(st, 3, sample);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
		share = sqlite3_column_double(st, 1) / sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return share;
}

int64_t kj_store_a_sequence_failed_rows(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	if (!kj_db_prepare(db, "SELECT count(*) FROM replay_sequence WHERE median_ns IS NULL", &st)) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return n;
}

int64_t kj_store_a_sequence_left_out(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int64_t n = -1;
	if (!kj_db_prepare(db, "SELECT (SELECT count(*) FROM sequence_op s WHERE s.iteration = r.iteration"
			       " AND s.op = 'kernel') - r.launches FROM replay_sequence r WHERE lower(r.mode) = 'graph'"
			       " AND r.median_ns > 0 AND r.launches IS NOT NULL ORDER BY r.id DESC LIMIT 1", &st)) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return n;
}

int kj_store_a_sequence_modes_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_sequence_mode *m),
				   void *ud)
{
	sqlite3_stmt *st = NULL;
	char sql[400];
	int rc = 0;
	/* columns added later (data, pace_ns) are read where the run has them */
	snprintf(sql, sizeof(sql), "SELECT lower(mode), avg(median_ns), count(*), avg(energy_mj), count(energy_mj), %s, %s"
		 " FROM replay_sequence WHERE median_ns IS NOT NULL AND median_ns > 0 GROUP BY lower(mode)",
		 kj_db_caps(db)->replay_sequence_data ? "max(data)" : "NULL",
		 kj_db_caps(db)->replay_sequence_pace_ns ? "avg(pace_ns)" : "NULL");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_a_sequence_mode m;
		m.mode = (const char *)sqlite3_column_text(st, 0);
		m.median_ns = sqlite3_column_double(st, 1);
		m.rows = sqlite3_column_int64(st, 2);
		m.has_energy = sqlite3_column_int64(st, 4) > 0;
		m.energy_mj = sqlite3_column_double(st, 3);
		m.data = (const char *)sqlite3_column_text(st, 5);
		m.has_pace = sqlite3_column_type(st, 6) != SQLITE_NULL;
		m.pace_ns = m.has_pace ? sqlite3_column_double(st, 6) : 0;
		rc = fn(ud, &m);
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a_topology_latest(sqlite3 *db, char *status, size_t status_len, char *unbuilt, size_t unbuilt_len,
			       char *reason, size_t reason_len)
{
	sqlite3_stmt *st = NULL;
	int found = 0;
	status[0] = unbuilt[0] = reason[0] = '\0';
	if (!kj_db_has_row(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'replay_topology'"))
		return 0;
	if (kj_db_prepare(db, "SELECT status, not_rebuilt, reason FROM replay_topology"
			      " ORDER BY replayed_at DESC, iteration LIMIT 1", &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *a = sqlite3_column_text(st, 0), *b = sqlite3_column_text(st, 1),
				    *r = sqlite3_column_text(st, 2);
		snprintf(status, status_len, "%s", a ? (const char *)a : "");
		snprintf(unbuilt, unbuilt_len, "%s", b ? (const char *)b : "");
		snprintf(reason, reason_len, "%s", r ? (const char *)r : "");
		found = 1;
	}
	sqlite3_finalize(st);
	return found;
}
