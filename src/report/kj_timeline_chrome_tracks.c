/* kjoule timeline --format chrome: the events of each track (CUDA API calls, graph calls, NVTX
 * ranges, GPU work with the flow arrows from its launches, power counters) in the window. */
#include "kj_timeline_chrome_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"

static int64_t corr_key(int64_t pid, int64_t corr)
{
	return (pid << 40) ^ corr;
}

static int lm_add(struct launch_map *m, int64_t pid, int64_t tid, int64_t corr, int64_t ts)
{
	int64_t key = corr_key(pid, corr);
	if (kj_imap_get(&m->idx, key) != (size_t)-1)
		return 0;
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 4096;
		int64_t *a = realloc(m->tid, nc * sizeof(*a)), *b, *c, *d;
		if (!a)
			return KJ_ENOMEM;
		m->tid = a;
		b = realloc(m->ts, nc * sizeof(*b));
		if (!b)
			return KJ_ENOMEM;
		m->ts = b;
		c = realloc(m->pid, nc * sizeof(*c));
		if (!c)
			return KJ_ENOMEM;
		m->pid = c;
		d = realloc(m->corr, nc * sizeof(*d));
		if (!d)
			return KJ_ENOMEM;
		m->corr = d;
		m->cap = nc;
	}
	m->tid[m->n] = tid;
	m->ts[m->n] = ts;
	m->pid[m->n] = pid;
	m->corr[m->n] = corr;
	if (kj_imap_put(&m->idx, key, m->n))
		return KJ_ENOMEM;
	m->n++;
	return 0;
}

void tl_chrome_lm_free(struct launch_map *m)
{
	kj_imap_free(&m->idx);
	free(m->tid);
	free(m->ts);
	free(m->pid);
	free(m->corr);
}

static void bind_window(sqlite3_stmt *st, const struct chrome *c)
{
	sqlite3_bind_int64(st, 1, c->lo);
	sqlite3_bind_int64(st, 2, c->hi);
}

/* The head of a complete ("X") event on a CPU thread, up to and including `"args":{`. */
static void ev_cpu_x(struct chrome *c, const char *cat, const char *name, int64_t pid, int64_t tid,
		     int64_t s, int64_t e)
{
	ev_begin(c);
	WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":");
	wb_jstr(&c->w, cat);
	WB_LIT(&c->w, ",\"name\":");
	wb_jstr(&c->w, name);
	WB_LIT(&c->w, ",\"pid\":");
	wb_i64(&c->w, pid);
	WB_LIT(&c->w, ",\"tid\":");
	wb_i64(&c->w, tid);
	WB_LIT(&c->w, ",\"ts\":");
	wb_us(&c->w, s - c->t0);
	WB_LIT(&c->w, ",\"dur\":");
	wb_us(&c->w, e - s);
	WB_LIT(&c->w, ",\"args\":{");
}

int tl_chrome_api(sqlite3 *db, struct chrome *c)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT pid, tid, name, start_ns, end_ns, correlation_id, bytes, stream_id"
			  " FROM api_call WHERE start_ns IS NOT NULL AND coalesce(end_ns, start_ns)"
			  " >= ?1 AND start_ns <= ?2 ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, c);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		int64_t s = sqlite3_column_int64(st, 3);
		int64_t e = sqlite3_column_type(st, 4) == SQLITE_NULL ? s : sqlite3_column_int64(st, 4);
		if (e < s)
			e = s;
		ev_cpu_x(c, "cuda_api", (const char *)sqlite3_column_text(st, 2), pid, tid, s, e);
		int comma = 0;
		if (sqlite3_column_type(st, 5) != SQLITE_NULL) {
			int64_t corr = sqlite3_column_int64(st, 5);
			WB_LIT(&c->w, "\"correlation_id\":");
			wb_i64(&c->w, corr);
			comma = 1;
			/* a launch point for flow arrows: inside the call, 1 ns after its start */
			if (lm_add(&c->lm, pid, tid, corr, e > s ? s + 1 : s)) {
				sqlite3_finalize(st);
				return KJ_ENOMEM;
			}
		}
		if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
			if (comma)
				WB_LIT(&c->w, ",");
			WB_LIT(&c->w, "\"bytes\":");
			wb_i64(&c->w, sqlite3_column_int64(st, 6));
			comma = 1;
		}
		if (sqlite3_column_type(st, 7) != SQLITE_NULL) {
			if (comma)
				WB_LIT(&c->w, ",");
			WB_LIT(&c->w, "\"stream\":");
			wb_i64(&c->w, sqlite3_column_int64(st, 7));
		}
		WB_LIT(&c->w, "}}");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

