/* timeline and api on the main run of compare_fixture.h: the Chrome trace's events and fields,
 * the SVG and ASCII views of one iteration, an absent iteration refused; the API story
 * (kernels and bytes per iteration, synchronisation, GPU idle gaps, per-API) and its JSON lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_apistory_out.h"
#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_timeline.h"

#include "compare_fixture.h"
#include "tmpdir.h"

static void test_chrome_trace_fields(void **state)
{
	(void)state;
	char p[256], tp[300];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/main.kjdb", dir);
	snprintf(tp, sizeof(tp), "%s/trace.json", dir);
	make_main(p, 1);
	assert_int_equal(kj_db_open(p, 0, &db), 0);
	FILE *f = fopen(tp, "w");
	struct kj_timeline_opts o = {.format = KJ_TL_CHROME, .iteration = -1, .quiet = 1,
				     .run_path = "a \"quoted\"\\path"};
	assert_int_equal(kj_timeline_write(db, &o, f), 0);
	fclose(f);
	json_error_t err;
	json_t *j = json_load_file(tp, 0, &err);
	if (!j)
		fprintf(stderr, "%s line %d\n", err.text, err.line);
	assert_non_null(j);
	json_t *ev = json_object_get(j, "traceEvents");
	size_t nx_kernel = 0, nx_api = 0, ns = 0, nf = 0, nc = 0, nnvtx = 0;
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *e = json_array_get(ev, i);
		const char *ph = json_string_value(json_object_get(e, "ph"));
		assert_non_null(ph);
		assert_true(json_is_number(json_object_get(e, "ts")));
		assert_true(json_is_integer(json_object_get(e, "pid")));
		assert_true(json_is_integer(json_object_get(e, "tid")));
		assert_true(json_is_string(json_object_get(e, "name")));
		if (!strcmp(ph, "X")) {
			assert_true(json_is_number(json_object_get(e, "dur")));
			const char *cat = json_string_value(json_object_get(e, "cat"));
			if (!strcmp(cat, "kernel"))
				nx_kernel++;
			else if (!strcmp(cat, "cuda_api"))
				nx_api++;
			else if (!strcmp(cat, "nvtx"))
				nnvtx++;
		} else if (!strcmp(ph, "s")) {
			ns++;
		} else if (!strcmp(ph, "f")) {
			nf++;
			assert_string_equal(json_string_value(json_object_get(e, "bp")), "e");
		} else if (!strcmp(ph, "C")) {
			nc++;
		}
	}
	assert_int_equal(nx_kernel, 12);
	assert_int_equal(nx_api, 16);
	assert_int_equal(nnvtx, 8);
	assert_int_equal(ns, 12);
	assert_int_equal(nf, 12);
	assert_true(nc >= 81 * 2);
	/* the first kernel starts 100 us after the run's first event (the first API call at 50) */
	json_decref(j);

	/* ascii and svg of iteration 1 */
	char *buf = NULL;
	size_t len = 0;
	f = open_memstream(&buf, &len);
	o.format = KJ_TL_SVG;
	o.iteration = 1;
	assert_int_equal(kj_timeline_write(db, &o, f), 0);
	fclose(f);
	size_t bars = 0;
	for (char *q = buf; (q = strstr(q, "<rect class=\"k\"")); q++)
		bars++;
	assert_int_equal(bars, 4);
	free(buf);
	f = open_memstream(&buf, &len);
	o.format = KJ_TL_ASCII;
	o.width = 40;
	assert_int_equal(kj_timeline_write(db, &o, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "gpu0 s1"));
	assert_non_null(strstr(buf, "gpu0 s2"));
	assert_non_null(strstr(buf, "G"));
	free(buf);
	o.iteration = 9;
	f = open_memstream(&buf, &len);
	assert_int_equal(kj_timeline_write(db, &o, f), KJ_ENOTFOUND);
	fclose(f);
	free(buf);
	kj_db_close(db);
}

static void test_api_story(void **state)
{
	(void)state;
	char p[256];
	sqlite3 *db = NULL;
	json_t *j = NULL;
	struct kj_api_opts o = {.skip = -1, .gaps = 3, .quiet = 1};
	snprintf(p, sizeof(p), "%s/main.kjdb", dir);
	make_main(p, 0);
	assert_int_equal(kj_db_open(p, 0, &db), 0);
	assert_int_equal(kj_api_story(db, &o, &j), 0);
	assert_true(json_is_true(json_object_get(j, "api_traced")));
	json_t *k = json_object_get(j, "kernels_per_iteration");
	NEAR(jnum(k, "mean"), 3);
	NEAR(jnum(json_object_get(j, "bytes"), "h2d"), 400);
	json_t *sy = json_object_get(j, "synchronization");
	NEAR(jnum(sy, "calls"), 4);
	NEAR(jnum(sy, "time_us"), 160);
	/* GPU idle: between iterations 850 -> 2100 is the longest gap (1250 us) */
	json_t *g = json_array_get(json_object_get(json_object_get(j, "gpu_idle"), "longest"), 0);
	NEAR(jnum(g, "duration_us"), 1250);
	json_t *pa = json_object_get(j, "per_api");
	assert_int_equal(json_array_size(pa), 2);
	json_decref(j);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(kj_api_jsonl(db, f), 0);
	fclose(f);
	size_t lines = 0;
	for (char *q = buf; *q; q++)
		lines += *q == '\n';
	/* 16 API calls, 12 kernels, 4 copies, 8 NVTX ranges */
	assert_int_equal(lines, 40);
	free(buf);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chrome_trace_fields),
		cmocka_unit_test(test_api_story),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
