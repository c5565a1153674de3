/* compare on run databases built here (compare_fixture.h): the main run's decomposition of an
 * iteration's time worked out by hand (busy, idle, host-only, overlap, the replay sums and the
 * predicted wall, energy, tiers, regions), missing inputs as null, a run without NVTX as one
 * iteration, ranges left open, overlapping or spilling work, empty runs, the interval union,
 * instances per process and the output folder. (Energy: test_report_compare_energy.c; timeline
 * and api: test_report_timeline_api.c.) */
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

#include "kj_acts.h"
#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_error.h"

#include "compare_fixture.h"
#include "sqlexec.h"
#include "tmpdir.h"

static void test_decomposition_by_hand(void **state)
{
	(void)state;
	char p[256];
	snprintf(p, sizeof(p), "%s/main.kjdb", dir);
	make_main(p, 1);
	json_t *j = compare_json(p, NULL, -1, 0);
	json_t *it = json_object_get(j, "iterations");
	assert_string_equal(json_string_value(json_object_get(it, "region")), "step");
	assert_int_equal(json_integer_value(json_object_get(it, "instances")), 4);
	assert_int_equal(json_integer_value(json_object_get(it, "skipped")), 1);
	NEAR(jnum(j, "wall_us"), 1000);
	NEAR(jnum(j, "busy_us"), 450);
	NEAR(jnum(j, "span_us"), 750);
	NEAR(jnum(j, "idle_us"), 300);
	NEAR(jnum(j, "host_only_us"), 250);
	NEAR(jnum(j, "kernel_sum_us"), 500);
	NEAR(jnum(j, "copy_sum_us"), 50);
	NEAR(jnum(j, "overlap_us"), 100);
	NEAR(jnum(j, "kernel_busy_us"), 400);
	/* the decomposition adds up */
	NEAR(jnum(j, "busy_us") + jnum(j, "idle_us") + jnum(j, "host_only_us"), jnum(j, "wall_us"));
	NEAR(jnum(j, "replay_sum_warm_us"), 480);
	NEAR(jnum(j, "replay_sum_cold_us"), 500);
	NEAR(jnum(j, "replay_coverage_warm"), 1.0);
	assert_true(fabs(jnum(j, "replay_coverage_cold") - 2.0 / 3.0) < 1e-5);
	/* the isolated estimate: K1 at the mean of warm 150 and cold 250, twice; K2 (no cold
	 * replay) at its warm 180: 2 x 200 + 180 = 580 */
	NEAR(jnum(j, "replay_sum_isolated_us"), 580);
	/* K1 and K2 overlapped by 100 us: the isolated replays go one after another, so the
	 * overlap returns to the wall: 1000 + 100 + (580 - 500); with warm alone + (480 - 500) */
	NEAR(jnum(j, "predicted_wall_us"), 1180);
	NEAR(jnum(j, "explained_fraction"), 1.18);
	NEAR(jnum(j, "explained_fraction_warm"), 1.08);
	NEAR(jnum(j, "kernel_overlap_fraction"), 0.2);
	/* in-sequence times: 2 x 160 + 170 us against the same 500 us in situ; their difference
	 * counts at the wall's share of the kernel sum, 400 / 500: 1000 + (490 - 500) * 0.8 */
	NEAR(jnum(j, "replay_sum_sequence_us"), 490);
	NEAR(jnum(j, "replay_coverage_sequence"), 1.0);
	NEAR(jnum(j, "explained_fraction_sequence"), 0.992);
	/* 160 us against 150 in situ, 170 against 200: close enough, no disagreement */
	assert_int_equal(json_array_size(json_object_get(j, "replay_disagreements")), 0);
	{
		/* a norm kernel replayed in sequence at half its in-situ time is flagged */
		sqlite3 *db2 = NULL;
		assert_int_equal(kj_db_open(p, 1, &db2), 0);
		exec(db2, "UPDATE replay_kernel SET median_ns = 100000 WHERE unique_id = 2 AND cache = 'sequence'");
		kj_db_close(db2);
		json_t *j2 = compare_json(p, NULL, -1, 0);
		json_t *d = json_object_get(j2, "replay_disagreements");
		assert_int_equal(json_array_size(d), 1);
		assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 0), "unique_id")), 2);
		NEAR(jnum(json_array_get(d, 0), "in_situ_mean_us"), 200);
		NEAR(jnum(json_array_get(d, 0), "replay_sequence_us"), 100);
		json_decref(j2);
		db2 = NULL;
		assert_int_equal(kj_db_open(p, 1, &db2), 0);
		exec(db2, "UPDATE replay_kernel SET median_ns = 170000 WHERE unique_id = 2 AND cache = 'sequence'");
		kj_db_close(db2);
	}
	NEAR(jnum(j, "naive_error_pct"), -52);
	NEAR(jnum(j, "sequence_eager_us"), 900);
	NEAR(jnum(j, "sequence_graph_us"), 600);
	NEAR(jnum(j, "framework_host_us"), 100);
	NEAR(jnum(j, "launch_cost_us"), 300);
	NEAR(jnum(j, "kernels_per_iteration"), 3);
	NEAR(jnum(j, "bytes_h2d_per_iteration"), 100);
	/* energy */
	assert_true(fabs(jnum(j, "energy_measured_j") - 0.2) < 0.01);
	/* the iterations are contiguous: the mean is the loop's, measured as one window from the
	 * first counter update inside the kept span (reads at 2050 and 2150 us: 2100) to the last
	 * (6900): 2.8 iterations inside it, 2800 us of them. Its bound: the updates' timing, half of
	 * each 100 us bracket, 0.2 J x 100 / 2800 = 0.0071 J; 5 % of the idle taken off between
	 * iterations, 0.05 x 2 x 100 W x 1 ms / 2.8 = 0.0036 J; the counter's 1 mJ at each end / 2.8 */
	assert_string_equal(json_string_value(json_object_get(j, "energy_measured_basis")), "loop");
	assert_true(fabs(jnum(j, "energy_measured_mean_unc_j") - (0.2 * 100 / 2800 + 0.01 / 2.8 + 0.002 / 2.8)) < 0.0005);
	NEAR(jnum(j, "energy_kernels_j"), 0.04);
	NEAR(jnum(j, "energy_idle_j"), 0.06);
	NEAR(jnum(j, "energy_predicted_j"), 0.1);
	assert_true(fabs(jnum(j, "energy_error_pct") + 50) < 3);
	/* tiers: gemm 2 launches 300 us, norm 1 launch 200 us, memcpy 1 launch 50 us */
	json_t *tiers = json_object_get(j, "tiers");
	int seen = 0;
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		json_t *t = json_array_get(tiers, i);
		const char *n = json_string_value(json_object_get(t, "tier"));
		if (!strcmp(n, "gemm")) {
			NEAR(jnum(t, "measured_us"), 300);
			NEAR(jnum(t, "launches_per_iteration"), 2);
			NEAR(jnum(t, "replay_warm_us"), 300);
			NEAR(jnum(t, "energy_j"), 0.02);
			seen |= 1;
		} else if (!strcmp(n, "norm")) {
			NEAR(jnum(t, "measured_us"), 200);
			seen |= 2;
		} else if (!strcmp(n, "memcpy")) {
			NEAR(jnum(t, "measured_us"), 50);
			seen |= 4;
		}
	}
	assert_int_equal(seen, 7);
	json_t *top = json_object_get(j, "top_kernels");
	assert_int_equal(json_array_size(top), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(top, 0), "tier")), "gemm");
	json_t *reg = json_object_get(j, "regions");
	assert_int_equal(json_array_size(reg), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(reg, 0), "name")), "layer");
	NEAR(jnum(json_array_get(reg, 0), "time_us"), 460);
	NEAR(jnum(json_array_get(reg, 0), "gpu_busy_us"), 300);
	NEAR(jnum(json_array_get(reg, 0), "kernels_per_iteration"), 2);
	json_decref(j);

	/* --skip 0 keeps the first instance: same per-iteration figures here */
	j = compare_json(p, "step", 0, 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "iterations"), "measured")), 4);
	NEAR(jnum(j, "busy_us"), 450);
	json_decref(j);
	/* skipping everything is refused, an absent region too */
	assert_null(compare_json(p, "step", 4, KJ_EINVAL));
	assert_null(compare_json(p, "nope", -1, KJ_ENOTFOUND));
}