/* Graph launches, instantiations and uploads on their CPU threads (recorded without --api, in
 * host_call), each a launch point for the flow arrows to the graph's kernels. Runs traced with
 * --api have these calls in api_call already, and runs from before host calls have none. */
int tl_chrome_graph_calls(sqlite3 *db, struct chrome *c)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (!kj_db_has_row(db, "SELECT 1 FROM sqlite_master WHERE name = 'host_call'"))
		return 0;
	if (kj_db_prepare(db,
			  "SELECT h.pid, h.tid, h.op, h.start_ns, h.end_ns, h.correlation_id, h.graph_exec_id"
			  " FROM host_call h WHERE h.op LIKE 'graph%' AND h.end_ns >= ?1 AND h.start_ns <= ?2"
			  " AND NOT EXISTS (SELECT 1 FROM api_call a WHERE a.pid = h.pid"
			  " AND a.correlation_id = h.correlation_id) ORDER BY h.start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, c);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
		int64_t s = sqlite3_column_int64(st, 3), e = sqlite3_column_int64(st, 4);
		int64_t corr = sqlite3_column_int64(st, 5);
		const char *op = (const char *)sqlite3_column_text(st, 2);
		char name[64];
		snprintf(name, sizeof(name), "%s", op && !strcmp(op, "graph_launch") ? "cuGraphLaunch"
						   : op && !strcmp(op, "graph_upload") ? "cuGraphUpload"
										      : "cuGraphInstantiate");
		if (e < s)
			e = s;
		ev_cpu_x(c, "cuda_graph", name, pid, tid, s, e);
		WB_LIT(&c->w, "\"correlation_id\":");
		wb_i64(&c->w, corr);
		if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
			WB_LIT(&c->w, ",\"graph_exec_id\":");
			wb_i64(&c->w, sqlite3_column_int64(st, 6));
		}
		WB_LIT(&c->w, "}}");
		if (lm_add(&c->lm, pid, tid, corr, e > s ? s + 1 : s)) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

int tl_chrome_nvtx(sqlite3 *db, struct chrome *c, int64_t t_end)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT pid, tid, name, start_ns, end_ns, depth FROM nvtx_range WHERE"
			  " start_ns IS NOT NULL AND coalesce(end_ns, ?2) >= ?1 AND start_ns <= ?2"
			  " ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, c);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t s = sqlite3_column_int64(st, 3);
		int unclosed = sqlite3_column_type(st, 4) == SQLITE_NULL;
		int64_t e = unclosed ? t_end : sqlite3_column_int64(st, 4);
		if (e < s)
			e = s;
		ev_begin(c);
		WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":");
		wb_jstr(&c->w, (const char *)sqlite3_column_text(st, 2));
		WB_LIT(&c->w, ",\"pid\":");
		wb_i64(&c->w, sqlite3_column_int64(st, 0));
		WB_LIT(&c->w, ",\"tid\":");
		wb_i64(&c->w, sqlite3_column_int64(st, 1) + NVTX_TID_OFF);
		WB_LIT(&c->w, ",\"ts\":");
		wb_us(&c->w, s - c->t0);
		WB_LIT(&c->w, ",\"dur\":");
		wb_us(&c->w, e - s);
		WB_LIT(&c->w, ",\"args\":{\"depth\":");
		wb_i64(&c->w, sqlite3_column_int64(st, 5));
		if (unclosed)
			WB_LIT(&c->w, ",\"unclosed\":true");
		WB_LIT(&c->w, "}}");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

