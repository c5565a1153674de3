/* Amortised energy of short repeated work: keep the GPU busy with the caller's units long
 * enough that many counter update edges fall inside the busy span, and divide the counter's
 * energy between two edges by the launches completed between them. No CUDA here: the caller's
 * enqueue()/sync() do the GPU work (a CUDA graph of U launches, say). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_error.h"
#include "kj_grow.h"
#include "kj_sampler.h"

#define NS 1e-9
#define KJ_BATCH_NS 20000000LL /* one sync per ~20 ms of work: bubbles stay under 0.1% */

struct mark {
	int64_t t;
	int64_t units;
};

/* Units completed at time t, by linear interpolation between sync points. */
static double units_at(const struct mark *m, size_t n, int64_t t)
{
	if (t <= m[0].t)
		return (double)m[0].units;
	for (size_t i = 1; i < n; i++)
		if (t <= m[i].t) {
			double f = (double)(t - m[i - 1].t) / (double)(m[i].t - m[i - 1].t);
			return (double)m[i - 1].units + f * (double)(m[i].units - m[i - 1].units);
		}
	return (double)m[n - 1].units;
}

/* Appends the sync point (t, units done by then). 0, or KJ_ENOMEM with the marks unchanged. */
static int mark_push(struct mark **m, size_t *n, size_t *cap, int64_t t, int64_t units)
{
	struct mark *g = kj_grow(*m, cap, *n, sizeof(**m), 1024);
	if (!g)
		return KJ_ENOMEM;
	*m = g;
	g[(*n)++] = (struct mark){t, units};
	return 0;
}

/* SM clock and clocks-event reason readings over the measured span, at most one of each every
 * 50 ms (a read costs tens of µs). reasons: their bits ORed, -1 while none was read. */
struct clock_watch {
	double sum;
	int n, min, max;
	int64_t last;
	int64_t reasons;
};

static void clock_watch_read(struct clock_watch *cw, struct kj_gpu_backend *be, int idx, int64_t now)
{
	int mhz = 0;
	uint64_t mask = 0;
	if (now - cw->last < 50000000LL)
		return;
	cw->last = now;
	if (be->clocks_event_reasons && be->clocks_event_reasons(be->ctx, idx, &mask) == 0)
		cw->reasons = (cw->reasons < 0 ? 0 : cw->reasons) | (int64_t)(mask & INT64_MAX);
	if (!be->sm_clock || be->sm_clock(be->ctx, idx, &mhz) != 0 || mhz <= 0)
		return;
	cw->sum += mhz;
	cw->min = cw->n == 0 || mhz < cw->min ? mhz : cw->min;
	cw->max = cw->n == 0 || mhz > cw->max ? mhz : cw->max;
	cw->n++;
}

/* A result that holds no figure: method "none", clocks and reasons unknown. */
static void result_none(struct kj_amortize_result *r)
{
	memset(r, 0, sizeof(*r));
	r->method = "none";
	r->sm_clock_mean_mhz = r->sm_clock_min_mhz = r->sm_clock_max_mhz = -1;
	r->throttle_reasons = -1;
}

static int run_units(const struct kj_amortize_work *w, int count)
{
	for (int i = 0; i < count; i++) {
		int rc = w->enqueue(w->ctx);
		if (rc)
			return rc;
	}
	return w->sync(w->ctx);
}

/* Runs units until the SM clock has settled: 5 readings 50 ms apart within 1 % (15 MHz at least),
 * after at least warm_min seconds, for at most warm_max. *mhz (mhz not NULL): the last reading
 * (-1: none).
 * *batch: units a sync, grown to ~20 ms of work; kept for the caller's measurement. */
static int settle(const struct kj_amortize_work *w, struct kj_gpu_backend *be, int idx, double warm_min,
		  double warm_max, int *batch, int *mhz)
{
	int clk[5] = {0}, nclk = 0, rc;
	int64_t t0 = kj_now_ns(), last_clk = 0, unit_ns;
	int last = -1;
	for (;;) {
		int64_t a = kj_now_ns();
		if ((rc = run_units(w, *batch)))
			return rc;
		int64_t b = kj_now_ns();
		unit_ns = (b - a) / *batch;
		if (unit_ns > 0 && (b - a) < KJ_BATCH_NS / 2 && *batch < 1 << 20)
			*batch = (int)(KJ_BATCH_NS / unit_ns) + 1;
		if (b - last_clk >= 50000000LL) {
			int m = 0;
			last_clk = b;
			if (be->sm_clock && be->sm_clock(be->ctx, idx, &m) == 0 && m > 0) {
				clk[nclk % 5] = m;
				nclk++;
				last = m;
			}
		}
		if (mhz)
			*mhz = last;
		if ((double)(b - t0) * NS > warm_max)
			return 0; /* not steady: measure anyway (docs/energy.md) */
		if (nclk >= 5 && (double)(b - t0) * NS >= warm_min) {
			int lo = clk[0], hi = clk[0];
			for (int i = 1; i < 5; i++) {
				lo = clk[i] < lo ? clk[i] : lo;
				hi = clk[i] > hi ? clk[i] : hi;
			}
			if (hi - lo <= (hi / 100 > 15 ? hi / 100 : 15))
				return 0;
		}
	}
}

