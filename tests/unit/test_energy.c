/* Energy estimator on synthetic streams of known energy: a true power curve, an NVML-like
 * counter updated every ~100 ms (jittered), instantaneous power that averages only the last
 * 25 ms of each 100 ms period, a sampler polling power every 5 ms and the counter back to back
 * (4.7 ms per read). Checks the estimate against the true integral AND that the stated
 * uncertainty covers the actual error; then wrap, restart, gaps, no counter, no coverage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_energy.h"

#define STEP_NS 100000LL /* truth resolution: 0.1 ms */
#define MS 1000000LL

enum load { STEADY, DUTY, RAMP };

struct synth {
	int64_t span_ns;
	size_t nt;
	double *cum_j; /* true energy from 0 to i*STEP_NS */
	struct kj_power_sample *s;
	size_t n, cap;
};

static uint64_t rng = 88172645463325252ULL;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static double true_power(enum load l, int64_t t)
{
	double ts = (double)t * 1e-9;
	switch (l) {
	case STEADY: return 691.0 + 4.0 * sin(ts * 37.0) + 2.0 * sin(ts * 211.0);
	case DUTY: return (t % (130 * MS)) < 30 * MS ? 660.0 : 123.0;
	case RAMP: return 150.0 + 50.0 * ts;
	}
	return 0;
}

static double cum_at(const struct synth *y, int64_t t)
{
	size_t i = (size_t)(t / STEP_NS);
	if (i + 1 >= y->nt)
		return y->cum_j[y->nt - 1];
	double f = (double)(t - (int64_t)i * STEP_NS) / STEP_NS;
	return y->cum_j[i] + f * (y->cum_j[i + 1] - y->cum_j[i]);
}

static double truth(const struct synth *y, int64_t a, int64_t b)
{
	return cum_at(y, b) - cum_at(y, a);
}

static void push(struct synth *y, struct kj_power_sample v)
{
	if (y->n == y->cap) {
		y->cap = y->cap ? y->cap * 2 : 4096;
		y->s = realloc(y->s, y->cap * sizeof(*y->s));
		assert_non_null(y->s);
	}
	y->s[y->n++] = v;
}

static int cmp_t(const void *a, const void *b)
{
	const struct kj_power_sample *x = a, *z = b;
	return (x->t_ns > z->t_ns) - (x->t_ns < z->t_ns);
}

struct opts {
	enum load load;
	int64_t span_ns;
	uint64_t counter0_mj;
	int wrap32;           /* store the counter modulo 2^32 */
	int64_t restart_at;   /* counter restarts from 0 here (0: never) */
	int64_t gap_from, gap_to; /* no reads at all in this span */
	int no_counter;
};

