/* Spool ingest of a --capture run: each instance of the capture range (iteration_mark), each
 * process's recording window (capture_window), the captured instances as NVTX ranges every
 * analysis can take as iterations, and the run's summary in meta. */
#include "kj_ingest_internal.h"

#include <stdio.h>
#include <string.h>

#include "kj_capture_spec.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_schema.h"

static int ensure_tables(sqlite3 *db)
{
	return kj_db_exec(db, kj_schema_capture_sql, "capture tables");
}

/* CUPTI out of the process outside the window: a period opens at its detach, closes at its
 * attach (end_ns NULL: still out when the process ended). */
static int put_detached(struct ingest *in, const struct kj_rec_window *r)
{
	sqlite3_stmt *st = NULL;
	int rc = r->event == KJ_WINDOW_DETACH
		? kj_db_prepare(in->db, "INSERT OR REPLACE INTO cupti_detached(pid, start_ns, end_ns,"
				" after_instance, before_instance) VALUES(?1, ?2, NULL, ?3, NULL)", &st)
		: kj_db_prepare(in->db, "UPDATE cupti_detached SET end_ns = ?2, before_instance = ?3"
				" WHERE pid = ?1 AND end_ns IS NULL", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, r->t_ns);
	sqlite3_bind_int64(st, 3, r->instance);
	rc = ing_step_done(in, st);
	sqlite3_finalize(st);
	return rc;
}

int ing_put_window(struct ingest *in, const struct kj_rec_window *r)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if ((rc = ensure_tables(in->db)) != 0)
		return rc;
	if (r->event == KJ_WINDOW_DETACH || r->event == KJ_WINDOW_ATTACH)
		return put_detached(in, r);
	if (r->event == KJ_WINDOW_OPEN)
		rc = kj_db_prepare(in->db, "INSERT OR REPLACE INTO capture_window(pid, start_ns, end_ns,"
				   " first_instance, last_instance, status) VALUES(?1, ?2, NULL, ?3, NULL, 'open')", &st);
	else if (r->event == KJ_WINDOW_CLOSE || r->event == KJ_WINDOW_AT_EXIT)
		rc = kj_db_prepare(in->db, "UPDATE capture_window SET end_ns = ?2, last_instance = ?3,"
				   " status = ?4 WHERE pid = ?1", &st);
	else
		return 0; /* an event of a newer injection library */
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, r->t_ns);
	sqlite3_bind_int64(st, 3, r->instance);
	if (r->event != KJ_WINDOW_OPEN)
		sqlite3_bind_text(st, 4, r->event == KJ_WINDOW_CLOSE ? "captured" : "unclosed_at_exit", -1,
				  SQLITE_STATIC);
	rc = ing_step_done(in, st);
	sqlite3_finalize(st);
	return rc;
}

int ing_put_iter_mark(struct ingest *in, const struct kj_rec_iter_mark *r)
{
	sqlite3_stmt *st = NULL;
	const char *name = ing_str(in, r->name_id);
	int rc;
	if ((rc = ensure_tables(in->db)) != 0 ||
	    (rc = kj_db_prepare(in->db, "INSERT OR REPLACE INTO iteration_mark(pid, name, instance, start_ns,"
				" end_ns, captured) VALUES(?, ?, ?, ?, ?, ?)", &st)) != 0)
		return rc;
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_text(st, 2, name ? name : "?", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, r->instance);
	sqlite3_bind_int64(st, 4, r->start_ns);
	ing_bind_opt_i64(st, 5, r->end_ns != 0, r->end_ns); /* 0: still open at exit */
	sqlite3_bind_int(st, 6, r->captured ? 1 : 0);
	rc = ing_step_done(in, st);
	sqlite3_finalize(st);
	return rc;
}

/* The captured instances as nvtx_range rows: CUPTI's NVTX records are switched on and off inside
 * the callbacks of the first and last captured instance, so their own start or end marker may be
 * missing. A marker-made range that starts inside the instance as its mark bounds it (kjoule's
 * hook times the start before CUPTI sees the push, and the end after it sees the pop; the first
 * instance's marker comes as late as switching CUPTI's records on takes), or before it by at most
 * 1 ms and half the instance's length, is the instance (its missing end filled from the mark);
 * else the mark becomes a range. A mark without an end takes a marker up to 1 ms after its start.
 * cudaProfilerStart..Stop windows
 * become ranges of domain 'kjoule', so compare takes them as iterations. */
