/* Meter log reader on the real files of tests/data/meter (good and bad), time formats, windows
 * and gaps, and import into a run database. */
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

#include "kj_db.h"
#include "kj_meter.h"

static int load(const char *name, enum kj_meter_format fmt, struct kj_meter_log **log, char *err,
		size_t errlen)
{
	char path[512], buf[65536];
	snprintf(path, sizeof(path), "%s/meter/%s", KJ_TEST_DATA, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return kj_meter_parse(buf, n, name, fmt, log, err, errlen);
}

static void test_times(void **state)
{
	(void)state;
	double t;
	assert_int_equal(kj_meter_parse_time("1763719200", 10, &t), 0);
	assert_true(t == 1763719200.0);
	assert_int_equal(kj_meter_parse_time("1763719200.25", 13, &t), 0);
	assert_true(t == 1763719200.25);
	const char *iso[] = {"2025-11-21T10:00:00Z", "2025-11-21 10:00:00", "2025-11-21T11:00:00+01:00",
			     "2025-11-21T05:30:00-0430", "2025-11-21T10:00:00.000Z"};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(kj_meter_parse_time(iso[i], strlen(iso[i]), &t), 0);
		assert_true(fabs(t - 1763719200.0) < 1e-6);
	}
	assert_int_equal(kj_meter_parse_time("2025-11-21T10:00:00.5Z", 22, &t), 0);
	assert_true(fabs(t - 1763719200.5) < 1e-6);
	const char *bad[] = {"", "noon", "2025-13-01T00:00:00Z", "2025-11-21T10:00", "12:00:00",
			     "2025-11-21T10:00:00Q", "-5", "1e9", "2025-11-21T10:00:00+1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kj_meter_parse_time(bad[i], strlen(bad[i]), &t), -1);
}

static void test_good_files(void **state)
{
	(void)state;
	char err[512];
	struct kj_meter_log *l = NULL;
	struct kj_meter_stats st;
	assert_int_equal(load("generic_good.csv", KJ_METER_AUTO, &l, err, sizeof(err)), 0);
	assert_int_equal(l->format, KJ_METER_GENERIC);
	assert_int_equal(l->n, 201);
	assert_true(fabs(l->period_s - 0.5) < 1e-9);
	assert_int_equal(kj_meter_window(l, "g", NAN, NAN, &st, err, sizeof(err)), 0);
	assert_true(fabs(st.energy_j - 25000) < 1e-6);
	/* a window between samples interpolates */
	assert_int_equal(kj_meter_window(l, "g", 1763719200.25, 1763719201.0, &st, err, sizeof(err)), 0);
	assert_true(fabs(st.energy_j - 187.5) < 1e-6);
	kj_meter_free(l);

	assert_int_equal(load("generic_ramp.csv", KJ_METER_GENERIC, &l, err, sizeof(err)), 0);
	assert_int_equal(kj_meter_window(l, "r", NAN, NAN, &st, err, sizeof(err)), 0);
	assert_true(fabs(st.energy_j - 2000) < 1e-6);
	assert_true(st.peak_w == 300 && st.min_w == 100 && st.samples == 11);
	assert_int_equal(kj_meter_window(l, "r", 1763719202.5, 1763719203.5, &st, err, sizeof(err)), 0);
	assert_true(fabs(st.energy_j - 160) < 1e-6);
	assert_true(fabs(st.peak_w - 170) < 1e-9 && fabs(st.min_w - 150) < 1e-9);
	kj_meter_free(l);

	assert_int_equal(load("wattsup_good.csv", KJ_METER_WATTSUP, &l, err, sizeof(err)), 0);
	assert_int_equal(l->n, 601);
	assert_int_equal(l->line[0], 2);
	kj_meter_free(l);
}

static void test_bad_files(void **state)
{
	(void)state;
	const struct {
		const char *file, *want;
	} cases[] = {
	    {"bad_header.csv", "bad_header.csv:1: bad header"},
	    {"bad_duplicate.csv", "bad_duplicate.csv:4: duplicate"},
	    {"bad_backwards.csv", "bad_backwards.csv:4: time goes backwards"},
	    {"bad_missing.csv", "bad_missing.csv:3: missing field 'pm2'"},
	    {"bad_fields.csv", "bad_fields.csv:3: 4 fields"},
	    {"bad_negative.csv", "bad_negative.csv:3: negative"},
	    {"bad_absurd.csv", "bad_absurd.csv:3: absurd"},
	    {"bad_sum.csv", "bad_sum.csv:3: sum"},
	    {"bad_time.csv", "bad_time.csv:3: time"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512] = "";
		struct kj_meter_log *l = NULL;
		assert_int_equal(load(cases[i].file, KJ_METER_AUTO, &l, err, sizeof(err)), -1);
		assert_null(l);
		if (!strstr(err, cases[i].want))
			fail_msg("%s: got '%s'", cases[i].file, err);
	}
	/* a format that does not match the header */
	char err[512];
	struct kj_meter_log *l = NULL;
	assert_int_equal(load("generic_good.csv", KJ_METER_WATTSUP, &l, err, sizeof(err)), -1);
	/* tiny inputs */
	assert_int_equal(kj_meter_parse("", 0, "e", KJ_METER_AUTO, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "e:1: empty"));
	assert_int_equal(kj_meter_parse("time,watts\n1,2\n", 15, "o", KJ_METER_AUTO, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "need at least 2"));
}

static void test_gap_and_window(void **state)
{
	(void)state;
	char err[512];
	struct kj_meter_log *l = NULL;
	struct kj_meter_stats st;
	assert_int_equal(load("gap.csv", KJ_METER_AUTO, &l, err, sizeof(err)), 0);
	assert_int_equal(kj_meter_window(l, "gap.csv", NAN, NAN, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "gap.csv:12: gap of 21.000 s"));
	/* windows on either side of the gap are fine */
	assert_int_equal(kj_meter_window(l, "gap.csv", NAN, 1763719209, &st, err, sizeof(err)), 0);
	assert_true(fabs(st.energy_j - 900) < 1e-9);
	assert_int_equal(kj_meter_window(l, "gap.csv", 1763719230, NAN, &st, err, sizeof(err)), 0);
	/* outside the log, empty window */
	assert_int_equal(kj_meter_window(l, "gap.csv", 1763719100, 1763719205, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "outside the log"));
	assert_int_equal(kj_meter_window(l, "gap.csv", 1763719205, 1763719205, &st, err, sizeof(err)), -1);
	kj_meter_free(l);
}

static void test_import(void **state)
{
	(void)state;
	char err[512], path[] = "/tmp/kjtest_meter_XXXXXX";
	struct kj_meter_log *l = NULL;
	sqlite3 *db = NULL;
	size_t n = 0;
	int fd = mkstemp(path);
	close(fd);
	unlink(path);
	assert_int_equal(kj_db_create(path, &db), 0);
	assert_int_equal(kj_db_exec(db, "INSERT INTO clock_sync(pid, trace_ns, monotonic_ns, realtime_ns)"
				    " VALUES(1, 0, 5000000000, 1763719000000000000)", "sync"), 0);
	kj_db_close(db);
	assert_int_equal(load("wattsup_good.csv", KJ_METER_AUTO, &l, err, sizeof(err)), 0);
	assert_int_equal(kj_meter_import(path, "/x/wattsup_good.csv", l, l->t_s[0], l->t_s[9], &n), 0);
	assert_int_equal(n, 10);
	assert_int_equal(kj_db_open(path, 0, &db), 0);
	assert_int_equal(kj_db_count(db, "meter_sample"), 10);
	sqlite3_stmt *st = NULL;
	assert_int_equal(kj_db_prepare(db, "SELECT t_ns, realtime_ns, meter FROM meter_sample ORDER BY id"
				       " LIMIT 1", &st), 0);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	/* 2026-11-21T10:00:00Z = 1795255200 s; monotonic = realtime - 1763719000 s + 5 s */
	int64_t rt = sqlite3_column_int64(st, 1);
	assert_true(rt == 1795255200LL * 1000000000LL);
	assert_true(sqlite3_column_int64(st, 0) == rt - 1763719000000000000LL + 5000000000LL);
	assert_string_equal((const char *)sqlite3_column_text(st, 2), "wattsup_good.csv:sum");
	sqlite3_finalize(st);
	kj_db_close(db);
	kj_meter_free(l);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_times),          cmocka_unit_test(test_good_files),
	    cmocka_unit_test(test_bad_files),      cmocka_unit_test(test_gap_and_window),
	    cmocka_unit_test(test_import),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
