/* The HTML page's building blocks: figures grouped by thousands, never NaN or inf ("not
 * measured" instead), escaping, chart ticks, and charts that stay finite when fed NaN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_html_internal.h"

/* what fn(f) writes, as a string the caller frees */
#define CAPTURE(buf, call)                                                                          \
	do {                                                                                         \
		size_t len_ = 0;                                                                     \
		FILE *f = open_memstream(&(buf), &len_);                                             \
		assert_non_null(f);                                                                  \
		call;                                                                                \
		fclose(f);                                                                           \
	} while (0)

static void test_figures(void **state)
{
	(void)state;
	char *s = NULL;
	CAPTURE(s, kj_html_fig(f, 12345.678, 1, 1, "us"));
	assert_string_equal(s, "12,345.7&#8239;us");
	free(s);
	CAPTURE(s, kj_html_fig(f, -1234567, 1, 0, NULL));
	assert_string_equal(s, "-1,234,567");
	free(s);
	CAPTURE(s, kj_html_fig(f, -0.0001, 1, 2, NULL)); /* no "-0.00" */
	assert_string_equal(s, "0.00");
	free(s);
	CAPTURE(s, kj_html_fig(f, 999.96, 1, 1, NULL));
	assert_string_equal(s, "1,000.0");
	free(s);
	CAPTURE(s, kj_html_fig(f, NAN, 1, 3, "J"));
	assert_non_null(strstr(s, "not measured"));
	free(s);
	CAPTURE(s, kj_html_fig(f, INFINITY, 1, 3, "J"));
	assert_non_null(strstr(s, "not measured"));
	free(s);
	CAPTURE(s, kj_html_fig(f, 5, 0, 3, "J"));
	assert_non_null(strstr(s, "not measured"));
	free(s);
}

static void test_escape_and_json(void **state)
{
	(void)state;
	char *s = NULL;
	CAPTURE(s, kj_html_esc(f, "void k<float, \"a\">(int&)"));
	assert_string_equal(s, "void k&lt;float, &quot;a&quot;&gt;(int&amp;)");
	free(s);
	json_t *o = json_pack("{s:f, s:i, s:n, s:s}", "a", 1.5, "b", 3, "c", "d", "x");
	double v = 0;
	assert_true(kj_html_jnum(o, "a", &v) && v == 1.5);
	assert_true(kj_html_jnum(o, "b", &v) && v == 3);
	assert_false(kj_html_jnum(o, "c", &v)); /* null: unknown, not 0 */
	assert_false(kj_html_jnum(o, "d", &v));
	assert_false(kj_html_jnum(o, "absent", &v));
	json_decref(o);
}

static void test_ticks(void **state)
{
	(void)state;
	assert_float_equal(kj_chart_tick(100, 5), 20, 1e-9);
	assert_float_equal(kj_chart_tick(13000, 5), 2000, 1e-9);
	assert_float_equal(kj_chart_tick(0.7, 5), 0.1, 1e-12);
	assert_float_equal(kj_chart_tick(0, 5), 1, 0);   /* empty range: a step that ends loops */
	assert_float_equal(kj_chart_tick(NAN, 5), 1, 0);
}

/* a chart fed NaN and negative values writes only finite numbers, and marks the unmeasured */
static void test_charts_finite(void **state)
{
	(void)state;
	char *s = NULL;
	struct kj_stack_part parts[] = {{"busy", "#00f"}, {"idle", "#f00"}};
	double v[] = {10, NAN, -5, 20, 30, 5};
	const char *lab[] = {"#0", "#1", "mean"};
	int dim[] = {1, 0, 0};
	CAPTURE(s, kj_chart_stacked(f, "c", "t", "us", 600, parts, 2, v, lab, dim, 3));
	assert_null(strstr(s, "nan"));
	assert_null(strstr(s, "inf"));
	assert_non_null(strstr(s, "idle: not measured"));
	assert_non_null(strstr(s, "class=\"kj-chart\""));
	free(s);
	struct kj_point p[] = {{1, 2, 0, "a"}, {NAN, 1, 0, "b"}, {0, 3, 1, "c"}, {10, 9, 1, "d<e>"}};
	const char *sn[] = {"warm", "seq"}, *sc[] = {"#0a0", "#a00"};
	CAPTURE(s, kj_chart_scatter(f, "s", "t", "us", "us", sn, sc, 2, p, 4));
	assert_null(strstr(s, "nan"));
	assert_null(strstr(s, "inf"));
	int circles = 0;
	for (char *q = s; (q = strstr(q, "<circle")); q++)
		circles++;
	assert_int_equal(circles, 2); /* the NaN and the zero point are left out */
	assert_non_null(strstr(s, "d&lt;e&gt;"));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_figures),
		cmocka_unit_test(test_escape_and_json),
		cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_charts_finite),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
