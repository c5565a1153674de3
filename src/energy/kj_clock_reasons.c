/* NVML clocks-event reasons told apart and named; verdicts on a side's clock state. Pure: no
 * NVML, no database (kj_clock_state.c reads the run). See kj_clock_state.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_clock_state.h"
#include "kj_quantile.h"

static const char *const names[] = {
	"GPU idle",                /* 0x1 */
	"applications clocks",     /* 0x2 */
	"SW power cap",            /* 0x4 */
	"HW slowdown",             /* 0x8 */
	"sync boost",              /* 0x10 */
	"SW thermal slowdown",     /* 0x20 */
	"HW thermal slowdown",     /* 0x40 */
	"HW power brake slowdown", /* 0x80 */
	"display clocks",          /* 0x100 */
};

const char *kj_clock_reason_name(int bit)
{
	return bit >= 0 && bit < (int)(sizeof(names) / sizeof(names[0])) ? names[bit] : NULL;
}

/* The bits of mask named into words (", " between them), unknown bits as "reason 0x..". */
static void words_of(uint64_t mask, char *words, size_t len)
{
	size_t at = 0;
	if (!words || !len)
		return;
	words[0] = '\0';
	for (int b = 0; b < 64; b++) {
		if (!(mask >> b & 1))
			continue;
		const char *n = kj_clock_reason_name(b);
		int w = n ? snprintf(words + at, len - at, "%s%s", at ? ", " : "", n)
			  : snprintf(words + at, len - at, "%sreason 0x%llx", at ? ", " : "", 1ULL << b);
		if (w < 0 || (size_t)w >= len - at) { /* cut: keep what fits, whole words */
			words[at] = '\0';
			return;
		}
		at += (size_t)w;
	}
}

int kj_clock_throttled(uint64_t reasons, char *words, size_t len)
{
	uint64_t t = reasons & ~KJ_CLOCK_BENIGN;
	words_of(t, words, len);
	return t != 0;
}

void kj_clock_benign_words(uint64_t reasons, char *words, size_t len)
{
	words_of(reasons & KJ_CLOCK_BENIGN, words, len);
}

enum kj_clock_verdict kj_clock_verdict_of(const struct kj_clock_state *s)
{
	if (!s->recorded || s->readings <= 0)
		return KJ_CLOCK_UNKNOWN;
	double f = (double)s->throttled / (double)s->readings;
	return f >= KJ_CLOCK_THROTTLED_FRAC ? KJ_CLOCK_THROTTLED : f <= KJ_CLOCK_CLEAN_FRAC ? KJ_CLOCK_CLEAN : KJ_CLOCK_PARTLY;
}

const char *kj_clock_verdict_name(enum kj_clock_verdict v)
{
	switch (v) {
	case KJ_CLOCK_CLEAN: return "clean";
	case KJ_CLOCK_PARTLY: return "partly";
	case KJ_CLOCK_THROTTLED: return "throttled";
	default: return "unknown";
	}
}

int kj_clock_mismatch(const struct kj_clock_state *program, const struct kj_clock_state *replays)
{
	enum kj_clock_verdict a = kj_clock_verdict_of(program), b = kj_clock_verdict_of(replays);
	if (a == KJ_CLOCK_UNKNOWN || b == KJ_CLOCK_UNKNOWN)
		return -1;
	if ((a == KJ_CLOCK_THROTTLED && b == KJ_CLOCK_CLEAN) || (a == KJ_CLOCK_CLEAN && b == KJ_CLOCK_THROTTLED))
		return 1;
	double pm = program->sm_clock_median_mhz, rm = replays->sm_clock_median_mhz;
	if ((a >= KJ_CLOCK_PARTLY || b >= KJ_CLOCK_PARTLY) && pm > 0 && rm > 0 &&
	    fabs(pm - rm) > KJ_CLOCK_CAPPED_APART * (pm > rm ? pm : rm))
		return 1;
	return 0;
}

void kj_clock_state_of_windows(const struct kj_clock_window *w, size_t n, struct kj_clock_state *out)
{
	double *clk = n ? malloc(n * sizeof(*clk)) : NULL;
	memset(out, 0, sizeof(*out));
	out->recorded = 1;
	out->sm_clock_median_mhz = -1;
	out->sm_clock_inv_mean = -1;
	out->sm_clock_min_mhz = out->sm_clock_max_mhz = -1;
	for (size_t i = 0; i < n; i++) {
		if (w[i].reasons >= 0) {
			out->readings++;
			out->throttled += kj_clock_throttled((uint64_t)w[i].reasons, NULL, 0);
			out->reasons |= (uint64_t)w[i].reasons;
		}
		if (w[i].sm_clock_mean_mhz > 0 && clk)
			clk[out->clock_readings++] = w[i].sm_clock_mean_mhz;
		if (w[i].sm_clock_min_mhz > 0 && (out->sm_clock_min_mhz < 0 || w[i].sm_clock_min_mhz < out->sm_clock_min_mhz))
			out->sm_clock_min_mhz = w[i].sm_clock_min_mhz;
		if (w[i].sm_clock_max_mhz > out->sm_clock_max_mhz)
			out->sm_clock_max_mhz = w[i].sm_clock_max_mhz;
	}
	if (out->clock_readings > 0) {
		kj_sort_doubles(clk, (size_t)out->clock_readings);
		out->sm_clock_median_mhz = kj_quantile_sorted(clk, (size_t)out->clock_readings, 0.5);
	}
	free(clk);
}
