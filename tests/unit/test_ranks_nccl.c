/* Several GPUs: NCCL bytes and bus bandwidth per rank from recorded NCCL calls (kj_ranks_nccl.c).
 *
 * A two-rank job built by SQL (times in us from T0; ns in the database). Ranks 101 (GPU 0) and 102
 * (GPU 1) each have 4 'step' ranges at o = 2000 i (+10 for rank 1), 1000 long; the first is
 * warm-up. Each iteration, relative to o: a compute kernel [100, 400) launched at 50; NCCL kernel
 * A [450, 600) launched at 300; NCCL kernel B [650, 700) launched at 620; rank 0 also NCCL kernel
 * C [800, 850) launched at 780 that no call asks for. Calls: all_reduce (float32) at 290 -> A; in
 * a group, all_gather (bfloat16) at 605 and reduce_scatter (float16) at 610 -> B (the kernel
 * launched at ncclGroupEnd). One more all_reduce after every kernel matches none. Expected figures
 * are computed here from the counts inserted, with nccl-tests' definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_ranks.h"

#include "ranks_fixture.h"
#include "tmpdir.h"
#define NRANKS 2

/* per rank: counts of the all_reduce, all_gather and reduce_scatter */
static const int64_t counts[2][3] = {{1 << 20, 4096, 12288}, {3000, 500, 7}};
static const int dtypes[3] = {7, 9, 6};     /* float32, bfloat16, float16 */
static const int dsize[3] = {4, 2, 2};
static const char *const ops[3] = {"all_reduce", "all_gather", "reduce_scatter"};

/* A kernel of pid on device dev, stream 1, its unique kernel that of its name. */
static void kernel(sqlite3 *db, int pid, int dev, int name, int64_t s, int64_t e, int64_t launch)
{
	ranks_kernel(db, pid, dev, 1, name, name, s, e, launch);
}

static void call(sqlite3 *db, int pid, int64_t t, int op, int64_t count, int dt, int64_t bytes, int depth)
{
	exec(db, "INSERT INTO nccl_call(pid, tid, t_ns, op, count, datatype, bytes, nranks, peer, group_depth)"
		 " VALUES(%d, %d, %lld, '%s', %lld, %d, %lld, %d, -1, %d)",
	     pid, pid, (long long)(T0 + t * US), ops[op], (long long)count, dt, (long long)bytes, NRANKS, depth);
}

/* variant: 0 every call recorded; 1 traced with --no-nccl-calls (no table); 2 rank 1 has no call;
 * 3 rank 1's all_reduce of an unknown datatype (bytes -1) */
static void make_job(const char *path, int variant)
{
	sqlite3 *db = ranks_db_create(path, 1, 1, "NVIDIA H200");
	exec(db, "INSERT INTO meta(key, value) VALUES('nccl_calls', '%s')", variant == 1 ? "off" : "on");
	exec(db, "INSERT INTO kernel_name(id, mangled) VALUES(1, 'ampere_sgemm_128x64_tn'),"
		 " (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'), (3, 'ncclDevKernel_AllGather_RING_LL')");
	exec(db, "INSERT INTO unique_kernel(id, key, name_id, tier) VALUES(1, 'a', 1, 'gemm'),"
		 " (2, 'b', 2, 'communication'), (3, 'c', 3, 'communication')");
	if (variant != 1)
		exec(db, "CREATE TABLE nccl_call(pid INTEGER, tid INTEGER, t_ns INTEGER, op TEXT, count INTEGER,"
			 " datatype INTEGER, bytes INTEGER, nranks INTEGER, peer INTEGER, group_depth INTEGER)");
	for (int r = 0; r < 2; r++) {
		int pid = 101 + r;
		for (int i = 0; i < 4; i++) {
			int64_t o = 2000LL * i + 10 * r;
			ranks_step(db, pid, o, 1000, 0);
			kernel(db, pid, r, 1, o + 100, o + 400, o + 50);
			kernel(db, pid, r, 2, o + 450, o + 600, o + 300);
			kernel(db, pid, r, 3, o + 650, o + 700, o + 620);
			if (r == 0)
				kernel(db, pid, r, 2, o + 800, o + 850, o + 780);
			if (variant == 1 || (variant == 2 && r == 1))
				continue;
			const int64_t at[3] = {290, 605, 610};
			for (int k = 0; k < 3; k++) {
				int64_t bytes = counts[r][k] * dsize[k];
				if (variant == 3 && r == 1 && k == 0)
					call(db, pid, o + at[k], k, counts[r][k], 42, -1, 0);
				else
					call(db, pid, o + at[k], k, counts[r][k], dtypes[k], bytes, k ? 1 : 0);
			}
		}
		if (variant == 0)
			call(db, pid, 2000LL * 3 + 10 * r + 950, 0, 8, 7, 32, 0); /* after every kernel */
	}
	kj_db_close(db);
}

