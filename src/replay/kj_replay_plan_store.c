/* Replay results stored in the run: each item's outcome, timings and energy into replay_kernel
 * and replay_energy (through kj_store_r_results.h). See kj_replay.h. */
#include "kj_replay.h"

#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_store_r_results.h"

/* A timing as the store's row (t->runs <= 0: not measured). */
static struct kj_store_r_timing timing_row(const struct kj_replay_timing *t)
{
	return (struct kj_store_r_timing){t->runs, t->min_ns, t->median_ns, t->max_ns, t->mean_ns, t->stdev_ns};
}

int kj_replay_plan_store(sqlite3 *db, struct kj_replay_plan *plan)
{
	return kj_replay_plan_store_some(db, plan, NULL);
}

/* One item's rows: a replay_kernel row per cache mode asked for or measured, its verification,
 * its energy and its cold-cache energy (or the removal of an older one). */
static int store_item(struct kj_store_r_batch *b, const struct kj_replay_plan *plan,
		      const struct kj_replay_result *r)
{
	const struct kj_replay_timing *t[2] = {&r->warm, &r->cold};
	const char *cache[2] = {"warm", "cold"};
	int want[2] = {plan->cache_warm, plan->cache_cold};
	for (int c = 0; c < 2; c++) {
		if (!want[c] && t[c]->runs <= 0)
			continue;
		struct kj_store_r_kernel k = {r->unique_id, cache[c], timing_row(t[c]),
					      r->status[0] ? r->status : "failed", r->error, r->reason};
		if (kj_store_r_batch_kernel(b, &k))
			return KJ_EDB;
	}
	if (r->verify[0]) {
		struct kj_store_r_verify v = {r->unique_id, r->verify, r->verify_buffers, r->verify_bytes,
					      r->verify_diff_bytes};
		if (kj_store_r_batch_verify(b, &v))
			return KJ_EDB;
	}
	if (r->has_energy) {
		struct kj_store_r_energy e = {
			.unique_id = r->unique_id, .unroll = r->unroll, .launches = r->energy_launches,
			.seconds = r->seconds, .energy_mj_per_launch = r->energy_mj_per_launch,
			.energy_unc_mj = r->energy_unc_mj, .power_mw = r->power_mw, .idle_mw = r->idle_mw,
			.dynamic_mj_per_launch = r->dynamic_mj_per_launch, .method = r->method,
			.clocks = {r->sm_clock_mean_mhz, r->sm_clock_min_mhz, r->sm_clock_max_mhz, r->throttle_reasons},
			.data = r->data};
		if (kj_store_r_batch_energy(b, &e))
			return KJ_EDB;
		/* the back-to-back window beside a paced one; an earlier replay's goes otherwise */
		struct kj_store_r_energy_b2b q = {r->unique_id, r->b2b_ns_per_launch, r->b2b_mj_per_launch,
						  r->b2b_sm_clock_mhz};
		if (r->has_b2b ? kj_store_r_batch_energy_b2b(b, &q) : kj_store_r_batch_drop_energy_b2b(b, r->unique_id))
			return KJ_EDB;
	}
	if (r->has_energy_cold) {
		struct kj_store_r_energy_cold c = {r->unique_id, r->energy_cold_launches, r->energy_cold_seconds,
						   r->energy_cold_mj_per_launch, r->energy_cold_unc_mj,
						   r->energy_cold_ns_per_launch, r->flush_mj, r->flush_unc_mj};
		if (kj_store_r_batch_energy_cold(b, &c))
			return KJ_EDB;
	} else if (r->has_energy) { /* an earlier replay's cold figure no longer stands beside it */
		if (kj_store_r_batch_drop_energy_cold(b, r->unique_id))
			return KJ_EDB;
	}
	return 0;
}

int kj_replay_plan_store_some(sqlite3 *db, struct kj_replay_plan *plan, const unsigned char *want_item)
{
	struct kj_store_r_batch *b = NULL;
	char when[32];
	int rc;

	kj_replay_now(when);
	if ((rc = kj_store_r_batch_begin(db, when, &b)))
		return rc;
	for (size_t i = 0; i < plan->n && !rc; i++)
		if (!want_item || want_item[i])
			rc = store_item(b, plan, &plan->items[i].res);
	if (rc) {
		kj_store_r_batch_end(b, 0);
		return rc;
	}
	if (kj_store_r_batch_end(b, 1))
		return KJ_EDB;
	for (size_t i = 0; i < plan->n; i++)
		if (!want_item || want_item[i])
			plan->items[i].stored = 1;
	return 0;
}
