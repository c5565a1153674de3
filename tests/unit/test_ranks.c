/* Several GPUs: a synthetic torchrun job of two ranks, figures computed by hand.
 *
 * Times in us (the database holds ns = us * 1000, from T0). Process 100 is the launcher
 * (torchrun: no GPU work). Rank 0 is pid 101 on device 0, rank 1 pid 102 on device 1. Each rank
 * has 4 'step' ranges at o = 2000 i (+10 for rank 1), rank 0's 1000 long, rank 1's 1200; the
 * first is warm-up. Relative to o:
 *   rank 0: compute kernel (unique 1) [100, 400) launched at 50; NCCL kernel [300, 600) at 60
 *           -> busy 500, NCCL 300, overlapped by compute 100 -> exposed 200; kernel sum 600.
 *           Replay of unique 1: warm 250, cold 350 -> isolated 300 = in situ: predicted wall
 *           1000 + overlap (600 - 500) + 0 = 1100, explained 1.1.
 *   rank 1: compute kernel (unique 2, never replayed) [100, 700) at 50; NCCL [650, 800) at 60
 *           -> busy 700, NCCL 150, exposed 100; explained unknown.
 * Job: time = slowest rank's wall 1200 (rank 1); imbalance on work (busy less exposed NCCL):
 *   rank 0 300, rank 1 600 -> 600 / 450.
 * Power: device 0 at 300 W, device 1 at 200 W, the counter read every 100 us: per iteration
 * rank 0 5000 us x 300 W / 3 = 500 mJ, rank 1 5200 us x 200 W / 3 = 346.7 mJ; job 846.7 mJ.
 * Both ranks' 'step' ranges sit inside a range that never closes on the same thread (NCCL's or a
 * framework's), so they are at depth 1: the iteration range must still be found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_ingest.h"
#include "kj_predict_against.h" /* with kj_predict_step.h, of the predict floor */
#include "kj_predict_step.h"
#include "kj_ranks.h"
#include "kj_timeline.h"

#include "ranks_fixture.h"
#include "tmpdir.h"
#define KILLED "ended without closing its trace: SIGKILL (kill -9, the OOM killer) or an exit kjoule could not see"
#define TERMED "ended by SIGTERM from pid 100 (torchrun)"

/* variant: 0 plain, 1 rank 1 on another GPU type, 2 rank 1 died (a run ingested before kjoule
 * recorded how), 3 no power samples, 4 rank 0's ranges close on the host at o + 70, long before
 * its GPU work ends (GPU-bound), 5 rank 1 SIGKILLed (another problem of its first), rank 0 then
 * SIGTERMed by torchrun, 6 rank 0's host runs ahead: its four ranges at 20 i, 10 long, its work
 * queued back to back on the GPU, iteration i's [1000 i + 100, 1000 i + 1000), 7 rank 1's
 * compute kernels start 50 us before their launch call (its GPU clock off the host's) */
static void make_job(const char *path, int variant)
{
	sqlite3 *db = ranks_db_create(path, variant == 5 ? 0 : 1, variant == 2 || variant == 5 ? 0 : 1,
				      variant == 1 ? "NVIDIA H100 80GB HBM3" : "NVIDIA H200");
	if (variant == 5)
		exec(db, "INSERT INTO problem(pid, severity, what) VALUES(102, 'error', 'CUPTI dropped 3 activity"
			 " records'), (102, 'warning', '" KILLED "'), (101, 'warning', '" TERMED "')");
	if (variant == 2)
		exec(db, "INSERT INTO problem(pid, severity, what) VALUES(102, 'error', 'process 102"
			 " ended without closing its trace (killed, crashed or _exit)')");
	exec(db, "INSERT INTO kernel_name(id, mangled) VALUES(1, 'ampere_sgemm_128x64_tn'),"
		 " (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),"
		 " (3, 'vectorized_elementwise_kernel')");
	exec(db, "INSERT INTO unique_kernel(id, key, name_id, tier) VALUES(1, 'a', 1, 'gemm'),"
		 " (2, 'b', 3, 'elementwise'), (3, 'c', 2, 'communication')");
	exec(db, "INSERT INTO replay_kernel(unique_id, cache, runs, median_ns) VALUES"
		 " (1, 'warm', 10, 250000), (1, 'cold', 10, 350000)");
	for (int r = 0; r < 2; r++) {
		int pid = 101 + r;
		exec(db, "INSERT INTO nvtx_range(pid, tid, domain, name, start_ns, end_ns, depth) VALUES"
			 " (%d, %d, 'NCCL', 'ncclCommInitRank', %lld, NULL, 0)",
		     pid, pid, (long long)(T0 - 500 * US));
		for (int i = 0; i < 4; i++) {
			int64_t o = 2000LL * i + 10 * r;
			if (variant == 6 && r == 0) {
				ranks_step(db, pid, 20LL * i, 10, 1);
				ranks_kernel(db, pid, 0, 1, 1, 1, 1000LL * i + 100, 1000LL * i + 400, 20LL * i + 2);
				ranks_kernel(db, pid, 0, 2, 2, 3, 1000LL * i + 300, 1000LL * i + 1000, 20LL * i + 4);
				continue;
			}
			ranks_step(db, pid, o, r ? 1200 : variant == 4 ? 70 : 1000, 1);
			if (r == 0) {
				ranks_kernel(db, pid, 0, 1, 1, 1, o + 100, o + 400, o + 50);
				ranks_kernel(db, pid, 0, 2, 2, 3, o + 300, o + 600, o + 60);
			} else {
				ranks_kernel(db, pid, 1, 1, 3, 2, o + 100, o + 700, o + (variant == 7 ? 150 : 50));
				ranks_kernel(db, pid, 1, 2, 2, 3, o + 650, o + 800, o + 60);
			}
		}
	}
	for (int d = 0; d < 2 && variant != 3; d++)
		for (int k = 0, mj = 5000; k <= 90; k++) {
			mj += k ? (d ? 20 : 30) : 0;
			exec(db, "INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj,"
				 " energy_updated) VALUES(%d, %lld, %d, %d, %d, 1)",
			     d, (long long)(T0 + (k * 100LL - 50) * US), d ? 200000 : 300000,
			     d ? 200000 : 300000, mj);
		}
	kj_db_close(db);
}

