/* KJOULE_CUPTI_STUDY's list: each item sets its field, several combine, and anything malformed
 * is refused whole with the offending item named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "inject_cupti_study.h"

static void test_empty_is_defaults(void **state)
{
	struct kj_cupti_study s;
	char err[160] = "";
	(void)state;
	assert_int_equal(kj_cupti_study_parse(NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(s.pinned + s.shared_buf + s.cupti_clock + s.kernels_only, 0);
	assert_int_equal(s.devbuf_bytes, 0);
	assert_int_equal(kj_cupti_study_parse("", &s, err, sizeof(err)), 0);
	assert_int_equal(s.prealloc, 0);
}

static void test_items_combine(void **state)
{
	struct kj_cupti_study s;
	char err[160] = "";
	(void)state;
	assert_int_equal(kj_cupti_study_parse("pinned,devbuf=32,prealloc=6,cupti_clock", &s, err, sizeof(err)), 0);
	assert_int_equal(s.pinned, 1);
	assert_int_equal(s.devbuf_bytes, (size_t)32 << 20);
	assert_int_equal(s.prealloc, 6);
	assert_int_equal(s.cupti_clock, 1);
	assert_int_equal(s.shared_buf, 0);
	assert_int_equal(s.kernels_only, 0);
	assert_int_equal(kj_cupti_study_parse("shared_buf,kernels_only", &s, err, sizeof(err)), 0);
	assert_int_equal(s.shared_buf + s.kernels_only, 2);
	assert_int_equal(s.pinned, 0);
	assert_int_equal(s.no_activity + s.no_subscribe + s.no_nvtx, 0);
	assert_int_equal(kj_cupti_study_parse("no_nvtx,no_subscribe", &s, err, sizeof(err)), 0);
	assert_int_equal(s.no_nvtx + s.no_subscribe, 2);
	assert_int_equal(s.no_activity + s.kernels_only, 0);
	assert_int_equal(kj_cupti_study_parse("no_activity", &s, err, sizeof(err)), 0);
	assert_int_equal(s.no_activity, 1);
	assert_int_equal(s.no_nvtx + s.no_subscribe, 0);
}

static void test_bad_items_refused_whole(void **state)
{
	static const char *bad[] = {"pinned,fast", "devbuf=", "devbuf=0", "devbuf=2048", "devbuf=8x",
				    "prealloc=-1", "prealloc=65", "Pinned"};
	struct kj_cupti_study s;
	char err[160];
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(kj_cupti_study_parse(bad[i], &s, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "unknown item"));
		assert_int_equal(s.pinned, 0); /* nothing of a refused list applies */
	}
	assert_non_null(strstr((kj_cupti_study_parse("pinned,fast", &s, err, sizeof(err)), err), "'fast'"));
	char longer[400];
	memset(longer, 'p', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	assert_int_equal(kj_cupti_study_parse(longer, &s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "longer than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_defaults),
		cmocka_unit_test(test_items_combine),
		cmocka_unit_test(test_bad_items_refused_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
