/* kj_sort_doubles and kj_quantile_sorted: the median of odd and even samples, interpolated
 * quantiles, the ends, one value, and a large reversed sample (sorting must not be quadratic). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "kj_quantile.h"

static void test_median_and_quantiles(void **state)
{
	(void)state;
	double odd[] = {5, 1, 3, 2, 4}, even[] = {40, 10, 30, 20}, one[] = {7};
	kj_sort_doubles(odd, 5);
	kj_sort_doubles(even, 4);
	assert_true(odd[0] == 1 && odd[4] == 5);
	assert_float_equal(kj_quantile_sorted(odd, 5, 0.5), 3, 1e-12);
	assert_float_equal(kj_quantile_sorted(even, 4, 0.5), 25, 1e-12); /* mean of 20 and 30 */
	assert_float_equal(kj_quantile_sorted(even, 4, 0.1), 13, 1e-12); /* 10 + 0.3 x 10 */
	assert_float_equal(kj_quantile_sorted(even, 4, 0.0), 10, 1e-12);
	assert_float_equal(kj_quantile_sorted(even, 4, 1.0), 40, 1e-12);
	assert_float_equal(kj_quantile_sorted(one, 1, 0.9), 7, 1e-12);
}

static void test_large_reversed(void **state)
{
	(void)state;
	size_t n = 1000001;
	double *v = malloc(n * sizeof(*v));
	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (double)(n - i);
	kj_sort_doubles(v, n);
	for (size_t i = 1; i < n; i++)
		if (v[i - 1] > v[i])
			fail_msg("not sorted at %zu", i);
	assert_float_equal(kj_quantile_sorted(v, n, 0.5), 500001, 1e-9);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median_and_quantiles),
		cmocka_unit_test(test_large_reversed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
