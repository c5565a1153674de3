/* The watch for other processes with a fake back-end (no GPU): our pid and a foreign pid that
 * exists here are told apart; pids of another pid namespace are matched to our processes by time;
 * a driver that refuses to list processes is reported once as "cannot be seen here"; the
 * secondary signal keeps real unexplained utilisation and drops the run's edges, NVML's lag and
 * lone readings; and the report side's arithmetic: which iterations had foreign work and when
 * clean ones are used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_gpu_watch.h"
#include "kj_sampler.h"
#include "kj_shared.h"
#include "kj_shared_out.h"
#include "tmpdir.h"

enum mode { VISIBLE, NAMESPACE, BLIND };

struct fake {
	int64_t t0;
	enum mode mode;
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
	o->power_limit_mw = o->memory_bytes = -1;
	o->sm_clock_max_mhz = o->mem_clock_max_mhz = -1;
	return 0;
}

static int f_power(void *c, int idx, int64_t *inst, int64_t *avg)
{
	(void)c;
	(void)idx;
	*inst = *avg = 100000;
	return 0;
}

static int f_state(void *c, int idx, struct kj_gpu_state *o)
{
	(void)c;
	(void)idx;
	o->sm_clock_mhz = o->mem_clock_mhz = o->temp_c = o->util_mem_pct = -1;
	o->util_gpu_pct = 0;
	o->throttle_reasons = -1;
	return 0;
}

static int f_sm(void *c, int idx, int *mhz)
{
	(void)c;
	(void)idx;
	*mhz = 1000;
	return 0;
}

static const char *f_str(void *c, int code)
{
	(void)c;
	return code == 4 ? "Insufficient Permissions" : "fake error";
}

static int f_unsup(void *c, int code)
{
	(void)c;
	return code == 3;
}

#define NS_OURS 99999991LL  /* above any pid_max: not in this namespace's /proc */
#define NS_OTHER 99999992LL

/* VISIBLE: our pid all along, our parent (exists here, not ours) from 40 to 80 ms.
 * NAMESPACE: NS_OURS all along, NS_OTHER from 40 to 80 ms. BLIND: refused. */
static int f_procs(void *c, int idx, struct kj_gpu_proc *out, int max, int *n)
{
	struct fake *f = c;
	int64_t m = ms_since(f);
	(void)idx;
	(void)max;
	*n = 0;
	if (f->mode == BLIND)
		return 4;
	out[0] = (struct kj_gpu_proc){f->mode == VISIBLE ? getpid() : NS_OURS, 1 << 20, 10, 1};
	*n = 1;
	if (m >= 40 && m < 80) {
		out[1] = (struct kj_gpu_proc){f->mode == VISIBLE ? getppid() : NS_OTHER, 2 << 20, 50, 1};
		*n = 2;
	}
	return 0;
}

static struct kj_sampler *watch_for(struct fake *f, struct kj_gpu_backend *be, int ms)
{
	struct kj_gpu_backend b = {"fake", f, f_count, f_info, f_power, NULL, f_state, f_sm,
				   f_str, f_unsup, NULL, f_procs, NULL, NULL, NULL};
	struct kj_sampler_opts o = {.interval_us = 2000, .no_counter = 1, .watch_interval_ms = 10};
	struct kj_sampler *s = NULL;
	*be = b;
	f->t0 = kj_now_ns();
	assert_int_equal(kj_sampler_start_with(&o, be, &s), 0);
	struct timespec ts = {0, (long)ms * 1000000L};
	nanosleep(&ts, NULL);
	kj_sampler_stop(s);
	return s;
}

static sqlite3 *fresh_db(const char *name)
{
	char path[300];
	sqlite3 *db = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(kj_db_create(path, &db), 0);
	return db;
}

