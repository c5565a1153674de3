/* Sampler with a fake back-end (no GPU): a 300 W device whose counter updates every 20 ms and
 * costs 1 ms per read, and that fails for a while in the middle. Checks that edges are marked,
 * samples before and after the errors are kept, write_db creates the device row, the samples and
 * a problem row, and the estimator on the recorded stream gives 300 W. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kj_clock_state.h"
#include "kj_db.h"
#include "kj_energy.h"
#include "kj_sampler.h"

struct fake {
	int64_t t0;
	int fail_from_ms, fail_to_ms;
};

static int64_t ms_since(struct fake *f)
{
	return (kj_now_ns() - f->t0) / 1000000;
}

static int f_count(void *c, int *n)
{
	(void)c;
	*n = 1;
	return 0;
}

static int f_info(void *c, int idx, struct kj_gpu_info *o)
{
	(void)c;
	memset(o, 0, sizeof(*o));
	snprintf(o->uuid, sizeof(o->uuid), "GPU-fake-%d", idx);
	snprintf(o->name, sizeof(o->name), "Fake GPU");
	snprintf(o->driver_version, sizeof(o->driver_version), "0.0");
	o->power_limit_mw = 700000;
	o->memory_bytes = -1;
	o->sm_clock_max_mhz = o->mem_clock_max_mhz = -1;
	o->energy_counter = 1;
	return 0;
}

static int failing(struct fake *f)
{
	int64_t m = ms_since(f);
	return m >= f->fail_from_ms && m < f->fail_to_ms;
}

static int f_power(void *c, int idx, int64_t *inst, int64_t *avg)
{
	(void)idx;
	if (failing(c))
		return 15;
	*inst = *avg = 300000;
	return 0;
}

static int f_energy(void *c, int idx, uint64_t *mj)
{
	struct fake *f = c;
	(void)idx;
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
	if (failing(f))
		return 15;
	/* 300 W = 300 mJ/ms, updated every 20 ms */
	*mj = 1000000 + (uint64_t)(ms_since(f) / 20) * 20 * 300;
	return 0;
}

static int f_state(void *c, int idx, struct kj_gpu_state *o)
{
	(void)c;
	(void)idx;
	o->sm_clock_mhz = 1980;
	o->mem_clock_mhz = 2619;
	o->temp_c = 40;
	o->util_gpu_pct = 100;
	o->util_mem_pct = 50;
	o->throttle_reasons = 0;
	return 0;
}

static int f_sm(void *c, int idx, int *mhz)
{
	(void)c;
	(void)idx;
	*mhz = 1980;
	return 0;
}

static const char *f_str(void *c, int code)
{
	(void)c;
	return code == 15 ? "GPU is lost" : "fake error";
}

static int f_unsup(void *c, int code)
{
	(void)c;
	return code == 3;
}

static void test_fake_sampler(void **state)
{
	(void)state;
	struct fake f = {kj_now_ns(), 200, 260};
	struct kj_gpu_backend be = {"fake", &f, f_count, f_info, f_power, f_energy, f_state, f_sm,
				    f_str, f_unsup, NULL, NULL, NULL, NULL, NULL};
	struct kj_sampler_opts o = {.interval_us = 2000};
	struct kj_sampler *s = NULL;
	struct kj_power_sample *v = NULL;
	size_t n = 0;

	assert_int_equal(kj_sampler_start_with(&o, &be, &s), 0);
	assert_int_equal(kj_sampler_ndev(s), 1);
	usleep(600000);
	assert_int_equal(kj_sampler_stop(s), 0);

	struct kj_sampler_stats st;
	kj_sampler_get_stats(s, 0, &st);
	printf("# power reads %lld, counter reads %lld, edges %lld, errors %lld\n",
	       (long long)st.power_reads, (long long)st.counter_reads, (long long)st.edges,
	       (long long)st.errors);
	assert_true(st.power_reads > 150);
	assert_true(st.edges > 20);
	assert_true(st.errors > 0);
	assert_non_null(strstr(kj_sampler_first_error(s), "GPU is lost"));

	assert_int_equal(kj_sampler_samples(s, 0, &v, &n), 0);
	int edges = 0;
	for (size_t i = 1; i < n; i++) {
		assert_true(v[i].t_ns >= v[i - 1].t_ns);
		edges += v[i].energy_updated;
	}
	assert_int_equal(edges, st.edges);
	/* samples after the failure are there */
	assert_true(v[n - 1].t_ns - f.t0 > 500000000LL);
	struct kj_window_energy w;
	int64_t a = f.t0 + 300000000LL, b = f.t0 + 500000000LL;
	assert_int_equal(kj_energy_window(v, n, a, b, -1, &w), 0);
	printf("# window: %.3f J +- %.3f (%s)\n", w.energy_j, w.uncertainty_j, w.method);
	assert_true(w.ok);
	assert_true(fabs(w.energy_j - 60.0) <= w.uncertainty_j + 0.5);
	free(v);

	char path[] = "/tmp/kjtest_sampler_XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	unlink(path);
	sqlite3 *db = NULL;
	assert_int_equal(kj_db_create(path, &db), 0);
	assert_int_equal(kj_db_exec(db, "BEGIN", "begin"), 0);
	assert_int_equal(kj_sampler_write_db(s, db), 0);
	assert_int_equal(kj_db_exec(db, "COMMIT", "commit"), 0);
	assert_int_equal(kj_db_count(db, "device"), 1);
	assert_true(kj_db_count(db, "power_sample") > 150);
	assert_true(kj_db_count(db, "problem") >= 1);
	/* written twice: the device row is found by UUID, not duplicated */
	assert_int_equal(kj_sampler_write_db(s, db), 0);
	assert_int_equal(kj_db_count(db, "device"), 1);
	/* the stored stream loads back and gives the same window */
	struct kj_window_energy w2;
	assert_int_equal(kj_energy_load_samples(db, 1, &v, &n), 0);
	assert_true(n > 150);
	free(v);
	assert_true(kj_energy_idle_mw(db, 1) < 0);
	assert_int_equal(kj_db_exec(db, "INSERT INTO idle_power(device_id, median_mw) VALUES(1, 123000)",
				    "idle"), 0);
	assert_true(fabs(kj_energy_idle_mw(db, 1) - 123000) < 1e-9);
	(void)w2;
	kj_db_close(db);
	unlink(path);
	kj_sampler_close(s);
	kj_sampler_close(NULL);
}

