/* kjoule timeline --format chrome: the Chrome Trace Event Format, streamed with a hand-written
 * buffered writer (Perfetto and chrome://tracing read it). This file writes the trace around its
 * tracks (header, names and sort order of processes and threads); kj_timeline_chrome_tracks.c
 * writes each track's events. */
#include "kj_timeline_chrome_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_ranks.h"
#include "kj_store_e_power.h"
#include "kj_store_e_timeline.h"

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

struct meta_ctx {
	struct chrome *c;
	const struct kj_job *ranks;
};

/* a process track named by its rank and GPU (several GPU processes), executable and pid */
static int meta_process(void *ctx, int64_t pid, const char *exe)
{
	const struct meta_ctx *m = ctx;
	char buf[512], lab[48];
	kj_rank_label(m->ranks, pid, lab, sizeof(lab));
	snprintf(buf, sizeof(buf), "%s%s%s (pid %" PRId64 ")", lab, lab[0] ? ": " : "",
		 exe && *exe ? exe : "process", pid);
	meta_name(m->c, "process_name", pid, pid, buf, pid);
	return 0;
}

/* a CPU thread's track, or the NVTX track beside it */
static int meta_thread(void *ctx, int64_t pid, int64_t tid, int nv)
{
	char buf[512];
	snprintf(buf, sizeof(buf), nv ? "NVTX (thread %" PRId64 ")" : "CPU thread %" PRId64, tid);
	meta_name(ctx, "thread_name", pid, nv ? tid + NVTX_TID_OFF : tid, buf,
		  nv ? 2 * tid : 2 * tid + 1);
	return 0;
}

/* a GPU stream's track */
static int meta_lane(void *ctx, int64_t pid, int64_t dev, int64_t stream)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "GPU %" PRId64 " stream %" PRId64, dev, stream);
	meta_name(ctx, "thread_name", pid, gpu_tid(pid, dev, stream), buf,
		  1000000000LL + dev * 100000 + (stream >= 0 ? stream : 99999));
	return 0;
}

/* a device's counter process (power, energy, clocks) */
static int meta_counters(void *ctx, int64_t dev)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "GPU %" PRId64 " power, energy, clocks", dev);
	meta_name(ctx, "process_name", COUNTER_PID_BASE + dev, COUNTER_PID_BASE + dev, buf,
		  COUNTER_PID_BASE + dev);
	return 0;
}

static int chrome_metadata(sqlite3 *db, struct chrome *c)
{
	/* processes: the process table, plus any pid seen in activity or API rows */
	struct kj_job ranks = {0}; /* several GPU processes: each named by its rank and GPU */
	if (kj_ranks_list(db, &ranks))
		ranks.n = 0;
	struct meta_ctx m = {c, &ranks};
	int rc = kj_store_e_trace_processes(db, meta_process, &m);
	kj_job_free(&ranks);
	if (!rc)
		rc = kj_store_e_trace_threads(db, meta_thread, c);
	if (!rc)
		rc = kj_store_e_gpu_lanes(db, meta_lane, c);
	if (!rc)
		rc = kj_store_e_power_devices(db, meta_counters, c);
	return rc;
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