static int64_t q(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	assert_int_equal(kj_db_prepare(db, sql, &st), 0);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void meta_is(sqlite3 *db, const char *key, const char *want)
{
	char buf[400];
	assert_int_equal(kj_db_meta_get(db, key, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

static void test_visible(void **state)
{
	(void)state;
	struct fake f = {0, VISIBLE};
	struct kj_gpu_backend be;
	struct kj_sampler *s = watch_for(&f, &be, 120);
	sqlite3 *db = fresh_db("visible.kjdb");
	int64_t own = getpid();
	char sql[200];
	assert_int_equal(kj_gpu_watch_write_db(s, db, &own, 1, 10), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM gpu_process_sample WHERE pid = %lld AND traced = 1",
		 (long long)own);
	assert_true(q(db, sql) >= 4); /* ~12 listings */
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM gpu_process_sample WHERE pid = %lld AND traced = 0",
		 (long long)getppid());
	assert_true(q(db, sql) >= 2);
	assert_int_equal(q(db, "SELECT count(*) FROM foreign_activity WHERE source = 'process'"), 1);
	snprintf(sql, sizeof(sql), "SELECT pid FROM foreign_activity WHERE source = 'process'");
	assert_int_equal(q(db, sql), getppid());
	/* 40..80 ms within a listing (10 ms) either side */
	int64_t len_ms = q(db, "SELECT (end_ns - start_ns) / 1000000 FROM foreign_activity");
	assert_true(len_ms >= 10 && len_ms <= 100);
	assert_int_equal(q(db, "SELECT count(*) FROM foreign_activity WHERE name IS NULL"), 0);
	meta_is(db, "gpu_watch", "processes");
	meta_is(db, "gpu_watch_pid_match", "pid");

	struct kj_shared sh;
	char text[700];
	assert_int_equal(kj_shared_load(db, &sh), 0);
	assert_int_equal(sh.watch, KJ_SHARED_WATCHED);
	assert_int_equal(sh.n_pids, 1);
	kj_shared_describe(&sh, text, sizeof(text));
	assert_non_null(strstr(text, "shared GPU: other processes (pids "));
	kj_shared_free(&sh);
	kj_db_close(db);
	kj_sampler_close(s);
}

static void test_namespace(void **state)
{
	(void)state;
	struct fake f = {0, NAMESPACE};
	struct kj_gpu_backend be;
	int64_t t0 = kj_now_ns();
	struct kj_sampler *s = watch_for(&f, &be, 120);
	sqlite3 *db = fresh_db("ns.kjdb");
	char sql[300];
	/* our one traced process (its pid in our namespace is 123) lived the whole time */
	snprintf(sql, sizeof(sql), "INSERT INTO process(pid, start_ns, end_ns) VALUES(123, %lld, %lld)",
		 (long long)t0, (long long)kj_now_ns());
	assert_int_equal(kj_db_exec(db, sql, "process"), 0);
	assert_int_equal(kj_gpu_watch_write_db(s, db, NULL, 0, 10), 0);
	assert_int_equal(q(db, "SELECT count(*) FROM gpu_process_sample WHERE pid = 99999991 AND traced = 0"), 0);
	assert_true(q(db, "SELECT count(*) FROM gpu_process_sample WHERE pid = 99999991 AND traced = 1") >= 4);
	assert_int_equal(q(db, "SELECT count(*) FROM foreign_activity WHERE source = 'process'"), 1);
	assert_int_equal(q(db, "SELECT pid FROM foreign_activity"), NS_OTHER);
	meta_is(db, "gpu_watch_pid_match", "time");
	kj_db_close(db);
	kj_sampler_close(s);
}

static void test_blind(void **state)
{
	(void)state;
	struct fake f = {0, BLIND};
	struct kj_gpu_backend be;
	const struct kj_watch_row *rows;
	const int64_t *lt;
	size_t n, nlt;
	const char *why;
	struct kj_sampler *s = watch_for(&f, &be, 60);
	assert_int_equal(kj_sampler_watch(s, 0, &rows, &n, &lt, &nlt, &why), KJ_WATCH_BLIND);
	assert_non_null(strstr(why, "other processes cannot be seen here"));
	assert_non_null(strstr(why, "Insufficient Permissions"));
	assert_int_equal(n, 0);
	sqlite3 *db = fresh_db("blind.kjdb");
	assert_int_equal(kj_gpu_watch_write_db(s, db, NULL, 0, 10), 0);
	meta_is(db, "gpu_watch", "blind");
	assert_int_equal(q(db, "SELECT count(*) FROM problem WHERE what LIKE '%cannot be seen here%'"), 1);
	assert_int_equal(q(db, "SELECT count(*) FROM problem WHERE what LIKE '%no other process%'"), 0);
	assert_int_equal(q(db, "SELECT count(*) FROM foreign_activity"), 0);
	struct kj_shared sh;
	char text[700];
	assert_int_equal(kj_shared_load(db, &sh), 0);
	assert_int_equal(sh.watch, KJ_SHARED_BLIND);
	kj_shared_describe(&sh, text, sizeof(text));
	assert_non_null(strstr(text, "cannot be seen here"));
	kj_shared_free(&sh);
	kj_db_close(db);
	kj_sampler_close(s);
}

/* A back-end without a process list: watching was asked for, so it is blind, not "alone". */
static void test_no_process_list(void **state)
{
	(void)state;
	struct fake f = {kj_now_ns(), VISIBLE};
	struct kj_gpu_backend b = {"fake", &f, f_count, f_info, f_power, NULL, f_state, f_sm,
				   f_str, f_unsup, NULL, NULL, NULL, NULL, NULL};
	struct kj_sampler_opts o = {.interval_us = 2000, .no_counter = 1, .watch_interval_ms = 10};
	struct kj_sampler *s = NULL;
	const struct kj_watch_row *rows;
	const int64_t *lt;
	size_t n, nlt;
	const char *why;
	assert_int_equal(kj_sampler_start_with(&o, &b, &s), 0);
	kj_sampler_stop(s);
	assert_int_equal(kj_sampler_watch(s, 0, &rows, &n, &lt, &nlt, &why), KJ_WATCH_BLIND);
	assert_non_null(strstr(why, "cannot be seen here"));
	kj_sampler_close(s);
}

#define MS 1000000LL

/* Readings every 100 ms over 10 s. Traced work [3.0, 4.0) s and [7.5, 8.0) s. Utilisation above
 * 0: 1.0-2.0 s (the driver setting up the context, before any traced work: not counted),
 * 3.0-5.9 s (our work, and NVML still showing it up to 2 s after), 6.2-7.0 s (nothing of ours
 * within 2 s: counted), 7.2 s alone (noise), 7.5-10 s (our work, NVML's lag, teardown: after the
 * last traced work, not counted). One stretch: [6.2 s, 7.0 s]. */
static void test_util_stretches(void **state)
{
	(void)state;
	int64_t t[101], *out = NULL;
	struct kj_interval iv[2] = {{3000 * MS, 4000 * MS}, {7500 * MS, 8000 * MS}};
	int util[101];
	size_t n_out = 99;
	for (int i = 0; i <= 100; i++) {
		int ms = i * 100;
		t[i] = ms * MS;
		util[i] = (ms >= 1000 && ms <= 2000) || (ms >= 3000 && ms <= 5900) || (ms >= 6200 && ms <= 7000) ||
				  ms == 7200 || ms >= 7500
			      ? 40
			      : 0;
	}
	assert_int_equal(kj_watch_util_stretches(t, util, 101, iv, 2, &out, &n_out), 0);
	assert_int_equal(n_out, 1);
	assert_int_equal(out[0], 6200 * MS);
	assert_int_equal(out[1], 7000 * MS);
	free(out);

	/* a solo run as the GPU machine showed it: busy before the first kernel and for 2 s after
	 * the last, never in between unexplained: nothing */
	for (int i = 0; i <= 100; i++)
		util[i] = i * 100 < 3000 || i * 100 >= 7500 || (i * 100 >= 3000 && i * 100 <= 5900) ? 30 : 0;
	assert_int_equal(kj_watch_util_stretches(t, util, 101, iv, 2, &out, &n_out), 0);
	assert_int_equal(n_out, 0);
	assert_null(out);

	/* a GPU with no traced work at all: every stretch of 2 readings or more counts */
	for (int i = 0; i <= 100; i++)
		util[i] = (i >= 10 && i <= 20) || i == 50 ? 10 : 0;
	assert_int_equal(kj_watch_util_stretches(t, util, 101, NULL, 0, &out, &n_out), 0);
	assert_int_equal(n_out, 1);
	assert_int_equal(out[0], 1000 * MS);
	assert_int_equal(out[1], 2000 * MS);
	free(out);
}

static void test_choose(void **state)
{
	(void)state;
	struct kj_shared_iv iv[2] = {{1, 5, 100, 250}, {1, 6, 200, 300}};
	struct kj_shared sh;
	memset(&sh, 0, sizeof(sh));
	sh.watch = KJ_SHARED_WATCHED;
	sh.proc = iv;
	sh.n_proc = 2;
	/* iterations [0,90] [100,190] [200,290] [300,390] [400,490] [500,590]; the 3rd is skipped */
	int64_t a[6] = {0, 100, 200, 300, 400, 500}, b[6] = {90, 190, 290, 390, 490, 590};
	unsigned char use[6] = {1, 1, 0, 1, 1, 1}, foreign[6];
	struct kj_shared_choice ch;
	kj_shared_choose(&sh, a, b, use, 6, foreign, &ch);
	assert_int_equal(ch.n_measured, 5);
	assert_int_equal(ch.n_foreign, 2); /* [100,190] and [300,390] (touches 300) */
	assert_int_equal(foreign[1], 1);
	assert_int_equal(foreign[2], 0); /* skipped: not counted */
	assert_int_equal(foreign[3], 1);
	assert_int_equal(ch.use_clean, 1); /* 3 clean */
	use[4] = 0;
	kj_shared_choose(&sh, a, b, use, 6, foreign, &ch);
	assert_int_equal(ch.use_clean, 0); /* 2 clean: too few */
	assert_int_equal(kj_shared_foreign_ns(&sh), 200); /* union of [100,250] and [200,300] */
	sh.watch = KJ_SHARED_NOT_WATCHED;
	kj_shared_choose(&sh, a, b, use, 6, foreign, &ch);
	assert_int_equal(ch.n_foreign, 0);
	assert_int_equal(ch.use_clean, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_visible),
	    cmocka_unit_test(test_namespace),
	    cmocka_unit_test(test_blind),
	    cmocka_unit_test(test_no_process_list),
	    cmocka_unit_test(test_util_stretches),
	    cmocka_unit_test(test_choose),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
