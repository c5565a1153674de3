/* Pacing of a graph iteration's energy replay (kj_replay_pace): the decision on synthetic
 * launch cadences (a host-synchronised loop, back to back, too few launches, long pauses), the
 * same read from small runs written here, and the shipped graph-launched run checked against its
 * own database. (The paced period's protocol line: test_replay_plan.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_replay_pace.h"

#include "tmpdir.h"

#define GPT_GRAPH KJ_TEST_DATA "/gpt_graph_short.kjdb"

/* n launches: host call every period, GPU span `span` starting `lag` after the call */
static void cadence(struct kj_pace_launch *l, size_t n, int64_t period, int64_t lag, int64_t span)
{
	for (size_t i = 0; i < n; i++) {
		l[i].host_ns = 1000000 + (int64_t)i * period;
		l[i].first_ns = l[i].host_ns + lag;
		l[i].last_ns = l[i].first_ns + span;
	}
}

static void test_decide(void **state)
{
	(void)state;
	struct kj_pace_launch l[16];
	struct kj_pace p;
	/* a synchronised loop: 1.4 ms on the GPU, a launch every 2 ms: 600 us idle between */
	cadence(l, 16, 2000000, 50000, 1400000);
	assert_int_equal(kj_pace_decide(l, 16, &p), 0);
	assert_int_equal(p.period_ns, 2000000);
	assert_int_equal(p.gap_ns, 600000);
	assert_int_equal(p.span_ns, 1400000);
	assert_non_null(strstr(p.why, "paced"));
	/* back to back: launches queue ahead, the GPU never waits (gap 1 us) */
	for (size_t i = 0; i < 16; i++) {
		l[i].host_ns = 1000000 + (int64_t)i * 30000;
		l[i].first_ns = 2000000 + (int64_t)i * 1401000;
		l[i].last_ns = l[i].first_ns + 1400000;
	}
	assert_int_equal(kj_pace_decide(l, 16, &p), 0);
	assert_int_equal(p.period_ns, 0);
	assert_int_equal(p.gap_ns, 1000);
	assert_non_null(strstr(p.why, "back to back"));
	/* a gap under 1 % of the span is no pause either (25 us gaps after 3 ms: 0.8 %) */
	cadence(l, 16, 3025000, 0, 3000000);
	assert_int_equal(kj_pace_decide(l, 16, &p), 0);
	assert_int_equal(p.period_ns, 0);
	/* pauses of many spans are not a loop's cadence */
	cadence(l, 16, 10000000, 0, 100000);
	assert_int_equal(kj_pace_decide(l, 16, &p), 0);
	assert_int_equal(p.period_ns, 0);
	assert_non_null(strstr(p.why, "longer than a loop's cadence"));
	/* too few launches to see a cadence */
	cadence(l, 3, 2000000, 0, 1400000);
	assert_int_equal(kj_pace_decide(l, 3, &p), 0);
	assert_int_equal(p.period_ns, 0);
	assert_non_null(strstr(p.why, "too few"));
	assert_int_equal(kj_pace_decide(NULL, 4, &p), KJ_EINVAL);
	assert_int_equal(kj_pace_decide(NULL, 0, &p), 0);
	assert_int_equal(p.period_ns, 0);
}

/* A run of `n` launches of graph exec 9, `per` apart, each running two kernels over `span` after
 * a `lag`; iteration 1 (sequence_op) holds launch `kept`'s kernels, and with two_launches also
 * the next launch's. */
static sqlite3 *make_run(const char *name, int n, int64_t per, int64_t lag, int64_t span, int kept, int two_launches)
{
	char p[256], sql[512];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	for (int i = 0; i < n; i++) {
		int64_t t = 1000000 + (int64_t)i * per, corr = 100 + i;
		snprintf(sql, sizeof(sql),
			 "INSERT INTO host_call(pid, op, correlation_id, start_ns, graph_exec_id) VALUES"
			 " (7, 'graph_launch', %lld, %lld, 9);"
			 "INSERT INTO kernel(id, pid, correlation_id, start_ns, end_ns, graph_id, graph_node_id) VALUES"
			 " (%d, 7, %lld, %lld, %lld, 1, 11), (%d, 7, %lld, %lld, %lld, 1, 12);",
			 (long long)corr, (long long)t, 2 * i + 1, (long long)corr, (long long)(t + lag),
			 (long long)(t + lag + span / 2), 2 * i + 2, (long long)corr, (long long)(t + lag + span / 2),
			 (long long)(t + lag + span));
		assert_int_equal(kj_db_exec(db, sql, "launch"), 0);
	}
	snprintf(sql, sizeof(sql), "INSERT INTO sequence_op(iteration, ordinal, op, correlation_id, kernel_id) VALUES"
		 " (1, 0, 'kernel', %d, %d), (1, 1, 'kernel', %d, %d)", 100 + kept, 2 * kept + 1, 100 + kept, 2 * kept + 2);
	assert_int_equal(kj_db_exec(db, sql, "sequence"), 0);
	if (two_launches) {
		snprintf(sql, sizeof(sql), "INSERT INTO sequence_op(iteration, ordinal, op, correlation_id, kernel_id)"
			 " VALUES (1, 2, 'kernel', %d, %d)", 101 + kept, 2 * kept + 3);
		assert_int_equal(kj_db_exec(db, sql, "sequence"), 0);
	}
	return db;
}

