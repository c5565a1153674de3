/* compare, timeline and api on run databases built here with hand-computed decompositions.
 *
 * The main run (times in us; the database holds ns = us * 1000): four 'step' ranges (depth 0) at
 * 0, 2000, 4000, 6000, each 1000 long, so the first is skipped as warm-up by default. In each,
 * relative to its start o:
 *   K1 unique 1 (gemm) stream 1 [100, 300) launched at 50
 *   K2 unique 2 (norm) stream 2 [200, 400) launched at 60   (overlaps K1 by 100)
 *   K1 again             stream 1 [600, 700) launched at 550
 *   memcpy HtoD 100 B    stream 1 [800, 850) (no launch time: its start assigns it)
 *   'layer' range (depth 1) [40, 500): launches K1 and K2 -> GPU busy [100, 400) = 300
 *   cuStreamSynchronize [860, 900)
 * Per iteration, by hand: wall 1000; busy = |[100,400) u [600,700) u [800,850)| = 450;
 * span 750; idle in span 300; host-only 250; kernel sum 500; copy sum 50; overlap 100.
 * Replay warm: unique 1 150, unique 2 180 -> Σ = 480 (in situ 500), naive error -52%. Cold:
 * unique 1 only, 250 -> Σ 500 over 2/3 of launches (unique 2's cold replay failed and is
 * ignored). Isolated estimate (mean of warm and cold, warm without cold): 2 x 200 + 180 = 580;
 * with the 100 us overlap back in the wall, predicted wall 1000 + 100 + 80 = 1180.
 * Sequence replay eager 900, graph 600 -> framework/host 100, launch cost 300.
 * Energy: constant 200 W -> 0.2 J measured; replay 10 + 10 + 20 mJ = 0.04 J; idle 100 W over the
 * non-kernel time 1000 - 400 = 600 us -> 0.06 J; predicted 0.1 J, error -50%. */
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
#include "kj_apistory_out.h"
#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_html.h"
#include "kj_replay.h"
#include "kj_store_r_results.h"
#include "kj_timeline.h"

#include "sqlexec.h"
#include "tmpdir.h"
#define US 1000LL /* ns per us */
#define T0 1000000000LL

static void kernel(sqlite3 *db, int64_t corr, int stream, int uid, int64_t s, int64_t e,
		   int64_t launch)
{
	exec(db,
	     "INSERT INTO kernel(pid, device_id, stream_id, correlation_id, start_ns, end_ns,"
	     " name_id, unique_id, launch_ns, launch_tid) VALUES(7, 0, %d, %lld, %lld, %lld, %d, %d,"
	     " %lld, 8)",
	     stream, (long long)corr, (long long)(T0 + s * US), (long long)(T0 + e * US), uid, uid,
	     (long long)(T0 + launch * US));
	exec(db,
	     "INSERT INTO api_call(pid, tid, domain, name, start_ns, end_ns, correlation_id)"
	     " VALUES(7, 8, 'driver', 'cuLaunchKernel', %lld, %lld, %lld)",
	     (long long)(T0 + launch * US), (long long)(T0 + (launch + 5) * US), (long long)corr);
}

