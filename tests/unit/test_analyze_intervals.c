/* Interval union ("busy time"): overlaps, nesting, gaps, touching, empty and unsorted input,
 * each worked out by hand; merge and overlap helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "kj_error.h"
#include "kj_intervals.h"

static int64_t busy(const int64_t *s, const int64_t *e, size_t n)
{
	int64_t b = -1;
	assert_int_equal(kj_intervals_union_ns(s, e, n, &b), 0);
	return b;
}

static void test_cases(void **state)
{
	(void)state;
	/* disjoint with gaps: 10 + 5 + 1 */
	int64_t s1[] = {0, 20, 100}, e1[] = {10, 25, 101};
	assert_int_equal(busy(s1, e1, 3), 16);
	/* overlap: [0,10) [5,15) -> [0,15) = 15 */
	int64_t s2[] = {0, 5}, e2[] = {10, 15};
	assert_int_equal(busy(s2, e2, 2), 15);
	/* nesting: [0,100) holds [10,20) and [30,40) -> 100 */
	int64_t s3[] = {10, 0, 30}, e3[] = {20, 100, 40};
	assert_int_equal(busy(s3, e3, 3), 100);
	/* touching: [0,10) [10,20) -> 20 */
	int64_t s4[] = {10, 0}, e4[] = {20, 10};
	assert_int_equal(busy(s4, e4, 2), 20);
	/* unsorted chain with a gap: [50,60) [0,10) [5,30) [25,40) -> [0,40) + [50,60) = 50 */
	int64_t s5[] = {50, 0, 5, 25}, e5[] = {60, 10, 30, 40};
	assert_int_equal(busy(s5, e5, 4), 50);
	/* empty intervals count nothing */
	int64_t s6[] = {5, 7}, e6[] = {5, 7};
	assert_int_equal(busy(s6, e6, 2), 0);
	/* identical intervals */
	int64_t s7[] = {3, 3, 3}, e7[] = {9, 9, 9};
	assert_int_equal(busy(s7, e7, 3), 6);
	/* large values (CLOCK_MONOTONIC ns) */
	int64_t s8[] = {1700000000000000000LL, 1700000000000000500LL};
	int64_t e8[] = {1700000000000001000LL, 1700000000000002000LL};
	assert_int_equal(busy(s8, e8, 2), 2000);
	/* n = 0 */
	assert_int_equal(busy(NULL, NULL, 0), 0);
}

static void test_errors(void **state)
{
	(void)state;
	int64_t b, s[] = {10}, e[] = {5};
	assert_int_equal(kj_intervals_union_ns(s, e, 1, &b), KJ_EINVAL);
	assert_int_equal(kj_intervals_union_ns(NULL, e, 1, &b), KJ_EINVAL);
	assert_int_equal(kj_intervals_union_ns(s, e, 1, NULL), KJ_EINVAL);
}

static void test_input_untouched(void **state)
{
	(void)state;
	int64_t s[] = {30, 0, 10}, e[] = {40, 5, 35}, b;
	assert_int_equal(kj_intervals_union_ns(s, e, 3, &b), 0);
	assert_int_equal(b, 5 + 30); /* [0,5) + [10,40) */
	assert_int_equal(s[0], 30);
	assert_int_equal(e[2], 35);
}

static void test_merge_overlap(void **state)
{
	(void)state;
	struct kj_interval a[] = {{50, 60}, {0, 10}, {5, 30}, {40, 20} /* reversed: dropped */, {60, 70}};
	size_t n = kj_intervals_merge(a, 5);
	assert_int_equal(n, 2);
	assert_int_equal(a[0].start_ns, 0);
	assert_int_equal(a[0].end_ns, 30);
	assert_int_equal(a[1].start_ns, 50);
	assert_int_equal(a[1].end_ns, 70);
	assert_int_equal(kj_intervals_union_sorted_ns(a, n), 50);
	/* overlap of [0,30)+[50,70) with [20,55)+[65,100): 10 + 5 + 5 = 20 */
	struct kj_interval b[] = {{20, 55}, {65, 100}};
	assert_int_equal(kj_intervals_overlap_ns(a, n, b, 2), 20);
	assert_int_equal(kj_intervals_overlap_ns(a, n, b, 0), 0);
	assert_int_equal(kj_intervals_merge(NULL, 0), 0);
}

static void test_many(void **state)
{
	(void)state;
	/* 100000 intervals of 10 ns every 20 ns, shuffled, plus one covering the first half */
	size_t n = 100001;
	int64_t *s = malloc(n * sizeof(*s)), *e = malloc(n * sizeof(*e)), b;
	assert_non_null(s);
	assert_non_null(e);
	for (size_t i = 0; i < n - 1; i++) {
		size_t j = (i * 7919) % (n - 1);
		s[j] = (int64_t)i * 20;
		e[j] = (int64_t)i * 20 + 10;
	}
	s[n - 1] = 0;
	e[n - 1] = 1000000; /* covers intervals 0..49999 fully */
	assert_int_equal(kj_intervals_union_ns(s, e, n, &b), 0);
	assert_int_equal(b, 1000000 + 50000 * 10);
	free(s);
	free(e);
}

/* kj_intervals_holding: the latest sorted interval holding t, overlaps looked back over */
static void test_holding(void **state)
{
	(void)state;
	/* [0,10] [5,30] [12,14] [40,50]: 13 is held by [12,14] (the latest), 20 by [5,30] behind it */
	const struct kj_interval iv[] = {{0, 10}, {5, 30}, {12, 14}, {40, 50}};
	assert_int_equal(kj_intervals_holding(iv, 4, 13, 4), 2);
	assert_int_equal(kj_intervals_holding(iv, 4, 20, 4), 1);
	assert_int_equal(kj_intervals_holding(iv, 4, 20, 1), -1); /* [5,30] lies two back */
	assert_int_equal(kj_intervals_holding(iv, 4, 10, 4), 1);  /* ends are inclusive */
	assert_int_equal(kj_intervals_holding(iv, 4, 35, 4), -1); /* between instances */
	assert_int_equal(kj_intervals_holding(iv, 4, -1, 4), -1); /* before the first */
	assert_int_equal(kj_intervals_holding(iv, 4, 50, 4), 3);
	assert_int_equal(kj_intervals_holding(iv, 0, 5, 4), -1);
	/* how many start at or before t: starts are inclusive */
	assert_int_equal(kj_intervals_started_by(iv, 4, -1), 0);
	assert_int_equal(kj_intervals_started_by(iv, 4, 5), 2);
	assert_int_equal(kj_intervals_started_by(iv, 4, 39), 3);
	assert_int_equal(kj_intervals_started_by(iv, 4, 99), 4);
	assert_int_equal(kj_intervals_started_by(iv, 0, 5), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_input_untouched),
		cmocka_unit_test(test_merge_overlap),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_holding),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