/* Builds the sample stream the sampler would record for the given load. */
static void make(struct synth *y, const struct opts *o)
{
	memset(y, 0, sizeof(*y));
	y->span_ns = o->span_ns;
	y->nt = (size_t)(o->span_ns / STEP_NS) + 2;
	y->cum_j = calloc(y->nt, sizeof(double));
	for (size_t i = 1; i < y->nt; i++)
		y->cum_j[i] = y->cum_j[i - 1] +
			      true_power(o->load, (int64_t)(i - 1) * STEP_NS + STEP_NS / 2) * STEP_NS * 1e-9;

	/* driver updates: counter every 100 ms +- 2 ms, power reading every 100 ms at another phase */
	int64_t next_c = (int64_t)(urand() * 100 * MS), next_p = (int64_t)(urand() * 100 * MS);
	int64_t c_t = 0, p_t = -1;
	uint64_t c_val = o->counter0_mj;
	double p_inst = true_power(o->load, 0), p_avg = p_inst;
	double restart_base = 0;
	int restarted = 0;

	/* counter thread: back-to-back reads of 4.5-4.9 ms; the value is latched somewhere inside */
	int64_t t = o->no_counter ? INT64_MAX : (int64_t)(urand() * 5 * MS);
	int64_t tp = (int64_t)(urand() * 5 * MS);
	while ((!o->no_counter && t < o->span_ns) || tp < o->span_ns) {
		int take_counter = !o->no_counter && t <= tp;
		/* a counter read takes 4.5-4.9 ms; the driver's value is latched somewhere inside */
		int64_t dur = 4500000 + (int64_t)(urand() * 400000);
		int64_t latch = t + (int64_t)(urand() * (double)dur);
		int64_t now = take_counter ? latch : tp;
		/* advance the driver's state to `now` */
		while (next_c <= now || next_p <= now) {
			if (next_c <= next_p) {
				c_t = next_c;
				double ej = cum_at(y, c_t);
				if (o->restart_at && c_t >= o->restart_at && !restarted) {
					restarted = 1;
					restart_base = ej;
				}
				c_val = (uint64_t)((double)o->counter0_mj * !restarted +
						   floor((ej - restart_base) * 1000.0));
				next_c += 100 * MS + (int64_t)((urand() - 0.5) * 4 * MS);
			} else {
				p_t = next_p;
				int64_t a = p_t - 25 * MS > 0 ? p_t - 25 * MS : 0;
				int64_t b1 = p_t - 1000 * MS > 0 ? p_t - 1000 * MS : 0;
				if (p_t > a)
					p_inst = truth(y, a, p_t) / ((double)(p_t - a) * 1e-9);
				if (p_t > b1)
					p_avg = truth(y, b1, p_t) / ((double)(p_t - b1) * 1e-9);
				next_p += 100 * MS;
			}
		}
		(void)c_t;
		(void)p_t;
		int in_gap = o->gap_to > o->gap_from && now >= o->gap_from && now < o->gap_to;
		if (take_counter) {
			int64_t mid = t + dur / 2;
			if (!in_gap && mid < o->span_ns) {
				uint64_t v = c_val;
				if (o->wrap32)
					v &= 0xffffffffULL;
				struct kj_power_sample r = {mid, -1, -1, (int64_t)v, 0};
				push(y, r);
			}
			t += dur + 20000;
		} else {
			if (!in_gap && tp < o->span_ns) {
				struct kj_power_sample r = {tp, (int64_t)(p_inst * 1000), (int64_t)(p_avg * 1000),
							    -1, 0};
				push(y, r);
			}
			tp += 5 * MS + (int64_t)((urand() - 0.5) * 0.4 * MS);
		}
	}
	qsort(y->s, y->n, sizeof(*y->s), cmp_t);
	/* mark update edges as the sampler does */
	int64_t prev = -2;
	for (size_t i = 0; i < y->n; i++) {
		if (y->s[i].energy_mj < 0)
			continue;
		y->s[i].energy_updated = prev != -2 && y->s[i].energy_mj != prev;
		prev = y->s[i].energy_mj;
	}
}

static void drop(struct synth *y)
{
	free(y->cum_j);
	free(y->s);
}

struct stats {
	int n, covered, ok;
	double sum_rel_err, max_rel_err, sum_rel_unc;
};

/* Random windows of length len inside [from, to]; accumulates error and coverage. */
static void windows(const struct synth *y, int64_t from, int64_t to, int64_t len, int count,
		    struct stats *st, const char *want_method)
{
	memset(st, 0, sizeof(*st));
	for (int i = 0; i < count; i++) {
		int64_t t0 = from + (int64_t)(urand() * (double)(to - from - len));
		int64_t t1 = t0 + len;
		struct kj_window_energy w;
		assert_int_equal(kj_energy_window(y->s, y->n, t0, t1, 123000.0, &w), 0);
		st->n++;
		if (!w.ok)
			continue;
		st->ok++;
		if (want_method)
			assert_string_equal(w.method, want_method);
		double tr = truth(y, t0, t1), err = fabs(w.energy_j - tr);
		st->sum_rel_err += err / tr;
		st->sum_rel_unc += w.uncertainty_j / tr;
		if (err / tr > st->max_rel_err)
			st->max_rel_err = err / tr;
		if (err <= w.uncertainty_j)
			st->covered++;
		assert_true(fabs(w.dynamic_j - (w.energy_j - 123.0 * (double)len * 1e-9)) < 1e-9);
	}
}

static void print_stats(const char *what, int64_t len, const struct stats *st)
{
	printf("# %-8s %5lld ms: ok %d/%d, mean |err| %.3f%%, max %.3f%%, mean unc %.3f%%, "
	       "covered %d/%d\n",
	       what, (long long)(len / MS), st->ok, st->n, 100 * st->sum_rel_err / st->ok,
	       100 * st->max_rel_err, 100 * st->sum_rel_unc / st->ok, st->covered, st->ok);
}

static void test_steady_windows(void **state)
{
	(void)state;
	struct synth y;
	struct opts o = {.load = STEADY, .span_ns = 12000 * MS, .counter0_mj = 123456789ULL};
	const int64_t lens[] = {50 * MS, 100 * MS, 300 * MS, 1000 * MS};
	const double max_mean_err[] = {0.02, 0.01, 0.005, 0.005};
	make(&y, &o);
	for (int i = 0; i < 4; i++) {
		struct stats st;
		windows(&y, 1000 * MS, 11000 * MS, lens[i], 300, &st, "counter-edges");
		print_stats("steady", lens[i], &st);
		assert_int_equal(st.ok, st.n);
		assert_true(st.sum_rel_err / st.ok <= max_mean_err[i]);
		assert_true(st.covered >= 0.9 * st.ok);
	}
	drop(&y);
}

