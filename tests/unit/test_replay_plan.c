/* Replay on run databases built here: the plan (skips named: stripped modules, unknown functions,
 * no parameters, another function's parameters; --no-params runs and unknown schemas refused),
 * registers matched, results stored and reported (text and JSON), and a sequence replay's line,
 * storage, print and fidelity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_map.h"
#include "kj_param_check.h"
#include "kj_replay.h"

#include "tmpdir.h"

static sqlite3 *make_db(const char *name, int with_params)
{
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	assert_int_equal(kj_db_exec(db,
		"INSERT INTO device(id, name, cc_major, cc_minor) VALUES(1, 'NVIDIA H100', 9, 0);"
		"INSERT INTO module(hash, format, bytes, codec, data) VALUES('aa', 'cubin', 4, 'none', x'7f454c46');"
		"INSERT INTO module(hash, format, bytes, codec, data) VALUES('bb', 'fatbin', 4, 'zstd', NULL);"
		"INSERT INTO module_function VALUES('aa', '_Z4gemmPf'), ('aa', 'noparams'), ('bb', 'stripped_k');"
		"INSERT INTO kernel_name(id, mangled, demangled) VALUES(1, '_Z4gemmPf', 'gemm(float*)'),"
		" (2, 'stripped_k', 'stripped_k'), (3, 'ghost', 'ghost'), (4, 'noparams', 'noparams');"
		"INSERT INTO unique_kernel(id, key, name_id, launches) VALUES(1, 'k1', 1, 3), (2, 'k2', 2, 5),"
		" (3, 'k3', 3, 1), (4, 'k4', 4, 2);"
		"INSERT INTO kernel(unique_id, start_ns, end_ns) VALUES(1, 0, 1000), (1, 2000, 3000),"
		" (1, 4000, 5000), (1, 6000, 7000), (2, 0, 500), (3, 0, 100);",
		"fill"), 0);
	if (with_params)
		assert_int_equal(kj_db_exec(db,
			"INSERT INTO launch_params(unique_id, layout, params) VALUES(1, '0:8', x'0000000000000000'),"
			" (2, '0:8', x'0000000000000000'), (3, '0:8', x'0000000000000000');", "params"), 0);
	return db;
}

static void test_plan(void **state)
{
	(void)state;
	struct kj_replay_plan plan;
	sqlite3 *db = make_db("plan.kjdb", 1);
	memset(&plan, 0, sizeof(plan));
	snprintf(plan.run_path, sizeof(plan.run_path), "plan.kjdb");
	assert_int_equal(kj_replay_plan_load(db, NULL, &plan), 0);
	assert_int_equal(plan.n, 4);
	assert_int_equal(plan.captured_cc_major, 9);
	assert_string_equal(plan.captured_gpu, "NVIDIA H100");
	assert_int_equal(plan.traced_busy_ns, 4600);
	assert_int_equal(plan.total_launches, 6);
	assert_int_equal(plan.items[0].launches, 4); /* from the kernel table, not unique_kernel */
	assert_string_equal(plan.items[0].skip, "");
	assert_non_null(strstr(plan.items[1].skip, "stripped"));
	assert_non_null(strstr(plan.items[1].skip, "bb"));
	assert_non_null(strstr(plan.items[2].skip, "unknown function"));
	assert_non_null(strstr(plan.items[3].skip, "no parameters"));
	assert_string_equal(plan.items[3].res.status, "skipped");
	kj_replay_plan_free(&plan);

	assert_int_equal(kj_replay_plan_load(db, "gemm*", &plan), 0);
	assert_int_equal(plan.n, 1);
	kj_replay_plan_free(&plan);
	assert_int_equal(kj_replay_plan_load(db, "strip", &plan), 0); /* substring */
	assert_int_equal(plan.n, 1);
	kj_replay_plan_free(&plan);
	assert_int_equal(kj_replay_plan_load(db, "nomatch", &plan), KJ_ENOTFOUND);
	kj_replay_plan_free(&plan);
	kj_db_close(db);

	/* --no-params run */
	db = make_db("noparams.kjdb", 0);
	assert_int_equal(kj_replay_plan_load(db, NULL, &plan), KJ_ENOTFOUND);
	kj_replay_plan_free(&plan);
	/* a schema without the replay tables */
	assert_int_equal(kj_db_exec(db, "INSERT INTO launch_params(unique_id) VALUES(1); DROP TABLE module_function;", "drop"), 0);
	assert_int_equal(kj_replay_plan_load(db, NULL, &plan), KJ_ESCHEMA);
	kj_replay_plan_free(&plan);
	kj_db_close(db);
}

