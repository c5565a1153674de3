/* kjoule compare: the measured energy of each iteration and of the kept iterations as one loop,
 * the power statistics inside the kept windows, and the idle power terms. */
#include "kj_compare_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_quantile.h"
#include "kj_store_a_iter.h"

/* GPU activity time inside [a, b] that falls between the measured iterations: work no iteration
 * owns (an optimizer step outside a 'forward' range, say). The loop is one window only where the
 * GPU waits between iterations. */
static int64_t gap_busy_ns(const struct kj_compare *c, int64_t a, int64_t b)
{
	struct kj_ival *gap = malloc((c->it.n + 1) * sizeof(*gap));
	size_t ng = 0;
	int64_t busy = 0, prev_end = INT64_MIN;
	if (!gap)
		return INT64_MAX; /* unknown: no loop */
	for (size_t i = 0; i < c->it.n; i++) { /* iterations are sorted by start */
		const struct cmp_iter *x = &c->iv[i];
		if (x->skipped || x->start_ns < a || x->end_ns > b)
			continue;
		if (prev_end != INT64_MIN && x->start_ns > prev_end)
			gap[ng++] = (struct kj_ival){prev_end, x->start_ns};
		prev_end = x->end_ns;
	}
	for (size_t k = 0; k < c->acts.n && ng; k++) {
		const struct kj_act *t = &c->acts.v[k];
		if (t->end_ns <= a || t->start_ns >= b)
			continue;
		size_t lo = 0, hi = ng; /* the first gap that ends after the activity starts */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (gap[mid].e <= t->start_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t g = lo; g < ng && gap[g].s < t->end_ns; g++) {
			int64_t s0 = t->start_ns > gap[g].s ? t->start_ns : gap[g].s;
			int64_t s1 = t->end_ns < gap[g].e ? t->end_ns : gap[g].e;
			busy += s1 > s0 ? s1 - s0 : 0;
		}
	}
	free(gap);
	return busy;
}

/* The kept iterations' span, the iterations inside it and their total length (c->loop_*). 0 when
 * there is no loop to measure: fewer than 3 iterations, or two of them overlapping. (Iterations
 * that shared the GPU with another process are known later: the summary checks them.) */
static int loop_span(struct kj_compare *c)
{
	int64_t a = INT64_MAX, b = INT64_MIN, prev_end = INT64_MIN;
	c->loop_mj = c->loop_unc_mj = c->loop_iter_mj = c->loop_iter_unc_mj = 0;
	c->loop_span_ns = c->loop_inside_ns = c->loop_n = c->loop_window_ns = 0;
	c->loop_window_iters = c->loop_window_inside_ns = 0;
	c->loop_aligned = 1;
	c->loop_counter_periods = 0;
	for (size_t i = 0; i < c->it.n; i++)
		if (!c->iv[i].skipped) {
			a = c->iv[i].start_ns < a ? c->iv[i].start_ns : a;
			b = c->iv[i].end_ns > b ? c->iv[i].end_ns : b;
		}
	if (a >= b)
		return 0;
	for (size_t i = 0; i < c->it.n; i++) { /* iterations are sorted by start */
		const struct cmp_iter *x = &c->iv[i];
		if (x->start_ns < a || x->end_ns > b)
			continue;
		if (x->start_ns < prev_end)
			return 0;
		prev_end = x->end_ns;
		c->loop_inside_ns += x->end_ns - x->start_ns;
		c->loop_n++;
	}
	c->loop_start_ns = a;
	c->loop_span_ns = b - a;
	c->loop_gap_busy_ns = gap_busy_ns(c, a, b);
	return c->loop_n >= 3;
}

/* Adds one device's energy per iteration over the loop; 0 when it cannot be measured. The window
 * runs from the first to the last update of the energy counter inside the loop's span, so it holds
 * whole counter periods only (no cut period to estimate); the iterations count by the share of
 * each inside it, and the time between them inside it at the device's idle power (idle_w_dev W;
 * 5 % of that term added to the bound). A loop with fewer than two updates inside is measured over
 * its whole span instead, its cut periods estimated (loop_aligned 0). */
