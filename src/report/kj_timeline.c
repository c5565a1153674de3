/* kjoule timeline: the entry point (which window, which format) and what the ASCII and SVG views
 * share: tier styles, lanes, the activities to draw. The writers: kj_timeline_chrome.c (Chrome
 * Trace Event Format), kj_timeline_ascii.c, kj_timeline_svg.c. */
#include "kj_timeline_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_store_e_timeline.h"

/* ---- tiers for ascii and svg ---- */

static const struct tier_style styles[] = {
	{"gemm", 'G', "#d62728"},        {"attention", 'A', "#9467bd"},
	{"norm", 'N', "#2ca02c"},        {"elementwise", 'E', "#1f77b4"},
	{"reduction", 'R', "#ff7f0e"},   {"communication", 'C', "#8c564b"},
	{"other", 'O', "#7f7f7f"},       {"copy", 'M', "#e377c2"},
	{"memcpy", 'M', "#e377c2"},      {"memset", 'S', "#bcbd22"},
};
_Static_assert(sizeof(styles) / sizeof(styles[0]) == N_STYLES, "N_STYLES counts the tier styles");
const struct tier_style *const tl_styles = styles;

static int style_of_tier(const char *tier)
{
	if (!tier)
		return STYLE_UNKNOWN;
	for (size_t i = 0; i < N_STYLES; i++)
		if (!strcmp(tl_styles[i].tier, tier))
			return (int)i;
	return STYLE_UNKNOWN;
}

/* one stored tier into the map of unique kernel -> style (ctx) */
static int tier_put(void *ctx, int64_t unique_id, const char *tier)
{
	return kj_imap_put(ctx, unique_id, (size_t)style_of_tier(tier)) ? KJ_ENOMEM : 0;
}

/* style index per activity: tier stored in unique_kernel, else by name rules */
static int act_styles(sqlite3 *db, const struct kj_acts *acts, const struct kj_names *names,
		      unsigned char *out)
{
	struct kj_imap utier = {0};
	int rc = kj_store_e_unique_tiers(db, tier_put, &utier);
	for (size_t i = 0; !rc && i < acts->n; i++) {
		const struct kj_act *a = &acts->v[i];
		if (a->type == KJ_ACT_MEMCPY) {
			out[i] = (unsigned char)style_of_tier("memcpy");
		} else if (a->type == KJ_ACT_MEMSET) {
			out[i] = (unsigned char)style_of_tier("memset");
		} else {
			size_t t = a->unique_id >= 0 ? kj_imap_get(&utier, a->unique_id) : (size_t)-1;
			if (t == (size_t)-1) {
				const char *n = kj_names_get(names, a->name_id);
				t = (size_t)style_of_tier(kj_tier_classify(n, n));
			}
			out[i] = (unsigned char)t;
		}
	}
	kj_imap_free(&utier);
	return rc;
}