int kj_amortize_measure_with(const struct kj_amortize_work *w, const struct kj_amortize_opts *o,
			     struct kj_gpu_backend *be, struct kj_amortize_result *r)
{
	double min_s = o->min_seconds > 0 ? o->min_seconds : 3.0;
	int min_upd = o->min_updates > 0 ? o->min_updates : 20;
	double warm_max = o->warmup_max_s > 0 ? o->warmup_max_s : 5.0;
	double warm_min = o->warmup_min_s > 0 ? o->warmup_min_s : 0.5;
	struct kj_sampler *s = NULL;
	struct kj_power_sample *v = NULL;
	struct mark *marks = NULL;
	size_t nm = 0, cap = 0, n = 0;
	int rc, batch = 1;
	int64_t t0, units = 0;

	result_none(r);
	if (!w || !w->enqueue || !w->sync || w->launches_per_unit <= 0)
		return KJ_EINVAL;

	/* warm-up: run units until the SM clock has settled */
	if ((rc = settle(w, be, o->nvml_index, warm_min, warm_max, &batch, NULL)))
		return rc;

	struct kj_sampler_opts so = {.interval_us = 5000, .nvml_indices = &o->nvml_index, .n_indices = 1};
	rc = kj_sampler_start_with(&so, be, &s);
	if (rc)
		return rc;
	const struct kj_gpu_info *info = kj_sampler_info(s, 0, NULL);
	int has_counter = info->energy_counter;
	/* measure: batches of units, a sync point after each, until long enough and enough edges.
	 * The first mark is the start (no units yet), so that counter edges inside the first batch
	 * interpolate instead of all landing on its end (a unit longer than the window: 0 units) */
	t0 = kj_now_ns();
	if ((rc = mark_push(&marks, &nm, &cap, t0, 0)))
		goto out;
	struct clock_watch cw = {0, 0, -1, -1, 0, -1};
	for (;;) {
		/* the clock and its reasons are read while the batch runs: right after a sync the GPU is
		 * idle, and a reading then says "GPU idle" where the load was held at the power cap */
		for (int i = 0; i < batch && !rc; i++)
			rc = w->enqueue(w->ctx);
		if (!rc) {
			clock_watch_read(&cw, be, o->nvml_index, kj_now_ns());
			rc = w->sync(w->ctx);
		}
		if (rc)
			goto out;
		units += batch;
		if ((rc = mark_push(&marks, &nm, &cap, kj_now_ns(), units)))
			goto out;
		double el = (double)(marks[nm - 1].t - t0) * NS;
		struct kj_sampler_stats st;
		kj_sampler_get_stats(s, 0, &st);
		if (el >= min_s && (!has_counter || st.edges >= min_upd + 3))
			break;
		if (el > 10 * min_s + 60) {
			rc = KJ_EGPU; /* the counter never moved enough */
			goto out;
		}
	}
	kj_sampler_stop(s);
	rc = kj_sampler_samples(s, 0, &v, &n);
	if (rc)
		goto out;
	/* the GPU was busy from t0 (warm-up ran just before) to the last sync */
	int64_t busy0 = t0, busy1 = marks[nm - 1].t;
	if (has_counter) {
		/* edges inside the busy span, with their brackets */
		int64_t ta = -1, tb = -1, sa = 0, sb = 0, prev_t = -1, prev_e = -1;
		uint64_t ea = 0, eb = 0;
		double *per = malloc(n * sizeof(double));
		size_t nper = 0;
		int64_t last_t = -1;
		uint64_t last_e = 0;
		if (!per) {
			rc = KJ_ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			if (v[i].energy_mj < 0)
				continue;
			if (prev_t >= 0 && v[i].energy_mj != prev_e) {
				int64_t te = prev_t + (v[i].t_ns - prev_t) / 2;
				if (te > busy0 + 10000000LL && te < busy1) {
					if (ta < 0) {
						ta = te;
						sa = v[i].t_ns - prev_t;
						ea = (uint64_t)v[i].energy_mj;
					} else {
						/* per-period energy per unit: the statistical spread */
						double du = units_at(marks, nm, te) - units_at(marks, nm, last_t);
						if (du > 0)
							per[nper++] = (double)((uint64_t)v[i].energy_mj - last_e) / du;
					}
					tb = te;
					sb = v[i].t_ns - prev_t;
					eb = (uint64_t)v[i].energy_mj;
					last_t = te;
					last_e = (uint64_t)v[i].energy_mj;
				}
			}
			prev_t = v[i].t_ns;
			prev_e = v[i].energy_mj;
		}
		if (ta < 0 || tb <= ta) {
			free(per);
			rc = KJ_EGPU;
			goto out;
		}
		double du = units_at(marks, nm, tb) - units_at(marks, nm, ta);
		double launches = du * w->launches_per_unit;
		double mj = (double)(eb - ea), secs = (double)(tb - ta) * NS;
		r->seconds = secs;
		r->launches = (int64_t)llround(launches);
		r->time_per_launch_ns = secs * 1e9 / launches;
		r->energy_per_launch_mj = mj / launches;
		r->avg_power_w = mj / 1000.0 / secs;
		r->counter_updates = (int)nper;
		/* uncertainty: the two edge instants (bracket each), one unit of interpolation at each
		 * end, and the spread of the per-period figures (standard error), in quadrature */
		double u_edges = r->avg_power_w * 1000.0 * (double)(sa + sb) * NS / launches;
		double u_interp = r->energy_per_launch_mj * 2.0 / (du > 1 ? du : 1);
		double mean = 0, var = 0;
		for (size_t i = 0; i < nper; i++)
			mean += per[i];
		mean /= nper ? (double)nper : 1;
		for (size_t i = 0; i < nper; i++)
			var += (per[i] - mean) * (per[i] - mean);
		double u_stat = nper > 1 ? sqrt(var / (double)(nper - 1)) / sqrt((double)nper) /
						w->launches_per_unit
					 : 0;
		r->energy_unc_mj = sqrt(u_edges * u_edges + u_interp * u_interp + u_stat * u_stat);
		r->method = "counter-edges";
		free(per);
	} else {
		struct kj_window_energy we;
		int64_t a = marks[0].t, b = busy1;
		rc = kj_energy_window(v, n, a, b, -1, &we);
		if (rc || !we.ok) {
			rc = rc ? rc : KJ_EGPU;
			goto out;
		}
		double launches = (double)(marks[nm - 1].units - marks[0].units) * w->launches_per_unit;
		r->seconds = (double)(b - a) * NS;
		r->launches = (int64_t)launches;
		r->time_per_launch_ns = r->seconds * 1e9 / launches;
		r->energy_per_launch_mj = we.energy_j * 1000.0 / launches;
		r->energy_unc_mj = we.uncertainty_j * 1000.0 / launches;
		r->avg_power_w = we.avg_power_w;
		r->method = "power-integration";
	}
	/* a figure that is not finite and positive is not given (no work between the edges, say) */
	if (!(isfinite(r->energy_per_launch_mj) && r->energy_per_launch_mj > 0 && isfinite(r->energy_unc_mj) &&
	      isfinite(r->time_per_launch_ns) && r->time_per_launch_ns > 0)) {
		result_none(r);
		rc = KJ_EGPU;
	}
	if (rc == 0 && cw.n > 0) {
		r->sm_clock_mean_mhz = cw.sum / cw.n;
		r->sm_clock_min_mhz = cw.min, r->sm_clock_max_mhz = cw.max;
	}
	if (rc == 0)
		r->throttle_reasons = cw.reasons;
out:
	free(v);
	free(marks);
	kj_sampler_close(s);
	return rc;
}