static void test_missing_inputs_are_null(void **state)
{
	(void)state;
	char p[256];
	snprintf(p, sizeof(p), "%s/nopower.kjdb", dir);
	make_main(p, 0);
	sqlite3 *db = NULL;
	assert_int_equal(kj_db_open(p, 1, &db), 0);
	exec(db, "DELETE FROM replay_kernel; DELETE FROM replay_sequence");
	kj_db_close(db);
	json_t *j = compare_json(p, NULL, -1, 0);
	const char *nulls[] = {"replay_sum_warm_us", "replay_sum_cold_us", "replay_sum_sequence_us", "sequence_eager_us",
			       "sequence_graph_us", "explained_fraction", "energy_measured_j",
			       "energy_predicted_j", "energy_error_pct", "idle_power_w", NULL};
	for (int k = 0; nulls[k]; k++)
		assert_true(json_is_null(json_object_get(j, nulls[k])));
	NEAR(jnum(j, "busy_us"), 450);
	assert_true(json_array_size(json_object_get(j, "missing")) >= 4);
	json_decref(j);
}

static void test_whole_run_unclosed_overlap(void **state)
{
	(void)state;
	char p[256];
	sqlite3 *db = NULL;
	/* no NVTX at all: the whole run [first start, last end] is one iteration */
	snprintf(p, sizeof(p), "%s/whole.kjdb", dir);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	kernel(db, 1, 1, 1, 100, 200, 10);
	kernel(db, 2, 1, 1, 400, 500, 300);
	kj_db_close(db);
	json_t *j = compare_json(p, NULL, -1, 0);
	assert_true(json_is_true(json_object_get(json_object_get(j, "iterations"), "whole_run")));
	NEAR(jnum(j, "wall_us"), 490); /* first API call at 10 to the last kernel's end 500 */
	NEAR(jnum(j, "busy_us"), 200);
	NEAR(jnum(j, "idle_us"), 200);
	NEAR(jnum(j, "host_only_us"), 90);
	json_decref(j);

	/* ranges that never close end at the next instance; overlapping ones are counted */
	snprintf(p, sizeof(p), "%s/unclosed.kjdb", dir);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	exec(db, "INSERT INTO nvtx_range(pid, name, start_ns, end_ns, depth) VALUES"
		 " (7, 'it', %lld, NULL, 0), (7, 'it', %lld, %lld, 0), (7, 'it', %lld, %lld, 0)",
		 (long long)(T0), (long long)(T0 + 1000 * US), (long long)(T0 + 2500 * US),
		 (long long)(T0 + 2000 * US), (long long)(T0 + 3000 * US));
	kernel(db, 1, 1, 1, 100, 200, 50);
	kj_db_close(db);
	{
		struct kj_iters it;
		assert_int_equal(kj_db_open(p, 0, &db), 0);
		assert_int_equal(kj_iters_find(db, NULL, -1, T0, T0 + 3000 * US, 1, &it), 0);
		assert_int_equal(it.n, 3);
		assert_int_equal(it.unclosed, 1);
		assert_int_equal(it.overlaps, 1);
		assert_int_equal(it.v[0].end_ns, T0 + 1000 * US);
		assert_int_equal(it.skip, 0);
		/* time 2200 us is in both the 2nd and 3rd instances: the latest start wins */
		assert_int_equal(kj_iters_owner(&it, T0 + 2200 * US), 2);
		assert_int_equal(kj_iters_owner(&it, T0 + 1500 * US), 1);
		kj_iters_free(&it);
		kj_db_close(db);
	}
	j = compare_json(p, NULL, -1, 0);
	assert_true(fabs(jnum(j, "busy_us") - 100.0 / 3.0) < 0.001); /* reported to 1 ns */
	json_decref(j);

	/* work launched at 900 in [0, 1000) runs [950, 1200): 50 us inside its own window, 200 us
	 * after it (outside), and those 200 us are busy time of the next window (inherited) */
	snprintf(p, sizeof(p), "%s/spill.kjdb", dir);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	exec(db, "INSERT INTO nvtx_range(pid, name, start_ns, end_ns, depth) VALUES"
		 " (7, 'it', %lld, %lld, 0), (7, 'it', %lld, %lld, 0)",
		 (long long)T0, (long long)(T0 + 1000 * US), (long long)(T0 + 1000 * US),
		 (long long)(T0 + 2000 * US));
	kernel(db, 1, 1, 1, 950, 1200, 900);
	kj_db_close(db);
	j = compare_json(p, NULL, -1, 0);
	json_t *st = json_object_get(j, "stats");
	NEAR(jnum(json_object_get(st, "busy_us"), "min"), 50);
	NEAR(jnum(json_object_get(st, "busy_us"), "max"), 200);
	NEAR(jnum(j, "outside_us"), 100);   /* (200 + 0) / 2 */
	NEAR(jnum(j, "inherited_us"), 100); /* (0 + 200) / 2 */
	NEAR(jnum(j, "kernel_sum_us"), 125);
	NEAR(jnum(j, "busy_us") + jnum(j, "idle_us") + jnum(j, "host_only_us"), jnum(j, "wall_us"));
	json_decref(j);

	/* GPU-bound: each range closes on the host after 100 us, its kernel runs 840 us more; the
	 * iteration lasts until its own work is done (900 us), not until the range closes */
	snprintf(p, sizeof(p), "%s/gpubound.kjdb", dir);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	exec(db, "INSERT INTO nvtx_range(pid, name, start_ns, end_ns, depth) VALUES"
		 " (7, 'it', %lld, %lld, 0), (7, 'it', %lld, %lld, 0)",
		 (long long)T0, (long long)(T0 + 100 * US), (long long)(T0 + 1000 * US),
		 (long long)(T0 + 1100 * US));
	kernel(db, 1, 1, 1, 60, 900, 50);
	kernel(db, 2, 1, 1, 1060, 1900, 1050);
	kj_db_close(db);
	j = compare_json(p, NULL, 0, 0);
	NEAR(jnum(j, "wall_us"), 900);
	NEAR(jnum(j, "busy_us"), 840);
	NEAR(jnum(j, "outside_us"), 0);
	json_decref(j);
}

