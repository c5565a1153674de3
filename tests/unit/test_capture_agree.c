/* kj_capture_agreement: the captured iterations' mean energy against the whole run's, judged
 * within their two stated bounds, and not judged where those bounds are too wide to tell. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_within),
		cmocka_unit_test(test_outside),
		cmocka_unit_test(test_too_wide),
		cmocka_unit_test(test_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