static void test_ranks_by_hand(void **state)
{
	(void)state;
	char path[300];
	struct kj_job j;
	snprintf(path, sizeof(path), "%s/job.kjdb", dir);
	make_job(path, 0);
	job_of(path, &j);
	assert_int_equal(j.n, 2); /* the launcher is no rank */
	assert_int_equal(j.n_processes, 3);
	assert_int_equal(j.n_gpus, 2);
	const struct kj_rank *a = &j.r[0], *b = &j.r[1];
	assert_int_equal(a->pid, 101);
	assert_int_equal(a->device_id, 0);
	assert_int_equal(b->pid, 102);
	assert_string_equal(a->range, "step");
	assert_string_equal(b->range, "step");
	assert_int_equal(a->n_iters, 4);
	assert_int_equal(a->n_kept, 3);
	assert_float_equal(a->wall_ns, 1000 * US, 1);
	assert_float_equal(b->wall_ns, 1200 * US, 1);
	assert_float_equal(a->busy_ns, 500 * US, 1); /* its own device only */
	assert_float_equal(b->busy_ns, 700 * US, 1);
	assert_float_equal(a->comm_ns, 300 * US, 1);
	assert_float_equal(a->comm_exposed_ns, 200 * US, 1);
	assert_float_equal(b->comm_ns, 150 * US, 1);
	assert_float_equal(b->comm_exposed_ns, 100 * US, 1);
	assert_float_equal(a->comm_launches, 1, 1e-9);
	assert_true(a->have_explained);
	assert_float_equal(a->explained_fraction, 1.1, 1e-9);
	assert_false(b->have_explained);
	assert_true(a->energy_ok && b->energy_ok);
	assert_float_equal(a->energy_mj, 500, 10);
	assert_float_equal(b->energy_mj, 346.7, 10);
	assert_true(j.energy_ok);
	assert_float_equal(j.energy_mj, a->energy_mj + b->energy_mj, 1e-9);
	assert_float_equal(j.energy_unc_mj, a->energy_unc_mj + b->energy_unc_mj, 1e-9);
	assert_float_equal(j.time_ns, 1200 * US, 1);
	assert_int_equal(j.slowest, 1);
	assert_float_equal(j.imbalance, 600.0 / 450.0, 1e-9);
	assert_false(j.mixed_gpus);
	assert_int_equal(j.n_died, 0);
	kj_job_free(&j);
}

/* A rank whose host runs ahead of its GPU (its ranges over long before their work runs): each
 * iteration lasts from the end of the one before to the end of its own work, 1000 us, not its
 * range's launches with the queued work all in the last one. */
static void test_ranks_host_ahead(void **state)
{
	(void)state;
	char path[300];
	struct kj_job j;
	snprintf(path, sizeof(path), "%s/job6.kjdb", dir);
	make_job(path, 6);
	job_of(path, &j);
	assert_int_equal(j.n, 2);
	const struct kj_rank *a = &j.r[0], *b = &j.r[1];
	assert_int_equal(a->n_iters, 4);
	assert_int_equal(a->n_kept, 3);
	assert_float_equal(a->wall_ns, 1000 * US, 1);
	assert_float_equal(a->busy_ns, 900 * US, 1);
	assert_float_equal(b->wall_ns, 1200 * US, 1); /* the other rank as it was */
	kj_job_free(&j);
}