static void test_empty_and_no_kernels(void **state)
{
	(void)state;
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/empty.kjdb", dir);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	kj_db_close(db);
	assert_null(compare_json(p, NULL, -1, KJ_ENOTFOUND));
	/* NVTX only: figures are zero, predictions null, nothing divides by zero */
	snprintf(p, sizeof(p), "%s/nokernels.kjdb", dir);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	exec(db, "INSERT INTO nvtx_range(pid, name, start_ns, end_ns, depth) VALUES"
		 " (7, 'f', 100, 100, 0), (7, 'f', 200, 300, 0)");
	kj_db_close(db);
	json_t *j = compare_json(p, NULL, -1, 0);
	NEAR(jnum(j, "busy_us"), 0);
	assert_true(json_is_null(json_object_get(j, "explained_fraction")));
	char *s = json_dumps(j, 0);
	assert_null(strstr(s, "nan"));
	free(s);
	json_decref(j);
}

static void test_intervals(void **state)
{
	(void)state;
	struct kj_ival v[] = {{50, 60}, {0, 10}, {5, 20}, {30, 40}, {35, 38}, {60, 70}};
	int64_t s, e, sum;
	/* union: [0,20) + [30,40) + [50,70) = 20 + 10 + 20 */
	assert_int_equal(kj_ival_union(v, 6, INT64_MIN, INT64_MAX, &s, &e, &sum), 50);
	assert_int_equal(s, 0);
	assert_int_equal(e, 70);
	assert_int_equal(sum, 10 + 15 + 10 + 3 + 10 + 10);
	/* clipped to [8, 55): [8,20) + [30,40) + [50,55) */
	assert_int_equal(kj_ival_union(v, 6, 8, 55, &s, &e, NULL), 12 + 10 + 5);
	assert_int_equal(s, 8);
	assert_int_equal(e, 55);
	assert_int_equal(kj_ival_union(v, 0, 0, 10, &s, &e, &sum), 0);
	int64_t t;
	assert_int_equal(kj_parse_time_ns("1.5ms", &t), 0);
	assert_int_equal(t, 1500000);
	assert_int_equal(kj_parse_time_ns("250", &t), 0);
	assert_int_equal(t, 250000);
	assert_int_not_equal(kj_parse_time_ns("abc", &t), 0);
	assert_int_not_equal(kj_parse_time_ns("5parsecs", &t), 0);
}

