/* Window energy from NVML counter update edges (docs/energy.md explains the method).
 *
 * The counter changes about every 100 ms; between two update edges it gives the energy exactly.
 * A window is cut into the counter periods it overlaps: whole periods count exactly, a period cut
 * by the window's start or end contributes the share of its (exact) energy that the power
 * readings put inside the window, bounded by what the range of power seen around it allows.
 * Parts of a window that no counter period covers (before the first edge, after the last, across
 * a driver restart) are integrated from power readings and said so in `method`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_store_e_power.h"
#include "kj_energy.h"
#include "kj_error.h"

#define NS 1e-9
/* no GPU draws more than this: counter steps above it are restarts, not energy */
#define KJ_MAX_PLAUSIBLE_W 5000.0
/* relative margin on the range of power readings (readings are averages over part of a period) */
#define KJ_RANGE_MARGIN 0.02
/* uncertainty of energy integrated from power readings alone (driver averaging, calibration) */
#define KJ_POWER_REL_UNC 0.05
/* power readings this far around a counter period bound the power inside it */
#define KJ_RANGE_NS 300000000LL
/* a window is "steady" when this much on both sides of it is */
#define KJ_STEADY_NS 300000000LL
/* ... and the power readings there spread by at most this fraction of the mean */
#define KJ_STEADY_SPREAD 0.08

struct pw {
	int64_t t;
	double w;
};

struct edge {
	int64_t t;     /* estimated update time: midway between the last read of the old value and
			* the first read of the new one (timestamps are the middles of the reads) */
	double sig_ns; /* bound on its error: the whole bracket, as the driver may latch the value
			* anywhere inside each (~4.7 ms) read */
	uint64_t e;    /* counter value after the update, mJ */
};

struct period {
	int64_t t0, t1;
	double mj;     /* exact energy of the period; NAN across a restart */
	double sig0, sig1;
};

/* Counter step from a to b over dt_s seconds: handles a 64-bit or 32-bit wrap; returns -1 for a
 * step no GPU could make (a driver restart: the counter went backwards or jumped). */
static int counter_delta(uint64_t a, uint64_t b, double dt_s, double *mj)
{
	double maxd = KJ_MAX_PLAUSIBLE_W * (dt_s > 0 ? dt_s : 0) * 1000.0 + 1000.0;
	uint64_t d = b - a;
	if ((double)d <= maxd) {
		*mj = (double)d;
		return 0;
	}
	if (a <= 0xffffffffULL && b <= 0xffffffffULL) {
		uint32_t d32 = (uint32_t)(b - a);
		if ((double)d32 <= maxd) {
			*mj = (double)d32;
			return 0;
		}
	}
	return -1;
}

static size_t lower_bound(const struct kj_power_sample *s, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].t_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Power at time t by linear interpolation between readings (held constant past either end). */
static double p_at(const struct pw *p, size_t np, int64_t t)
{
	size_t lo = 0, hi = np;
	if (t <= p[0].t)
		return p[0].w;
	if (t >= p[np - 1].t)
		return p[np - 1].w;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p[mid].t < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* p[lo-1].t < t <= p[lo].t */
	double f = (double)(t - p[lo - 1].t) / (double)(p[lo].t - p[lo - 1].t);
	return p[lo - 1].w + f * (p[lo].w - p[lo - 1].w);
}

/* Integral of the interpolated power over [x, y] in joules. */
static double p_int(const struct pw *p, size_t np, int64_t x, int64_t y)
{
	double j = 0;
	int64_t a = x;
	double pa = p_at(p, np, x);
	size_t i = 0;
	if (y <= x)
		return 0;
	while (i < np && p[i].t <= x)
		i++;
	for (; i < np && p[i].t < y; i++) {
		j += 0.5 * (pa + p[i].w) * (double)(p[i].t - a) * NS;
		a = p[i].t;
		pa = p[i].w;
	}
	j += 0.5 * (pa + p_at(p, np, y)) * (double)(y - a) * NS;
	return j;
}

