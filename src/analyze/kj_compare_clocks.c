/* compare's clock state: whether the program and its replays ran at the same clocks, by NVML's
 * clocks-event (throttle) reasons. A replay measured at capped clocks says little about a
 * program that ran uncapped, and the other way round: compare then says so and does not judge
 * the energy error between them. See kj_compare_clocks.h; report's kj_compare_clocks_out.c
 * writes it. */
#include <stdint.h>
#include <string.h>

#include "kj_compare_internal.h"
#include "kj_error.h"

/* The kept iterations' span: the program's readings that count. */
static void kept_span(const struct kj_compare *c, int64_t *a, int64_t *b)
{
	*a = INT64_MAX;
	*b = INT64_MIN;
	for (size_t i = 0; i < c->it.n; i++)
		if (!c->iv[i].skipped) {
			*a = c->iv[i].start_ns < *a ? c->iv[i].start_ns : *a;
			*b = c->iv[i].end_ns > *b ? c->iv[i].end_ns : *b;
		}
}

/* The reason an energy error between the program and one kind of replay is not judged: which
 * side ran throttled, by what (the side lines give the counts). */
static void why_text(const struct kj_clock_state *prog, const struct kj_clock_state *rep, const char *what,
		     char *buf, size_t len)
{
	char words[200];
	enum kj_clock_verdict a = kj_clock_verdict_of(prog), b = kj_clock_verdict_of(rep);
	if (!((a == KJ_CLOCK_THROTTLED && b == KJ_CLOCK_CLEAN) || (a == KJ_CLOCK_CLEAN && b == KJ_CLOCK_THROTTLED))) {
		kj_clock_throttled(prog->reasons | rep->reasons, words, sizeof(words));
		snprintf(buf, len, "the program and its %s were capped (%s) to different clocks: SM clock median %.0f MHz"
			 " against %.0f MHz", what, words, prog->sm_clock_median_mhz, rep->sm_clock_median_mhz);
	} else if (a == KJ_CLOCK_THROTTLED) {
		kj_clock_throttled(prog->reasons, words, sizeof(words));
		snprintf(buf, len, "the program ran throttled (%s) and its %s did not", words, what);
	} else {
		kj_clock_throttled(rep->reasons, words, sizeof(words));
		snprintf(buf, len, "its %s ran throttled (%s) and the program did not", what, words);
	}
}

int cmp_clocks_apply(sqlite3 *db, struct kj_compare *c)
{
	struct cmp_clocks *k = &c->clocks;
	int64_t a, b;
	int rc;
	memset(k, 0, sizeof(*k));
	kept_span(c, &a, &b);
	if ((rc = kj_clock_state_program(db, -1, a, b, &k->program)) ||
	    (rc = kj_clock_state_replays(db, KJ_CLOCK_REPLAY_KERNELS, &k->kernels)) ||
	    (rc = kj_clock_state_replays(db, KJ_CLOCK_REPLAY_SEQUENCE, &k->sequence)))
		return rc;
	k->mismatch = kj_clock_mismatch(&k->program, &k->kernels);
	k->sequence_mismatch = kj_clock_mismatch(&k->program, &k->sequence);
	if (k->mismatch == 1)
		why_text(&k->program, &k->kernels, "per-kernel replays", k->why[0], sizeof(k->why[0]));
	if (k->sequence_mismatch == 1)
		why_text(&k->program, &k->sequence, "iteration replay", k->why[1], sizeof(k->why[1]));
	return 0;
}