static void test_write_dir(void **state)
{
	(void)state;
	char p[256], out[256], f[300];
	sqlite3 *db = NULL;
	struct kj_compare *c = NULL;
	struct kj_compare_opts o = {.skip = -1, .top = 5, .quiet = 1};
	snprintf(p, sizeof(p), "%s/main.kjdb", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	make_main(p, 1);
	assert_int_equal(kj_db_open(p, 0, &db), 0);
	assert_int_equal(kj_compare_compute(db, &o, &c), 0);
	assert_int_equal(kj_compare_write_dir(c, out), 0);
	const char *files[] = {"full_model_timing.json", "comparison_report.json",
			       "energy_report.json", NULL};
	for (int k = 0; files[k]; k++) {
		json_error_t err;
		snprintf(f, sizeof(f), "%s/%s", out, files[k]);
		json_t *j = json_load_file(f, 0, &err);
		assert_non_null(j);
		if (k == 0) {
			NEAR(jnum(j, "full_model_inference_us"), 1000);
			assert_int_equal(json_integer_value(json_object_get(j, "num_runs")), 3);
		} else if (k == 1) {
			NEAR(jnum(j, "predicted_from_kernels_us"), 480);
			NEAR(jnum(j, "error_percent"), -52);
			assert_non_null(json_object_get(json_object_get(j, "tier_breakdown"), "gemm"));
		} else {
			assert_true(fabs(jnum(json_object_get(j, "energy_joules"), "per_run") - 0.2) < 0.01);
			assert_int_equal(json_integer_value(json_object_get(j, "num_runs")), 3);
		}
		json_decref(j);
	}
	const char *csv[] = {"tiers.csv", "top_kernels.csv", "regions.csv", "iterations.csv", NULL};
	for (int k = 0; csv[k]; k++) {
		snprintf(f, sizeof(f), "%s/%s", out, csv[k]);
		assert_int_equal(access(f, R_OK), 0);
	}
	kj_compare_free(c);
	kj_db_close(db);
}

/* Two processes (torchrun ranks) with overlapping 'forward' instances: each rank's work goes to
 * its own instance, never to the other rank's that started later; a process without instances of
 * its own is attributed by time alone, as before. */
static void test_owner_per_process(void **state)
{
	(void)state;
	struct kj_iter v[] = {
		{.start_ns = 100, .end_ns = 200, .pid = 1, .closed = 1},
		{.start_ns = 110, .end_ns = 210, .pid = 2, .closed = 1},
		{.start_ns = 300, .end_ns = 400, .pid = 1, .closed = 1},
		{.start_ns = 305, .end_ns = 405, .pid = 2, .closed = 1},
	};
	struct kj_iters it = {.v = v, .n = 4, .n_kept = 4, .multi_pid = 1};
	assert_int_equal(kj_iters_owner(&it, 150), 1); /* time alone: the latest that contains it */
	assert_int_equal(kj_iters_owner_of(&it, 150, 1), 0);
	assert_int_equal(kj_iters_owner_of(&it, 150, 2), 1);
	assert_int_equal(kj_iters_owner_of(&it, 205, 1), -1); /* after rank 1's instance closed */
	assert_int_equal(kj_iters_owner_of(&it, 205, 2), 1);
	assert_int_equal(kj_iters_owner_of(&it, 350, 1), 2);
	assert_int_equal(kj_iters_owner_of(&it, 350, 9), 3); /* no instances of its own: by time */
	assert_int_equal(kj_iters_owner_of(&it, 350, 0), 3); /* pid unknown: by time */
	it.multi_pid = 0;
	assert_int_equal(kj_iters_owner_of(&it, 150, 1), 1); /* one process: unchanged */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intervals),
		cmocka_unit_test(test_owner_per_process),
		cmocka_unit_test(test_decomposition_by_hand),
		cmocka_unit_test(test_missing_inputs_are_null),
		cmocka_unit_test(test_whole_run_unclosed_overlap),
		cmocka_unit_test(test_empty_and_no_kernels),
		cmocka_unit_test(test_write_dir),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
