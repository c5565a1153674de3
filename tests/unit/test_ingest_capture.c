/* --capture: the option's text (kj_capture_parse) and the ingest of a capture run's records.
 * Synthetic spool files hold what the injection library writes: a window that opens and closes,
 * one iteration mark per instance, NVTX markers of which the first captured instance lost its end
 * (CUPTI's NVTX records switched off in its own callback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_capture_spec.h"
#include "kj_db.h"
#include "kj_ingest.h"
#include "kj_spool.h"

#include "capture_spool_fixture.h"

static sqlite3 *ingest(struct buf *b, const char *name, const char *spec, struct kj_capture_summary *sum)
{
	char path[256], dbpath[256];
	sqlite3 *db = NULL;
	struct kj_ingest_stats st;
	snprintf(path, sizeof(path), "%s/%s.spool", dir, name);
	snprintf(dbpath, sizeof(dbpath), "%s/%s.kjdb", dir, name);
	write_buf(path, b);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	memset(&st, 0, sizeof(st));
	assert_int_equal(kj_ingest_file(db, path, NULL, &st), 0);
	assert_int_equal(kj_ingest_capture_finish(db, spec, sum), 0);
	free(b->p);
	return db;
}

static const char *meta(sqlite3 *db, const char *key, char *out, size_t len)
{
	kj_db_meta_get(db, key, out, len);
	return out;
}

static void test_parse(void **state)
{
	(void)state;
	struct kj_capture_spec s;
	char why[300], text[300];
	assert_int_equal(kj_capture_parse("step@100:20", &s, why, sizeof(why)), 0);
	assert_int_equal(s.mode, KJ_CAPTURE_NVTX);
	assert_string_equal(s.name, "step");
	assert_int_equal(s.first, 100);
	assert_int_equal(s.count, 20);
	kj_capture_format(&s, text, sizeof(text));
	assert_string_equal(text, "step@100:20");
	/* instances counted from 0, as --skip: step@100:20 holds 100..119 */
	assert_false(kj_capture_in_window(&s, 99));
	assert_true(kj_capture_in_window(&s, 100));
	assert_true(kj_capture_in_window(&s, 119));
	assert_false(kj_capture_in_window(&s, 120));
	assert_int_equal(kj_capture_parse("step", &s, why, sizeof(why)), 0);
	assert_int_equal(s.first, 0);
	assert_int_equal(s.count, 1);
	assert_int_equal(kj_capture_parse("a@b@7", &s, why, sizeof(why)), 0); /* the last '@' splits */
	assert_string_equal(s.name, "a@b");
	assert_int_equal(s.first, 7);
	assert_int_equal(kj_capture_parse("cuda-profiler-api", &s, why, sizeof(why)), 0);
	assert_int_equal(s.mode, KJ_CAPTURE_PROFILER);
	static const char *const bad[] = {"", "@1:2", "step@", "step@1:", "step@1:0", "step@-1:2",
					  "step@1:-3", "step@x:2", "step@1:2x", "step@1.5:2", NULL};
	for (int i = 0; bad[i]; i++) {
		why[0] = '\0';
		assert_int_equal(kj_capture_parse(bad[i], &s, why, sizeof(why)), -1);
		assert_int_equal(s.mode, KJ_CAPTURE_NONE);
		assert_true(why[0] != '\0');
	}
	kj_capture_parse("step@1:0", &s, why, sizeof(why));
	assert_non_null(strstr(why, "COUNT"));
	kj_capture_parse("step@-1:2", &s, why, sizeof(why));
	assert_non_null(strstr(why, "FIRST"));
}