/* A unique kernel whose recorded parameter block is not what the captured function with its traced
 * registers takes is skipped with the reason; the shipped run, whole, has none. */
#define BLOOM_RUN KJ_TEST_DATA "/../../examples/runs/bloom560m.kjdb"
static void test_plan_foreign_params(void **state)
{
	(void)state;
	char path[300], sql[200];
	struct kj_param_check pc;
	struct kj_replay_plan plan;
	sqlite3 *db = NULL, *src = NULL;
	snprintf(path, sizeof(path), "%s/bloom_cut.kjdb", dir);
	assert_int_equal(sqlite3_open_v2(BLOOM_RUN, &src, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_backup *b = sqlite3_backup_init(db, "main", src, "main");
	assert_non_null(b);
	assert_int_equal(sqlite3_backup_step(b, -1), SQLITE_DONE);
	sqlite3_backup_finish(b);
	sqlite3_close(src);
	assert_int_equal(kj_param_check(db, &pc, NULL), 0);
	assert_true(pc.consistent > 0);
	assert_int_equal(pc.mismatched, 0);
	/* CUPTI gives 16 registers for functions compiled to fewer: those kernels are checked too */
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM unique_kernel WHERE registers = 16", -1, &st,
					    NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int n16 = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	assert_true(n16 > 0);
	assert_true(pc.uncheckable < (int64_t)n16);
	/* cut the first kernel whose cut makes it mismatched (a consistent one) */
	int64_t cut = -1;
	for (int64_t uid = 1; uid < 200 && cut < 0; uid++) {
		snprintf(sql, sizeof(sql), "SAVEPOINT c; UPDATE launch_params SET params = substr(params, 1,"
			 " length(params) - 8) WHERE unique_id = %lld AND length(params) > 8;", (long long)uid);
		assert_int_equal(kj_db_exec(db, sql, "cut"), 0);
		struct kj_map *m = kj_map_new();
		assert_int_equal(kj_param_check(db, &pc, m), 0);
		if (pc.mismatched == 1 && kj_map_get(m, (uint64_t)uid, NULL)) {
			cut = uid;
			assert_int_equal(kj_db_exec(db, "RELEASE c;", "keep"), 0);
		} else {
			assert_int_equal(kj_db_exec(db, "ROLLBACK TO c; RELEASE c;", "undo"), 0);
		}
		kj_map_free(m);
	}
	assert_true(cut > 0);
	memset(&plan, 0, sizeof(plan));
	assert_int_equal(kj_replay_plan_load(db, NULL, &plan), 0);
	int named = 0;
	for (size_t i = 0; i < plan.n; i++)
		if (strstr(plan.items[i].skip, "another function's parameters")) {
			named++;
			assert_int_equal(plan.items[i].unique_id, cut);
			assert_string_equal(plan.items[i].res.status, "skipped");
		}
	assert_int_equal(named, 1);
	kj_replay_plan_free(&plan);
	sqlite3_close(db);
}

/* The traced registers against a function's: equal, or CUPTI's floor of 16 over fewer. */
static void test_regs_match(void **state)
{
	(void)state;
	assert_true(kj_cubin_regs_match(32, 32));
	assert_true(kj_cubin_regs_match(16, 10));
	assert_true(kj_cubin_regs_match(16, 16));
	assert_false(kj_cubin_regs_match(16, 18));
	assert_false(kj_cubin_regs_match(18, 10));
	assert_false(kj_cubin_regs_match(16, -1));
	assert_false(kj_cubin_regs_match(30, 32));
	assert_false(kj_cubin_regs_match(32, 24));
	assert_true(kj_cubin_regs_near(32, 24));
	assert_true(kj_cubin_regs_near(32, 30));
	assert_true(kj_cubin_regs_near(16, 9));
	assert_false(kj_cubin_regs_near(32, 23));
	assert_false(kj_cubin_regs_near(30, 32));
	assert_false(kj_cubin_regs_near(32, -1));
}

static void test_store_and_report(void **state)
{
	(void)state;
	struct kj_replay_plan plan;
	sqlite3 *db = make_db("store.kjdb", 1);
	memset(&plan, 0, sizeof(plan));
	plan.cache_warm = plan.cache_cold = 1;
	assert_int_equal(kj_replay_plan_load(db, NULL, &plan), 0);
	struct kj_replay_result *a = &plan.items[0].res;
	snprintf(a->status, sizeof(a->status), "ok");
	a->warm = (struct kj_replay_timing){10, 900, 1100, 1500, 1120.0, 50.0};
	a->cold = (struct kj_replay_timing){10, 1500, 1700, 2000, 1710.0, 40.0};
	a->has_energy = 1;
	a->unroll = 100;
	a->energy_mj_per_launch = 0.5;
	a->idle_mw = -1;
	a->dynamic_mj_per_launch = NAN;
	snprintf(a->method, sizeof(a->method), "counter-edges");
	snprintf(a->verify, sizeof(a->verify), "identical");
	a->verify_buffers = 2;
	a->verify_bytes = 4096;
	/* unique 3 ("ghost") is skipped; give unique 2 a failure */
	kj_replay_result_set(&plan.items[1].res, "failed", "first launch: CUDA_ERROR_ILLEGAL_ADDRESS");
	assert_int_equal(kj_replay_plan_store(db, &plan), 0);
	assert_int_equal(kj_db_count(db, "replay_kernel"), 8);
	assert_int_equal(kj_db_count(db, "replay_energy"), 1);
	assert_int_equal(kj_db_count(db, "replay_verify"), 1);
	assert_int_equal(kj_db_count(db, "replay_energy_cold"), 0);
	/* with its cold-L2 energy: a row of its own; a later replay without one takes it away */
	a->has_energy_cold = 1;
	a->energy_cold_mj_per_launch = 0.8;
	a->energy_cold_ns_per_launch = 1650;
	assert_int_equal(kj_replay_plan_store(db, &plan), 0);
	assert_int_equal(kj_db_count(db, "replay_energy_cold"), 1);
	a->has_energy_cold = 0;
	/* again: replaced, not duplicated */
	assert_int_equal(kj_replay_plan_store(db, &plan), 0);
	assert_int_equal(kj_db_count(db, "replay_energy_cold"), 0);
	assert_int_equal(kj_db_count(db, "replay_kernel"), 8);
	sqlite3_stmt *st;
	assert_int_equal(kj_db_prepare(db, "SELECT median_ns, status FROM replay_kernel WHERE unique_id = 1 AND cache = 'cold'", &st), 0);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), 1700);
	assert_string_equal((const char *)sqlite3_column_text(st, 1), "ok");
	sqlite3_finalize(st);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	kj_replay_report_print(f, &plan);
	fclose(f);
	assert_non_null(strstr(buf, "gemm(float*)"));
	assert_non_null(strstr(buf, "coverage: launches 4/6 replayed (66.7%: exact 4, relocated 0); unique kernels 1/4"));
	assert_non_null(strstr(buf, "ILLEGAL_ADDRESS"));
	assert_non_null(strstr(buf, "traced GPU busy"));
	assert_non_null(strstr(buf, "verify (outputs vs the run's after-launch snapshot): identical 1, differs 0"));
	/* gemm: 4 x 1.1 us = 4.4 us against 4.6 us traced */
	assert_non_null(strstr(buf, "0.004 ms (-4.3%)"));
	/* the replayed kernel sorts first */
	assert_true(strstr(buf, "gemm(float*)") < strstr(buf, "stripped_k"));
	free(buf);

	char *js = kj_replay_report_json(&plan);
	assert_non_null(js);
	json_error_t err;
	json_t *root = json_loads(js, 0, &err);
	assert_non_null(root);
	json_t *k0 = json_array_get(json_object_get(root, "kernels"), 0);
	assert_string_equal(json_string_value(json_object_get(k0, "status")), "ok");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(k0, "warm"), "median_ns")), 1100);
	assert_true(json_is_null(json_object_get(json_object_get(k0, "energy"), "dynamic_mj_per_launch")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(k0, "verify"), "result")), "identical");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(k0, "verify"), "bytes")), 4096);
	json_t *cov = json_object_get(root, "coverage");
	assert_int_equal(json_integer_value(json_object_get(cov, "launches_exact")), 4);
	assert_int_equal(json_integer_value(json_object_get(cov, "unique_not_replayed")), 3);
	json_decref(root);
	free(js);
	kj_replay_plan_free(&plan);
	kj_db_close(db);
}