static void make_main(const char *path, int with_power)
{
	sqlite3 *db = NULL;
	unlink(path);
	assert_int_equal(kj_db_create(path, &db), 0);
	exec(db, "INSERT INTO process(pid, exe) VALUES(7, 'python3')");
	exec(db, "INSERT INTO kernel_name(id, mangled) VALUES(1, 'ampere_sgemm_128x64_tn'),"
		 " (2, 'vectorized_layer_norm_kernel')");
	exec(db, "INSERT INTO unique_kernel(id, key, name_id, tier) VALUES(1, 'a', 1, 'gemm'),"
		 " (2, 'b', 2, 'norm')");
	int64_t corr = 1;
	for (int i = 0; i < 4; i++) {
		int64_t o = 2000LL * i;
		exec(db,
		     "INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES"
		     " (7, 8, 'step', %lld, %lld, 0), (7, 8, 'layer', %lld, %lld, 1)",
		     (long long)(T0 + o * US), (long long)(T0 + (o + 1000) * US),
		     (long long)(T0 + (o + 40) * US), (long long)(T0 + (o + 500) * US));
		kernel(db, corr++, 1, 1, o + 100, o + 300, o + 50);
		kernel(db, corr++, 2, 2, o + 200, o + 400, o + 60);
		kernel(db, corr++, 1, 1, o + 600, o + 700, o + 550);
		exec(db,
		     "INSERT INTO memcpy(pid, device_id, stream_id, start_ns, end_ns, bytes, kind)"
		     " VALUES(7, 0, 1, %lld, %lld, 100, 'HtoD')",
		     (long long)(T0 + (o + 800) * US), (long long)(T0 + (o + 850) * US));
		exec(db,
		     "INSERT INTO api_call(pid, tid, name, start_ns, end_ns) VALUES(7, 8,"
		     " 'cuStreamSynchronize', %lld, %lld)",
		     (long long)(T0 + (o + 860) * US), (long long)(T0 + (o + 900) * US));
	}
	exec(db, "INSERT INTO replay_kernel(unique_id, cache, runs, median_ns) VALUES"
		 " (1, 'warm', 10, 150000), (2, 'warm', 10, 180000), (1, 'cold', 10, 250000),"
		 " (1, 'sequence', 20, 160000), (2, 'sequence', 20, 170000)");
	/* a failed replay is not a measurement */
	exec(db, "INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status, error) VALUES"
		 " (2, 'cold', 3, 999000, 'failed', 'illegal address')");
	exec(db, "INSERT INTO replay_sequence(iteration, mode, runs, median_ns) VALUES"
		 " (1, 'eager', 5, 900000), (1, 'graph', 5, 600000)");
	if (with_power) {
		exec(db, "INSERT INTO device(id, uuid, name) VALUES(0, 'GPU-x', 'test')");
		exec(db, "INSERT INTO replay_energy(unique_id, energy_mj_per_launch) VALUES(1, 10),"
			 " (2, 20)");
		exec(db, "INSERT INTO idle_power(device_id, median_mw, samples) VALUES(0, 100000, 10)");
		/* 200 W inside the iterations (the first 1000 us of every 2000), idle 100 W between
		 * them: one sample per 100 us, the counter gaining 20 or 10 mJ per sample */
		for (int k = 0, mj = 1000; k <= 80; k++) {
			int inside = k > 0 && ((k - 1) % 20) < 10;
			mj += k > 0 ? (inside ? 20 : 10) : 0;
			exec(db,
			     "INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw,"
			     " energy_mj, energy_updated) VALUES(0, %lld, %d, %d, %d, 1)",
			     (long long)(T0 + (k * 100LL - 50) * US), inside ? 200000 : 100000, inside ? 200000 : 100000, mj);
		}
	}
	kj_db_close(db);
}

/* compare's JSON of a run; *text (when asked) gets its text report, which must never print NaN
 * or inf */
static json_t *compare_json_text(const char *path, const char *region, int skip, int expect_rc, char **text)
{
	sqlite3 *db = NULL;
	struct kj_compare *c = NULL;
	struct kj_compare_opts o = {.region = region, .skip = skip, .top = 5, .quiet = 1};
	assert_int_equal(kj_db_open(path, 0, &db), 0);
	assert_int_equal(kj_compare_compute(db, &o, &c), expect_rc);
	json_t *j = c ? kj_compare_json(c) : NULL;
	if (c) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		kj_compare_print(c, f);
		fclose(f);
		assert_null(strstr(buf, "nan"));
		assert_null(strstr(buf, "inf "));
		if (text)
			*text = buf;
		else
			free(buf);
	}
	kj_compare_free(c);
	kj_db_close(db);
	return j;
}

static json_t *compare_json(const char *path, const char *region, int skip, int expect_rc)
{
	return compare_json_text(path, region, skip, expect_rc, NULL);
}

static double jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_number(v)) {
		fprintf(stderr, "field %s is not a number\n", k);
		fail();
	}
	return json_number_value(v);
}

static int near(double a, double b)
{
	return fabs(a - b) < 1e-6 * (fabs(b) + 1);
}
#define NEAR(a, b) assert_true(near((a), (double)(b)))

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
		cmocka_unit_test(test_intervals),
		cmocka_unit_test(test_owner_per_process),
		cmocka_unit_test(test_decomposition_by_hand),
		cmocka_unit_test(test_loop_energy),
		cmocka_unit_test(test_in_situ_energy),
		cmocka_unit_test(test_cold_energy_mean),
		cmocka_unit_test(test_missing_inputs_are_null),
		cmocka_unit_test(test_whole_run_unclosed_overlap),
		cmocka_unit_test(test_empty_and_no_kernels),
		cmocka_unit_test(test_write_dir),
		cmocka_unit_test(test_chrome_trace_fields),
		cmocka_unit_test(test_api_story),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