static void test_captured(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	char v[64];
	struct buf b = capture_spool(500, KJ_WINDOW_CLOSE);
	sqlite3 *db = ingest(&b, "captured", "step@2:3", &sum);
	assert_true(sum.active);
	assert_string_equal(sum.status, "captured");
	assert_int_equal(sum.instances, 8);
	assert_int_equal(sum.captured, 3);
	assert_int_equal(q1(db, "SELECT count(*) FROM iteration_mark WHERE pid = 500"), 8);
	assert_int_equal(q1(db, "SELECT group_concat(instance, '') FROM iteration_mark WHERE captured = 1"), 234);
	assert_int_equal(q1(db, "SELECT status = 'captured' FROM capture_window WHERE pid = 500"), 1);
	assert_int_equal(q1(db, "SELECT start_ns FROM capture_window"), 200 * MS);
	assert_int_equal(q1(db, "SELECT end_ns FROM capture_window"), 480 * MS);
	assert_string_equal(meta(db, "capture_status", v, sizeof(v)), "captured");
	assert_string_equal(meta(db, "capture_range", v, sizeof(v)), "step@2:3");
	assert_string_equal(meta(db, "capture_instances", v, sizeof(v)), "3");
	assert_string_equal(meta(db, "capture_marks", v, sizeof(v)), "8");
	/* every captured instance is one NVTX range, ended: 2's end from its mark, 4 made from its mark */
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name = 'step'"), 3);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name = 'step' AND end_ns IS NULL"), 0);
	assert_int_equal(q1(db, "SELECT end_ns FROM nvtx_range WHERE name = 'step' ORDER BY start_ns LIMIT 1"),
			 280 * MS);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE '%capture%'"), 0);
	kj_db_close(db);
}

/* Steps of 80 µs, 100 µs apart: a marker-made range belongs to the mark it starts at, not to the
 * mark before (its start lies within 1 ms of both): still three ranges, each ended. */
static void test_captured_short_steps(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	struct buf b = capture_spool_in(501, KJ_WINDOW_CLOSE, 1000);
	sqlite3 *db = ingest(&b, "short", "step@2:3", &sum);
	assert_int_equal(sum.captured, 3);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name = 'step'"), 3);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name = 'step' AND end_ns IS NULL"), 0);
	/* one range at each captured mark */
	assert_int_equal(q1(db, "SELECT count(DISTINCT m.instance) FROM nvtx_range r, iteration_mark m WHERE"
				" m.captured = 1 AND r.name = 'step' AND abs(r.start_ns - m.start_ns) < 5000"), 3);
	kj_db_close(db);
}

/* The same short steps, the first captured instance's marker 50 µs after its mark (switching
 * CUPTI's records on took that long), over half the 80 µs instance: still its range. */
static void test_captured_short_steps_late_marker(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	first_marker_late_ns = 50000;
	struct buf b = capture_spool_in(502, KJ_WINDOW_CLOSE, 1000);
	first_marker_late_ns = 3000;
	sqlite3 *db = ingest(&b, "short_late", "step@2:3", &sum);
	assert_int_equal(sum.captured, 3);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name = 'step'"), 3);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name = 'step' AND end_ns IS NULL"), 0);
	assert_int_equal(q1(db, "SELECT min(start_ns) FROM nvtx_range WHERE name = 'step'"), 200 * 1000 + 50000);
	kj_db_close(db);
}

static void test_killed_inside(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	char v[64];
	struct buf b = capture_spool(501, 0);
	sqlite3 *db = ingest(&b, "killed", "step@2:3", &sum);
	assert_string_equal(sum.status, "unclosed_at_exit");
	assert_int_equal(sum.captured, 2); /* what was recorded is kept */
	assert_int_equal(q1(db, "SELECT end_ns FROM capture_window"), -1);
	assert_string_equal(meta(db, "capture_status", v, sizeof(v)), "unclosed_at_exit");
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE '%unclosed at exit%'"), 1);
	kj_db_close(db);
}

static void test_open_at_exit(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	struct buf b = capture_spool(502, KJ_WINDOW_AT_EXIT);
	sqlite3 *db = ingest(&b, "atexit", "step@2:3", &sum);
	assert_string_equal(sum.status, "unclosed_at_exit");
	assert_int_equal(q1(db, "SELECT end_ns FROM capture_window"), 450 * MS);
	assert_int_equal(q1(db, "SELECT end_ns FROM iteration_mark WHERE instance = 4"), -1); /* NULL */
	assert_int_equal(q1(db, "SELECT captured FROM iteration_mark WHERE instance = 4"), 1);
	kj_db_close(db);
}

