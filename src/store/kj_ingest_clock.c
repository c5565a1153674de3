/* After ingest: a process whose kernels start before the calls that launched them has GPU
 * timestamps off the host clock (CUPTI maps the GPU's timer onto CLOCK_MONOTONIC per process). Its
 * host ranges and its GPU work then do not line up, and every figure that sets one against the
 * other (iteration walls, compare's windows, a rank's wall) is off by as much: said, per process,
 * as a warning in the run's problems. */
#include <stdio.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_ingest.h"

/* a kernel may start this long before its launch call's entry (clock granularity, CUPTI's
 * mapping noise) before the process is called off */
#define KJ_CLOCK_SLACK_NS 10000

int kj_ingest_clock_check(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db,
			       "SELECT pid, count(*), sum(start_ns < launch_ns - ?1) AS early,"
			       " min(start_ns - launch_ns) FROM kernel WHERE launch_ns IS NOT NULL AND start_ns IS"
			       " NOT NULL GROUP BY pid HAVING early > 0 ORDER BY pid",
			       &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, KJ_CLOCK_SLACK_NS);
	int step = SQLITE_DONE;
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
		long long pid = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
		long long early = sqlite3_column_int64(st, 2);
		double worst_us = -(double)sqlite3_column_int64(st, 3) / 1e3;
		char what[512];
		snprintf(what, sizeof(what),
			 "process %lld: %lld of %lld kernels start before the call that launched them, by up "
			 "to %.0f us: its GPU timestamps are off the host clock by at least that much, and "
			 "figures that set its host ranges against its GPU work (iteration walls, compare's "
			 "windows, a rank's wall) are off as much",
			 pid, early, n, worst_us);
		rc = kj_db_problem(db, pid, -1, "warning", what);
	}
	if (!rc && step != SQLITE_DONE)
		rc = KJ_EDB;
	sqlite3_finalize(st);
	return rc;
}