/* flow arrow from the launching API call to the GPU slice starting at ts on (pid, tid) */
static void chrome_flow(struct chrome *c, int64_t pid, int64_t corr, int64_t gtid, int64_t ts)
{
	size_t k = kj_imap_get(&c->lm.idx, corr_key(pid, corr));
	if (k == (size_t)-1)
		return;
	int64_t id = ++c->flow_id;
	ev_begin(c);
	WB_LIT(&c->w, "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":");
	wb_i64(&c->w, id);
	WB_LIT(&c->w, ",\"pid\":");
	wb_i64(&c->w, pid);
	WB_LIT(&c->w, ",\"tid\":");
	wb_i64(&c->w, c->lm.tid[k]);
	WB_LIT(&c->w, ",\"ts\":");
	wb_us(&c->w, c->lm.ts[k] - c->t0);
	WB_LIT(&c->w, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":");
	wb_i64(&c->w, id);
	WB_LIT(&c->w, ",\"pid\":");
	wb_i64(&c->w, pid);
	WB_LIT(&c->w, ",\"tid\":");
	wb_i64(&c->w, gtid);
	WB_LIT(&c->w, ",\"ts\":");
	wb_us(&c->w, ts - c->t0);
	WB_LIT(&c->w, "}");
}

int tl_chrome_gpu(sqlite3 *db, struct chrome *c)
{
	static const char *sql =
		"SELECT 0, pid, coalesce(device_id, 0), coalesce(stream_id, -1), correlation_id,"
		" start_ns, end_ns, name_id, unique_id, grid_x, grid_y, grid_z, block_x, block_y,"
		" block_z, NULL, NULL FROM kernel WHERE start_ns IS NOT NULL AND end_ns >= ?1 AND"
		" start_ns <= ?2"
		" UNION ALL SELECT 1, pid, coalesce(device_id, 0), coalesce(stream_id, -1),"
		" correlation_id, start_ns, end_ns, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
		" bytes, kind FROM memcpy WHERE start_ns IS NOT NULL AND end_ns >= ?1 AND"
		" start_ns <= ?2"
		" UNION ALL SELECT 2, pid, coalesce(device_id, 0), coalesce(stream_id, -1),"
		" correlation_id, start_ns, end_ns, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
		" bytes, NULL FROM memset WHERE start_ns IS NOT NULL AND end_ns >= ?1 AND"
		" start_ns <= ?2";
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	bind_window(st, c);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int type = sqlite3_column_int(st, 0);
		int64_t pid = sqlite3_column_int64(st, 1), dev = sqlite3_column_int64(st, 2);
		int64_t stream = sqlite3_column_int64(st, 3);
		int64_t s = sqlite3_column_int64(st, 5), e = sqlite3_column_int64(st, 6);
		int64_t gtid = gpu_tid(pid, dev, stream);
		if (e < s)
			continue;
		ev_begin(c);
		if (type == 0) {
			WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":");
			wb_jstr(&c->w, kj_names_get(&c->names, sqlite3_column_type(st, 7) == SQLITE_NULL
								   ? -1
								   : sqlite3_column_int64(st, 7)));
		} else if (type == 1) {
			WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"memcpy\",\"name\":");
			char nm[96];
			const char *kind = (const char *)sqlite3_column_text(st, 16);
			snprintf(nm, sizeof(nm), "memcpy %s", kind ? kind : "");
			wb_jstr(&c->w, nm);
		} else {
			WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"memset\",\"name\":\"memset\"");
		}
		WB_LIT(&c->w, ",\"pid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"tid\":");
		wb_i64(&c->w, gtid);
		WB_LIT(&c->w, ",\"ts\":");
		wb_us(&c->w, s - c->t0);
		WB_LIT(&c->w, ",\"dur\":");
		wb_us(&c->w, e - s);
		WB_LIT(&c->w, ",\"args\":{\"stream\":");
		wb_i64(&c->w, stream);
		if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
			WB_LIT(&c->w, ",\"correlation_id\":");
			wb_i64(&c->w, sqlite3_column_int64(st, 4));
		}
		if (type == 0) {
			if (sqlite3_column_type(st, 8) != SQLITE_NULL) {
				WB_LIT(&c->w, ",\"unique_id\":");
				wb_i64(&c->w, sqlite3_column_int64(st, 8));
			}
			if (sqlite3_column_type(st, 9) != SQLITE_NULL) {
				WB_LIT(&c->w, ",\"grid\":[");
				for (int k = 0; k < 3; k++) {
					if (k)
						WB_LIT(&c->w, ",");
					wb_i64(&c->w, sqlite3_column_int64(st, 9 + k));
				}
				WB_LIT(&c->w, "],\"block\":[");
				for (int k = 0; k < 3; k++) {
					if (k)
						WB_LIT(&c->w, ",");
					wb_i64(&c->w, sqlite3_column_int64(st, 12 + k));
				}
				WB_LIT(&c->w, "]");
			}
		} else if (sqlite3_column_type(st, 15) != SQLITE_NULL) {
			WB_LIT(&c->w, ",\"bytes\":");
			wb_i64(&c->w, sqlite3_column_int64(st, 15));
		}
		WB_LIT(&c->w, "}}");
		/* the flow ends just inside the slice so that it binds to it after sorting */
		if (sqlite3_column_type(st, 4) != SQLITE_NULL)
			chrome_flow(c, pid, sqlite3_column_int64(st, 4), gtid, e > s ? s + 1 : s);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

