/* Replay, CPU side: what a worker and the CLI say to each other: statistics of a kernel's runs,
 * the result lines a worker writes read back (timings, energy, clock state, verify, device), the
 * in-sequence timing line, and the chunk a worker takes near the end of a --budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_replay.h"

static void test_stats_and_protocol(void **state)
{
	(void)state;
	int64_t v[] = {50, 10, 40, 20, 30};
	struct kj_replay_timing t;
	kj_replay_stats(v, 5, &t);
	assert_int_equal(t.runs, 5);
	assert_int_equal(t.min_ns, 10);
	assert_int_equal(t.median_ns, 30);
	assert_int_equal(t.max_ns, 50);
	assert_true(fabs(t.mean_ns - 30) < 1e-9);
	assert_true(fabs(t.stdev_ns - sqrt(250.0)) < 1e-9);
	int64_t w[] = {4, 2};
	kj_replay_stats(w, 2, &t);
	assert_int_equal(t.median_ns, 3);

	struct kj_replay_result r, q;
	memset(&r, 0, sizeof(r));
	memset(&q, 0, sizeof(q));
	r.unique_id = 42;
	kj_replay_result_set(&r, "relocated", "moved\tallocation 3\nand 4");
	r.warm = t;
	snprintf(r.timer, sizeof(r.timer), "cupti");
	r.has_energy = 1;
	r.unroll = 100;
	r.energy_launches = 123400;
	r.seconds = 3.1;
	r.energy_mj_per_launch = 0.0123;
	r.energy_unc_mj = 0.0004;
	r.power_mw = 412000;
	r.idle_mw = -1;
	r.dynamic_mj_per_launch = NAN;
	snprintf(r.method, sizeof(r.method), "counter-edges");
	r.sm_clock_mean_mhz = 1755.44;
	r.sm_clock_min_mhz = 1600;
	r.sm_clock_max_mhz = 1980;
	r.throttle_reasons = 0x44;
	snprintf(r.data, sizeof(r.data), "other_saved");
	r.has_energy_cold = 1;
	r.energy_cold_launches = 5000;
	r.energy_cold_seconds = 2.5;
	r.energy_cold_mj_per_launch = 0.0171;
	r.energy_cold_unc_mj = 0.0009;
	r.energy_cold_ns_per_launch = 31.5;
	r.flush_mj = 9.25;
	r.flush_unc_mj = 0.01;
	r.has_b2b = 1; /* paced under the cap: the back-to-back window kept beside */
	r.b2b_ns_per_launch = 118.25;
	r.b2b_mj_per_launch = 0.0974;
	r.b2b_sm_clock_mhz = 1459.3;
	snprintf(r.verify, sizeof(r.verify), "differs");
	r.verify_buffers = 3;
	r.verify_bytes = 786432;
	r.verify_diff_bytes = 17;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	kj_replay_emit(f, &r);
	fclose(f);
	char *line = strtok(buf, "\n");
	int results = 0;
	while (line) {
		int rc = kj_replay_parse_line(line, &q);
		assert_true(rc == 1);
		results++;
		line = strtok(NULL, "\n");
	}
	free(buf);
	assert_int_equal(results, 6);
	assert_true(q.has_b2b && fabs(q.b2b_ns_per_launch - 118.25) < 1e-9 && fabs(q.b2b_mj_per_launch - 0.0974) < 1e-12);
	assert_true(fabs(q.b2b_sm_clock_mhz - 1459.3) < 1e-9);
	assert_int_equal(kj_replay_parse_line("KJ_ENERGY_B2B\tunique=1\tns=x", &q), KJ_EINVAL);
	assert_true(q.has_energy_cold && q.energy_cold_launches == 5000);
	assert_true(fabs(q.energy_cold_mj_per_launch - 0.0171) < 1e-12 && fabs(q.flush_mj - 9.25) < 1e-12);
	assert_true(fabs(q.energy_cold_ns_per_launch - 31.5) < 1e-9 && fabs(q.energy_cold_unc_mj - 0.0009) < 1e-12);
	/* the energy window's clock state (the mean to 0.1 MHz) */
	assert_true(fabs(q.sm_clock_mean_mhz - 1755.4) < 1e-9);
	assert_int_equal(q.sm_clock_min_mhz, 1600);
	assert_int_equal(q.sm_clock_max_mhz, 1980);
	assert_int_equal(q.throttle_reasons, 0x44);
	/* the data the kernel ran on */
	assert_string_equal(q.data, "other_saved");
	/* a worker before it sent them: unknown (-1), never 0 ("not throttled") */
	struct kj_replay_result old;
	memset(&old, 0, sizeof(old));
	assert_int_equal(kj_replay_parse_line("KJ_ENERGY\tunique=1\tunroll=10\tlaunches=5\tseconds=1\tmj=1\tunc=0.1"
					      "\tpower_mw=1\tidle_mw=-1\tdyn=nan\tmethod=counter-edges", &old), 1);
	assert_true(old.sm_clock_mean_mhz == -1 && old.sm_clock_min_mhz == -1 && old.sm_clock_max_mhz == -1);
	assert_int_equal(old.throttle_reasons, -1);
	assert_string_equal(old.data, ""); /* and the data it ran on unknown */
	assert_int_equal(kj_replay_parse_line("KJ_ENERGY_COLD\tunique=1\tlaunches=5\tseconds=1\tmj=x", &q), KJ_EINVAL);
	assert_string_equal(q.verify, "differs");
	assert_true(q.verify_buffers == 3 && q.verify_bytes == 786432 && q.verify_diff_bytes == 17);
	assert_int_equal(kj_replay_parse_line("KJ_VERIFY\tunique=1\tverify=identical\tbuffers=x", &q), KJ_EINVAL);
	assert_int_equal(q.unique_id, 42);
	assert_string_equal(q.status, "relocated");
	assert_string_equal(q.error, "moved allocation 3 and 4");
	assert_int_equal(q.warm.median_ns, 3);
	assert_int_equal(q.cold.runs, 0);
	assert_string_equal(q.timer, "cupti");
	assert_true(q.has_energy && q.unroll == 100 && q.energy_launches == 123400);
	assert_true(fabs(q.energy_mj_per_launch - 0.0123) < 1e-12);
	assert_true(isnan(q.dynamic_mj_per_launch));
	assert_string_equal(q.method, "counter-edges");
	assert_int_equal(kj_replay_parse_line("KJ_TIMING\tunique=1\tcache=warm\truns=x", &q), KJ_EINVAL);
	assert_int_equal(kj_replay_parse_line("KJ_RESULT\tstatus=ok", &q), KJ_EINVAL);
	assert_int_equal(kj_replay_parse_line("some warning", &q), 0);
	struct kj_replay_device d;
	assert_int_equal(kj_replay_parse_device("KJ_DEVICE\tcc_major=9\tcc_minor=0\tl2=52428800\tname=NVIDIA H100 80GB HBM3", &d), 1);
	assert_int_equal(d.cc_major, 9);
	assert_int_equal(d.l2_bytes, 52428800);
	assert_string_equal(d.name, "NVIDIA H100 80GB HBM3");
	assert_int_equal(kj_replay_parse_device("KJ_RESULT\tunique=1", &d), 0);
}

