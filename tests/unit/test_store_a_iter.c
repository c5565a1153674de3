/* kj_store_a_top_ranges_each, the iteration candidates of compare and --params-iteration: a range
 * is at the top of its thread's stack at depth 0, or at the depth of the ranges above it that
 * never closed; the others are not. 20 steps of 2,000 nested ranges each (a loop of NVTX events)
 * are read in well under a second (made quadratic, the 40,000 took 100 s). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kj_db.h"
#include "kj_store_a_iter.h"
#include "sqlexec.h"
#include "tmpdir.h"

struct seen {
	int n, steps, opened_child;
};

static int take(void *ud, const struct kj_store_a_top_range *r)
{
	struct seen *s = ud;
	s->n++;
	s->steps += !strcmp(r->name, "step");
	s->opened_child += !strcmp(r->name, "under_open");
	return 0;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_top_ranges_nested_many(void **state)
{
	(void)state;
	char path[256];
	sqlite3 *db = NULL;
	sqlite3_stmt *ins = NULL;
	int64_t t = 0, id = 0;
	snprintf(path, sizeof(path), "%s/nested.kjdb", dir);
	assert_int_equal(kj_db_create(path, &db), 0);
	exec(db, "BEGIN");
	assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO nvtx_range(id, pid, tid, name, start_ns, end_ns,"
					    " depth, parent_id) VALUES(?, 7, 1, ?, ?, ?, ?, ?)", -1, &ins, NULL),
			 SQLITE_OK);
	for (int s = 0; s < 20; s++) {
		int64_t step = ++id, t0 = t;
		for (int e = 0; e < 2000; e++, t += 20) {
			sqlite3_bind_int64(ins, 1, ++id);
			sqlite3_bind_text(ins, 2, "event", -1, SQLITE_STATIC);
			sqlite3_bind_int64(ins, 3, t);
			sqlite3_bind_int64(ins, 4, t + 10);
			sqlite3_bind_int64(ins, 5, 1);
			sqlite3_bind_int64(ins, 6, step);
			assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
			sqlite3_reset(ins);
		}
		exec(db, "INSERT INTO nvtx_range(id, pid, tid, name, start_ns, end_ns, depth) VALUES(%lld, 7, 1,"
			 " 'step', %lld, %lld, 0)", (long long)step, (long long)t0, (long long)t);
		t += 100;
	}
	/* on another thread, a range that never closed, and one closed under it: that one is on top */
	exec(db, "INSERT INTO nvtx_range(id, pid, tid, name, start_ns, end_ns, depth) VALUES(%lld, 7, 2,"
		 " 'open', 5, NULL, 0)", (long long)++id);
	exec(db, "INSERT INTO nvtx_range(id, pid, tid, name, start_ns, end_ns, depth) VALUES(%lld, 7, 2,"
		 " 'under_open', 10, 50, 1)", (long long)++id);
	exec(db, "COMMIT");
	sqlite3_finalize(ins);

	struct seen s = {0};
	double t_start = now_s();
	assert_int_equal(kj_store_a_top_ranges_each(db, -1, take, &s), 0);
	double took = now_s() - t_start;
	assert_int_equal(s.steps, 20);
	assert_int_equal(s.opened_child, 1);
	assert_int_equal(s.n, 21); /* no nested event, and not the range that never closed */
	if (took > 2.0)
		fail_msg("40,000 nested ranges took %.1f s to read (quadratic?)", took);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_ranges_nested_many),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