static void test_sequence(void **state)
{
	(void)state;
	struct kj_replay_seq s, q;
	struct kj_replay_seq_info info;
	memset(&s, 0, sizeof(s));
	s.iteration = 3;
	snprintf(s.mode, sizeof(s.mode), "graph");
	snprintf(s.status, sizeof(s.status), "ok");
	s.runs = 20;
	s.launches = 679;
	s.ops = 700;
	s.min_ns = 1400000;
	s.median_ns = 1500000;
	s.max_ns = 1700000;
	s.has_energy = 1;
	s.energy_mj = 812.5;
	s.energy_unc_mj = 9.5;
	s.pace_ns = 1987654; /* measured paced: energy per period */
	s.sm_clock_mean_mhz = 1980;
	s.sm_clock_min_mhz = s.sm_clock_max_mhz = 1980;
	s.throttle_reasons = 0x4;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	kj_replay_seq_emit(f, &s);
	fclose(f);
	assert_int_equal(kj_replay_parse_seq(buf, &q), 1);
	free(buf);
	assert_int_equal(q.iteration, 3);
	assert_string_equal(q.mode, "graph");
	assert_int_equal(q.launches, 679);
	assert_int_equal(q.median_ns, 1500000);
	assert_true(q.has_energy && fabs(q.energy_mj - 812.5) < 1e-9);
	assert_int_equal(q.pace_ns, 1987654);
	assert_true(q.sm_clock_mean_mhz == 1980 && q.sm_clock_min_mhz == 1980 && q.sm_clock_max_mhz == 1980);
	assert_int_equal(q.throttle_reasons, 0x4);
	/* without an energy the clock fields say nothing */
	s.has_energy = 0;
	f = open_memstream(&buf, &len);
	kj_replay_seq_emit(f, &s);
	fclose(f);
	assert_int_equal(kj_replay_parse_seq(buf, &q), 1);
	free(buf);
	assert_true(q.sm_clock_mean_mhz == -1 && q.throttle_reasons == -1);
	s.has_energy = 1;
	/* a line from a worker before pacing has no period: back to back; nor clock state: unknown */
	assert_int_equal(kj_replay_parse_seq("KJ_SEQ\titeration=1\tmode=graph\tstatus=ok\truns=1\tlaunches=1\tops=1"
					     "\tmin=1\tmedian=1\tmax=1\tenergy=0\tmj=0\tunc=0\terror=", &q), 1);
	assert_int_equal(q.pace_ns, 0);
	assert_true(q.sm_clock_mean_mhz == -1 && q.sm_clock_min_mhz == -1 && q.throttle_reasons == -1);
	assert_int_equal(kj_replay_parse_seq("KJ_SEQ\titeration=x", &q), KJ_EINVAL);
	assert_int_equal(kj_replay_parse_seq("KJ_RESULT\tunique=1", &q), 0);

	sqlite3 *db = make_db("seq.kjdb", 1);
	assert_int_equal(kj_replay_seq_info_load(db, "seq.kjdb", -1, &info), KJ_ENOTFOUND);
	assert_int_equal(kj_db_exec(db,
		"UPDATE kernel SET correlation_id = rowid;"
		"INSERT INTO sequence_op(iteration, ordinal, stream_id, op, correlation_id, launch_params_id, bytes, kind)"
		" VALUES(3, 0, 1, 'kernel', 1, 1, NULL, NULL), (3, 1, 1, 'memcpy', 99, NULL, 64, 'HtoD'),"
		" (3, 2, 1, 'kernel', 2, 1, NULL, NULL), (4, 0, 1, 'kernel', 3, 1, NULL, NULL);", "seq"), 0);
	assert_int_equal(kj_replay_seq_info_load(db, "seq.kjdb", -1, &info), 0);
	assert_int_equal(info.iteration, 3);
	assert_int_equal(info.kernels, 2);
	assert_int_equal(info.copies, 1);
	assert_int_equal(info.traced_busy_ns, 2000);
	assert_int_equal(info.traced_span_ns, 3000);
	assert_int_equal(kj_replay_seq_info_load(db, "seq.kjdb", 9, &info), KJ_ENOTFOUND);
	assert_int_equal(kj_replay_seq_store(db, &s, 1, NULL, 0), 0);
	assert_int_equal(kj_replay_seq_store(db, &s, 1, NULL, 0), 0);
	assert_int_equal(kj_db_count(db, "replay_sequence"), 1);
	assert_int_equal(kj_db_one_i64(db, "SELECT pace_ns FROM replay_sequence", 0, -1), 1987654);
	kj_replay_seq_info_load(db, "seq.kjdb", 3, &info);
	buf = NULL;
	f = open_memstream(&buf, &len);
	kj_replay_seq_print(f, &info, &s, 1);
	fclose(f);
	assert_non_null(strstr(buf, "graph vs traced GPU busy"));
	assert_non_null(strstr(buf, "energy per launch paced at 1987.7 µs"));
	free(buf);
	char *js = kj_replay_seq_json(&info, &s, 1);
	assert_non_null(strstr(js, "\"median_ns\": 1500000"));
	free(js);

	/* per-kernel in-sequence times: the worker's line, stored, and what they predict */
	struct kj_replay_seq_kernel k;
	assert_int_equal(kj_replay_parse_seq_kernel("KJ_TIMING\tunique=1\tcache=warm\truns=3\tmin=1\tmedian=2"
						    "\tmean=2\tmax=3\tstdev=0", &k), 0);
	assert_int_equal(kj_replay_parse_seq_kernel("KJ_TIMING\tunique=1\tcache=sequence\truns=x", &k), KJ_EINVAL);
	sqlite3_stmt *st = NULL;
	assert_int_equal(kj_db_prepare(db, "SELECT p.unique_id, u.launches FROM launch_params p JOIN unique_kernel u"
					   " ON u.id = p.unique_id WHERE p.id = 1", &st), 0);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t uid = sqlite3_column_int64(st, 0), launches = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	char line[200];
	snprintf(line, sizeof(line), "KJ_TIMING\tunique=%lld\tcache=sequence\ttimer=cupti\truns=40\tmin=650"
		 "\tmedian=700\tmean=710.5\tmax=900\tstdev=20.0\n", (long long)uid);
	assert_int_equal(kj_replay_parse_seq_kernel(line, &k), 1);
	assert_int_equal(k.unique_id, uid);
	assert_int_equal(k.t.median_ns, 700);
	assert_int_equal(k.t.runs, 40);
	assert_int_equal(kj_replay_seq_store(db, NULL, 0, &k, 1), 0);
	struct kj_replay_seq_fidelity fid;
	assert_int_equal(kj_replay_seq_fidelity(db, &info, &fid), 0);
	assert_int_equal(fid.kernels, 1);
	assert_true(fabs(fid.iter_sum_ns - 1400.0) < 1e-9);   /* two launches of it in iteration 3 */
	assert_true(fabs(fid.iter_traced_ns - 2000.0) < 1e-9);
	assert_true(fabs(fid.run_sum_ns - 700.0 * (double)launches) < 1e-6);
	info.have_fidelity = 1;
	info.fidelity = fid;
	buf = NULL;
	f = open_memstream(&buf, &len);
	kj_replay_seq_print(f, &info, &s, 1);
	fclose(f);
	assert_non_null(strstr(buf, "iteration: Σ medians 0.0014 ms vs traced GPU busy 0.0020 ms (-30.0%)"));
	free(buf);
	js = kj_replay_seq_json(&info, &s, 1);
	assert_non_null(strstr(js, "\"iteration_sum_ns\": 1400"));
	free(js);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_store_and_report),
		cmocka_unit_test(test_plan_foreign_params),
		cmocka_unit_test(test_regs_match),
		cmocka_unit_test(test_sequence),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
