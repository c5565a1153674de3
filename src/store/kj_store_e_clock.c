/* Clock-state rows of a run: power_sample's and the replay windows' (kj_store_e_clock.h). */
#include "kj_store_e_clock.h"

#include "kj_db.h"
#include "kj_error.h"

int kj_store_e_clock_samples(sqlite3 *db, int64_t device_id, int64_t t0_ns, int64_t t1_ns,
			     int (*fn)(void *ctx, const struct kj_store_clock_sample *r), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db, "SELECT throttle_reasons, sm_clock_mhz FROM power_sample WHERE (?1 < 0 OR device_id = ?1)"
			      " AND t_ns >= ?2 AND t_ns <= ?3 AND (throttle_reasons IS NOT NULL OR sm_clock_mhz > 0)",
			  &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, device_id);
	sqlite3_bind_int64(st, 2, t0_ns);
	sqlite3_bind_int64(st, 3, t1_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_clock_sample r = {kj_db_col_i64(st, 0, -1), kj_db_col_i64(st, 1, -1)};
		int x = fn(ctx, &r);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading power_sample clock state: %s", sqlite3_errmsg(db));
		sqlite3_finalize(st);
		return KJ_EDB;
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_e_clock_windows(sqlite3 *db, int sequence,
			     int (*fn)(void *ctx, const struct kj_store_clock_window *w), void *ctx)
{
	const char *table = sequence ? "replay_sequence" : "replay_energy";
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db, sequence
			      ? "SELECT id, sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz, throttle_reasons"
				" FROM replay_sequence WHERE energy_mj IS NOT NULL ORDER BY id"
			      : "SELECT unique_id, sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz, throttle_reasons"
				" FROM replay_energy WHERE energy_mj_per_launch IS NOT NULL ORDER BY unique_id",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_clock_window w;
		w.id = sqlite3_column_int64(st, 0);
		w.sm_clock_mean_mhz = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 1);
		w.sm_clock_min_mhz = (int)kj_db_col_i64(st, 2, -1);
		w.sm_clock_max_mhz = (int)kj_db_col_i64(st, 3, -1);
		w.throttle_reasons = kj_db_col_i64(st, 4, -1);
		int x = fn(ctx, &w);
		if (x) {
			sqlite3_finalize(st);
			return x;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading %s clock state: %s", table, sqlite3_errmsg(db));
		return KJ_EDB;
	}
	return 0;
}
