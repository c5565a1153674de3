/* kj_capture_agreement: the captured iterations' mean energy against the whole run's, judged
 * within their two stated bounds, and not judged where those bounds are too wide to tell.
 * kj_capture_warmup: the whole run's warm-up, the first instance and the slow ones straight after. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "kj_capture_stats.h"

/* Two sets: the whole run's mean a J (bound ua), the captured c J (bound uc), 10 and 2 measured. */
static struct kj_capture_stats sets(double a, double ua, double c, double uc)
{
	struct kj_capture_stats s;
	memset(&s, 0, sizeof(s));
	s.all = (struct kj_iter_set){.instances = 10, .wall_ms = 5.0, .span_s = 0.05, .measured = 10,
				     .energy_j = a, .uncertainty_j = ua};
	s.captured = (struct kj_iter_set){.instances = 2, .wall_ms = 5.0, .span_s = 0.01, .measured = 2,
					  .energy_j = c, .uncertainty_j = uc};
	kj_capture_agreement(&s);
	return s;
}

static void test_within(void **state)
{
	(void)state;
	struct kj_capture_stats s = sets(100, 1, 101.5, 1); /* 1.5 % apart, bounds 1 % + 0.99 % */
	assert_int_equal(s.agreement_known, 1);
	assert_true(fabs(s.agreement_apart_pct - 1.5) < 1e-9);
	assert_true(fabs(s.agreement_bound_pct - (1.0 + 100.0 / 101.5)) < 1e-9);
	assert_int_equal(s.agreement_within, 1);
}

static void test_outside(void **state)
{
	(void)state;
	struct kj_capture_stats s = sets(100, 0.5, 96, 0.5); /* 4 % below, bounds about 1 % */
	assert_int_equal(s.agreement_known, 1);
	assert_true(fabs(s.agreement_apart_pct + 4) < 1e-9);
	assert_int_equal(s.agreement_within, 0);
}

static void test_too_wide(void **state)
{
	(void)state;
	struct kj_capture_stats s = sets(200, 130, 199, 130); /* bounds of 65 % each: cannot tell */
	assert_int_equal(s.agreement_known, 1);
	assert_int_equal(s.agreement_within, -1);
}

static void test_unknown(void **state)
{
	(void)state;
	struct kj_capture_stats s = sets(100, 1, NAN, NAN); /* nothing captured measured */
	assert_int_equal(s.agreement_known, 0);
	s = sets(NAN, NAN, 100, 1);
	assert_int_equal(s.agreement_known, 0);
}

/* 40 instances of 10 ms; the ones named in slow take ms each instead */
static size_t warmup(size_t n, const size_t *slow, size_t nslow, int64_t ms)
{
	double wall[64];
	for (size_t i = 0; i < n; i++)
		wall[i] = 10e6;
	for (size_t i = 0; i < nslow; i++)
		wall[slow[i]] = (double)ms * 1e6;
	return kj_capture_warmup(wall, n);
}

static void test_warmup(void **state)
{
	(void)state;
	const size_t lead[] = {0, 1, 2}, late[] = {0, 2, 3}, many[] = {0, 1, 2, 3, 4, 5, 6};
	assert_int_equal(warmup(40, NULL, 0, 0), 1);       /* steady: the first only, as compare */
	assert_int_equal(warmup(40, lead, 3, 300), 3);     /* the slow ones straight after the first */
	assert_int_equal(warmup(40, late, 3, 300), 1);     /* the second is steady: the run ends there */
	assert_int_equal(warmup(40, lead, 3, 20), 1);      /* twice the median is not over it */
	assert_int_equal(warmup(40, lead, 3, 21), 3);
	assert_int_equal(warmup(40, many, 7, 300), 4);     /* never more than a tenth */
	assert_int_equal(warmup(19, lead, 3, 300), 1);     /* under twenty: a tenth is the first alone */
	assert_int_equal(warmup(20, lead, 3, 300), 2);
	assert_int_equal(warmup(3, lead, 3, 300), 0);      /* as compare: none of three */
	const size_t mid[] = {0, 1, 2, 20};                /* the median is of the sorted walls */
	assert_int_equal(warmup(40, mid, 4, 150), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_within),
		cmocka_unit_test(test_outside),
		cmocka_unit_test(test_too_wide),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_warmup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
