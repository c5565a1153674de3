/* kjoule timeline --format chrome: the Chrome Trace Event Format, streamed with a hand-written
 * buffered writer (Perfetto and chrome://tracing read it). This file writes the trace around its
 * tracks (header, names and sort order of processes and threads); kj_timeline_chrome_tracks.c
 * writes each track's events. */
#include "kj_timeline_chrome_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_ranks.h"

static void meta_name(struct chrome *c, const char *what, int64_t pid, int64_t tid,
		      const char *name, int64_t sort)
{
	ev_begin(c);
	WB_LIT(&c->w, "{\"ph\":\"M\",\"name\":\"");
	wb_str(&c->w, what);
	WB_LIT(&c->w, "\",\"pid\":");
	wb_i64(&c->w, pid);
	WB_LIT(&c->w, ",\"tid\":");
	wb_i64(&c->w, tid);
	WB_LIT(&c->w, ",\"ts\":0,\"args\":{\"name\":");
	wb_jstr(&c->w, name);
	WB_LIT(&c->w, "}}");
	if (sort >= 0) {
		ev_begin(c);
		WB_LIT(&c->w, "{\"ph\":\"M\",\"name\":\"");
		wb_str(&c->w, strcmp(what, "process_name") ? "thread_sort_index"
							     : "process_sort_index");
		WB_LIT(&c->w, "\",\"pid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"tid\":");
		wb_i64(&c->w, tid);
		WB_LIT(&c->w, ",\"ts\":0,\"args\":{\"sort_index\":");
		wb_i64(&c->w, sort);
		WB_LIT(&c->w, "}}");
	}
}

static int chrome_metadata(sqlite3 *db, struct chrome *c)
{
	sqlite3_stmt *st = NULL;
	char buf[512];
	/* processes: the process table, plus any pid seen in activity or API rows */
	if (kj_db_prepare(db,
			  "SELECT p.pid, coalesce(pr.exe, '') FROM (SELECT pid FROM process UNION"
			  " SELECT DISTINCT pid FROM api_call UNION SELECT DISTINCT pid FROM"
			  " kernel UNION SELECT DISTINCT pid FROM memcpy UNION SELECT DISTINCT pid"
			  " FROM nvtx_range) p LEFT JOIN process pr ON pr.pid = p.pid"
			  " WHERE p.pid IS NOT NULL",
			  &st))
		return KJ_EDB;
	struct kj_job ranks = {0}; /* several GPU processes: each named by its rank and GPU */
	if (kj_ranks_list(db, &ranks))
		ranks.n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0);
		const char *exe = (const char *)sqlite3_column_text(st, 1);
		char lab[48];
		kj_rank_label(&ranks, pid, lab, sizeof(lab));
		snprintf(buf, sizeof(buf), "%s%s%s (pid %" PRId64 ")", lab, lab[0] ? ": " : "",
			 exe && *exe ? exe : "process", pid);
		meta_name(c, "process_name", pid, pid, buf, pid);
	}
	sqlite3_finalize(st);
	kj_job_free(&ranks);
	if (kj_db_prepare(db, kj_db_has_row(db, "SELECT 1 FROM sqlite_master WHERE name = 'host_call'")
			  ? "SELECT DISTINCT pid, tid, 0 FROM api_call WHERE tid IS NOT NULL UNION"
			    " SELECT DISTINCT pid, tid, 0 FROM host_call WHERE tid IS NOT NULL AND op LIKE 'graph%' UNION"
			    " SELECT DISTINCT pid, tid, 1 FROM nvtx_range WHERE tid IS NOT NULL"
			  : "SELECT DISTINCT pid, tid, 0 FROM api_call WHERE tid IS NOT NULL UNION"
			    " SELECT DISTINCT pid, tid, 1 FROM nvtx_range WHERE tid IS NOT NULL",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		int nv = sqlite3_column_int(st, 2);
		snprintf(buf, sizeof(buf), nv ? "NVTX (thread %" PRId64 ")" : "CPU thread %" PRId64,
			 tid);
		meta_name(c, "thread_name", pid, nv ? tid + NVTX_TID_OFF : tid, buf,
			  nv ? 2 * tid : 2 * tid + 1);
	}
	sqlite3_finalize(st);
	if (kj_db_prepare(db,
			  "SELECT DISTINCT pid, coalesce(device_id, 0), coalesce(stream_id, -1) FROM"
			  " kernel UNION SELECT DISTINCT pid, coalesce(device_id, 0),"
			  " coalesce(stream_id, -1) FROM memcpy UNION SELECT DISTINCT pid,"
			  " coalesce(device_id, 0), coalesce(stream_id, -1) FROM memset",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), dev = sqlite3_column_int64(st, 1);
		int64_t stream = sqlite3_column_int64(st, 2);
		snprintf(buf, sizeof(buf), "GPU %" PRId64 " stream %" PRId64, dev, stream);
		meta_name(c, "thread_name", pid, gpu_tid(pid, dev, stream), buf,
			  1000000000LL + dev * 100000 + (stream >= 0 ? stream : 99999));
	}
	sqlite3_finalize(st);
	if (kj_db_prepare(db, "SELECT DISTINCT device_id FROM power_sample", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t dev = sqlite3_column_int64(st, 0);
		snprintf(buf, sizeof(buf), "GPU %" PRId64 " power, energy, clocks", dev);
		meta_name(c, "process_name", COUNTER_PID_BASE + dev, COUNTER_PID_BASE + dev, buf,
			  COUNTER_PID_BASE + dev);
	}
	sqlite3_finalize(st);
	return 0;
}

int timeline_chrome(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f, int64_t t0,
			   int64_t t1, int64_t lo, int64_t hi)
{
	struct chrome c;
	int rc;
	memset(&c, 0, sizeof(c));
	c.w.f = f;
	c.w.cap = 1 << 20;
	c.w.b = malloc(c.w.cap);
	c.t0 = t0;
	c.first = 1;
	c.lo = lo;
	c.hi = hi;
	if (!c.w.b)
		return KJ_ENOMEM;
	rc = kj_names_load(db, &c.names);
	if (rc)
		goto out;
	WB_LIT(&c.w, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"kjoule timeline\","
		     "\"run\":");
	wb_jstr(&c.w, o->run_path ? o->run_path : "");
	WB_LIT(&c.w, ",\"origin_ns\":");
	wb_i64(&c.w, t0);
	WB_LIT(&c.w, "},\n\"traceEvents\":[\n");
	rc = chrome_metadata(db, &c);
	if (!rc)
		rc = tl_chrome_api(db, &c);
	if (!rc)
		rc = tl_chrome_graph_calls(db, &c);
	if (!rc)
		rc = tl_chrome_nvtx(db, &c, t1);
	if (!rc)
		rc = tl_chrome_gpu(db, &c);
	if (!rc)
		rc = tl_chrome_counters(db, &c);
	if (rc == KJ_EDB)
		kj_errorf("database: %s", sqlite3_errmsg(db));
	WB_LIT(&c.w, "\n]}\n");
	wb_flush(&c.w);
	if (!rc && (c.w.err || fflush(f) != 0)) {
		kj_errorf("timeline: write failed");
		rc = KJ_EIO;
	}
out:
	free(c.w.b);
	tl_chrome_lm_free(&c.lm);
	kj_names_free(&c.names);
	return rc;
}