static int add_loop_energy(struct kj_compare *c, const struct kj_power_sample *s, size_t n, double idle_mw,
			   double idle_w_dev)
{
	struct kj_window_energy we;
	int64_t w0 = c->loop_start_ns, w1 = c->loop_start_ns + c->loop_span_ns, e0, e1, sig0 = 0, sig1 = 0;
	double iters = 0, inside_ns = 0;
	memset(&we, 0, sizeof(we));
	if (n == 0)
		return 0;
	if (kj_energy_edges_inside(s, n, w0, w1, &e0, &e1, &sig0, &sig1) >= 2 && e1 > e0) {
		w0 = e0, w1 = e1;
	} else {
		c->loop_aligned = 0;
		sig0 = sig1 = 0; /* the window's own bound has its edges' timing */
	}
	if (kj_energy_window(s, n, w0, w1, idle_mw, &we) != 0 || !we.ok || !isfinite(we.energy_j))
		return 0;
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		if (x->start_ns < c->loop_start_ns || x->end_ns > c->loop_start_ns + c->loop_span_ns)
			continue;
		int64_t a = x->start_ns > w0 ? x->start_ns : w0, b = x->end_ns < w1 ? x->end_ns : w1;
		if (b > a && x->end_ns > x->start_ns) {
			inside_ns += (double)(b - a);
			iters += (double)(b - a) / (double)(x->end_ns - x->start_ns);
		}
	}
	if (iters <= 0)
		return 0;
	double outside_mj = (idle_w_dev > 0 ? idle_w_dev : 0) * ((double)(w1 - w0) - inside_ns) * 1e-6; /* W*ns->mJ */
	c->loop_mj += we.energy_j * 1000.0;
	c->loop_unc_mj += isfinite(we.uncertainty_j) ? we.uncertainty_j * 1000.0 : 0;
	double per_iter_mj = (we.energy_j * 1000.0 - outside_mj) / iters;
	/* each update's true time lies within half its bracket of the estimate: the iterations the
	 * window holds are known to that much time of them, the energy itself exactly */
	double timing_mj = per_iter_mj * 0.5 * (double)(sig0 + sig1) / inside_ns;
	c->loop_iter_mj += per_iter_mj;
	c->loop_iter_unc_mj += ((isfinite(we.uncertainty_j) ? we.uncertainty_j * 1000.0 : 0) + 0.05 * outside_mj) / iters +
			       timing_mj;
	if (c->loop_window_ns == 0) {
		c->loop_window_ns = w1 - w0;
		c->loop_window_iters = iters;
		c->loop_window_inside_ns = inside_ns;
	}
	if (c->loop_counter_periods == 0 || we.counter_periods < c->loop_counter_periods)
		c->loop_counter_periods = we.counter_periods;
	return 1;
}

/* awake_idle_mw's state: the device's activity (each start with the latest end up to it) and
 * its clocked power samples; oom once out of memory. */
struct awake {
	struct awake_act {
		int64_t start, end_max; /* an activity's start; the latest end up to it */
	} *act;
	struct awake_ps {
		int64_t t, mw, clock;
	} *ps;
	size_t nact, cap, np, pcap;
	int64_t maxclk;
};

/* Appends one activity of the device. */
static int add_activity(void *ud, int64_t start_ns, int64_t end_ns)
{
	struct awake *A = ud;
	struct awake_act *na = kj_grow(A->act, &A->cap, A->nact, sizeof(*A->act), 4096);
	if (!na)
		return KJ_ENOMEM;
	A->act = na;
	A->act[A->nact].start = start_ns;
	A->act[A->nact].end_max = A->nact && A->act[A->nact - 1].end_max > end_ns ? A->act[A->nact - 1].end_max : end_ns;
	A->nact++;
	return 0;
}

