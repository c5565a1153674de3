/* kjoule compare: per-iteration decomposition of wall time and energy (docs/analysis-compare.md
 * defines every quantity computed here). */
#include "kj_compare_internal.h"

#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_store_a_run.h"

/* cuGraphLaunch calls per iteration (by the time the call ran), where the run records them. */
/* One cuGraphLaunch call counted in the iteration that issued it. */
static int count_graph_launch(void *ud, int64_t start_ns, int64_t pid)
{
	struct kj_compare *c = ud;
	long i = kj_iters_owner_of(&c->it, start_ns, pid);
	if (i >= 0)
		c->iv[i].n_graph_launches++;
	return 0;
}

static int count_graph_launches(sqlite3 *db, struct kj_compare *c)
{
	int rc = kj_store_a_graph_launches_each(db, count_graph_launch, c);
	c->have_host_calls = rc != KJ_ENOTFOUND;
	return rc == KJ_ENOTFOUND ? 0 : rc;
}

/* Realtime offset from clock_sync (for the seed's wall-clock timestamps). */
static void load_realtime(sqlite3 *db, struct kj_compare *c)
{
	c->have_realtime = kj_db_realtime_offset(db, &c->realtime_offset_ns);
}

/* A launch of d ns in situ whose kernel replayed in median_ns (< 0: not replayed in that mode):
 * the replayed and in-situ sums of the covered launches, and their count. */
static void add_replayed(double median_ns, int64_t d, double *replay, double *insitu, int64_t *cov)
{
	if (median_ns < 0)
		return;
	*replay += median_ns;
	*insitu += (double)d;
	(*cov)++;
}

/* GPU activity sorted by start, for what ran inside each iteration's window */
struct win_act {
	int64_t s, e;
	long owner;
	int kernel;
	int64_t device_id;
};