static void test_duty_cycle(void **state)
{
	(void)state;
	struct synth y;
	struct opts o = {.load = DUTY, .span_ns = 13000 * MS, .counter0_mj = 5000};
	const int64_t lens[] = {50 * MS, 100 * MS, 300 * MS, 1000 * MS};
	make(&y, &o);
	for (int i = 0; i < 4; i++) {
		struct stats st;
		windows(&y, 1000 * MS, 12000 * MS, lens[i], 300, &st, "counter-edges");
		print_stats("duty", lens[i], &st);
		assert_int_equal(st.ok, st.n);
		assert_true(st.covered >= 0.9 * st.ok);
	}
	/* average power over >= 10 s within 0.5% of the truth */
	struct kj_window_energy w;
	int64_t a = 1000 * MS, b = 12500 * MS;
	assert_int_equal(kj_energy_window(y.s, y.n, a, b, -1, &w), 0);
	assert_true(w.ok);
	assert_true(isnan(w.dynamic_j));
	double tp = truth(&y, a, b) / 11.5;
	printf("# duty 11.5 s: %.3f W vs true %.3f W (%.3f%%), unc %.3f J\n", w.avg_power_w, tp,
	       100 * (w.avg_power_w / tp - 1), w.uncertainty_j);
	assert_true(fabs(w.avg_power_w / tp - 1) < 0.01);
	assert_true(fabs(w.energy_j - truth(&y, a, b)) <= w.uncertainty_j);
	assert_true(w.counter_periods >= 100);
	drop(&y);
}

static void test_wrap32(void **state)
{
	(void)state;
	struct synth y;
	/* 2^32 mJ - 3 kJ: the counter wraps about 4 s into the run */
	struct opts o = {.load = STEADY, .span_ns = 8000 * MS, .counter0_mj = 4294967296ULL - 3000000ULL,
			 .wrap32 = 1};
	make(&y, &o);
	struct kj_window_energy w;
	int64_t a = 1000 * MS, b = 7500 * MS;
	assert_int_equal(kj_energy_window(y.s, y.n, a, b, -1, &w), 0);
	double tr = truth(&y, a, b);
	printf("# wrap: %.3f J vs %.3f J, unc %.3f, resets %d\n", w.energy_j, tr, w.uncertainty_j,
	       w.resets);
	assert_true(w.ok);
	assert_int_equal(w.resets, 0);
	assert_true(fabs(w.energy_j - tr) <= w.uncertainty_j);
	assert_true(fabs(w.energy_j - tr) / tr < 0.002);
	drop(&y);
}

static void test_driver_restart(void **state)
{
	(void)state;
	struct synth y;
	struct opts o = {.load = RAMP, .span_ns = 8000 * MS, .counter0_mj = 987654321ULL,
			 .restart_at = 4000 * MS};
	make(&y, &o);
	struct kj_window_energy w;
	int64_t a = 1000 * MS, b = 7000 * MS;
	assert_int_equal(kj_energy_window(y.s, y.n, a, b, -1, &w), 0);
	double tr = truth(&y, a, b);
	printf("# restart: %.3f J vs %.3f J, unc %.3f, resets %d, method %s\n", w.energy_j, tr,
	       w.uncertainty_j, w.resets, w.method);
	assert_true(w.ok);
	assert_int_equal(w.resets, 1);
	assert_string_equal(w.method, "counter-edges+power");
	assert_true(w.power_s > 0.05 && w.power_s < 0.2);
	assert_true(fabs(w.energy_j - tr) <= w.uncertainty_j);
	assert_true(fabs(w.energy_j - tr) / tr < 0.01);
	drop(&y);
}