/* predict --run on a job of two ranks: the model predicts one rank, so it is judged against the
 * job's time per iteration (the slowest rank's 1200 us), its energy per GPU ((500 + 346.7) / 2 mJ)
 * and the ranks' mean kernel sum ((600 + 750) / 2 us), never the two ranks' iterations mixed. */
static void test_predict_against_job(void **state)
{
	(void)state;
	char path[300];
	snprintf(path, sizeof(path), "%s/job_pred.kjdb", dir);
	make_job(path, 0);
	json_t *a = kj_predict_against_run(path, "step", -1, NULL, 0, 600.0, 1, 211675.0, 1, "G");
	assert_non_null(a);
	json_t *m = json_object_get(a, "measured");
	assert_float_equal(json_number_value(json_object_get(m, "step_time_us")), 1200, 1e-6);
	assert_float_equal(json_number_value(json_object_get(m, "step_energy_j")), (500 + 346.7) / 2 / 1e3, 0.01);
	assert_float_equal(json_number_value(json_object_get(m, "kernel_sum_us")), 675, 1e-6);
	assert_non_null(strstr(json_string_value(json_object_get(m, "basis")), "a job of 2 ranks"));
	json_t *e = json_object_get(a, "errors_pct");
	assert_float_equal(json_number_value(json_object_get(e, "time")), -50, 1e-6);
	assert_float_equal(json_number_value(json_object_get(e, "time_vs_kernel_sum")), 100.0 * (600 - 675) / 675, 1e-6);
	json_decref(a);
}

/* A process whose kernels start before their launch calls is named in a warning (4 of its 8
 * kernels, by up to 50 us); a process whose clock agrees is not. */
static void test_clock_check(void **state)
{
	(void)state;
	char path[300];
	sqlite3 *db = NULL;
	for (int variant = 0; variant <= 7; variant += 7) {
		snprintf(path, sizeof(path), "%s/job_clock%d.kjdb", dir, variant);
		make_job(path, variant);
		assert_int_equal(kj_db_open(path, 1, &db), 0);
		assert_int_equal(kj_ingest_clock_check(db), 0);
		sqlite3_stmt *st = NULL;
		assert_int_equal(sqlite3_prepare_v2(db, "SELECT pid, what FROM problem WHERE what LIKE "
						    "'%before the call that launched them%'", -1, &st, NULL), SQLITE_OK);
		int rows = 0;
		while (sqlite3_step(st) == SQLITE_ROW) {
			rows++;
			assert_int_equal(sqlite3_column_int64(st, 0), 102);
			const char *what = (const char *)sqlite3_column_text(st, 1);
			assert_non_null(strstr(what, "4 of 8 kernels"));
			assert_non_null(strstr(what, "by up to 50 us"));
		}
		sqlite3_finalize(st);
		assert_int_equal(rows, variant == 7 ? 1 : 0);
		kj_db_close(db);
	}
}

static void test_ranks_bad_input(void **state)
{
	(void)state;
	char path[300];
	struct kj_job j;
	snprintf(path, sizeof(path), "%s/job1.kjdb", dir);
	make_job(path, 1);
	if (getenv("KJ_TEST_KEEP")) { /* a mixed-GPU job for trying the CLI by hand */
		char cmd[700];
		snprintf(cmd, sizeof(cmd), "cp %s %s", path, getenv("KJ_TEST_KEEP"));
		assert_int_equal(system(cmd), 0);
	}
	job_of(path, &j);
	assert_true(j.mixed_gpus);
	assert_non_null(strstr(j.gpus, "H100"));
	kj_job_free(&j);
	make_job(path, 2);
	job_of(path, &j);
	assert_int_equal(j.n_died, 1);
	assert_false(j.r[0].died);
	assert_true(j.r[1].died);
	assert_string_equal(j.r[1].died_why, "ended without closing its trace (killed, crashed or _exit;"
			    " this run does not record how)");
	kj_job_free(&j);
	make_job(path, 3);
	job_of(path, &j);
	assert_false(j.energy_ok);
	assert_false(j.r[0].energy_ok);
	assert_non_null(j.r[0].energy_why);
	kj_job_free(&j);
}

/* compare: the iteration range found though every instance sits under an unclosed range, each
 * rank's work in its own iterations (rank 0's window reaching its own GPU work past rank 1's
 * next start, variant 4), and the ranks section in text and JSON */