static int win_cmp(const void *a, const void *b)
{
	const struct win_act *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

int kj_compare_compute(sqlite3 *db, const struct kj_compare_opts *o, struct kj_compare **out)
{
	struct win_act *win = NULL;
	int64_t max_dur = 0;
	struct kj_compare *c = calloc(1, sizeof(*c));
	struct kj_imap gmap = {0};
	long *owner = NULL;
	size_t *first = NULL, *order = NULL;
	struct kj_ival *iv_all = NULL, *iv_k = NULL;
	int64_t t0 = 0, t1 = 0;
	int rc;

	*out = NULL;
	if (!c)
		return KJ_ENOMEM;
	c->top = o->top > 0 ? o->top : 10;
	rc = kj_run_extent(db, &t0, &t1);
	if (rc == KJ_ENOTFOUND) {
		kj_errorf("the run holds no kernels, copies, API calls or NVTX ranges: nothing to"
			  " compare");
		goto out;
	}
	if (rc)
		goto out;
	rc = kj_acts_load(db, &c->acts);
	if (rc)
		goto out;
	if (!o->quiet && c->acts.dropped)
		kj_warnf("%zu GPU activity row(s) without times or ending before they start were"
			 " ignored",
			 c->acts.dropped);
	if (!o->quiet && c->acts.launch_after)
		kj_warnf("%zu kernel(s) have a launch time after their start (a clock-mapping gap);"
			 " their start time assigns them to iterations",
			 c->acts.launch_after);
	rc = kj_iters_find(db, o->region, o->skip, t0, t1, o->quiet, &c->it);
	if (rc)
		goto out;
	rc = kj_names_load(db, &c->names);
	if (rc)
		goto out;
	rc = kj_job_analyze(db, o->region, o->skip, &c->job);
	if (rc)
		goto out;
	rc = cmp_load_groups(db, c, &gmap);
	if (rc)
		goto out;
	kj_smap_intern(&c->tiers, "memcpy");
	kj_smap_intern(&c->tiers, "memset");
	load_realtime(db, c);
	c->n_api_calls = kj_db_count(db, "api_call");

	size_t ni = c->it.n, na = c->acts.n;
	c->iv = calloc(ni, sizeof(*c->iv));
	owner = malloc((na ? na : 1) * sizeof(*owner));
	first = calloc(ni + 1, sizeof(*first));
	order = malloc((na ? na : 1) * sizeof(*order));
	iv_all = malloc((na ? na : 1) * sizeof(*iv_all));
	iv_k = malloc((na ? na : 1) * sizeof(*iv_k));
	if (!c->iv || !owner || !first || !order || !iv_all || !iv_k) {
		rc = KJ_ENOMEM;
		goto out;
	}
	/* assign each activity to the iteration that launched it; CSR lists per iteration */
	win = malloc((na ? na : 1) * sizeof(*win));
	if (!win) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < na; k++) {
		const struct kj_act *a = &c->acts.v[k];
		owner[k] = kj_iters_owner_of(&c->it, a->key_ns, a->pid);
		if (owner[k] >= 0)
			first[owner[k] + 1]++;
		win[k] = (struct win_act){a->start_ns, a->end_ns, owner[k], a->type == KJ_ACT_KERNEL, a->device_id};
		if (a->end_ns - a->start_ns > max_dur)
			max_dur = a->end_ns - a->start_ns;
	}
	qsort(win, na, sizeof(*win), win_cmp);
	for (size_t i = 0; i < ni; i++)
		first[i + 1] += first[i];
	/* An iteration lasts until its own GPU work is done: a GPU-bound region's range closes on
	 * the host long before its kernels finish. Its window ends at the later of the range's end
	 * and its last own activity's end, but never past the next instance's start. */
	for (size_t k = 0; k < na; k++) {
		if (owner[k] < 0)
			continue;
		struct kj_iter *it = &c->it.v[owner[k]];
		size_t nx = (size_t)owner[k] + 1; /* the next instance of the same process */
		while (c->it.multi_pid && nx < ni && c->it.v[nx].pid != it->pid)
			nx++;
		int64_t cap = nx < ni ? c->it.v[nx].start_ns : INT64_MAX;
		int64_t e = c->acts.v[k].end_ns < cap ? c->acts.v[k].end_ns : cap;
		if (e > it->end_ns)
			it->end_ns = e;
	}
	{
		size_t *fill = calloc(ni + 1, sizeof(*fill));
		if (!fill) {
			rc = KJ_ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < na; k++)
			if (owner[k] >= 0)
				order[first[owner[k]] + fill[owner[k]]++] = k;
		free(fill);
	}

	c->tier_v = calloc(c->tiers.cap + 8, sizeof(*c->tier_v));
	if (!c->tier_v) {
		rc = KJ_ENOMEM;
		goto out;
	}
	size_t tier_memcpy = kj_smap_intern(&c->tiers, "memcpy");
	size_t tier_memset = kj_smap_intern(&c->tiers, "memset");
	for (size_t i = 0; i < ni; i++) {
		struct cmp_iter *x = &c->iv[i];
		const struct kj_iter *it = &c->it.v[i];
		size_t nall = 0, nk = 0;
		int64_t ss, se;
		x->start_ns = it->start_ns;
		x->end_ns = it->end_ns;
		x->skipped = it->skipped;
		x->closed = it->closed;
		x->wall = it->end_ns - it->start_ns;
		for (size_t q = first[i]; q < first[i + 1]; q++) {
			const struct kj_act *a = &c->acts.v[order[q]];
			int64_t d = a->end_ns - a->start_ns;
			iv_all[nall++] = (struct kj_ival){a->start_ns, a->end_ns};
			if (a->type == KJ_ACT_KERNEL) {
				iv_k[nk++] = (struct kj_ival){a->start_ns, a->end_ns};
				x->n_kernels++;
				x->kernel_sum += d;
				size_t g = cmp_group_of(c, &gmap, a);
				if (g == (size_t)-1) {
					rc = KJ_ENOMEM;
					goto out;
				}
				struct cmp_group *gr = &c->groups[g];
				if (gr->waits) { /* kept at its in-situ time in every sum the run has */
					if (c->n_replay_warm_rows) {
						add_replayed((double)d, d, &x->replay_warm, &x->insitu_warm, &x->cov_warm);
						x->replay_iso += (double)d;
					}
					if (c->n_replay_cold_rows)
						add_replayed((double)d, d, &x->replay_cold, &x->insitu_cold, &x->cov_cold);
					if (c->n_replay_seq_rows)
						add_replayed((double)d, d, &x->replay_seq, &x->insitu_seq, &x->cov_seq);
					if (gr->standin)
						x->standin_ns += d;
					if (gr->standin_mw > 0) { /* its replayed power over its in-situ time */
						cmp_energy_add_all(x, gr, gr->standin_mw * (double)d * 1e-9);
						x->energy_kernels_mj += gr->standin_mw * (double)d * 1e-9;
						x->cov_energy++;
						x->insitu_energy_ns += d;
					} else if (!gr->standin) { /* spins: idle power (below) */
						x->waits_ns += d;
						x->n_waits++;
					}
				}
				add_replayed(gr->warm_ns, d, &x->replay_warm, &x->insitu_warm, &x->cov_warm);
				add_replayed(gr->cold_ns, d, &x->replay_cold, &x->insitu_cold, &x->cov_cold);
				/* the program's L2 held part of each kernel's data: between the two replays
				 * (over the warm replays' launches: their in-situ Σ is insitu_warm) */
				if (gr->warm_ns >= 0)
					x->replay_iso += gr->cold_ns >= 0 ? (gr->warm_ns + gr->cold_ns) / 2 : gr->warm_ns;
				add_replayed(gr->seq_ns, d, &x->replay_seq, &x->insitu_seq, &x->cov_seq);
				if (gr->energy_mj >= 0) {
					cmp_energy_add_launch(x, gr, d);
					x->energy_kernels_mj += gr->energy_mj;
					if (gr->energy_cold_mj >= 0) {
						x->e_cold_cov_warm_mj += gr->energy_warm_mj;
						x->e_cold_cov_cold_mj += gr->energy_cold_mj;
						x->cold_energy_ns += d;
					} else {
						x->e_nocold_warm_mj += gr->energy_mj;
					}
					x->cov_energy++;
					x->insitu_energy_ns += d;
				}
				if (!x->skipped) {
					gr->launches++;
					gr->measured_ns += d;
				}
			} else {
				x->copy_sum += d;
				if (a->type == KJ_ACT_MEMCPY) {
					x->n_copies++;
					if (a->dir == KJ_COPY_H2D)
						x->bytes_h2d += a->bytes;
					else if (a->dir == KJ_COPY_D2H)
						x->bytes_d2h += a->bytes;
				} else {
					x->n_memsets++;
				}
				if (!x->skipped) {
					struct cmp_tier *t = &c->tier_v[a->type == KJ_ACT_MEMCPY
										 ? tier_memcpy
										 : tier_memset];
					t->launches++;
					t->measured_ns += d;
				}
			}
		}
		/* own work that ran outside the window (launched here, finished after the end) */
		int64_t own_clipped = 0;
		for (size_t q = 0; q < nall; q++) {
			int64_t cs = iv_all[q].s > it->start_ns ? iv_all[q].s : it->start_ns;
			int64_t ce = iv_all[q].e < it->end_ns ? iv_all[q].e : it->end_ns;
			if (ce > cs)
				own_clipped += ce - cs;
		}
		x->outside = x->kernel_sum + x->copy_sum - own_clipped;
		/* the window's accounting: every GPU activity that ran inside it, whoever launched it;
		 * where the iterations come from several processes (ranks), on its own GPU only */
		int64_t dev = c->it.multi_pid && first[i] < first[i + 1]
			? c->acts.v[order[first[i]]].device_id : INT64_MIN;
		nall = nk = 0;
		{
			size_t lo = 0, hi = na;
			int64_t from = it->start_ns - max_dur;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (win[mid].s < from)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (size_t k = lo; k < na && win[k].s < it->end_ns; k++) {
				if (win[k].e <= it->start_ns || (dev != INT64_MIN && win[k].device_id != dev))
					continue;
				iv_all[nall++] = (struct kj_ival){win[k].s, win[k].e};
				if (win[k].kernel)
					iv_k[nk++] = (struct kj_ival){win[k].s, win[k].e};
				if (win[k].owner != (long)i) {
					int64_t cs = win[k].s > it->start_ns ? win[k].s : it->start_ns;
					int64_t ce = win[k].e < it->end_ns ? win[k].e : it->end_ns;
					x->inherited += ce - cs;
				}
			}
		}
		x->busy = kj_ival_union(iv_all, nall, it->start_ns, it->end_ns, &ss, &se,
					&x->clipped_sum);
		x->span = se - ss;
		x->kernel_busy = kj_ival_union(iv_k, nk, it->start_ns, it->end_ns, NULL, NULL, NULL);
		x->overlap = x->clipped_sum - x->busy;
		x->idle = x->span - x->busy;
		x->host_only = x->wall - x->span;
	}
	/* tiers from groups (tier table may have grown with unclassified groups) */
	{
		struct cmp_tier *nt = realloc(c->tier_v, (c->tiers.n + 1) * sizeof(*nt));
		if (!nt) {
			rc = KJ_ENOMEM;
			goto out;
		}
		c->tier_v = nt;
		/* entries past the first allocation are zeroed: recompute kernel tiers */
		struct cmp_tier cp = c->tier_v[tier_memcpy], ms = c->tier_v[tier_memset];
		memset(c->tier_v, 0, (c->tiers.n + 1) * sizeof(*nt));
		c->tier_v[tier_memcpy] = cp;
		c->tier_v[tier_memset] = ms;
		for (size_t g = 0; g < c->n_groups; g++) {
			const struct cmp_group *gr = &c->groups[g];
			struct cmp_tier *t = &c->tier_v[gr->tier];
			if (!gr->launches)
				continue;
			t->unique++;
			t->launches += gr->launches;
			t->measured_ns += gr->measured_ns;
			if (gr->warm_ns >= 0) {
				t->replay_warm_ns += gr->warm_ns * (double)gr->launches;
				t->cov_warm += gr->launches;
			}
			if (gr->energy_mj >= 0) {
				t->energy_mj += gr->energy_mj * (double)gr->launches;
				t->cov_energy += gr->launches;
			}
		}
	}
	rc = count_graph_launches(db, c);
	if (!rc)
		rc = cmp_compute_energy(db, c);
	if (!rc)
		rc = cmp_shared_apply(db, c);
	if (!rc)
		rc = cmp_clocks_apply(db, c);
	if (rc)
		goto out;
	/* a waiting kernel's energy: its in-situ time at the GPU's idle power (it spins, the rest of
	 * the chip waits) */
	if (c->idle_w >= 0 && c->n_replay_energy_rows)
		for (size_t i = 0; i < ni; i++) {
			cmp_energy_add_all(&c->iv[i], NULL, (double)c->iv[i].waits_ns * 1e-6 * c->idle_w);
			c->iv[i].energy_kernels_mj += (double)c->iv[i].waits_ns * 1e-6 * c->idle_w;
			c->iv[i].cov_energy += c->iv[i].n_waits;
			c->iv[i].insitu_energy_ns += c->iv[i].waits_ns;
		}
	rc = cmp_compute_regions(db, c);
	if (rc)
		goto out;
	if (!o->quiet && c->acts.n_kernels == 0)
		kj_warnf("the run holds no kernels: GPU figures are zero");
	*out = c;
	c = NULL;
out: /* c is NULL once handed to the caller */
	if (c && rc == KJ_ENOMEM)
		kj_errorf("compare: out of memory");
	free(owner);
	free(first);
	free(order);
	free(iv_all);
	free(iv_k);
	free(win);
	kj_imap_free(&gmap);
	if (!c)
		return 0;
	kj_compare_free(c);
	return rc ? rc : KJ_EINVAL;
}

void kj_compare_free(struct kj_compare *c)
{
	if (!c)
		return;
	kj_iters_free(&c->it);
	kj_acts_free(&c->acts);
	kj_names_free(&c->names);
	kj_smap_free(&c->tiers);
	kj_smap_free(&c->region_names);
	free(c->tier_v);
	free(c->region_v);
	for (size_t g = 0; g < c->n_groups; g++)
		free(c->groups[g].waits_why);
	free(c->groups);
	free(c->iv);
	kj_shared_free(&c->shared);
	kj_job_free(&c->job);
	free(c);
}

int cmp_groups_have_cold_energy(const struct kj_compare *c)
{
	for (size_t g = 0; c && g < c->n_groups; g++)
		if (c->groups[g].energy_cold_mj >= 0)
			return 1;
	return 0;
}