int kj_amortize_measure(const struct kj_amortize_work *w, const struct kj_amortize_opts *o,
			struct kj_amortize_result *r)
{
	char why[512];
	struct kj_gpu_backend be;
	int rc = kj_gpu_nvml_open(&be, why, sizeof(why));
	result_none(r);
	if (rc) {
		kj_errorf("%s", why);
		return KJ_ENODEV;
	}
	rc = kj_amortize_measure_with(w, o, &be, r);
	kj_gpu_backend_close(&be);
	return rc;
}

int kj_amortize_settle(const struct kj_amortize_work *w, int nvml_index, double warm_min_s, double warm_max_s,
		       int *mhz)
{
	char why[512];
	struct kj_gpu_backend be;
	int batch = 1;
	*mhz = -1;
	if (!w || !w->enqueue || !w->sync)
		return KJ_EINVAL;
	if (kj_gpu_nvml_open(&be, why, sizeof(why))) {
		kj_errorf("%s", why);
		return KJ_ENODEV;
	}
	int rc = settle(w, &be, nvml_index, warm_min_s > 0 ? warm_min_s : 0.25, warm_max_s > 0 ? warm_max_s : 5.0,
			&batch, mhz);
	kj_gpu_backend_close(&be);
	return rc;
}

size_t kj_l2_flush_bytes(int l2_bytes)
{
	return ((size_t)(l2_bytes > 0 ? l2_bytes : 64 << 20) * 2 + 4095) & ~(size_t)4095;
}

int kj_amortize_difference(const struct kj_amortize_result *with, const struct kj_amortize_result *alone,
			   double *mj, double *unc_mj, double *ns)
{
	*mj = with->energy_per_launch_mj - alone->energy_per_launch_mj;
	*unc_mj = sqrt(with->energy_unc_mj * with->energy_unc_mj + alone->energy_unc_mj * alone->energy_unc_mj);
	*ns = with->time_per_launch_ns - alone->time_per_launch_ns;
	return isfinite(*mj) && *mj > *unc_mj && *ns > 0;
}
