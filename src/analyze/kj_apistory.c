/* kjoule api: stages, synchronisation, idle periods, allocations and per-API totals. */
#include "kj_apistory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kj_acts.h"
#include "kj_api_alloc.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_store_a2_api.h"

#define US(ns) ((double)(ns) / 1e3)

static json_t *jus(double ns)
{
	return kj_api_us_json(ns);
}

struct api_agg {
	int64_t count, total_ns, max_ns;
};

struct gap {
	int64_t s, e;
	/* API calls overlapping the gap, by name index: count and overlapped ns */
	size_t names[4];
	int64_t ov[4], cnt[4];
	int n_names;
	int64_t other_calls;
	int64_t calls;
};

/* keep the n longest gaps, sorted by decreasing length */
struct gaps {
	struct gap *v;
	int n, cap;
	int64_t total_ns, count;
};

static void gaps_add(void *ctx, int64_t s, int64_t e)
{
	struct gaps *g = ctx;
	int64_t len = e - s;
	int i;
	g->total_ns += len;
	g->count++;
	if (g->n == g->cap && (g->n == 0 || len <= g->v[g->n - 1].e - g->v[g->n - 1].s))
		return;
	if (g->n < g->cap)
		g->n++;
	for (i = g->n - 1; i > 0 && g->v[i - 1].e - g->v[i - 1].s < len; i--)
		g->v[i] = g->v[i - 1];
	memset(&g->v[i], 0, sizeof(g->v[i]));
	g->v[i].s = s;
	g->v[i].e = e;
}

static int contains_ci(const char *s, const char *sub)
{
	size_t n = strlen(sub);
	for (; s && *s; s++)
		if (!strncasecmp(s, sub, n))
			return 1;
	return 0;
}

/* a stage [s, e) with its start in us after the run's first event t0 */
static json_t *stage(const char *name, int64_t t0, int64_t s, int64_t e, int known, const char *how)
{
	json_t *o = json_object();
	json_object_set_new(o, "stage", json_string(name));
	if (known && e >= s) {
		json_object_set_new(o, "start_us", jus((double)(s - t0)));
		json_object_set_new(o, "duration_us", jus((double)(e - s)));
	} else {
		json_object_set_new(o, "start_us", json_null());
		json_object_set_new(o, "duration_us", json_null());
	}
	json_object_set_new(o, "defined_as", json_string(how));
	return o;
}

/* The token/decode ranges' figures: how many, their durations and the first one's name. */
struct tokens {
	int64_t n, sum_ns, min_ns, max_ns;
	char name[256];
};

static int add_token(void *ud, const char *name, int64_t d)
{
	struct tokens *t = ud;
	if (!t->n)
		snprintf(t->name, sizeof(t->name), "%s", name);
	if (!t->n || d < t->min_ns)
		t->min_ns = d;
	if (!t->n || d > t->max_ns)
		t->max_ns = d;
	t->sum_ns += d;
	t->n++;
	return 0;
}

/* The one pass over API calls: per-name totals, loading counts, sync, overlap with the gaps. */
struct api_pass {
	struct kj_smap *names;
	struct api_agg *agg;
	size_t agg_cap;
	struct gaps *gp;
	int64_t first_iter;
	int64_t load_calls, load_ns, sync_calls, sync_ns;
};