static void test_load(void **state)
{
	(void)state;
	struct kj_pace p;
	sqlite3 *db = make_run("paced.kjdb", 12, 2000000, 40000, 1400000, 5, 0);
	assert_int_equal(kj_pace_load(db, 1, &p), 0);
	assert_int_equal(p.launches, 12);
	assert_int_equal(p.period_ns, 2000000);
	assert_int_equal(p.span_ns, 1400000);
	assert_int_equal(p.gap_ns, 600000);
	/* an iteration that is no kept one: nothing launched */
	assert_int_equal(kj_pace_load(db, 2, &p), 0);
	assert_int_equal(p.period_ns, 0);
	assert_non_null(strstr(p.why, "no recorded graph"));
	kj_db_close(db);

	db = make_run("b2b.kjdb", 12, 1400000, 0, 1400000, 5, 0);
	assert_int_equal(kj_pace_load(db, 1, &p), 0);
	assert_int_equal(p.period_ns, 0);
	assert_int_equal(p.gap_ns, 0);
	kj_db_close(db);

	db = make_run("two.kjdb", 12, 2000000, 40000, 1400000, 5, 1);
	assert_int_equal(kj_pace_load(db, 1, &p), 0);
	assert_int_equal(p.period_ns, 0);
	assert_non_null(strstr(p.why, "more than one"));
	kj_db_close(db);
}

/* The shipped graph-launched run: the decision follows from its own launches (checked here with
 * SQL of the test's own), whichever way it goes. */
static void test_shipped_run(void **state)
{
	(void)state;
	sqlite3 *db = NULL;
	struct kj_pace p;
	if (access(GPT_GRAPH, R_OK)) {
		skip();
		return;
	}
	assert_int_equal(kj_db_open(GPT_GRAPH, 0, &db), 0);
	int64_t it = kj_db_one_i64(db, "SELECT min(iteration) FROM sequence_op", 0, -1);
	assert_true(it >= 0);
	assert_int_equal(kj_pace_load(db, it, &p), 0);
	int64_t exec = kj_db_one_i64(db, "SELECT h.graph_exec_id FROM sequence_op s JOIN host_call h ON h.pid = s.pid"
				     " AND h.correlation_id = s.correlation_id AND h.op = 'graph_launch'"
				     " WHERE s.iteration = ?1 LIMIT 1", it, -1);
	int64_t n = kj_db_one_i64(db, "SELECT count(*) FROM host_call WHERE op = 'graph_launch' AND graph_exec_id = ?1",
				  exec, -1);
	assert_int_equal(p.launches, n);
	/* the span of the kept launch lies within the run's spread of spans */
	int64_t lo = kj_db_one_i64(db, "SELECT min(s) FROM (SELECT max(end_ns) - min(start_ns) s FROM kernel"
				   " WHERE graph_id IS NOT NULL GROUP BY pid, correlation_id)", 0, -1);
	int64_t hi = kj_db_one_i64(db, "SELECT max(s) FROM (SELECT max(end_ns) - min(start_ns) s FROM kernel"
				   " WHERE graph_id IS NOT NULL GROUP BY pid, correlation_id)", 0, -1);
	assert_true(p.span_ns >= lo && p.span_ns <= hi);
	if (p.period_ns > 0)
		assert_true(p.period_ns > p.span_ns && p.gap_ns > 20000);
	else
		assert_non_null(strstr(p.why, "back to back"));
	print_message("shipped run: %s\n", p.why);
	kj_db_close(db);
}

/* The spacings a capped kernel is measured at: 1 then 3 by default; KJOULE_REPLAY_PACE_RATIOS's list
 * when set; a malformed one refused naming the variable and the item, the defaults untouched. */
static void test_ratios(void **state)
{
	(void)state;
	double r[KJ_PACE_RATIOS_MAX] = {0};
	size_t n = 0;
	char why[256];
	unsetenv(KJ_PACE_RATIOS_ENV);
	assert_int_equal(kj_pace_ratios(r, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_float_equal(r[0], 1, 0);
	assert_float_equal(r[1], 3, 0);
	setenv(KJ_PACE_RATIOS_ENV, "3", 1);
	assert_int_equal(kj_pace_ratios(r, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 1);
	assert_float_equal(r[0], 3, 0);
	setenv(KJ_PACE_RATIOS_ENV, "0.5,2,6", 1);
	assert_int_equal(kj_pace_ratios(r, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 3);
	assert_float_equal(r[2], 6, 0);
	setenv(KJ_PACE_RATIOS_ENV, "1,0.1", 1);
	n = 7;
	assert_int_equal(kj_pace_ratios(r, &n, why, sizeof(why)), KJ_EINVAL);
	assert_int_equal(n, 7);
	assert_non_null(strstr(why, "KJOULE_REPLAY_PACE_RATIOS=1,0.1: '0.1' is not in 0.25..16"));
	unsetenv(KJ_PACE_RATIOS_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ratios),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_shipped_run),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
