/* Import of a meter log into a run database (kept apart from kj_meter.c, which is libc only). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_meter.h"

/* Imports samples inside [from, to] into meter_sample in one transaction. t_ns is mapped through
 * the run's clock_sync (CLOCK_REALTIME -> CLOCK_MONOTONIC) when the run has it, else NULL. */
int kj_meter_import(const char *db_path, const char *file, const struct kj_meter_log *l, double from,
		  double to, size_t *count)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc, have_off = 0;
	int64_t off = 0;
	char meter[300];
	const char *base = strrchr(file, '/');

	*count = 0;
	rc = kj_db_open(db_path, 1, &db);
	if (rc)
		return rc;
	have_off = kj_db_realtime_offset(db, &off);
	off = -off; /* realtime -> monotonic */
	if (!have_off)
		kj_warnf("%s has no clock_sync row: meter samples keep wall-clock times only (t_ns NULL)",
			 db_path);
	snprintf(meter, sizeof(meter), "%s%s", base ? base + 1 : file,
		 l->format == KJ_METER_WATTSUP ? ":sum" : "");
	rc = kj_db_exec(db, "BEGIN", "begin");
	if (rc)
		goto out;
	rc = kj_db_prepare(db, "INSERT INTO meter_sample(t_ns, realtime_ns, watts, meter)"
			   " VALUES(?,?,?,?)", &st);
	if (rc)
		goto out;
	for (size_t i = 0; i < l->n; i++) {
		if (l->t_s[i] < from - 1e-9 || l->t_s[i] > to + 1e-9)
			continue;
		int64_t rt = (int64_t)llround(l->t_s[i] * 1e9);
		sqlite3_reset(st);
		if (have_off)
			sqlite3_bind_int64(st, 1, rt + off);
		else
			sqlite3_bind_null(st, 1);
		sqlite3_bind_int64(st, 2, rt);
		sqlite3_bind_double(st, 3, l->watts[i]);
		sqlite3_bind_text(st, 4, meter, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			kj_errorf("%s: meter_sample: %s", db_path, sqlite3_errmsg(db));
			rc = KJ_EDB;
			goto out;
		}
		(*count)++;
	}
	sqlite3_finalize(st);
	st = NULL;
	rc = kj_db_exec(db, "COMMIT", "commit");
out:
	sqlite3_finalize(st);
	kj_db_close(db); /* rolls back an unfinished transaction */
	return rc;
}