/* The job of make_job(path, variant), its run built at dir/job<variant>.kjdb, into j. */
static void job_made(int variant, struct kj_job *j)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/job%d.kjdb", dir, variant);
	make_job(path, variant);
	job_of(path, j);
}

/* Per iteration bytes, bus bytes and bus bandwidth of rank r, from the counts inserted. */
static void expected(int r, double *alg, double *bus, double *gbps)
{
	const double n = NRANKS;
	double ar = (double)(counts[r][0] * dsize[0]);
	double ag = (double)(counts[r][1] * dsize[1]) * n, rs = (double)(counts[r][2] * dsize[2]) * n;
	*alg = ar + ag + rs;
	*bus = ar * 2 * (n - 1) / n + ag * (n - 1) / n + rs * (n - 1) / n;
	*gbps = *bus / ((150.0 + 50.0) * US); /* kernels A and B: bytes per ns */
}

static void test_bytes_and_bandwidth(void **state)
{
	(void)state;
	struct kj_job j;
	job_made(0, &j);
	assert_int_equal(j.n, 2);
	for (int r = 0; r < 2; r++) {
		double alg, bus, gbps;
		expected(r, &alg, &bus, &gbps);
		assert_int_equal(j.r[r].n_kept, 3);
		assert_true(j.r[r].nccl_bytes_ok);
		assert_true(j.r[r].nccl_bw_ok);
		assert_float_equal(j.r[r].nccl_bytes, alg, 1e-9 * alg);
		assert_float_equal(j.r[r].nccl_bus_bytes, bus, 1e-9 * bus);
		assert_float_equal(j.r[r].nccl_matched_ns, 200.0 * US, 1e-6);
		assert_float_equal(j.r[r].nccl_bus_gbps, gbps, 1e-9 * gbps);
		assert_string_equal(j.r[r].nccl_ops, "all_reduce \u00d71, all_gather \u00d71, reduce_scatter \u00d71");
		assert_int_equal(j.r[r].nccl_calls, 13);
		assert_int_equal(j.r[r].nccl_calls_unmatched, 1);
		/* rank 0's kernel C, 3 measured iterations; rank 1 has none */
		assert_int_equal(j.r[r].nccl_kernels_without_call, r == 0 ? 3 : 0);
	}
	kj_job_free(&j);
}

/* compare's text and JSON: the figures, the leftovers said, no inf/NaN. */
static void test_compare_output(void **state)
{
	(void)state;
	char path[300];
	struct compare_run cr;
	double alg, bus, gbps;
	snprintf(path, sizeof(path), "%s/job0c.kjdb", dir);
	make_job(path, 0);
	compare_run(path, &cr);
	json_t *js = cr.js;
	const char *text = cr.text;
	json_t *r1 = json_array_get(json_object_get(json_object_get(js, "job"), "ranks"), 1);
	expected(1, &alg, &bus, &gbps);
	assert_float_equal(json_real_value(json_object_get(r1, "nccl_bytes_per_iteration")), alg, 1e-3);
	assert_float_equal(json_real_value(json_object_get(r1, "nccl_bus_bandwidth_gbps")), gbps, 1e-3);
	assert_true(json_is_null(json_object_get(r1, "nccl_bytes_missing")));
	assert_int_equal(json_integer_value(json_object_get(r1, "nccl_calls_unmatched")), 1);
	assert_non_null(strstr(text, "waits included"));
	assert_non_null(strstr(text, "rank 0 (GPU 0): 1 of 13 NCCL calls matched no NCCL kernel"));
	assert_non_null(strstr(text, "rank 0 (GPU 0): 3 NCCL kernels of the measured iterations matched no recorded call"));
	assert_null(strstr(text, "nan"));
	assert_null(strstr(text, "inf"));
	compare_done(&cr);
}

/* No figure, with the reason: --no-nccl-calls; a rank without calls; a call of unknown size. */
static void test_reasons(void **state)
{
	(void)state;
	struct kj_job j;
	job_made(1, &j);
	for (int r = 0; r < 2; r++) {
		assert_false(j.r[r].nccl_bytes_ok);
		assert_false(j.r[r].nccl_bw_ok);
		assert_string_equal(j.r[r].nccl_bytes_why, "traced with --no-nccl-calls");
	}
	kj_job_free(&j);
	job_made(2, &j);
	assert_true(j.r[0].nccl_bytes_ok);
	assert_false(j.r[1].nccl_bytes_ok);
	assert_string_equal(j.r[1].nccl_bytes_why, "no NCCL calls recorded (NCCL linked statically, or loaded so"
						   " that kjoule could not see its calls)");
	kj_job_free(&j);
	job_made(3, &j);
	assert_true(j.r[0].nccl_bytes_ok);
	assert_false(j.r[1].nccl_bytes_ok);
	assert_false(j.r[1].nccl_bw_ok);
	assert_non_null(strstr(j.r[1].nccl_bytes_why, "unknown size"));
	kj_job_free(&j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_and_bandwidth),
		cmocka_unit_test(test_compare_output),
		cmocka_unit_test(test_reasons),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