static void test_gaps(void **state)
{
	(void)state;
	struct synth y;
	struct opts o = {.load = DUTY, .span_ns = 8000 * MS, .counter0_mj = 1000,
			 .gap_from = 3000 * MS, .gap_to = 3700 * MS};
	make(&y, &o);
	struct kj_window_energy w;
	/* across the gap the counter still gives the energy exactly; the gap is reported */
	int64_t a = 1000 * MS, b = 6000 * MS;
	assert_int_equal(kj_energy_window(y.s, y.n, a, b, -1, &w), 0);
	double tr = truth(&y, a, b);
	printf("# gap: %.3f J vs %.3f J, unc %.3f, gaps %d (%.3f s)\n", w.energy_j, tr,
	       w.uncertainty_j, w.gaps, w.gap_s);
	assert_true(w.ok);
	assert_true(w.gaps >= 1);
	assert_true(w.gap_s > 0.6 && w.gap_s < 0.9);
	assert_true(fabs(w.energy_j - tr) <= w.uncertainty_j);
	/* a short window inside the gap: one long counter period, honest (wide) uncertainty */
	a = 3200 * MS;
	b = 3300 * MS;
	assert_int_equal(kj_energy_window(y.s, y.n, a, b, -1, &w), 0);
	tr = truth(&y, a, b);
	printf("# in gap: %.3f J vs %.3f J, unc %.3f\n", w.energy_j, tr, w.uncertainty_j);
	assert_true(!w.ok || fabs(w.energy_j - tr) <= w.uncertainty_j);
	drop(&y);
}

static void test_no_counter(void **state)
{
	(void)state;
	struct synth y;
	struct opts o = {.load = STEADY, .span_ns = 6000 * MS, .no_counter = 1};
	make(&y, &o);
	struct stats st;
	windows(&y, 1500 * MS, 5500 * MS, 500 * MS, 100, &st, "power-integration");
	print_stats("nocount", 500 * MS, &st);
	assert_int_equal(st.ok, st.n);
	assert_true(st.covered >= 0.9 * st.ok);
	drop(&y);
}

static void test_not_covered(void **state)
{
	(void)state;
	struct synth y;
	struct opts o = {.load = STEADY, .span_ns = 3000 * MS, .counter0_mj = 77};
	make(&y, &o);
	struct kj_window_energy w;
	/* after the last sample: unknown, never 0 J */
	assert_int_equal(kj_energy_window(y.s, y.n, 3500 * MS, 4000 * MS, -1, &w), 0);
	assert_false(w.ok);
	assert_true(isnan(w.energy_j));
	/* straddling the end */
	assert_int_equal(kj_energy_window(y.s, y.n, 2500 * MS, 4000 * MS, -1, &w), 0);
	assert_false(w.ok);
	/* nothing at all */
	assert_int_equal(kj_energy_window(NULL, 0, 0, 1000, -1, &w), 0);
	assert_false(w.ok);
	assert_string_equal(w.method, "none");
	/* reversed window */
	assert_int_equal(kj_energy_window(y.s, y.n, 2000 * MS, 1000 * MS, -1, &w), -1);
	drop(&y);
}

/* A kernel's energy with its data out of L2: flush-and-launch pairs less the flushes alone, kept
 * only where it stands above the two windows' uncertainty; the flush buffer twice the L2. */
static void test_cold_difference(void **state)
{
	(void)state;
	struct kj_amortize_result with = {0}, alone = {0};
	double mj, unc, ns;
	with.energy_per_launch_mj = 21.0, with.energy_unc_mj = 0.3, with.time_per_launch_ns = 45000;
	alone.energy_per_launch_mj = 16.0, alone.energy_unc_mj = 0.4, alone.time_per_launch_ns = 33000;
	assert_int_equal(kj_amortize_difference(&with, &alone, &mj, &unc, &ns), 1);
	assert_true(fabs(mj - 5.0) < 1e-12 && fabs(unc - 0.5) < 1e-12 && fabs(ns - 12000) < 1e-9);
	with.energy_per_launch_mj = 16.4; /* 0.4 mJ beside a 0.5 mJ uncertainty: lost in the flush's */
	assert_int_equal(kj_amortize_difference(&with, &alone, &mj, &unc, &ns), 0);
	with.energy_per_launch_mj = 21.0, with.time_per_launch_ns = 33000; /* no time of its own */
	assert_int_equal(kj_amortize_difference(&with, &alone, &mj, &unc, &ns), 0);
	with.energy_per_launch_mj = NAN;
	assert_int_equal(kj_amortize_difference(&with, &alone, &mj, &unc, &ns), 0);
	assert_true(kj_l2_flush_bytes(50 << 20) == (size_t)100 << 20);
	assert_true(kj_l2_flush_bytes(1000) == 4096);
	assert_true(kj_l2_flush_bytes(0) == (size_t)128 << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_steady_windows), cmocka_unit_test(test_duty_cycle),
	    cmocka_unit_test(test_wrap32),         cmocka_unit_test(test_driver_restart),
	    cmocka_unit_test(test_gaps),           cmocka_unit_test(test_no_counter),
	    cmocka_unit_test(test_not_covered),     cmocka_unit_test(test_cold_difference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
