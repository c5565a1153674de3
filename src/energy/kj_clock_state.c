/* The clock state a run recorded: the program's slow power samples over a window, and the
 * replays' measurement windows. Whether a run has the columns added after a table was first
 * written is asked of the store (kj_db_caps); a run without them reads as "not recorded", never
 * as "not throttled". See kj_clock_state.h. */
#include <stdlib.h>
#include <string.h>

#include "kj_clock_state.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_quantile.h"

static void state_none(struct kj_clock_state *out)
{
	memset(out, 0, sizeof(*out));
	out->sm_clock_median_mhz = -1;
	out->sm_clock_min_mhz = out->sm_clock_max_mhz = -1;
}

int kj_clock_state_program(sqlite3 *db, int64_t device_id, int64_t t0_ns, int64_t t1_ns,
			   struct kj_clock_state *out)
{
	sqlite3_stmt *st = NULL;
	double *clk = NULL;
	size_t cap = 0;
	int rc = 0;

	state_none(out);
	if (!kj_db_caps(db)->power_sample_clocks)
		return 0;
	out->recorded = 1;
	if (kj_db_prepare(db, "SELECT throttle_reasons, sm_clock_mhz FROM power_sample WHERE (?1 < 0 OR device_id = ?1)"
			      " AND t_ns >= ?2 AND t_ns <= ?3 AND (throttle_reasons IS NOT NULL OR sm_clock_mhz > 0)",
			  &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, device_id);
	sqlite3_bind_int64(st, 2, t0_ns);
	sqlite3_bind_int64(st, 3, t1_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t r = kj_db_col_i64(st, 0, -1), mhz = kj_db_col_i64(st, 1, -1);
		if (r >= 0) {
			out->readings++;
			out->throttled += kj_clock_throttled((uint64_t)r, NULL, 0);
			out->reasons |= (uint64_t)r;
		}
		if (mhz <= 0)
			continue;
		double *g = kj_grow(clk, &cap, (size_t)out->clock_readings, sizeof(*clk), 256);
		if (!g) {
			rc = KJ_ENOMEM;
			goto out;
		}
		clk = g;
		clk[out->clock_readings++] = (double)mhz;
		if (out->sm_clock_min_mhz < 0 || mhz < out->sm_clock_min_mhz)
			out->sm_clock_min_mhz = (int)mhz;
		if (mhz > out->sm_clock_max_mhz)
			out->sm_clock_max_mhz = (int)mhz;
	}
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading power_sample clock state: %s", sqlite3_errmsg(db));
		rc = KJ_EDB;
		goto out;
	}
	rc = 0;
	if (out->clock_readings > 0) {
		kj_sort_doubles(clk, (size_t)out->clock_readings);
		out->sm_clock_median_mhz = kj_quantile_sorted(clk, (size_t)out->clock_readings, 0.5);
	}
out:
	sqlite3_finalize(st);
	free(clk);
	return rc;
}

int kj_clock_replay_windows(sqlite3 *db, enum kj_clock_replays which, struct kj_clock_window **out,
			    size_t *n, int *recorded)
{
	const char *table = which == KJ_CLOCK_REPLAY_SEQUENCE ? "replay_sequence" : "replay_energy";
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	*recorded = which == KJ_CLOCK_REPLAY_SEQUENCE ? kj_db_caps(db)->replay_sequence_clocks
						      : kj_db_caps(db)->replay_energy_clocks;
	if (!*recorded)
		return 0;
	if (kj_db_prepare(db, which == KJ_CLOCK_REPLAY_SEQUENCE
			      ? "SELECT id, sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz, throttle_reasons"
				" FROM replay_sequence WHERE energy_mj IS NOT NULL ORDER BY id"
			      : "SELECT unique_id, sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz, throttle_reasons"
				" FROM replay_energy WHERE energy_mj_per_launch IS NOT NULL ORDER BY unique_id",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_clock_window *g = kj_grow(*out, &cap, *n, sizeof(**out), 64);
		if (!g) {
			sqlite3_finalize(st);
			free(*out);
			*out = NULL;
			*n = 0;
			return KJ_ENOMEM;
		}
		*out = g;
		struct kj_clock_window *w = &g[(*n)++];
		w->id = sqlite3_column_int64(st, 0);
		w->sm_clock_mean_mhz = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 1);
		w->sm_clock_min_mhz = (int)kj_db_col_i64(st, 2, -1);
		w->sm_clock_max_mhz = (int)kj_db_col_i64(st, 3, -1);
		w->reasons = kj_db_col_i64(st, 4, -1);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading %s clock state: %s", table, sqlite3_errmsg(db));
		free(*out);
		*out = NULL;
		*n = 0;
		return KJ_EDB;
	}
	return 0;
}

int kj_clock_state_replays(sqlite3 *db, enum kj_clock_replays which, struct kj_clock_state *out)
{
	struct kj_clock_window *w = NULL;
	size_t n = 0;
	int recorded = 0;
	int rc = kj_clock_replay_windows(db, which, &w, &n, &recorded);
	state_none(out);
	if (rc || !recorded) {
		free(w);
		return rc;
	}
	kj_clock_state_of_windows(w, n, out);
	free(w);
	return 0;
}
