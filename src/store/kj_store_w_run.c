/* Writers and readers of kj_store_w_run.h. */
#include "kj_store_w_run.h"

#include <stdio.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"

int kj_write_begin(sqlite3 *db)
{
	return kj_db_exec(db, "BEGIN", "begin");
}

int kj_write_begin_bulk(sqlite3 *db)
{
	return kj_db_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN", "begin");
}

int kj_write_unjournaled(sqlite3 *db)
{
	return kj_db_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", "pragmas");
}

int kj_write_commit(sqlite3 *db)
{
	return kj_db_exec(db, "COMMIT", "commit");
}

int kj_store_run_ranges_add(sqlite3 *db, const struct kj_store_run_range *r, size_t n)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "INSERT INTO nvtx_range(pid, tid, domain, name, start_ns, end_ns,"
			  " depth, kind) VALUES(?, ?, 'kjoule', ?, ?, ?, 0, 'run')", &st))
		return KJ_EDB;
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(st, 1, r[i].pid);
		sqlite3_bind_int64(st, 2, r[i].pid);
		sqlite3_bind_text(st, 3, r[i].warmup ? "kjoule.warmup" : "kjoule.run", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, r[i].start_ns);
		sqlite3_bind_int64(st, 5, r[i].end_ns);
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return 0;
}

void kj_store_device_names(sqlite3 *db, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	buf[0] = 0;
	if (kj_db_prepare(db, "SELECT group_concat(name, ', ') FROM (SELECT DISTINCT name FROM device"
			      " WHERE name IS NOT NULL ORDER BY id)", &st))
		return;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

int kj_store_idle_first(sqlite3 *db, struct kj_store_idle *out)
{
	sqlite3_stmt *st = NULL;
	memset(out, 0, sizeof(*out));
	if (kj_db_prepare(db, "SELECT median_mw, coalesce(source, '') FROM idle_power ORDER BY"
			  " device_id LIMIT 1", &st))
		return KJ_EDB;
	int found = sqlite3_step(st) == SQLITE_ROW;
	if (found) {
		out->median_mw = sqlite3_column_double(st, 0);
		snprintf(out->source, sizeof(out->source), "%s", (const char *)sqlite3_column_text(st, 1));
	}
	sqlite3_finalize(st);
	return found;
}
