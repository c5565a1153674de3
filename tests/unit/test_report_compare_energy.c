/* compare's energy on run databases built here (compare_fixture.h): a loop of iterations measured
 * as one window beside each iteration's own, each kernel's energy in situ (the prediction scaled
 * to the measured energy less idle), and cold-L2 energies (warm and cold means, the ratio for
 * kernels without one, the prediction placed by in-sequence time), in compare's JSON, text and the
 * report page. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_html.h"
#include "kj_store_r_results.h"

#include "compare_fixture.h"
#include "sqlexec.h"
#include "tmpdir.h"

/* The report page of a run (region step, first instance skipped), malloc'ed. */
static char *report_page(const char *path)
{
	sqlite3 *db = NULL;
	char *page = NULL;
	size_t len = 0;
	assert_int_equal(kj_db_open(path, 0, &db), 0);
	FILE *f = open_memstream(&page, &len);
	struct kj_html_opts ho = {.run_path = path, .region = "step", .skip = 1, .quiet = 1};
	assert_int_equal(kj_html_report_write(db, &ho, f), 0);
	fclose(f);
	kj_db_close(db);
	return page;
}

/* Cold-L2 energies: each kernel at the mean of its warm and cold energy, as its time is; kernels
 * without a cold one at their warm energy × the ratio of those with one. */
static void test_cold_energy_mean(void **state)
{
	(void)state;
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/cold_energy.kjdb", dir);
	make_main(p, 1);
	/* an older run: no replay_energy_cold table, the warm figures alone */
	json_t *j = compare_json(p, "step", 1, 0);
	NEAR(jnum(j, "energy_kernels_j"), 0.04);
	assert_true(json_is_null(json_object_get(j, "energy_kernels_cold_j")));
	json_decref(j);
	char *page = report_page(p);
	assert_null(strstr(page, "id=\"energy-kernels-cold\""));
	free(page);
	/* unique 1 (2 launches, 10 mJ warm) at 30 mJ cold; unique 2 (1 launch, 20 mJ) has none */
	assert_int_equal(kj_db_open(p, 1, &db), 0);
	exec(db, KJ_REPLAY_ENERGY_COLD_TABLE);
	exec(db, "INSERT INTO replay_energy_cold(unique_id, energy_mj_per_launch, ns_per_launch) VALUES(1, 30, 250000)");
	/* an infinite figure (no replay writes one) is no measurement: unique 2 stays without */
	exec(db, "INSERT INTO replay_energy_cold(unique_id, energy_mj_per_launch, ns_per_launch) VALUES(2, 9e999, 1)");
	kj_db_close(db);
	char *text = NULL;
	j = compare_json_text(p, "step", 1, 0, &text);
	NEAR(jnum(j, "energy_kernels_warm_j"), 0.04);
	NEAR(jnum(j, "energy_cold_ratio"), 3);                 /* 60 / 20 mJ */
	NEAR(jnum(j, "energy_kernels_cold_j"), 0.12);           /* 60 + 20 x 3 */
	NEAR(jnum(j, "energy_kernels_j"), 0.08);                /* 2 x 20 + 20 x (1 + 3) / 2 */
	NEAR(jnum(j, "energy_cold_time_coverage"), 0.6);        /* 300 of 500 us */
	/* the mean of warm and cold, each kernel: one of the ways compare shows */
	NEAR(jnum(json_object_get(json_object_get(j, "energy_candidates"), "mean_warm_cold"), "predicted_j"),
	     0.08 + jnum(j, "energy_idle_j"));
	/* the prediction places each kernel between its warm and cold energy by its in-sequence
	 * time: unique 1 at 160 us between 150 warm and 250 cold (0.1): 10 + 0.1 x 20 = 12 mJ, twice;
	 * unique 2 (no cold time) half way to its cold figure, its warm 20 mJ x the ratio 3: 40 mJ */
	assert_string_equal(json_string_value(json_object_get(j, "energy_prediction_method")), "placed_in_sequence");
	NEAR(jnum(j, "energy_kernels_predicted_j"), 0.064);
	NEAR(jnum(j, "energy_predicted_j"), 0.064 + jnum(j, "energy_idle_j"));
	assert_non_null(strstr(text, "the rest at their warm energy × 3.000"));
	free(text);
	/* the report's energy table has both sums beside the mean */
	page = report_page(p);
	assert_non_null(strstr(page, "id=\"energy-kernels-warm\""));
	assert_non_null(strstr(page, "holding 60.0 % of kernel time, cold/warm 3.000"));
	free(page);
	json_t *top = json_object_get(j, "top_kernels");
	for (size_t i = 0; i < json_array_size(top); i++) {
		json_t *k = json_array_get(top, i);
		if (jnum(k, "energy_warm_mj_per_launch") == 10) {
			NEAR(jnum(k, "energy_cold_mj_per_launch"), 30);
			NEAR(jnum(k, "energy_mj_per_launch"), 20);
		} else {
			assert_true(json_is_null(json_object_get(k, "energy_cold_mj_per_launch")));
		}
	}
	json_decref(j);
	/* both measured: the plain sum of the means, the same total here */
	assert_int_equal(kj_db_open(p, 1, &db), 0);
	exec(db, "INSERT OR REPLACE INTO replay_energy_cold(unique_id, energy_mj_per_launch, ns_per_launch) VALUES(2, 60, 300000)");
	kj_db_close(db);
	j = compare_json_text(p, "step", 1, 0, &text);
	NEAR(jnum(j, "energy_kernels_j"), 0.08);
	NEAR(jnum(j, "energy_kernels_cold_j"), 0.12);
	NEAR(jnum(j, "energy_cold_time_coverage"), 1);
	assert_null(strstr(text, "the rest at"));
	free(text);
	json_decref(j);
}