int ing_capture_ranges(struct ingest *in)
{
	sqlite3_stmt *marks = NULL, *find = NULL, *fill = NULL, *add = NULL;
	int64_t matched = -1; /* the marker range the previous mark took */
	int rc;
	if (in->pid < 0 || !kj_db_has_row(in->db, "SELECT 1 FROM iteration_mark LIMIT 1"))
		return 0;
	if ((rc = kj_db_prepare(in->db, "SELECT name, start_ns, end_ns FROM iteration_mark WHERE pid = ?"
				" AND captured = 1 ORDER BY instance", &marks)) != 0 ||
	    (rc = kj_db_prepare(in->db, "SELECT id, end_ns FROM nvtx_range WHERE pid = ?1 AND name = ?2"
				" AND start_ns BETWEEN ?3 - ?4 AND ?6 AND id <> ?5"
				" ORDER BY abs(start_ns - ?3) LIMIT 1", &find)) != 0 ||
	    (rc = kj_db_prepare(in->db, "UPDATE nvtx_range SET end_ns = ?2 WHERE id = ?1", &fill)) != 0 ||
	    (rc = kj_db_prepare(in->db, "INSERT INTO nvtx_range(pid, tid, domain, name, start_ns, end_ns,"
				" depth, kind) VALUES(?1, ?1, ?2, ?3, ?4, ?5, 0, ?6)", &add)) != 0)
		goto out;
	sqlite3_bind_int64(marks, 1, in->pid);
	while (!rc && sqlite3_step(marks) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(marks, 0);
		int64_t start = sqlite3_column_int64(marks, 1);
		int have_end = sqlite3_column_type(marks, 2) != SQLITE_NULL;
		int64_t end = sqlite3_column_int64(marks, 2);
		int profiler = name && !strcmp(name, KJ_CAPTURE_PROFILER_TEXT);
		sqlite3_reset(find);
		sqlite3_bind_int64(find, 1, in->pid);
		sqlite3_bind_text(find, 2, name ? name : "", -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(find, 3, start);
		/* before the mark by at most 1 ms and half the instance; after it, up to its end: a
		 * short step's marker range must not be taken for the instance before it */
		int spans = have_end && end > start;
		int64_t tol = spans && (end - start) / 2 < 1000000 ? (end - start) / 2 : 1000000;
		sqlite3_bind_int64(find, 4, tol);
		sqlite3_bind_int64(find, 5, matched);
		sqlite3_bind_int64(find, 6, spans ? end : start + tol);
		if (!profiler && sqlite3_step(find) == SQLITE_ROW) {
			matched = sqlite3_column_int64(find, 0);
			if (sqlite3_column_type(find, 1) == SQLITE_NULL && have_end) {
				sqlite3_bind_int64(fill, 1, sqlite3_column_int64(find, 0));
				sqlite3_bind_int64(fill, 2, end);
				rc = ing_step_done(in, fill);
			}
			continue;
		}
		sqlite3_bind_int64(add, 1, in->pid);
		if (profiler)
			sqlite3_bind_text(add, 2, "kjoule", -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(add, 2);
		sqlite3_bind_text(add, 3, name ? name : "", -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(add, 4, start);
		ing_bind_opt_i64(add, 5, have_end, end);
		sqlite3_bind_text(add, 6, profiler ? "capture" : "range", -1, SQLITE_STATIC);
		rc = ing_step_done(in, add);
		in->stats->nvtx_ranges++;
	}
out:
	sqlite3_finalize(marks);
	sqlite3_finalize(find);
	sqlite3_finalize(fill);
	sqlite3_finalize(add);
	return rc;
}

static void set_i64(sqlite3 *db, const char *key, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	kj_db_meta_set(db, key, buf);
}

int kj_ingest_capture_finish(sqlite3 *db, const char *spec_text, struct kj_capture_summary *out)
{
	struct kj_capture_spec spec;
	char stored[KJ_CAPTURE_NAME_MAX + 48] = "", why[600];
	int rc;
	memset(out, 0, sizeof(*out));
	out->window_start_ns = out->window_end_ns = -1;
	if (!spec_text || !*spec_text) {
		kj_db_meta_get(db, "capture_range", stored, sizeof(stored));
		spec_text = stored;
	}
	if (!*spec_text && !kj_db_has_row(db, "SELECT 1 FROM iteration_mark LIMIT 1") &&
	    !kj_db_has_row(db, "SELECT 1 FROM capture_window LIMIT 1"))
		return 0; /* not a --capture run */
	if ((rc = ensure_tables(db)) != 0)
		return rc;
	out->active = 1;
	if (*spec_text && kj_capture_parse(spec_text, &spec, why, sizeof(why)) == 0) {
		kj_capture_format(&spec, out->spec, sizeof(out->spec));
		kj_db_meta_set(db, "capture_range", out->spec);
	}
	/* a window that opened and never closed: the process was killed inside it, or ended first */
	if ((rc = kj_db_exec(db, "UPDATE capture_window SET status = 'unclosed_at_exit' WHERE status = 'open'",
			     "capture windows")) != 0)
		return rc;
	if (!strcmp(out->spec, KJ_CAPTURE_PROFILER_TEXT) &&
	    (rc = kj_db_exec(db, "UPDATE capture_window SET status = 'start_without_stop'"
			     " WHERE status = 'unclosed_at_exit'", "capture windows")) != 0)
		return rc;
	out->instances = kj_db_one_i64(db, "SELECT count(*) FROM iteration_mark", 0, 0);
	out->captured = kj_db_one_i64(db, "SELECT count(*) FROM iteration_mark WHERE captured = 1", 0, 0);
	out->processes_opened = kj_db_one_i64(db, "SELECT count(*) FROM capture_window", 0, 0);
	out->window_start_ns = kj_db_one_i64(db, "SELECT min(start_ns) FROM capture_window", 0, -1);
	out->window_end_ns = kj_db_one_i64(db, "SELECT max(end_ns) FROM capture_window", 0, -1);
	if (kj_db_has_row(db, "SELECT 1 FROM capture_window WHERE status = 'start_without_stop'"))
		snprintf(out->status, sizeof(out->status), "start_without_stop");
	else if (kj_db_has_row(db, "SELECT 1 FROM capture_window WHERE status = 'unclosed_at_exit'"))
		snprintf(out->status, sizeof(out->status), "unclosed_at_exit");
	else if (out->processes_opened)
		snprintf(out->status, sizeof(out->status), "captured");
	else
		snprintf(out->status, sizeof(out->status), "never_opened");
	kj_db_meta_set(db, "capture_status", out->status);
	set_i64(db, "capture_instances", out->captured);
	set_i64(db, "capture_marks", out->instances);
	if (out->window_start_ns >= 0)
		set_i64(db, "capture_window_start_ns", out->window_start_ns);
	if (out->window_end_ns >= 0)
		set_i64(db, "capture_window_end_ns", out->window_end_ns);
	/* a period still open at the end lasted to the process's last instance */
	out->detaches = kj_db_one_i64(db, "SELECT count(*) FROM cupti_detached", 0, 0);
	out->detached_ns = kj_db_one_i64(db, "SELECT coalesce(sum(coalesce(d.end_ns, (SELECT max(m.end_ns)"
				      " FROM iteration_mark m WHERE m.pid = d.pid)) - d.start_ns), 0)"
				      " FROM cupti_detached d", 0, 0);
	set_i64(db, "capture_detaches", out->detaches);
	set_i64(db, "capture_detached_ns", out->detached_ns);
	if (!strcmp(out->status, "never_opened")) {
		snprintf(why, sizeof(why), "--capture %s: the window never opened (%lld instances of the range "
			 "seen): nothing was captured", out->spec, (long long)out->instances);
		kj_db_problem(db, -1, -1, "error", why);
	} else if (strcmp(out->status, "captured")) {
		snprintf(why, sizeof(why), "--capture %s: %s: the window was still open when the program "
			 "ended; what it recorded is kept", out->spec,
			 !strcmp(out->status, "start_without_stop") ? "cudaProfilerStart without cudaProfilerStop"
								    : "unclosed at exit");
		kj_db_problem(db, -1, -1, "warning", why);
	}
	return 0;
}