static int add_api_call(void *ud, const char *nm, int64_t s, int64_t e)
{
	struct api_pass *p = ud;
	int64_t d = e > s ? e - s : 0;
	size_t ix = kj_smap_intern(p->names, nm ? nm : "?");
	if (ix == (size_t)-1)
		return KJ_ENOMEM;
	if (ix >= p->agg_cap) {
		size_t nc = p->agg_cap ? p->agg_cap * 2 : 64;
		struct api_agg *na = realloc(p->agg, nc * sizeof(*na));
		if (!na)
			return KJ_ENOMEM;
		memset(na + p->agg_cap, 0, (nc - p->agg_cap) * sizeof(*na));
		p->agg = na;
		p->agg_cap = nc;
	}
	struct api_agg *a = &p->agg[ix];
	a->count++;
	a->total_ns += d;
	if (d > a->max_ns)
		a->max_ns = d;
	if (p->first_iter >= 0 && s < p->first_iter) {
		p->load_calls++;
		p->load_ns += d;
	}
	if (nm && strstr(nm, "Synchronize")) {
		p->sync_calls++;
		p->sync_ns += d;
	}
	for (int g = 0; g < p->gp->n; g++) {
		struct gap *x = &p->gp->v[g];
		int64_t ov = (e < x->e ? e : x->e) - (s > x->s ? s : x->s);
		if (ov <= 0 && !(d == 0 && s >= x->s && s < x->e))
			continue;
		x->calls++;
		int k;
		for (k = 0; k < x->n_names && x->names[k] != ix; k++)
			;
		if (k == x->n_names) {
			if (x->n_names == 4) {
				x->other_calls++;
				continue;
			}
			x->names[k] = ix;
			x->n_names++;
		}
		x->cnt[k]++;
		x->ov[k] += ov > 0 ? ov : 0;
	}
	return 0;
}