static int work_enqueue(void *ctx)
{
	(*(int *)ctx)++;
	return 0;
}

static int work_sync(void *ctx)
{
	/* each enqueued unit is 1 ms of "GPU" time */
	struct timespec ts = {0, 1000000L * *(int *)ctx};
	*(int *)ctx = 0;
	nanosleep(&ts, NULL);
	return 0;
}

static int long_sync(void *ctx)
{
	/* each enqueued unit is 400 ms of "GPU" time: longer than the energy window asked for */
	struct timespec ts = {0, 400000000L};
	for (int i = 0; i < *(int *)ctx; i++)
		nanosleep(&ts, NULL);
	*(int *)ctx = 0;
	return 0;
}

/* A unit longer than the window: the counter edges all fall inside the first batch. The energy
 * per launch is still finite and right (it once came out as inf: 0 units between the edges). */
static void test_amortize_long_unit(void **state)
{
	(void)state;
	struct fake f = {kj_now_ns(), -1, -1};
	struct kj_gpu_backend be = {"fake", &f, f_count, f_info, f_power, f_energy, f_state, f_sm,
				    f_str, f_unsup, NULL, NULL, NULL, NULL, NULL};
	int pending = 0;
	struct kj_amortize_work w = {&pending, work_enqueue, long_sync, 100};
	struct kj_amortize_opts o = {.nvml_index = 0, .min_seconds = 0.1, .min_updates = 2,
				     .warmup_max_s = 0.3, .warmup_min_s = 0.1};
	struct kj_amortize_result r;
	assert_int_equal(kj_amortize_measure_with(&w, &o, &be, &r), 0);
	double want = 300.0 * 0.004 * 1000.0; /* 300 W for 4 ms a launch, in mJ */
	assert_true(isfinite(r.energy_per_launch_mj) && isfinite(r.energy_unc_mj));
	assert_true(fabs(r.energy_per_launch_mj - want) <= r.energy_unc_mj + 0.05 * want);
}

