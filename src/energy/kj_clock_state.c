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
#include "kj_store_e_clock.h"

static void state_none(struct kj_clock_state *out)
{
	memset(out, 0, sizeof(*out));
	out->sm_clock_median_mhz = -1;
	out->sm_clock_inv_mean = -1;
	out->sm_clock_min_mhz = out->sm_clock_max_mhz = -1;
}

struct program_acc {
	struct kj_clock_state *out;
	double *clk;
	size_t cap;
};

/* one power_sample reading into the state being summed (ctx) */
static int program_add(void *ctx, const struct kj_store_clock_sample *s)
{
	struct program_acc *a = ctx;
	struct kj_clock_state *out = a->out;
	int64_t r = s->throttle_reasons, mhz = s->sm_clock_mhz;
	if (r >= 0) {
		out->readings++;
		out->throttled += kj_clock_throttled((uint64_t)r, NULL, 0);
		out->reasons |= (uint64_t)r;
	}
	if (mhz <= 0)
		return 0;
	double *g = kj_grow(a->clk, &a->cap, (size_t)out->clock_readings, sizeof(*a->clk), 256);
	if (!g)
		return KJ_ENOMEM;
	a->clk = g;
	a->clk[out->clock_readings++] = (double)mhz;
	if (out->sm_clock_min_mhz < 0 || mhz < out->sm_clock_min_mhz)
		out->sm_clock_min_mhz = (int)mhz;
	if (mhz > out->sm_clock_max_mhz)
		out->sm_clock_max_mhz = (int)mhz;
	return 0;
}

int kj_clock_state_program(sqlite3 *db, int64_t device_id, int64_t t0_ns, int64_t t1_ns,
			   struct kj_clock_state *out)
{
	struct program_acc a = {out, NULL, 0};
	int rc;

	state_none(out);
	if (!kj_db_caps(db)->power_sample_clocks)
		return 0;
	out->recorded = 1;
	rc = kj_store_e_clock_samples(db, device_id, t0_ns, t1_ns, program_add, &a);
	if (!rc && out->clock_readings > 0) {
		kj_sort_doubles(a.clk, (size_t)out->clock_readings);
		out->sm_clock_median_mhz = kj_quantile_sorted(a.clk, (size_t)out->clock_readings, 0.5);
		double inv = 0;
		for (int64_t i = 0; i < out->clock_readings; i++)
			inv += 1.0 / a.clk[i];
		out->sm_clock_inv_mean = inv / (double)out->clock_readings;
	}
	free(a.clk);
	return rc;
}

struct window_vec {
	struct kj_clock_window *v;
	size_t n, cap;
};

/* one stored window appended to the vector (ctx) */
static int window_add(void *ctx, const struct kj_store_clock_window *s)
{
	struct window_vec *a = ctx;
	struct kj_clock_window *g = kj_grow(a->v, &a->cap, a->n, sizeof(*g), 64);
	if (!g)
		return KJ_ENOMEM;
	a->v = g;
	g[a->n++] = (struct kj_clock_window){s->id, s->sm_clock_mean_mhz, s->sm_clock_min_mhz,
					     s->sm_clock_max_mhz, s->throttle_reasons};
	return 0;
}

int kj_clock_replay_windows(sqlite3 *db, enum kj_clock_replays which, struct kj_clock_window **out,
			    size_t *n, int *recorded)
{
	struct window_vec a = {NULL, 0, 0};
	int rc;

	*out = NULL;
	*n = 0;
	*recorded = which == KJ_CLOCK_REPLAY_SEQUENCE ? kj_db_caps(db)->replay_sequence_clocks
						      : kj_db_caps(db)->replay_energy_clocks;
	if (!*recorded)
		return 0;
	rc = kj_store_e_clock_windows(db, which == KJ_CLOCK_REPLAY_SEQUENCE, window_add, &a);
	if (rc) {
		free(a.v);
		return rc;
	}
	*out = a.v;
	*n = a.n;
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