int tl_chrome_counters(sqlite3 *db, struct chrome *c)
{
	sqlite3_stmt *st = NULL;
	int rc;
	int64_t last_dev = INT64_MIN;
	int64_t e0 = -1;
	if (kj_db_prepare(db,
			  "SELECT device_id, t_ns, coalesce(power_mw, power_avg_mw), energy_mj,"
			  " sm_clock_mhz, mem_clock_mhz FROM power_sample WHERE t_ns >= ?1 AND"
			  " t_ns <= ?2 ORDER BY device_id, t_ns",
			  &st))
		return KJ_EDB;
	bind_window(st, c);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t dev = sqlite3_column_int64(st, 0), t = sqlite3_column_int64(st, 1);
		int64_t pid = COUNTER_PID_BASE + dev;
		if (dev != last_dev) {
			last_dev = dev;
			e0 = -1;
		}
		if (sqlite3_column_type(st, 2) != SQLITE_NULL && sqlite3_column_int64(st, 2) >= 0) {
			ev_begin(c);
			WB_LIT(&c->w, "{\"ph\":\"C\",\"name\":\"power\",\"pid\":");
			wb_i64(&c->w, pid);
			WB_LIT(&c->w, ",\"tid\":");
			wb_i64(&c->w, pid);
			WB_LIT(&c->w, ",\"ts\":");
			wb_us(&c->w, t - c->t0);
			WB_LIT(&c->w, ",\"args\":{\"W\":");
			wb_us(&c->w, sqlite3_column_int64(st, 2)); /* mW/1000 = W, 3 decimals */
			WB_LIT(&c->w, "}}");
		}
		if (sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_int64(st, 3) >= 0) {
			int64_t e = sqlite3_column_int64(st, 3);
			if (e0 < 0)
				e0 = e;
			ev_begin(c);
			WB_LIT(&c->w, "{\"ph\":\"C\",\"name\":\"energy\",\"pid\":");
			wb_i64(&c->w, pid);
			WB_LIT(&c->w, ",\"tid\":");
			wb_i64(&c->w, pid);
			WB_LIT(&c->w, ",\"ts\":");
			wb_us(&c->w, t - c->t0);
			WB_LIT(&c->w, ",\"args\":{\"J\":");
			wb_us(&c->w, e - e0); /* mJ/1000 = J */
			WB_LIT(&c->w, "}}");
		}
		if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
			ev_begin(c);
			WB_LIT(&c->w, "{\"ph\":\"C\",\"name\":\"clocks\",\"pid\":");
			wb_i64(&c->w, pid);
			WB_LIT(&c->w, ",\"tid\":");
			wb_i64(&c->w, pid);
			WB_LIT(&c->w, ",\"ts\":");
			wb_us(&c->w, t - c->t0);
			WB_LIT(&c->w, ",\"args\":{\"sm_MHz\":");
			wb_i64(&c->w, sqlite3_column_int64(st, 4));
			if (sqlite3_column_type(st, 5) != SQLITE_NULL) {
				WB_LIT(&c->w, ",\"mem_MHz\":");
				wb_i64(&c->w, sqlite3_column_int64(st, 5));
			}
			WB_LIT(&c->w, "}}");
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}