/* 40 steps of 1 ms, one every 2 ms: 500 W inside each, 100 W (idle) between. The power readings
 * average the whole loop (300 W, as NVML's do over longer than a step), the counter gains 3 J
 * every 10 ms. Each window's own figure spreads the idle over the windows (300 W x 1 ms); the
 * counter over the loop less idle power between the steps gives what a step drew. */
static void test_loop_energy(void **state)
{
	(void)state;
	char path[256];
	sqlite3 *db = NULL;
	snprintf(path, sizeof(path), "%s/loop.kjdb", dir);
	unlink(path);
	assert_int_equal(kj_db_create(path, &db), 0);
	exec(db, "INSERT INTO process(pid, exe) VALUES(7, 'python3')");
	exec(db, "INSERT INTO kernel_name(id, mangled) VALUES(1, 'k')");
	exec(db, "INSERT INTO unique_kernel(id, key, name_id, tier) VALUES(1, 'a', 1, 'gemm')");
	exec(db, "INSERT INTO device(id, uuid, name) VALUES(0, 'GPU-x', 'test')");
	exec(db, "INSERT INTO idle_power(device_id, median_mw, samples) VALUES(0, 100000, 10)");
	for (int i = 0; i < 40; i++) {
		int64_t o = 10000 + 2000LL * i;
		exec(db, "INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES (7, 8, 'step', %lld, %lld, 0)",
		     (long long)(T0 + o * US), (long long)(T0 + (o + 1000) * US));
		kernel(db, i + 1, 1, 1, o + 20, o + 980, o + 10);
	}
	for (int k = 0; k <= 110; k++) /* one reading a millisecond, from 0 to 110 ms */
		exec(db, "INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj, energy_updated)"
			 " VALUES(0, %lld, 300000, 300000, %d, %d)",
		     (long long)(T0 + k * 1000LL * US), 1000 + 3000 * (k / 10), k % 10 == 0);
	kj_db_close(db);
	char *txt = NULL;
	json_t *j = compare_json_text(path, "step", 1, 0, &txt);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "energy_measured_basis")), "loop");
	double win = jnum(j, "energy_measured_windows_j"), loop = jnum(j, "energy_measured_loop_j");
	assert_true(fabs(win - 0.300) < 0.006);   /* 300 W x 1 ms */
	assert_true(fabs(loop - 0.500) < 0.010);  /* what a step drew */
	NEAR(jnum(j, "energy_measured_j"), loop);
	assert_true(fabs(jnum(j, "energy_loop_outside_pct") - 100.0 * 38 / 77) < 0.5); /* 38 gaps of 1 ms in 77 ms */
	json_decref(j);
	/* the text names the basis and keeps the windows' figure beside it */
	assert_non_null(strstr(txt, "the loop of 39 iterations as one window"));
	assert_non_null(strstr(txt, "each iteration's own window: 0.30"));
	free(txt);
	/* so does the report page */
	assert_int_equal(kj_db_open(path, 0, &db), 0);
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);
	struct kj_html_opts ho = {.run_path = path, .region = "step", .skip = 1, .quiet = 1};
	assert_int_equal(kj_html_report_write(db, &ho, f), 0);
	fclose(f);
	kj_db_close(db);
	assert_non_null(strstr(page, "id=\"energy-measured-loop\""));
	assert_non_null(strstr(page, "each iteration's own window: 0.30"));
	free(page);
	/* a kernel no iteration owns, between two of them (an optimizer step outside the 'step'
	 * range): the time between iterations is not idle, the loop is no window for them */
	assert_int_equal(kj_db_open(path, 1, &db), 0);
	exec(db, "INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES (7, 8, 'other', %lld, %lld, 0)",
	     (long long)(T0 + 41000 * US), (long long)(T0 + 41900 * US));
	kernel(db, 100, 1, 1, 41100, 41800, 41050);
	kj_db_close(db);
	j = compare_json(path, "step", 1, 0);
	assert_string_equal(json_string_value(json_object_get(j, "energy_measured_basis")), "windows");
	json_decref(j);
}