/* Appends one clocked power sample of the device. */
static int add_clocked(void *ud, int64_t t_ns, int64_t power_mw, int64_t sm_clock_mhz)
{
	struct awake *A = ud;
	struct awake_ps *np_ = kj_grow(A->ps, &A->pcap, A->np, sizeof(*A->ps), 4096);
	if (!np_)
		return KJ_ENOMEM;
	A->ps = np_;
	A->ps[A->np].t = t_ns;
	A->ps[A->np].mw = power_mw;
	A->ps[A->np].clock = sm_clock_mhz;
	if (sm_clock_mhz > A->maxclk)
		A->maxclk = sm_clock_mhz;
	A->np++;
	return 0;
}

/* Power of a device that waits with its clocks up — what a launch-bound program's GPU draws
 * between kernels, well above deep idle. Taken from the run itself: the median of readings with
 * the SM clock within 10% of its highest reading and no GPU activity from 150 ms before the
 * reading (NVML power averages over about 100 ms) to 20 ms after. < 0 when fewer than 20 such
 * readings exist. */
static double awake_idle_mw(sqlite3 *db, int64_t dev, int64_t *nsel)
{
	struct awake A = {0};
	const struct awake_act *act;
	const struct awake_ps *ps;
	size_t nq = 0, np, nact;
	int64_t maxclk;
	double *q = NULL, med = -1;
	int rc;
	*nsel = 0;
	rc = kj_store_a_device_activity_each(db, dev, add_activity, &A);
	if (rc == KJ_EDB)
		return -1;
	if (rc || kj_store_a_clocked_power_each(db, dev, add_clocked, &A))
		goto out;
	act = A.act;
	ps = A.ps;
	np = A.np;
	nact = A.nact;
	maxclk = A.maxclk;
	q = malloc((np ? np : 1) * sizeof(*q));
	if (!q)
		goto out;
	for (size_t i = 0, a = 0; i < np; i++) {
		int64_t lo = ps[i].t - 150000000LL, hi = ps[i].t + 20000000LL;
		if (ps[i].clock * 10 < maxclk * 9)
			continue;
		while (a < nact && act[a].start <= hi)
			a++; /* act[a-1]: the last activity starting before hi */
		if (a > 0 && act[a - 1].end_max >= lo)
			continue;
		q[nq++] = (double)ps[i].mw;
	}
	if (nq >= 20) {
		kj_sort_doubles(q, nq);
		med = kj_quantile_sorted(q, nq, 0.5);
	}
	*nsel = (int64_t)nq;
out:
	free(A.act);
	free(A.ps);
	free(q);
	return med;
}

/* add_idle's state: the run and the comparison whose deep idle power it sums. */
struct idle_sum {
	sqlite3 *db;
	struct kj_compare *c;
};

/* Adds one device's idle power (where known) to the deep idle power. */
static int add_idle(void *ud, int64_t device_id)
{
	struct idle_sum *I = ud;
	double w = kj_energy_idle_mw(I->db, device_id);
	if (w >= 0)
		I->c->deep_idle_w = (I->c->deep_idle_w < 0 ? 0 : I->c->deep_idle_w) + w / 1000.0;
	return 0;
}

/* Measured energy of every iteration from the samples of each GPU the run's work ran on (every
 * sampled GPU where none of the work names one); power statistics inside the
 * kept windows. */
