/* kj_num: the strict number parser every user-typed number goes through. Whole strings only
 * (no trailing text, spaces, hex, words), ranges enforced at both ends, int64 overflow refused,
 * floats finite, the reason naming the text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kj_error.h"
#include "kj_num.h"

static void test_i64(void **state)
{
	(void)state;
	int64_t v = -7;
	char why[128];
	assert_int_equal(kj_num_i64("42", 0, 100, &v, why, sizeof(why)), 0);
	assert_int_equal(v, 42);
	assert_int_equal(kj_num_i64("-3", -5, 5, &v, why, sizeof(why)), 0);
	assert_int_equal(v, -3);
	assert_int_equal(kj_num_i64("+7", 0, 10, &v, why, sizeof(why)), 0);
	assert_int_equal(v, 7);
	assert_int_equal(kj_num_i64("9223372036854775807", 0, INT64_MAX, &v, why, sizeof(why)), 0);
	assert_true(v == INT64_MAX);
	static const char *const not_int[] = {"", "3x", " 3", "3 ", "3.0", "0x10", "abc", "-", "+", "1e3", "--1"};
	for (size_t i = 0; i < sizeof(not_int) / sizeof(not_int[0]); i++) {
		v = 99;
		assert_int_equal(kj_num_i64(not_int[i], INT64_MIN, INT64_MAX, &v, why, sizeof(why)), KJ_EINVAL);
		assert_int_equal(v, 99); /* untouched */
		assert_non_null(strstr(why, "is not an integer"));
	}
	assert_int_equal(kj_num_i64("3x", 0, 9, &v, why, sizeof(why)), KJ_EINVAL);
	assert_string_equal(why, "'3x' is not an integer");
	/* the range, both ends, and overflow */
	assert_int_equal(kj_num_i64("0", 1, 64, &v, why, sizeof(why)), KJ_EINVAL);
	assert_string_equal(why, "'0' is not in 1..64");
	assert_int_equal(kj_num_i64("65", 1, 64, &v, why, sizeof(why)), KJ_EINVAL);
	assert_int_equal(kj_num_i64("9223372036854775808", INT64_MIN, INT64_MAX, &v, why, sizeof(why)), KJ_EINVAL);
	assert_int_equal(kj_num_i64("-9223372036854775809", INT64_MIN, INT64_MAX, &v, why, sizeof(why)), KJ_EINVAL);
	assert_int_equal(kj_num_i64(NULL, 0, 1, &v, NULL, 0), KJ_EINVAL); /* no reason asked: no crash */
}

static void test_f64(void **state)
{
	(void)state;
	double v = -1;
	char why[128];
	static const struct {
		const char *s;
		double want;
	} good[] = {{"1", 1}, {"-0.5", -0.5}, {"2.5e3", 2500}, {".5", 0.5}, {"5.", 5}, {"+1E-2", 0.01}};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(kj_num_f64(good[i].s, -1e9, 1e9, &v, why, sizeof(why)), 0);
		assert_float_equal(v, good[i].want, 1e-12);
	}
	static const char *const bad[] = {"", "abc", "1.5x", " 1", "1 ", "inf", "nan", "-inf", "0x1p3", "1e", "e3",
					  ".", "1e+", "1,5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		assert_int_equal(kj_num_f64(bad[i], -1e300, 1e300, &v, why, sizeof(why)), KJ_EINVAL);
		assert_float_equal(v, 42, 0);
		assert_non_null(strstr(why, "is not a number"));
	}
	assert_int_equal(kj_num_f64("1e999", -1e300, 1e300, &v, why, sizeof(why)), KJ_EINVAL); /* overflows */
	assert_int_equal(kj_num_f64("-1", 0, 100, &v, why, sizeof(why)), KJ_EINVAL);
	assert_string_equal(why, "'-1' is not in 0..100");
	assert_int_equal(kj_num_f64("0", 0, 100, &v, why, sizeof(why)), 0); /* closed range: 0 is in */
	/* above: the lower end excluded */
	assert_int_equal(kj_num_f64_above("0", 0, 100, &v, why, sizeof(why)), KJ_EINVAL);
	assert_string_equal(why, "'0' is not above 0 (up to 100)");
	assert_int_equal(kj_num_f64_above("0.001", 0, 100, &v, why, sizeof(why)), 0);
	assert_int_equal(kj_num_f64_above("100.5", 0, 100, &v, why, sizeof(why)), KJ_EINVAL);
}

static void test_f64_list(void **state)
{
	(void)state;
	double v[4] = {-1, -1, -1, -1};
	size_t n = 99;
	char why[128];
	assert_int_equal(kj_num_f64_list("1,3", 0.25, 16, v, 4, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_float_equal(v[0], 1, 0);
	assert_float_equal(v[1], 3, 0);
	assert_int_equal(kj_num_f64_list("0.5", 0.25, 16, v, 4, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 1);
	assert_float_equal(v[0], 0.5, 0);
	/* refused, naming the item; nothing written */
	static const struct {
		const char *s, *why;
	} bad[] = {{"", "'' is not a list of numbers"},
		   {"1,", "'' is not a number"},
		   {",3", "'' is not a number"},
		   {"1, 3", "' 3' is not a number"},
		   {"1,x", "'x' is not a number"},
		   {"1,32", "'32' is not in 0.25..16"},
		   {"1,2,3,4,5", "'1,2,3,4,5' has more than 4 numbers"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v[0] = 42;
		n = 99;
		assert_int_equal(kj_num_f64_list(bad[i].s, 0.25, 16, v, 4, &n, why, sizeof(why)), KJ_EINVAL);
		assert_string_equal(why, bad[i].why);
		assert_float_equal(v[0], 42, 0);
		assert_int_equal(n, 99);
	}
	assert_int_equal(kj_num_f64_list(NULL, 0.25, 16, v, 4, &n, why, sizeof(why)), KJ_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_i64),
		cmocka_unit_test(test_f64),
		cmocka_unit_test(test_f64_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