static int lane_cmp(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

size_t tl_lane_find(const struct lane *l, size_t n, const struct kj_act *a)
{
	struct lane k = {a->pid, a->device_id, a->stream_id};
	const struct lane *p = bsearch(&k, l, n, sizeof(*l), lane_cmp);
	return p ? (size_t)(p - l) : 0;
}

/* Activities to draw: with sel_iter >= 0 those owned by that iteration, else those overlapping
 * [lo, hi]. Fills idx (indices into acts) and lanes; widens [lo, hi] to the owned work. */
int tl_pick(const struct kj_acts *acts, const struct kj_iters *it, long sel_iter,
		int64_t *lo, int64_t *hi, size_t **idx_out, size_t *n_out, struct lane **lanes_out,
		size_t *nl_out)
{
	size_t *idx = malloc((acts->n ? acts->n : 1) * sizeof(*idx)), n = 0, nl = 0;
	struct lane *lanes = NULL;
	if (!idx)
		return KJ_ENOMEM;
	for (size_t k = 0; k < acts->n; k++) {
		const struct kj_act *a = &acts->v[k];
		int take = sel_iter >= 0 ? kj_iters_owner_of(it, a->key_ns, a->pid) == sel_iter
					 : (a->end_ns >= *lo && a->start_ns <= *hi);
		if (take)
			idx[n++] = k;
	}
	if (sel_iter >= 0)
		for (size_t q = 0; q < n; q++) {
			const struct kj_act *a = &acts->v[idx[q]];
			if (a->start_ns < *lo)
				*lo = a->start_ns;
			if (a->end_ns > *hi)
				*hi = a->end_ns;
		}
	lanes = malloc((n ? n : 1) * sizeof(*lanes));
	if (!lanes) {
		free(idx);
		return KJ_ENOMEM;
	}
	for (size_t q = 0; q < n; q++) {
		const struct kj_act *a = &acts->v[idx[q]];
		lanes[q] = (struct lane){a->pid, a->device_id, a->stream_id};
	}
	qsort(lanes, n, sizeof(*lanes), lane_cmp);
	for (size_t q = 0; q < n; q++)
		if (!nl || lane_cmp(&lanes[nl - 1], &lanes[q]))
			lanes[nl++] = lanes[q];
	*idx_out = idx;
	*n_out = n;
	*lanes_out = lanes;
	*nl_out = nl;
	return 0;
}


int kj_timeline_write(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f)
{
	int64_t t0 = 0, t1 = 0, lo, hi;
	struct kj_iters it;
	long sel = -1;
	int rc = kj_run_extent(db, &t0, &t1);
	if (rc == KJ_ENOTFOUND) {
		kj_errorf("the run holds no kernels, copies, API calls or NVTX ranges: no timeline");
		return rc;
	}
	if (rc)
		return rc;
	lo = o->has_from ? t0 + o->from_ns : t0;
	hi = o->has_to ? t0 + o->to_ns : t1;
	if (hi < lo) {
		kj_errorf("--to (%.1f us) is before --from (%.1f us)", (double)o->to_ns / 1e3,
			  (double)o->from_ns / 1e3);
		return KJ_EINVAL;
	}
	memset(&it, 0, sizeof(it));
	if (o->iteration >= 0 || o->format != KJ_TL_CHROME) {
		rc = kj_iters_find(db, o->region, -1, t0, t1, o->quiet, &it);
		if (rc)
			return rc;
		if (o->iteration >= 0) {
			if ((size_t)o->iteration >= it.n) {
				kj_errorf("--iteration %ld: the run has %zu iteration(s) (0-based)",
					  o->iteration, it.n);
				kj_iters_free(&it);
				return KJ_ENOTFOUND;
			}
			sel = o->iteration;
		} else if (!o->has_from && !o->has_to) {
			for (sel = 0; (size_t)sel + 1 < it.n && it.v[sel].skipped; sel++)
				; /* the first measured iteration (each rank skips its own warm-up) */
		}
		if (sel >= 0) {
			lo = it.v[sel].start_ns;
			hi = it.v[sel].end_ns;
		}
	}
	if (o->format == KJ_TL_CHROME) {
		rc = timeline_chrome(db, o, f, t0, t1, sel >= 0 ? lo : (o->has_from ? lo : INT64_MIN),
				     sel >= 0 ? hi : (o->has_to ? hi : INT64_MAX));
		kj_iters_free(&it);
		return rc;
	}
	struct kj_acts acts;
	struct kj_names names;
	unsigned char *sty = NULL;
	memset(&names, 0, sizeof(names));
	rc = kj_acts_load(db, &acts);
	if (!rc)
		rc = kj_names_load(db, &names);
	if (!rc) {
		sty = malloc(acts.n ? acts.n : 1);
		rc = sty ? act_styles(db, &acts, &names, sty) : KJ_ENOMEM;
	}
	if (!rc) {
		if (o->format == KJ_TL_ASCII)
			rc = timeline_ascii(db, o, f, &acts, sty, &it, sel, t0, lo, hi);
		else
			rc = timeline_svg(db, o, f, &acts, sty, &names, &it, sel, t0, lo, hi);
	}
	free(sty);
	kj_names_free(&names);
	kj_acts_free(&acts);
	kj_iters_free(&it);
	return rc;
}