/* Each kernel's energy as it ran in the program: the prediction scaled so that all kernels sum to
 * the measured energy less idle. */
static void test_in_situ_energy(void **state)
{
	(void)state;
	char p[256];
	snprintf(p, sizeof(p), "%s/insitu.kjdb", dir);
	make_main(p, 1);
	json_t *j = compare_json(p, "step", 1, 0);
	double meas = jnum(j, "energy_measured_j"), idle = jnum(j, "energy_idle_j");
	double kpred = jnum(j, "energy_kernels_predicted_j"), sum = 0, sum_pred = 0;
	json_t *top = json_object_get(j, "top_kernels"), *k;
	size_t i;
	assert_int_equal(json_array_size(top), 2); /* every kernel of the run */
	json_array_foreach(top, i, k) {
		double pe = jnum(k, "energy_predicted_mj"), ie = jnum(k, "energy_in_situ_mj");
		assert_true(pe > 0 && ie > 0);
		/* one factor for all: in situ / predicted alike */
		NEAR(ie / pe, (meas - idle) / kpred);
		NEAR(jnum(k, "energy_in_situ_mj_per_launch") * jnum(k, "count_per_iteration"), ie);
		sum += ie;
		sum_pred += pe;
	}
	NEAR(sum_pred / 1000, kpred);
	NEAR(sum / 1000, meas - idle);
	json_decref(j);
	/* the report's energy chart and kernel table carry them */
	char *page = report_page(p);
	assert_non_null(strstr(page, "in situ (as it ran in the program)"));
	assert_non_null(strstr(page, "<th>in-situ mJ / iter</th>"));
	free(page);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loop_energy),
		cmocka_unit_test(test_in_situ_energy),
		cmocka_unit_test(test_cold_energy_mean),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