/* Near the end of a --budget a worker takes only the kernels the time left holds at the pace so
 * far: 8 kernels in 48 s (6 s each), the 12 s left of 60 hold 2; none left: 1; no budget or nothing
 * done yet: the whole chunk. */
static void test_budget_chunk(void **state)
{
	(void)state;
	assert_int_equal(kj_replay_budget_chunk(8, 60, 48, 8), 2);
	assert_int_equal(kj_replay_budget_chunk(8, 60, 20, 8), 8);
	assert_int_equal(kj_replay_budget_chunk(8, 60, 59.9, 8), 1);
	assert_int_equal(kj_replay_budget_chunk(8, 60, 70, 8), 1);
	assert_int_equal(kj_replay_budget_chunk(8, 0, 48, 8), 8);
	assert_int_equal(kj_replay_budget_chunk(8, 60, 5, 0), 8);
}

/* The worker writes in-sequence times with kj_replay_emit_timing; the CLI reads them back with
 * kj_replay_parse_seq_kernel, and warm/cold ones with kj_replay_parse_line: the same numbers. */
static void test_timing_line_round_trip(void **state)
{
	(void)state;
	struct kj_replay_timing t = {.runs = 40, .min_ns = 650, .median_ns = 700, .mean_ns = 710.5,
				     .max_ns = 900, .stdev_ns = 20.25};
	struct kj_replay_seq_kernel k;
	struct kj_replay_result r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	kj_replay_emit_timing(f, 17, "sequence", "cupti", &t);
	fclose(f);
	assert_int_equal(kj_replay_parse_seq_kernel(buf, &k), 1);
	assert_int_equal(k.unique_id, 17);
	assert_int_equal(k.t.runs, 40);
	assert_int_equal(k.t.min_ns, 650);
	assert_int_equal(k.t.median_ns, 700);
	assert_int_equal(k.t.max_ns, 900);
	assert_true(fabs(k.t.mean_ns - 710.5) < 1e-9 && fabs(k.t.stdev_ns - 20.25) < 1e-9);
	memset(&r, 0, sizeof(r));
	assert_int_equal(kj_replay_parse_line(buf, &r), KJ_EINVAL); /* 'sequence' is no per-kernel mode */
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	kj_replay_emit_timing(f, 17, "cold", "events", &t);
	fclose(f);
	assert_int_equal(kj_replay_parse_seq_kernel(buf, &k), 0);
	assert_int_equal(kj_replay_parse_line(buf, &r), 1);
	assert_int_equal(r.cold.median_ns, 700);
	assert_int_equal(r.cold.runs, 40);
	assert_string_equal(r.timer, "events");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_and_protocol),
		cmocka_unit_test(test_budget_chunk),
		cmocka_unit_test(test_timing_line_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