int cmp_compute_energy(sqlite3 *db, struct kj_compare *c)
{
	int64_t devs[64];
	size_t nd = 0;
	double idle_total = 0;
	int idle_known = 1;
	int rc = 0;

	c->idle_w = c->deep_idle_w = c->awake_idle_w = -1;
	c->power_avg_w = c->power_min_w = c->power_max_w = -1;
	/* the GPUs the run's work ran on: a GPU beside them, sampled too, may run another job */
	if (kj_store_a_power_devices(db, devs, 64, &nd))
		return KJ_EDB;
	c->n_devices_power = (int64_t)nd;
	if (nd == 0) {
		/* no samples: idle power may still be known for the run's devices */
		struct idle_sum I = {db, c};
		if (kj_store_a_idle_devices_each(db, add_idle, &I))
			return KJ_EDB;
		c->idle_w = c->deep_idle_w; /* no readings, so no awake idle */
		return 0;
	}
	for (size_t i = 0; i < c->it.n; i++)
		c->iv[i].energy_ok = 1;
	int loop_ok = loop_span(c);
	c->win_power_s = c->win_s = 0;
	double psum = 0, awake_total = 0;
	int64_t pn = 0;
	int awake_known = 1;
	for (size_t d = 0; d < nd; d++) {
		struct kj_power_sample *s = NULL;
		size_t n = 0;
		int64_t nsel = 0;
		double idle_mw = kj_energy_idle_mw(db, devs[d]);
		double awake_mw = awake_idle_mw(db, devs[d], &nsel);
		c->n_awake_samples += nsel;
		if (awake_mw < 0)
			awake_known = 0;
		else
			awake_total += awake_mw / 1000.0;
		if (idle_mw < 0)
			idle_known = 0;
		else
			idle_total += idle_mw / 1000.0;
		rc = kj_energy_load_samples(db, devs[d], &s, &n);
		if (rc) {
			kj_errorf("power samples of device %lld: %s", (long long)devs[d],
				  kj_strerror(rc));
			free(s);
			return rc;
		}
		c->n_power_samples += (int64_t)n;
		size_t j = 0;
		for (size_t i = 0; i < c->it.n; i++) {
			struct cmp_iter *x = &c->iv[i];
			struct kj_window_energy we;
			memset(&we, 0, sizeof(we));
			if (n == 0 ||
			    kj_energy_window(s, n, x->start_ns, x->end_ns, idle_mw, &we) != 0 ||
			    !we.ok || !isfinite(we.energy_j)) {
				x->energy_ok = 0;
			} else {
				x->energy_measured_mj += we.energy_j * 1000.0;
				if (isfinite(we.uncertainty_j))
					x->energy_unc_mj += we.uncertainty_j * 1000.0;
				if (!x->skipped) { /* how much of the windows no counter period resolves */
					double len = (double)(x->end_ns - x->start_ns) * 1e-9;
					c->win_power_s += we.counter_periods == 0 ? len : we.power_s;
					c->win_s += len;
				}
			}
			if (x->skipped)
				continue;
			/* power statistics of samples inside kept windows (iterations sorted) */
			while (j < n && s[j].t_ns < x->start_ns)
				j++;
			for (size_t k = j; k < n && s[k].t_ns <= x->end_ns; k++) {
				int64_t p = s[k].power_mw >= 0 ? s[k].power_mw : s[k].power_avg_mw;
				if (p < 0)
					continue;
				double w = (double)p / 1000.0;
				if (c->power_min_w < 0 || w < c->power_min_w)
					c->power_min_w = w;
				if (w > c->power_max_w)
					c->power_max_w = w;
				psum += w;
				pn++;
			}
		}
		if (loop_ok)
			loop_ok = add_loop_energy(c, s, n, idle_mw, awake_mw >= 0 ? awake_mw / 1000.0 : idle_mw / 1000.0);
		free(s);
	}
	c->have_loop = loop_ok && c->loop_n > 0;
	c->n_power_in_windows = pn;
	if (pn)
		c->power_avg_w = psum / (double)pn;
	if (idle_known)
		c->deep_idle_w = idle_total;
	if (awake_known)
		c->awake_idle_w = awake_total;
	/* the idle term: the GPU waits awake between kernels; deep idle only when that is unknown */
	c->idle_w = awake_known ? awake_total : c->deep_idle_w;
	return 0;
}