static void test_amortize_fake(void **state)
{
	(void)state;
	struct fake f = {kj_now_ns(), -1, -1};
	struct kj_gpu_backend be = {"fake", &f, f_count, f_info, f_power, f_energy, f_state, f_sm,
				    f_str, f_unsup, NULL, NULL, NULL, NULL, NULL};
	int pending = 0;
	struct kj_amortize_work w = {&pending, work_enqueue, work_sync, 10};
	struct kj_amortize_opts o = {.nvml_index = 0, .min_seconds = 0.6, .min_updates = 10,
				     .warmup_max_s = 2};
	struct kj_amortize_result r;
	assert_int_equal(kj_amortize_measure_with(&w, &o, &be, &r), 0);
	double want = 300.0 * r.time_per_launch_ns * 1e-9 * 1000.0;
	printf("# amortized: %.4f mJ +- %.4f per launch (want %.4f), %.0f ns, %.1f W, %d updates, %s\n",
	       r.energy_per_launch_mj, r.energy_unc_mj, want, r.time_per_launch_ns, r.avg_power_w,
	       r.counter_updates, r.method);
	assert_string_equal(r.method, "counter-edges");
	assert_true(r.counter_updates >= 10);
	assert_true(r.time_per_launch_ns > 1e5 && r.time_per_launch_ns < 2e5);
	assert_true(fabs(r.energy_per_launch_mj - want) <= r.energy_unc_mj + 0.01 * want);
	assert_true(fabs(r.avg_power_w - 300) < 10);
	/* the fake's SM clock (1980 MHz) read over the 0.6 s span, at most every 50 ms */
	assert_true(r.sm_clock_mean_mhz == 1980 && r.sm_clock_min_mhz == 1980 && r.sm_clock_max_mhz == 1980);
	/* bad work */
	struct kj_amortize_work bad = {&pending, NULL, work_sync, 10};
	assert_int_equal(kj_amortize_measure_with(&bad, &o, &be, &r), -1);
	/* without NVML: ENODEV, said so */
	char why[256];
	struct kj_gpu_backend nv;
	if (kj_gpu_nvml_open(&nv, why, sizeof(why)) != 0)
		assert_int_equal(kj_amortize_measure(&w, &o, &r), -7);
	else
		kj_gpu_backend_close(&nv);
}

/* Clocks-event reasons for the amortised engine: the GPU-idle bit always, SW power cap on every
 * third read; each read counted, those made while work was enqueued and not yet synced (*busy > 0)
 * too, and 3 (not supported) when unsupported is set. */
static int reason_reads, busy_reads, reasons_unsupported;
static int *busy;
static int f_reasons(void *c, int idx, uint64_t *mask)
{
	(void)c;
	(void)idx;
	if (reasons_unsupported)
		return 3;
	busy_reads += busy && *busy > 0;
	*mask = 0x1 | (reason_reads++ % 3 == 2 ? 0x4 : 0);
	return 0;
}

/* The engine ORs the reasons read with the SM clock over the measured span, at most every 50 ms,
 * and says -1 where none was read (no such call, or the driver has none). */
static void test_amortize_reasons(void **state)
{
	(void)state;
	struct fake f = {kj_now_ns(), -1, -1};
	struct kj_gpu_backend be = {"fake", &f, f_count, f_info, f_power, f_energy, f_state, f_sm,
				    f_str, f_unsup, NULL, NULL, NULL, NULL, f_reasons};
	int pending = 0;
	struct kj_amortize_work w = {&pending, work_enqueue, work_sync, 10};
	struct kj_amortize_opts o = {.nvml_index = 0, .min_seconds = 0.4, .min_updates = 5, .warmup_max_s = 1};
	struct kj_amortize_result r;
	char words[64];
	reason_reads = busy_reads = 0;
	reasons_unsupported = 0;
	busy = &pending;
	assert_int_equal(kj_amortize_measure_with(&w, &o, &be, &r), 0);
	printf("# %d reason reads over %.2f s: 0x%llx\n", reason_reads, r.seconds, (long long)r.throttle_reasons);
	assert_true(reason_reads >= 3);
	assert_true(reason_reads <= (int)(r.seconds / 0.05) + 4); /* every 50 ms at most (the span, its ends) */
	assert_int_equal(r.throttle_reasons, 0x5);
	/* read while a batch runs, never in the idle moment after a sync */
	assert_int_equal(busy_reads, reason_reads);
	assert_int_equal(kj_clock_throttled((uint64_t)r.throttle_reasons, words, sizeof(words)), 1);
	assert_string_equal(words, "SW power cap");
	/* the driver has no reasons: unknown, not "none" */
	reasons_unsupported = 1;
	assert_int_equal(kj_amortize_measure_with(&w, &o, &be, &r), 0);
	assert_int_equal(r.throttle_reasons, -1);
	/* no such call in the back-end: unknown too */
	be.clocks_event_reasons = NULL;
	assert_int_equal(kj_amortize_measure_with(&w, &o, &be, &r), 0);
	assert_int_equal(r.throttle_reasons, -1);
	assert_true(r.sm_clock_mean_mhz == 1980);
}

static void test_no_nvml_says_so(void **state)
{
	(void)state;
	char why[512] = "";
	struct kj_gpu_backend be;
	int rc = kj_gpu_nvml_open(&be, why, sizeof(why));
	if (rc == 0) {
		kj_gpu_backend_close(&be);
		skip();
	}
	printf("# %s\n", why);
	assert_true(strlen(why) > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fake_sampler),
	    cmocka_unit_test(test_amortize_fake),
	    cmocka_unit_test(test_amortize_long_unit),
	    cmocka_unit_test(test_amortize_reasons),
	    cmocka_unit_test(test_no_nvml_says_so),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