static void test_compare_ranks(void **state)
{
	(void)state;
	char path[300];
	struct compare_run cr;
	snprintf(path, sizeof(path), "%s/job4.kjdb", dir);
	make_job(path, 4);
	compare_run(path, &cr);
	json_t *js = cr.js;
	const char *text = cr.text;
	json_t *it = json_object_get(js, "iterations");
	assert_string_equal(json_string_value(json_object_get(it, "region")), "step");
	assert_int_equal(json_integer_value(json_object_get(it, "overlapping")), 0); /* ranks side by side */
	assert_int_equal(json_integer_value(json_object_get(it, "measured")), 6); /* 3 per rank */
	/* per iteration busy is one rank's own device: (500 + 700) / 2, never the two GPUs' union */
	assert_float_equal(json_real_value(json_object_get(js, "busy_us")), 600, 1e-6);
	json_t *job = json_object_get(js, "job");
	assert_non_null(job);
	assert_int_equal(json_array_size(json_object_get(job, "ranks")), 2);
	json_t *r1 = json_array_get(json_object_get(job, "ranks"), 1);
	assert_true(json_is_null(json_object_get(r1, "explained_fraction")));
	assert_true(json_is_null(json_object_get(r1, "nccl_bytes_per_iteration")));
	assert_true(json_is_null(json_object_get(r1, "nccl_bus_bandwidth_gbps")));
	assert_string_equal(json_string_value(json_object_get(r1, "nccl_bytes_missing")),
			    "a run from a kjoule before NCCL calls were recorded");
	assert_float_equal(json_real_value(json_object_get(job, "time_per_iteration_us")), 1200, 1e-6);
	assert_non_null(strstr(text, "rank 1 (GPU 1)"));
	assert_non_null(strstr(text, "rank 1 (GPU 1): bytes not recorded: a run from a kjoule before NCCL calls were recorded"));
	assert_null(strstr(text, "nan"));
	assert_null(strstr(text, "inf"));
	compare_done(&cr);
}

/* Dead ranks: each one's reason is ingest's "ended " row, not the first problem of its pid; compare's
 * text names each with it, its JSON marks both died with their reasons. */
static void test_ranks_death(void **state)
{
	(void)state;
	char path[300];
	struct kj_job j;
	struct compare_run cr;
	snprintf(path, sizeof(path), "%s/job5.kjdb", dir);
	make_job(path, 5);
	job_of(path, &j);
	assert_int_equal(j.n_died, 2);
	assert_true(j.r[0].died && j.r[1].died);
	assert_string_equal(j.r[0].died_why, TERMED);
	assert_string_equal(j.r[1].died_why, KILLED);
	kj_job_free(&j);
	compare_run(path, &cr);
	json_t *js = cr.js;
	json_t *ranks = json_object_get(json_object_get(js, "job"), "ranks");
	assert_true(json_is_true(json_object_get(json_array_get(ranks, 0), "died")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(ranks, 0), "died_why")), TERMED);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ranks, 1), "died_why")), KILLED);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(js, "job"), "ranks_died")), 2);
	assert_non_null(strstr(cr.text, "rank 1 (GPU 1) (pid 102) died: " KILLED "\n"));
	assert_non_null(strstr(cr.text, "rank 0 (GPU 0) (pid 101) died: " TERMED "\n"));
	compare_done(&cr);
}

/* timeline --format chrome: one process per rank, named by rank and GPU; the launcher by its exe */
static void test_chrome_ranks(void **state)
{
	(void)state;
	char path[300], *text = NULL;
	size_t len = 0;
	sqlite3 *db = NULL;
	snprintf(path, sizeof(path), "%s/job.kjdb", dir);
	make_job(path, 0);
	assert_int_equal(kj_db_open(path, 0, &db), 0);
	FILE *f = open_memstream(&text, &len);
	struct kj_timeline_opts o = {.format = KJ_TL_CHROME, .iteration = -1, .quiet = 1, .run_path = "x"};
	assert_int_equal(kj_timeline_write(db, &o, f), 0);
	fclose(f);
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);
	assert_non_null(j);
	int seen[3] = {0};
	json_t *ev = json_object_get(j, "traceEvents");
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *e = json_array_get(ev, i);
		const char *nm = json_string_value(json_object_get(e, "name"));
		if (!nm || strcmp(nm, "process_name"))
			continue;
		const char *v = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
		json_int_t pid = json_integer_value(json_object_get(e, "pid"));
		if (pid == 101)
			seen[0] = !strncmp(v, "rank 0 (GPU 0): ", 16);
		else if (pid == 102)
			seen[1] = !strncmp(v, "rank 1 (GPU 1): ", 16);
		else if (pid == 100)
			seen[2] = !strncmp(v, "torchrun (pid 100)", 18);
	}
	assert_true(seen[0] && seen[1] && seen[2]);
	json_decref(j);
	free(text);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranks_by_hand),
		cmocka_unit_test(test_ranks_host_ahead),
		cmocka_unit_test(test_predict_against_job),
		cmocka_unit_test(test_clock_check),
		cmocka_unit_test(test_ranks_bad_input),
		cmocka_unit_test(test_compare_ranks),
		cmocka_unit_test(test_ranks_death),
		cmocka_unit_test(test_chrome_ranks),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
