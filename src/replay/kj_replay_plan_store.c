/* Replay results stored in the run: each item's outcome, timings and energy into replay_kernel
 * and replay_energy. See kj_replay.h. */
#include "kj_replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"

static void bind_timing(sqlite3_stmt *st, const struct kj_replay_timing *t)
{
	if (t && t->runs > 0) {
		sqlite3_bind_int(st, 3, t->runs);
		sqlite3_bind_int64(st, 4, t->min_ns);
		sqlite3_bind_int64(st, 5, t->median_ns);
		sqlite3_bind_double(st, 6, t->mean_ns);
		sqlite3_bind_int64(st, 7, t->max_ns);
		sqlite3_bind_double(st, 8, t->stdev_ns);
	} else {
		for (int i = 3; i <= 8; i++)
			sqlite3_bind_null(st, i);
	}
}

int kj_replay_plan_store(sqlite3 *db, struct kj_replay_plan *plan)
{
	return kj_replay_plan_store_some(db, plan, NULL);
}

int kj_replay_plan_store_some(sqlite3 *db, struct kj_replay_plan *plan, const unsigned char *want_item)
{
	sqlite3_stmt *k = NULL, *e = NULL, *v = NULL, *ec = NULL, *ecd = NULL;
	char when[32];
	int rc = KJ_EDB;

	kj_replay_now(when);
	/* the run was opened for writing, so migrated: the clock state and data columns are there */
	if (kj_db_exec(db, "BEGIN IMMEDIATE", "begin replay results"))
		return KJ_EDB;
	if (kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_kernel(unique_id, cache, runs, min_ns, median_ns,"
			  " mean_ns, max_ns, stdev_ns, status, error, replayed_at, reason)"
			  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", &k) ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_energy(unique_id, unroll, launches, seconds,"
			  " energy_mj_per_launch, energy_unc_mj, power_mw, idle_mw, dynamic_mj_per_launch,"
			  " method, replayed_at, sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz,"
			  " throttle_reasons, data)"
			  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
			  &e) ||
	    kj_db_exec(db, KJ_REPLAY_VERIFY_TABLE, "create replay_verify") ||
	    kj_db_exec(db, KJ_REPLAY_ENERGY_COLD_TABLE, "create replay_energy_cold") ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_energy_cold(unique_id, launches, seconds,"
			  " energy_mj_per_launch, energy_unc_mj, ns_per_launch, flush_mj, flush_unc_mj,"
			  " replayed_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", &ec) ||
	    kj_db_prepare(db, "DELETE FROM replay_energy_cold WHERE unique_id = ?1", &ecd) ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_verify(unique_id, result, buffers, bytes,"
			  " differing_bytes, replayed_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6)", &v))
		goto out;
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_result *r = &plan->items[i].res;
		const struct kj_replay_timing *t[2] = {&r->warm, &r->cold};
		if (want_item && !want_item[i])
			continue;
		const char *cache[2] = {"warm", "cold"};
		int want[2] = {plan->cache_warm, plan->cache_cold};
		for (int c = 0; c < 2; c++) {
			if (!want[c] && t[c]->runs <= 0)
				continue;
			sqlite3_reset(k);
			sqlite3_bind_int64(k, 1, r->unique_id);
			sqlite3_bind_text(k, 2, cache[c], -1, SQLITE_STATIC);
			bind_timing(k, t[c]);
			sqlite3_bind_text(k, 9, r->status[0] ? r->status : "failed", -1, SQLITE_TRANSIENT);
			if (r->error[0])
				sqlite3_bind_text(k, 10, r->error, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(k, 10);
			sqlite3_bind_text(k, 11, when, -1, SQLITE_STATIC);
			if (r->reason[0])
				sqlite3_bind_text(k, 12, r->reason, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(k, 12);
			if (sqlite3_step(k) != SQLITE_DONE) {
				kj_errorf("database: storing replay_kernel: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
		if (r->verify[0]) {
			sqlite3_reset(v);
			sqlite3_bind_int64(v, 1, r->unique_id);
			sqlite3_bind_text(v, 2, r->verify, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(v, 3, r->verify_buffers);
			sqlite3_bind_int64(v, 4, r->verify_bytes);
			sqlite3_bind_int64(v, 5, r->verify_diff_bytes);
			sqlite3_bind_text(v, 6, when, -1, SQLITE_STATIC);
			if (sqlite3_step(v) != SQLITE_DONE) {
				kj_errorf("database: storing replay_verify: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
		if (r->has_energy) {
			sqlite3_reset(e);
			sqlite3_bind_int64(e, 1, r->unique_id);
			sqlite3_bind_int(e, 2, r->unroll);
			sqlite3_bind_int64(e, 3, r->energy_launches);
			sqlite3_bind_double(e, 4, r->seconds);
			sqlite3_bind_double(e, 5, r->energy_mj_per_launch);
			sqlite3_bind_double(e, 6, r->energy_unc_mj);
			sqlite3_bind_double(e, 7, r->power_mw);
			if (r->idle_mw >= 0 && !isnan(r->idle_mw))
				sqlite3_bind_double(e, 8, r->idle_mw);
			else
				sqlite3_bind_null(e, 8);
			if (!isnan(r->dynamic_mj_per_launch))
				sqlite3_bind_double(e, 9, r->dynamic_mj_per_launch);
			else
				sqlite3_bind_null(e, 9);
			sqlite3_bind_text(e, 10, r->method, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(e, 11, when, -1, SQLITE_STATIC);
			kj_replay_bind_clocks(e, 12, r->sm_clock_mean_mhz, r->sm_clock_min_mhz, r->sm_clock_max_mhz,
					      r->throttle_reasons);
			if (r->data[0])
				sqlite3_bind_text(e, 16, r->data, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(e, 16);
			if (sqlite3_step(e) != SQLITE_DONE) {
				kj_errorf("database: storing replay_energy: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
		if (r->has_energy_cold) {
			sqlite3_reset(ec);
			sqlite3_bind_int64(ec, 1, r->unique_id);
			sqlite3_bind_int64(ec, 2, r->energy_cold_launches);
			sqlite3_bind_double(ec, 3, r->energy_cold_seconds);
			sqlite3_bind_double(ec, 4, r->energy_cold_mj_per_launch);
			sqlite3_bind_double(ec, 5, r->energy_cold_unc_mj);
			sqlite3_bind_double(ec, 6, r->energy_cold_ns_per_launch);
			sqlite3_bind_double(ec, 7, r->flush_mj);
			sqlite3_bind_double(ec, 8, r->flush_unc_mj);
			sqlite3_bind_text(ec, 9, when, -1, SQLITE_STATIC);
			if (sqlite3_step(ec) != SQLITE_DONE) {
				kj_errorf("database: storing replay_energy_cold: %s", sqlite3_errmsg(db));
				goto out;
			}
		} else if (r->has_energy) { /* an earlier replay's cold figure no longer stands beside it */
			sqlite3_reset(ecd);
			sqlite3_bind_int64(ecd, 1, r->unique_id);
			if (sqlite3_step(ecd) != SQLITE_DONE) {
				kj_errorf("database: storing replay_energy_cold: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
	}
	rc = 0;
out:
	sqlite3_finalize(k);
	sqlite3_finalize(e);
	sqlite3_finalize(v);
	sqlite3_finalize(ec);
	sqlite3_finalize(ecd);
	if (rc) {
		kj_db_exec(db, "ROLLBACK", "rollback replay results");
		return rc;
	}
	if (kj_db_exec(db, "COMMIT", "commit replay results"))
		return KJ_EDB;
	for (size_t i = 0; i < plan->n; i++)
		if (!want_item || want_item[i])
			plan->items[i].stored = 1;
	return 0;
}