static void test_profiler_start_without_stop(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	struct buf b = {NULL, 0};
	put_train_start(&b, 503);
	put_string(&b, 1, KJ_CAPTURE_PROFILER_TEXT);
	put_window(&b, 10 * MS, KJ_WINDOW_OPEN, 0);
	put_mark(&b, 0, 10 * MS, 0, 1, 1);
	put_window(&b, 90 * MS, KJ_WINDOW_AT_EXIT, 0);
	sqlite3 *db = ingest(&b, "profiler", "cuda-profiler-api", &sum);
	assert_string_equal(sum.status, "start_without_stop");
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE '%cudaProfilerStart without%'"), 1);
	/* the window is the iteration compare takes: a range of domain kjoule */
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name = 'cuda-profiler-api' AND domain = 'kjoule'"), 1);
	kj_db_close(db);
}

static void test_never_opened(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	char v[64];
	struct buf b = {NULL, 0};
	put_train_start(&b, 504);
	put_string(&b, 1, "step");
	for (uint32_t i = 0; i < 4; i++)
		put_mark(&b, i, i * 100 * MS, i * 100 * MS + 80 * MS, 0, 1);
	sqlite3 *db = ingest(&b, "never", "step@10:2", &sum);
	assert_string_equal(sum.status, "never_opened");
	assert_int_equal(sum.instances, 4);
	assert_int_equal(sum.captured, 0);
	assert_string_equal(meta(db, "capture_status", v, sizeof(v)), "never_opened");
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE severity = 'error' AND what LIKE '%never opened%'"), 1);
	kj_db_close(db);
}

static void test_not_a_capture_run(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	struct buf b = {NULL, 0};
	put_train_start(&b, 505);
	sqlite3 *db = ingest(&b, "plain", NULL, &sum);
	assert_false(sum.active);
	assert_int_equal(kj_db_has_row(db, "SELECT 1 FROM iteration_mark"), 0); /* no table */
	kj_db_close(db);
}

/* CUPTI out of the process outside the window: a period before the window (after instance 0,
 * back at 1), one after it never closed (still out at exit: it lasts to the last instance's end);
 * the run sums them; a run without periods says 0, not nothing. */
static void test_detached_periods(void **state)
{
	(void)state;
	struct kj_capture_summary sum;
	char v[64];
	struct buf b = capture_spool(503, KJ_WINDOW_CLOSE);
	put_window(&b, 90 * MS, KJ_WINDOW_DETACH, 0);
	put_window(&b, 100 * MS, KJ_WINDOW_ATTACH, 1);
	put_window(&b, 590 * MS, KJ_WINDOW_DETACH, 5);
	sqlite3 *db = ingest(&b, "detached", "step@2:3", &sum);
	assert_int_equal(sum.detaches, 2);
	assert_int_equal(sum.detached_ns, 10 * MS + (780 - 590) * MS);
	assert_int_equal(q1(db, "SELECT before_instance FROM cupti_detached WHERE after_instance = 0"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM cupti_detached WHERE end_ns IS NULL AND after_instance = 5"), 1);
	assert_string_equal(meta(db, "capture_detaches", v, sizeof(v)), "2");
	assert_string_equal(meta(db, "capture_detached_ns", v, sizeof(v)), "200000000");
	assert_string_equal(sum.status, "captured"); /* the window itself is untouched */
	kj_db_close(db);
	b = capture_spool(504, KJ_WINDOW_CLOSE);
	db = ingest(&b, "attached", "step@2:3", &sum);
	assert_int_equal(sum.detaches, 0);
	assert_string_equal(meta(db, "capture_detaches", v, sizeof(v)), "0");
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_captured),
		cmocka_unit_test(test_captured_short_steps),
		cmocka_unit_test(test_captured_short_steps_late_marker),
		cmocka_unit_test(test_killed_inside),
		cmocka_unit_test(test_open_at_exit),
		cmocka_unit_test(test_profiler_start_without_stop),
		cmocka_unit_test(test_never_opened),
		cmocka_unit_test(test_not_a_capture_run),
		cmocka_unit_test(test_detached_periods),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