int kj_api_story(sqlite3 *db, const struct kj_api_opts *o, json_t **out)
{
	int64_t t0, t1;
	struct kj_iters it;
	struct kj_acts acts;
	struct kj_smap names = {0};
	struct api_agg *agg = NULL;
	size_t agg_cap = 0;
	struct gaps gp = {0};
	json_t *j = NULL;
	int rc;

	*out = NULL;
	memset(&acts, 0, sizeof(acts));
	memset(&it, 0, sizeof(it));
	rc = kj_run_extent(db, &t0, &t1);
	if (rc == KJ_ENOTFOUND) {
		kj_errorf("the run holds no kernels, copies, API calls or NVTX ranges");
		return rc;
	}
	if (rc)
		return rc;
	rc = kj_acts_load(db, &acts);
	if (!rc)
		rc = kj_iters_find(db, o->region, o->skip, t0, t1, o->quiet, &it);
	if (rc)
		goto done;
	j = json_object();
	int64_t n_api = kj_db_count(db, "api_call");
	int has_api = n_api > 0;
	json_object_set_new(j, "api_traced", json_boolean(has_api));
	if (!has_api)
		json_object_set_new(j, "note", json_string(
			"no API calls in this run (trace with kjoule run --api for them); the answers"
			" below come from kernels, copies, allocations and NVTX ranges"));
	json_object_set_new(j, "run_duration_us", jus((double)(t1 - t0)));
	json_object_set_new(j, "api_calls", json_integer(n_api));

	/* boundaries */
	int64_t first_iter = it.whole_run ? -1 : it.v[0].start_ns;
	struct kj_store_a2_api_bounds bounds;
	kj_store_a2_api_bounds(db, &bounds);
	int64_t first_api = bounds.first_api_ns, first_alloc = bounds.first_alloc_ns;
	int64_t first_kernel = -1;
	for (size_t k = 0; k < acts.n; k++)
		if (acts.v[k].type == KJ_ACT_KERNEL) {
			first_kernel = acts.v[k].key_ns;
			break;
		}
	/* without an API trace, initialisation starts with the traced process */
	int64_t proc_start = bounds.process_start_ns;
	int64_t init_start = first_api >= 0 ? first_api
			     : proc_start >= 0 && proc_start <= t0 ? proc_start : t0;

	/* per-iteration kernel counts and bytes */
	int64_t *kper = calloc(it.n ? it.n : 1, sizeof(*kper));
	int64_t h2d = 0, d2h = 0, d2d = 0, h2d_load = 0, d2h_iter = 0, h2d_iter = 0;
	int64_t ncopies = 0;
	if (!kper) {
		rc = KJ_ENOMEM;
		goto done;
	}
	for (size_t k = 0; k < acts.n; k++) {
		const struct kj_act *a = &acts.v[k];
		long ow = kj_iters_owner_of(&it, a->key_ns, a->pid);
		if (a->type == KJ_ACT_KERNEL && ow >= 0)
			kper[ow]++;
		if (a->type == KJ_ACT_MEMCPY) {
			ncopies++;
			if (a->dir == KJ_COPY_H2D) {
				h2d += a->bytes;
				if (first_iter >= 0 && a->key_ns < first_iter)
					h2d_load += a->bytes;
				if (ow >= 0 && !it.v[ow].skipped)
					h2d_iter += a->bytes;
			} else if (a->dir == KJ_COPY_D2H) {
				d2h += a->bytes;
				if (ow >= 0 && !it.v[ow].skipped)
					d2h_iter += a->bytes;
			} else if (a->dir == KJ_COPY_D2D) {
				d2d += a->bytes;
			}
		}
	}
	{
		json_t *ki = json_object();
		double mean = 0;
		int64_t mn = 0, mx = 0, nk = 0;
		for (size_t i = 0; i < it.n; i++) {
			if (it.v[i].skipped)
				continue;
			if (!nk || kper[i] < mn)
				mn = kper[i];
			if (!nk || kper[i] > mx)
				mx = kper[i];
			mean += (double)kper[i];
			nk++;
		}
		json_object_set_new(ki, "region", it.whole_run ? json_null() : json_string(it.region));
		json_object_set_new(ki, "iterations", json_integer((json_int_t)it.n));
		json_object_set_new(ki, "skipped", json_integer(it.skip));
		json_object_set_new(ki, "mean", nk ? json_real(round(mean / (double)nk * 1000) / 1000) : json_null());
		json_object_set_new(ki, "min", nk ? json_integer(mn) : json_null());
		json_object_set_new(ki, "max", nk ? json_integer(mx) : json_null());
		json_object_set_new(ki, "kernels_total", json_integer((json_int_t)acts.n_kernels));
		json_object_set_new(j, "kernels_per_iteration", ki);
	}
	{
		json_t *b = json_object();
		json_object_set_new(b, "h2d", json_integer(h2d));
		json_object_set_new(b, "d2h", json_integer(d2h));
		json_object_set_new(b, "d2d", json_integer(d2d));
		json_object_set_new(b, "h2d_before_first_iteration", first_iter >= 0 ? json_integer(h2d_load) : json_null());
		json_object_set_new(b, "h2d_per_iteration", it.n_kept && !it.whole_run ? json_real((double)h2d_iter / (double)it.n_kept) : json_null());
		json_object_set_new(b, "d2h_per_iteration", it.n_kept && !it.whole_run ? json_real((double)d2h_iter / (double)it.n_kept) : json_null());
		json_object_set_new(b, "copies", json_integer(ncopies));
		json_object_set_new(j, "bytes", b);
	}

	/* stages */
	{
		json_t *sv = json_array();
		int64_t warm_s = -1, warm_e = -1, steady_s = -1, steady_e = -1, steady_sum = 0;
		for (size_t i = 0; i < it.n; i++) {
			const struct kj_iter *x = &it.v[i];
			if (x->skipped) {
				if (warm_s < 0)
					warm_s = x->start_ns;
				warm_e = x->end_ns;
			} else {
				if (steady_s < 0)
					steady_s = x->start_ns;
				steady_e = x->end_ns;
				steady_sum += x->end_ns - x->start_ns;
			}
		}
		json_array_append_new(sv, stage("initialisation", t0, init_start, first_alloc,
						first_alloc >= 0,
						has_api ? "first API call to first allocation"
						: proc_start >= 0 && proc_start <= t0
							? "process start to first allocation"
							: "first event to first allocation"));
		int64_t wl_end = first_kernel;
		json_array_append_new(sv, stage("weight_loading", t0, first_alloc, wl_end,
						first_alloc >= 0 && wl_end >= 0,
						"first allocation to first kernel launch"));
		json_array_append_new(sv, stage("setup", t0, wl_end, first_iter,
						wl_end >= 0 && first_iter >= wl_end,
						"first kernel launch to the first iteration"));
		json_array_append_new(sv, stage("warm_up", t0, warm_s, warm_e, warm_s >= 0 && !it.whole_run,
						"skipped iterations (first start to last end)"));
		json_t *sd = stage("steady", t0, steady_s, steady_e, steady_s >= 0 && !it.whole_run,
				   "measured iterations (first start to last end)");
		json_object_set_new(sd, "iterations_us", steady_s >= 0 && !it.whole_run ? jus((double)steady_sum) : json_null());
		json_object_set_new(sd, "per_iteration_us", it.n_kept && !it.whole_run ? jus((double)steady_sum / (double)it.n_kept) : json_null());
		json_array_append_new(sv, sd);
		int64_t last_end = it.whole_run ? -1 : it.v[it.n - 1].end_ns;
		json_array_append_new(sv, stage("after_iterations", t0, last_end, t1, last_end >= 0,
						"last iteration end to the run's last event"));
		json_object_set_new(j, "stages", sv);
	}
	/* per token */
	{
		json_t *tk = json_object();
		struct tokens t = {0};
		kj_store_a2_token_ranges_each(db, add_token, &t);
		int64_t n = t.n, sum = t.sum_ns, mn = t.min_ns, mx = t.max_ns;
		const char *name = t.name;
		json_object_set_new(tk, "ranges", json_integer(n));
		json_object_set_new(tk, "first_name", n ? json_string(name) : json_null());
		json_object_set_new(tk, "mean_us", n ? jus((double)sum / (double)n) : json_null());
		json_object_set_new(tk, "min_us", n ? jus((double)mn) : json_null());
		json_object_set_new(tk, "max_us", n ? jus((double)mx) : json_null());
		json_object_set_new(tk, "total_us", n ? jus((double)sum) : json_null());
		json_object_set_new(j, "per_token", tk);
	}

	/* GPU idle gaps: union of all GPU activity inside its own span */
	gp.cap = o->gaps > 0 ? o->gaps : 10;
	gp.v = calloc((size_t)gp.cap, sizeof(*gp.v));
	struct kj_ival *iv = malloc((acts.n ? acts.n : 1) * sizeof(*iv));
	if (!gp.v || !iv) {
		free(iv);
		free(kper);
		rc = KJ_ENOMEM;
		goto done;
	}
	for (size_t k = 0; k < acts.n; k++)
		iv[k] = (struct kj_ival){acts.v[k].start_ns, acts.v[k].end_ns};
	int64_t gspan_s = 0, gspan_e = 0;
	int64_t gbusy = kj_ival_union(iv, acts.n, INT64_MIN, INT64_MAX, &gspan_s, &gspan_e, NULL);
	kj_ival_gaps(iv, acts.n, INT64_MIN, INT64_MAX, gaps_add, &gp);
	free(iv);
	free(kper);

	/* one pass over API calls: per-name totals, loading counts, sync, overlap with gaps */
	int64_t load_calls = 0, load_ns = 0, sync_calls = 0, sync_ns = 0;
	if (has_api) {
		struct api_pass p = {&names, agg, agg_cap, &gp, first_iter, 0, 0, 0, 0};
		rc = kj_store_a2_api_calls_each(db, add_api_call, &p);
		agg = p.agg;
		agg_cap = p.agg_cap;
		load_calls = p.load_calls;
		load_ns = p.load_ns;
		sync_calls = p.sync_calls;
		sync_ns = p.sync_ns;
		if (rc)
			goto done;
	}
	{
		json_t *ld = json_object();
		json_object_set_new(ld, "before", first_iter >= 0 ? jus((double)(first_iter - t0)) : json_null());
		json_object_set_new(ld, "api_calls", has_api && first_iter >= 0 ? json_integer(load_calls) : json_null());
		json_object_set_new(ld, "api_time_us", has_api && first_iter >= 0 ? jus((double)load_ns) : json_null());
		json_object_set_new(j, "loading", ld);
	}
	{
		json_t *sy = json_object();
		json_object_set_new(sy, "calls", has_api ? json_integer(sync_calls) : json_null());
		json_object_set_new(sy, "time_us", has_api ? jus((double)sync_ns) : json_null());
		json_object_set_new(sy, "fraction_of_run", has_api && t1 > t0 ? json_real(round((double)sync_ns / (double)(t1 - t0) * 1e6) / 1e6) : json_null());
		json_object_set_new(j, "synchronization", sy);
	}
	{
		json_t *gv = json_array(), *gi = json_object();
		json_object_set_new(gi, "gpu_span_us", acts.n ? jus((double)(gspan_e - gspan_s)) : json_null());
		json_object_set_new(gi, "gpu_busy_us", jus((double)gbusy));
		json_object_set_new(gi, "gaps", json_integer(gp.count));
		json_object_set_new(gi, "idle_us", jus((double)gp.total_ns));
		for (int g = 0; g < gp.n; g++) {
			struct gap *x = &gp.v[g];
			json_t *e = json_object(), *cpu = json_array();
			json_object_set_new(e, "start_us", jus((double)(x->s - t0)));
			json_object_set_new(e, "duration_us", jus((double)(x->e - x->s)));
			long ow = kj_iters_owner(&it, x->s);
			json_object_set_new(e, "iteration", ow >= 0 && !it.whole_run ? json_integer(ow) : json_null());
			for (int k = 0; k < x->n_names; k++) {
				json_t *c = json_object();
				json_object_set_new(c, "name", json_string(names.names[x->names[k]]));
				json_object_set_new(c, "calls", json_integer(x->cnt[k]));
				json_object_set_new(c, "overlap_us", jus((double)x->ov[k]));
				json_array_append_new(cpu, c);
			}
			json_object_set_new(e, "api_calls", has_api ? json_integer(x->calls) : json_null());
			json_object_set_new(e, "cpu", has_api ? cpu : (json_decref(cpu), json_null()));
			json_object_set_new(e, "cpu_summary", json_string(
				!has_api ? "unknown (no API trace)"
				: x->calls == 0 ? "no CUDA API call: host code (framework, Python)"
						: "in CUDA API calls"));
			json_array_append_new(gv, e);
		}
		json_object_set_new(gi, "longest", gv);
		json_object_set_new(j, "gpu_idle", gi);
	}
	json_object_set_new(j, "allocations", kj_api_allocations_json(db, t0, first_kernel));
	{
		json_t *pa = json_array();
		size_t *ord = malloc((names.n ? names.n : 1) * sizeof(*ord));
		if (ord) {
			for (size_t i = 0; i < names.n; i++)
				ord[i] = i;
			/* insertion sort by total time: distinct API names are few */
			for (size_t i = 1; i < names.n; i++) {
				size_t v = ord[i], k = i;
				while (k > 0 && agg[ord[k - 1]].total_ns < agg[v].total_ns) {
					ord[k] = ord[k - 1];
					k--;
				}
				ord[k] = v;
			}
			for (size_t i = 0; i < names.n; i++) {
				const struct api_agg *a = &agg[ord[i]];
				json_t *e = json_object();
				json_object_set_new(e, "name", json_string(names.names[ord[i]]));
				json_object_set_new(e, "count", json_integer(a->count));
				json_object_set_new(e, "total_us", jus((double)a->total_ns));
				json_object_set_new(e, "mean_us", jus((double)a->total_ns / (double)a->count));
				json_object_set_new(e, "max_us", jus((double)a->max_ns));
				json_object_set_new(e, "synchronizes", json_boolean(contains_ci(names.names[ord[i]], "synchronize")));
				json_array_append_new(pa, e);
			}
			free(ord);
		}
		json_object_set_new(j, "per_api", has_api ? pa : (json_decref(pa), json_null()));
	}
done:
	if (rc && j) {
		json_decref(j);
		j = NULL;
	}
	if (rc == KJ_ENOMEM)
		kj_errorf("api: out of memory");
	free(agg);
	free(gp.v);
	kj_smap_free(&names);
	kj_iters_free(&it);
	kj_acts_free(&acts);
	*out = j;
	return rc;
}