/* Smallest and largest power read in [x, y] (interpolated values at both ends included). */
static void p_range(const struct pw *p, size_t np, int64_t x, int64_t y, double *lo, double *hi)
{
	double a = p_at(p, np, x), b = p_at(p, np, y);
	*lo = fmin(a, b);
	*hi = fmax(a, b);
	for (size_t i = 0; i < np; i++) {
		if (p[i].t < x || p[i].t > y)
			continue;
		*lo = fmin(*lo, p[i].w);
		*hi = fmax(*hi, p[i].w);
	}
}

/* Gaps in the power readings inside [x, y]: spans between readings (or from the window's ends
 * to the nearest reading) longer than max_ns. Returns their total length in ns. */
static int64_t p_gaps(const struct pw *p, size_t np, int64_t x, int64_t y, int64_t max_ns, int *count)
{
	int64_t total = 0, prev = INT64_MIN;
	*count = 0;
	if (!np || p[0].t > x + max_ns || p[np - 1].t < y - max_ns) {
		*count = 1;
		return y - x;
	}
	for (size_t i = 0; i < np; i++) {
		if (prev != INT64_MIN && p[i].t - prev > max_ns) {
			int64_t a = prev > x ? prev : x, b = p[i].t < y ? p[i].t : y;
			if (b > a) {
				total += b - a;
				(*count)++;
			}
		}
		prev = p[i].t;
	}
	return total;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Energy from power readings alone over [a, b], with its uncertainty and gaps. */
static void power_segment(const struct pw *p, size_t np, int64_t a, int64_t b, int64_t max_gap_ns,
			  double *j, double *unc, int *gaps, double *gap_s)
{
	double lo, hi;
	int g = 0;
	int64_t gap_ns = p_gaps(p, np, a, b, max_gap_ns, &g);
	*j = p_int(p, np, a, b);
	p_range(p, np, a, b, &lo, &hi);
	*unc = KJ_POWER_REL_UNC * *j + 0.5 * (hi - lo) * (double)(b - a) * NS +
	       fmax(hi, 0.2 * *j / fmax((double)(b - a) * NS, 1e-9)) * (double)gap_ns * NS;
	*gaps += g;
	*gap_s += (double)gap_ns * NS;
}

/* A steady neighbourhood around [t0, t1]: the counter periods from KJ_STEADY_NS before to
 * KJ_STEADY_NS after the window all have the same mean power (within what their edge timing
 * explains, plus 2%), and the power readings there spread by at most KJ_STEADY_SPREAD. Then the best
 * estimate of any part of it is that mean power times the length (no edge timing error at the
 * window's ends). Returns 1 with the power *q_w and the bound *u_w on its error, else 0. */
static int steady_power(const struct edge *e, size_t ne, const struct pw *p, size_t np,
			int64_t t0, int64_t t1, int64_t max_gap_ns, double *q_w, double *u_w)
{
	size_t i0 = SIZE_MAX, i1 = SIZE_MAX;
	double sum_mj = 0, lo, hi, q;
	int g = 0;
	if (ne < 4 || np < 3)
		return 0;
	/* i0: last edge KJ_STEADY_NS before t0 (else the first edge, if before t0); i1 likewise */
	for (size_t i = 0; i < ne && e[i].t <= t0 - KJ_STEADY_NS; i++)
		i0 = i;
	if (i0 == SIZE_MAX && e[0].t <= t0)
		i0 = 0;
	for (size_t i = ne; i-- > 0 && e[i].t >= t1 + KJ_STEADY_NS;)
		i1 = i;
	if (i1 == SIZE_MAX && e[ne - 1].t >= t1)
		i1 = ne - 1;
	if (i0 == SIZE_MAX || i1 == SIZE_MAX || i1 < i0 + 3)
		return 0;
	for (size_t i = i0 + 1; i <= i1; i++) {
		double d;
		if (counter_delta(e[i - 1].e, e[i].e, (double)(e[i].t - e[i - 1].t) * NS, &d))
			return 0;
		sum_mj += d;
	}
	q = sum_mj / 1000.0 / ((double)(e[i1].t - e[i0].t) * NS);
	for (size_t i = i0 + 1; i <= i1; i++) {
		double d = 0, L = (double)(e[i].t - e[i - 1].t);
		counter_delta(e[i - 1].e, e[i].e, L * NS, &d);
		double qi = d / 1000.0 / (L * NS);
		if (fabs(qi - q) > qi * (e[i - 1].sig_ns + e[i].sig_ns) / L + 0.02 * q)
			return 0;
	}
	if (p_gaps(p, np, e[i0].t, e[i1].t, max_gap_ns, &g) > 0 || g)
		return 0;
	p_range(p, np, e[i0].t, e[i1].t, &lo, &hi);
	if (hi - lo > KJ_STEADY_SPREAD * q)
		return 0;
	*q_w = q;
	*u_w = 0.5 * (hi - lo) + q * (e[i0].sig_ns + e[i1].sig_ns) / (double)(e[i1].t - e[i0].t) +
	       0.003 * q;
	return 1;
}

int kj_energy_window(const struct kj_power_sample *s, size_t n, int64_t t0_ns, int64_t t1_ns,
		     double idle_mw, struct kj_window_energy *out)
{
	struct pw *p = NULL;
	struct edge *e = NULL;
	int64_t *dts = NULL;
	size_t np = 0, ne = 0, lo, hi, nd = 0;
	int64_t margin = 1000000000LL, max_gap_ns, read_med = 0, pw_med = 0;
	double j = 0, unc = 0, var = 0, power_ns = 0, pgap_s = 0;
	int rc = 0, pgaps = 0;

	memset(out, 0, sizeof(*out));
	out->method = "none";
	out->dynamic_j = NAN;
	if (!s || !n || t1_ns <= t0_ns)
		return t1_ns <= t0_ns ? KJ_EINVAL : 0;

	/* slice of samples around the window, widened until it holds an edge on each side */
	for (;;) {
		int left = 0, right = 0;
		lo = lower_bound(s, n, t0_ns - margin);
		hi = lower_bound(s, n, t1_ns + margin);
		for (size_t i = lo + 1; i < hi && i < n; i++) {
			if (s[i].energy_mj < 0)
				continue;
			if (s[i].t_ns <= t0_ns)
				left = 1;
			if (s[i].t_ns >= t1_ns)
				right = 1;
		}
		if ((left && right) || (lo == 0 && hi == n))
			break;
		margin *= 4;
	}
	if (hi < n)
		hi++;

	p = malloc((hi - lo + 1) * sizeof(*p));
	e = malloc((hi - lo + 1) * sizeof(*e));
	dts = malloc((hi - lo + 1) * sizeof(*dts));
	if (!p || !e || !dts) {
		rc = KJ_ENOMEM;
		goto done;
	}
	{
		int64_t prev_t = -1;
		uint64_t prev_e = 0;
		int64_t prev_read = -1;
		for (size_t i = lo; i < hi; i++) {
			int64_t w = s[i].power_mw >= 0 ? s[i].power_mw : s[i].power_avg_mw;
			if (w >= 0) {
				if (np && s[i].t_ns <= p[np - 1].t)
					p[np - 1].w = (double)w / 1000.0; /* same instant: keep the latest */
				else
					p[np++] = (struct pw){s[i].t_ns, (double)w / 1000.0};
			}
			if (s[i].energy_mj < 0)
				continue;
			uint64_t v = (uint64_t)s[i].energy_mj;
			if (prev_read >= 0)
				dts[nd++] = s[i].t_ns - prev_read;
			prev_read = s[i].t_ns;
			if (prev_t >= 0 && v != prev_e)
				e[ne++] = (struct edge){prev_t + (s[i].t_ns - prev_t) / 2,
							 (double)(s[i].t_ns - prev_t), v};
			prev_t = s[i].t_ns;
			prev_e = v;
		}
	}
	if (nd) {
		qsort(dts, nd, sizeof(*dts), cmp_i64);
		read_med = dts[nd / 2];
	}
	if (np > 1) {
		size_t k = 0;
		for (size_t i = 1; i < np; i++)
			dts[k++] = p[i].t - p[i - 1].t;
		qsort(dts, k, sizeof(*dts), cmp_i64);
		pw_med = dts[k / 2];
	}
	/* a power gap: readings further apart than 4 periods and at least 50 ms */
	max_gap_ns = pw_med * 4 > 50000000LL ? pw_med * 4 : 50000000LL;

	{
		double q, u;
		if (steady_power(e, ne, p, np, t0_ns, t1_ns, max_gap_ns, &q, &u)) {
			double dur = (double)(t1_ns - t0_ns) * NS;
			for (size_t i = 1; i < ne; i++)
				out->counter_periods += e[i - 1].t >= t0_ns && e[i].t <= t1_ns;
			out->ok = 1;
			out->steady = 1;
			out->energy_j = q * dur;
			out->uncertainty_j = u * dur + 0.002;
			out->avg_power_w = q;
			out->method = "counter-edges";
			if (idle_mw >= 0)
				out->dynamic_j = out->energy_j - idle_mw / 1000.0 * dur;
			goto done;
		}
	}
	/* walk the window: counter periods where they exist, power readings elsewhere */
	int64_t cur = t0_ns;
	size_t k = 1;
	while (k < ne && e[k].t <= t0_ns)
		k++;
	while (cur < t1_ns) {
		int64_t seg_end;
		struct period per = {0, 0, NAN, 0, 0};
		int have = 0;
		if (ne >= 2 && k < ne && e[k - 1].t <= cur) {
			per.t0 = e[k - 1].t;
			per.t1 = e[k].t;
			per.sig0 = e[k - 1].sig_ns;
			per.sig1 = e[k].sig_ns;
			have = 1;
			if (counter_delta(e[k - 1].e, e[k].e, (double)(per.t1 - per.t0) * NS, &per.mj)) {
				per.mj = NAN;
				out->resets++;
			}
			seg_end = per.t1 < t1_ns ? per.t1 : t1_ns;
		} else {
			/* no counter period here: up to the first edge, or to the window's end */
			seg_end = t1_ns;
			if (ne && e[0].t > cur && e[0].t < t1_ns && ne >= 2)
				seg_end = e[0].t;
		}
		if (have && !isnan(per.mj)) {
			int64_t a = cur, b = seg_end;
			double L = (double)(per.t1 - per.t0), tau = (double)(b - a);
			if (a == per.t0 && b == per.t1) {
				j += per.mj / 1000.0;
				out->counter_periods++;
				/* a missed read across the whole period is a gap, the energy is still exact */
				if (read_med > 0 && per.sig1 > 3.0 * (double)read_med && per.sig1 > 20e6) {
					out->gaps++;
					out->gap_s += per.sig1 * NS;
				}
			} else {
				double dj = per.mj / 1000.0, share = tau / L, plo, phi, lo_e, hi_e, est;
				double pbar = dj / (L * NS), spread, u_shape, u_t0, u_t1, u_len;
				int g = 0;
				int64_t gap_ns = np >= 2 ? p_gaps(p, np, a, b, max_gap_ns, &g) : b - a;
				if (np >= 2 && !g) {
					double whole = p_int(p, np, per.t0, per.t1);
					double part = p_int(p, np, a, b);
					if (whole > 0 && part >= 0)
						share = part / whole;
					/* range of power around the period; readings average only part of each
					 * update period, so the true range is taken twice as wide as seen */
					p_range(p, np, per.t0 - KJ_RANGE_NS, per.t1 + KJ_RANGE_NS, &plo, &phi);
					plo = fmin(plo, pbar);
					phi = fmax(phi, pbar);
					spread = phi - plo;
					plo = fmax(0, plo - spread) * (1 - KJ_RANGE_MARGIN);
					phi = (phi + spread) * (1 + KJ_RANGE_MARGIN);
				} else {
					/* no power readings here: anything from zero to well above the mean */
					plo = 0;
					phi = fmax(KJ_MAX_PLAUSIBLE_W / 5, 3 * pbar);
					if (g) {
						out->gaps += g;
						out->gap_s += (double)gap_ns * NS;
					}
				}
				lo_e = fmax(plo * tau * NS, dj - phi * (L - tau) * NS);
				hi_e = fmin(phi * tau * NS, dj - plo * (L - tau) * NS);
				if (lo_e > hi_e) {
					double m = 0.5 * (lo_e + hi_e);
					lo_e = hi_e = m;
				}
				est = dj * share;
				est = fmin(fmax(est, lo_e), hi_e);
				j += est;
				/* independent terms, each a bound, added in quadrature: the shape of power
				 * inside the period, and the two update instants (known to within sig): an
				 * instant that is also a window end moves energy across it, and both change
				 * the period's length that the share is taken of */
				u_shape = fmax(est - lo_e, hi_e - est);
				u_t0 = (a == per.t0 ? phi : 0) * per.sig0 * NS;
				u_t1 = (b == per.t1 ? phi : 0) * per.sig1 * NS;
				u_len = est * (per.sig0 + per.sig1) / L;
				var += u_shape * u_shape + u_t0 * u_t0 + u_t1 * u_t1 + u_len * u_len;
			}
		} else {
			double pj = 0, pu = 0;
			if (np < 2) {
				/* neither counter nor power covers this part: the energy is unknown */
				out->ok = 0;
				out->energy_j = NAN;
				out->uncertainty_j = NAN;
				goto done;
			}
			power_segment(p, np, cur, seg_end, max_gap_ns, &pj, &pu, &pgaps, &pgap_s);
			j += pj;
			unc += pu;
			power_ns += (double)(seg_end - cur);
		}
		cur = seg_end;
		if (have && cur >= per.t1)
			k++;
	}

	out->gaps += pgaps;
	out->gap_s += pgap_s;
	out->power_s = power_ns * NS;
	/* power-only parts with gaps over 10% of the window, or a window beyond every sample, are
	 * not measured: unknown, not zero */
	if (pgap_s * 1e9 > 0.1 * (double)(t1_ns - t0_ns) || s[n - 1].t_ns < t1_ns - max_gap_ns ||
	    s[0].t_ns > t0_ns + max_gap_ns) {
		out->ok = 0;
		out->energy_j = NAN;
		out->uncertainty_j = NAN;
		goto done;
	}
	out->ok = 1;
	out->energy_j = j;
	/* counter resolution: 1 mJ at each end; power-only parts add linearly (not independent) */
	out->uncertainty_j = sqrt(var) + unc + 0.002;
	out->avg_power_w = j / ((double)(t1_ns - t0_ns) * NS);
	if (power_ns <= 0)
		out->method = "counter-edges";
	else if (power_ns >= (double)(t1_ns - t0_ns))
		out->method = "power-integration";
	else
		out->method = "counter-edges+power";
	if (idle_mw >= 0)
		out->dynamic_j = j - idle_mw / 1000.0 * (double)(t1_ns - t0_ns) * NS;
done:
	free(p);
	free(e);
	free(dts);
	return rc;
}

struct sample_vec {
	struct kj_power_sample *v;
	size_t len, cap;
};

/* appends one stored row to the vector (ctx) */
static int sample_add(void *ctx, const struct kj_store_power_sample *r)
{
	struct sample_vec *s = ctx;
	if (s->len == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 1024;
		struct kj_power_sample *nv = realloc(s->v, nc * sizeof(*nv));
		if (!nv)
			return KJ_ENOMEM;
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->len++] = (struct kj_power_sample){r->t_ns, r->power_mw, r->power_avg_mw, r->energy_mj,
						  r->energy_updated};
	return 0;
}

/* Loads rows ordered by time; NULL columns become -1. */
int kj_energy_load_samples(sqlite3 *db, int64_t device_id, struct kj_power_sample **out, size_t *n)
{
	struct sample_vec s = {NULL, 0, 0};
	int rc;

	*out = NULL;
	*n = 0;
	rc = kj_store_e_power_samples(db, device_id, sample_add, &s);
	if (rc) {
		free(s.v);
		return rc;
	}
	*out = s.v;
	*n = s.len;
	return 0;
}

double kj_energy_idle_mw(sqlite3 *db, int64_t device_id)
{
	return kj_store_e_idle_median_mw(db, device_id);
}
