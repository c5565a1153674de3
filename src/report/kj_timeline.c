/* kjoule timeline: Chrome Trace Event Format (streamed with a hand-written buffered writer),
 * an ASCII window and an SVG gantt of one iteration. */
#include "kj_timeline.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_report.h"

/* Synthetic track ids: NVTX ranges get their own track beside each CPU thread, GPU streams get
 * tids far above Linux thread ids, power counters a process per device. */
#define NVTX_TID_OFF 1000000000LL
#define GPU_TID_BASE 2000000000LL
#define COUNTER_PID_BASE 3000000000LL

/* ---- buffered writer ---- */

struct wb {
	FILE *f;
	char *b;
	size_t n, cap;
	int err;
};

static void wb_flush(struct wb *w)
{
	if (w->n && fwrite(w->b, 1, w->n, w->f) != w->n)
		w->err = 1;
	w->n = 0;
}

static inline void wb_need(struct wb *w, size_t k)
{
	if (w->n + k > w->cap)
		wb_flush(w);
}

static inline void wb_raw(struct wb *w, const char *s, size_t k)
{
	if (k > w->cap) {
		wb_flush(w);
		if (fwrite(s, 1, k, w->f) != k)
			w->err = 1;
		return;
	}
	wb_need(w, k);
	memcpy(w->b + w->n, s, k);
	w->n += k;
}

#define WB_LIT(w, lit) wb_raw((w), (lit), sizeof(lit) - 1)

static inline void wb_str(struct wb *w, const char *s)
{
	wb_raw(w, s, strlen(s));
}

static inline void wb_i64(struct wb *w, int64_t v)
{
	char tmp[24];
	int k = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	wb_need(w, 24);
	if (v < 0)
		w->b[w->n++] = '-';
	while (k)
		w->b[w->n++] = tmp[--k];
}

/* ns -> microseconds with three decimals (exact) */
static inline void wb_us(struct wb *w, int64_t ns)
{
	int64_t a = ns < 0 ? -ns : ns;
	if (ns < 0)
		WB_LIT(w, "-");
	wb_i64(w, a / 1000);
	int64_t r = a % 1000;
	wb_need(w, 4);
	w->b[w->n++] = '.';
	w->b[w->n++] = (char)('0' + r / 100);
	w->b[w->n++] = (char)('0' + (r / 10) % 10);
	w->b[w->n++] = (char)('0' + r % 10);
}

/* JSON string literal with every character JSON requires escaped */
static void wb_jstr(struct wb *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	wb_need(w, 1);
	w->b[w->n++] = '"';
	for (; *p; p++) {
		unsigned char c = *p;
		wb_need(w, 6);
		if (c == '"' || c == '\\') {
			w->b[w->n++] = '\\';
			w->b[w->n++] = (char)c;
		} else if (c < 0x20) {
			w->b[w->n++] = '\\';
			w->b[w->n++] = 'u';
			w->b[w->n++] = '0';
			w->b[w->n++] = '0';
			w->b[w->n++] = hex[c >> 4];
			w->b[w->n++] = hex[c & 15];
		} else {
			w->b[w->n++] = (char)c;
		}
	}
	wb_need(w, 1);
	w->b[w->n++] = '"';
}

/* ---- chrome ---- */

struct launch_map {
	struct kj_imap idx;  /* (pid, corr) hash -> index */
	int64_t *tid, *ts, *pid, *corr;
	size_t n, cap;
};

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

static void lm_free(struct launch_map *m)
{
	kj_imap_free(&m->idx);
	free(m->tid);
	free(m->ts);
	free(m->pid);
	free(m->corr);
}

struct chrome {
	struct wb w;
	int64_t t0;
	int first;
	int64_t flow_id;
	struct launch_map lm;
	struct kj_names names;
	int64_t lo, hi; /* window, absolute ns */
};

static void ev_begin(struct chrome *c)
{
	if (!c->first)
		WB_LIT(&c->w, ",\n");
	c->first = 0;
}

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

/* GPU track id of a (process, device, stream): distinct per process too, because Perfetto
 * takes tids as global thread ids; stays below 2^32 (Perfetto reads pid/tid as uint32). */
static int64_t gpu_tid(int64_t pid, int64_t device, int64_t stream)
{
	int64_t p = (pid < 0 ? -pid : pid) % 200, d = (device < 0 ? 0 : device) % 8;
	return GPU_TID_BASE + (p * 8 + d) * 1000000LL + (stream >= 0 ? stream % 1000000LL : 999999);
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
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0);
		const char *exe = (const char *)sqlite3_column_text(st, 1);
		snprintf(buf, sizeof(buf), "%s (pid %" PRId64 ")", exe && *exe ? exe : "process",
			 pid);
		meta_name(c, "process_name", pid, pid, buf, pid);
	}
	sqlite3_finalize(st);
	if (kj_db_prepare(db,
			  "SELECT DISTINCT pid, tid, 0 FROM api_call WHERE tid IS NOT NULL UNION"
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

static void bind_window(sqlite3_stmt *st, const struct chrome *c)
{
	sqlite3_bind_int64(st, 1, c->lo);
	sqlite3_bind_int64(st, 2, c->hi);
}

static int chrome_api(sqlite3 *db, struct chrome *c)
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
		ev_begin(c);
		WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"cuda_api\",\"name\":");
		wb_jstr(&c->w, (const char *)sqlite3_column_text(st, 2));
		WB_LIT(&c->w, ",\"pid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"tid\":");
		wb_i64(&c->w, tid);
		WB_LIT(&c->w, ",\"ts\":");
		wb_us(&c->w, s - c->t0);
		WB_LIT(&c->w, ",\"dur\":");
		wb_us(&c->w, e - s);
		WB_LIT(&c->w, ",\"args\":{");
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

static int chrome_nvtx(sqlite3 *db, struct chrome *c, int64_t t_end)
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

static int chrome_gpu(sqlite3 *db, struct chrome *c)
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

static int chrome_counters(sqlite3 *db, struct chrome *c)
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

static int timeline_chrome(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f, int64_t t0,
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
		rc = chrome_api(db, &c);
	if (!rc)
		rc = chrome_nvtx(db, &c, t1);
	if (!rc)
		rc = chrome_gpu(db, &c);
	if (!rc)
		rc = chrome_counters(db, &c);
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
	lm_free(&c.lm);
	kj_names_free(&c.names);
	return rc;
}

/* ---- tiers for ascii and svg ---- */

struct tier_style {
	const char *tier;
	char ch;
	const char *color;
};

static const struct tier_style styles[] = {
	{"gemm", 'G', "#d62728"},        {"attention", 'A', "#9467bd"},
	{"norm", 'N', "#2ca02c"},        {"elementwise", 'E', "#1f77b4"},
	{"reduction", 'R', "#ff7f0e"},   {"communication", 'C', "#8c564b"},
	{"other", 'O', "#7f7f7f"},       {"copy", 'M', "#e377c2"},
	{"memcpy", 'M', "#e377c2"},      {"memset", 'S', "#bcbd22"},
};
#define N_STYLES (sizeof(styles) / sizeof(styles[0]))
#define STYLE_UNKNOWN 6 /* "other" */

static int style_of_tier(const char *tier)
{
	if (!tier)
		return STYLE_UNKNOWN;
	for (size_t i = 0; i < N_STYLES; i++)
		if (!strcmp(styles[i].tier, tier))
			return (int)i;
	return STYLE_UNKNOWN;
}

/* style index per activity: tier stored in unique_kernel, else by name rules */
static int act_styles(sqlite3 *db, const struct kj_acts *acts, const struct kj_names *names,
		      unsigned char *out)
{
	struct kj_imap utier = {0};
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db, "SELECT id, tier FROM unique_kernel WHERE tier IS NOT NULL", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW)
		if (kj_imap_put(&utier, sqlite3_column_int64(st, 0),
				(size_t)style_of_tier((const char *)sqlite3_column_text(st, 1)))) {
			rc = KJ_ENOMEM;
			break;
		}
	sqlite3_finalize(st);
	for (size_t i = 0; !rc && i < acts->n; i++) {
		const struct kj_act *a = &acts->v[i];
		if (a->type == KJ_ACT_MEMCPY) {
			out[i] = (unsigned char)style_of_tier("memcpy");
		} else if (a->type == KJ_ACT_MEMSET) {
			out[i] = (unsigned char)style_of_tier("memset");
		} else {
			size_t t = a->unique_id >= 0 ? kj_imap_get(&utier, a->unique_id) : (size_t)-1;
			if (t == (size_t)-1) {
				const char *n = kj_names_get(names, a->name_id);
				t = (size_t)style_of_tier(kj_tier_classify(n, n));
			}
			out[i] = (unsigned char)t;
		}
	}
	kj_imap_free(&utier);
	return rc;
}

struct lane {
	int64_t pid, device, stream;
};

static int lane_cmp(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

static size_t lane_find(const struct lane *l, size_t n, const struct kj_act *a)
{
	struct lane k = {a->pid, a->device_id, a->stream_id};
	const struct lane *p = bsearch(&k, l, n, sizeof(*l), lane_cmp);
	return p ? (size_t)(p - l) : 0;
}

/* Activities to draw: with sel_iter >= 0 those owned by that iteration, else those overlapping
 * [lo, hi]. Fills idx (indices into acts) and lanes; widens [lo, hi] to the owned work. */
static int pick(const struct kj_acts *acts, const struct kj_iters *it, long sel_iter,
		int64_t *lo, int64_t *hi, size_t **idx_out, size_t *n_out, struct lane **lanes_out,
		size_t *nl_out)
{
	size_t *idx = malloc((acts->n ? acts->n : 1) * sizeof(*idx)), n = 0, nl = 0;
	struct lane *lanes = NULL;
	if (!idx)
		return KJ_ENOMEM;
	for (size_t k = 0; k < acts->n; k++) {
		const struct kj_act *a = &acts->v[k];
		int take = sel_iter >= 0 ? kj_iters_owner(it, a->key_ns) == sel_iter
					 : (a->end_ns >= *lo && a->start_ns <= *hi);
		if (take)
			idx[n++] = k;
	}
	if (sel_iter >= 0)
		for (size_t q = 0; q < n; q++) {
			const struct kj_act *a = &acts->v[idx[q]];
			if (a->start_ns < *lo)
				*lo = a->start_ns;
			if (a->end_ns > *hi)
				*hi = a->end_ns;
		}
	lanes = malloc((n ? n : 1) * sizeof(*lanes));
	if (!lanes) {
		free(idx);
		return KJ_ENOMEM;
	}
	for (size_t q = 0; q < n; q++) {
		const struct kj_act *a = &acts->v[idx[q]];
		lanes[q] = (struct lane){a->pid, a->device_id, a->stream_id};
	}
	qsort(lanes, n, sizeof(*lanes), lane_cmp);
	for (size_t q = 0; q < n; q++)
		if (!nl || lane_cmp(&lanes[nl - 1], &lanes[q]))
			lanes[nl++] = lanes[q];
	*idx_out = idx;
	*n_out = n;
	*lanes_out = lanes;
	*nl_out = nl;
	return 0;
}

/* ---- ascii ---- */

/* One row per CPU thread that made API calls in [lo, hi]: 'Y' synchronising, 'L' launching,
 * 'A' any other CUDA call, '.' none (host code or nothing); at most 8 threads. */
static void ascii_cpu_rows(sqlite3 *db, FILE *f, int64_t lo, int64_t hi, int width, double bucket)
{
	sqlite3_stmt *st = NULL;
	int64_t tids[8];
	int nt = 0;
	double *cov = calloc((size_t)8 * (size_t)width * 3, sizeof(*cov));
	if (!cov || kj_db_prepare(db,
				  "SELECT tid, name, start_ns, coalesce(end_ns, start_ns) FROM api_call"
				  " WHERE start_ns <= ?2 AND coalesce(end_ns, start_ns) >= ?1"
				  " AND start_ns >= ?1 - 60000000000 ORDER BY start_ns",
				  &st)) {
		free(cov);
		return;
	}
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t tid = sqlite3_column_int64(st, 0);
		const char *nm = (const char *)sqlite3_column_text(st, 1);
		int64_t s0 = sqlite3_column_int64(st, 2), e0 = sqlite3_column_int64(st, 3);
		int r, kind = nm && strstr(nm, "Synchronize") ? 0 : nm && strstr(nm, "Launch") ? 1 : 2;
		for (r = 0; r < nt && tids[r] != tid; r++)
			;
		if (r == nt) {
			if (nt == 8)
				continue;
			tids[nt++] = tid;
		}
		int64_t a = s0 < lo ? lo : s0, b = e0 > hi ? hi : e0;
		if (b < a)
			continue;
		long b0 = (long)((double)(a - lo) / bucket), b1 = (long)((double)(b - lo) / bucket);
		if (b1 >= width)
			b1 = width - 1;
		if (b0 >= width)
			b0 = width - 1;
		for (long k = b0; k <= b1; k++) {
			double bs = lo + k * bucket, be = bs + bucket;
			double ov = (b < be ? b : be) - (a > bs ? a : bs);
			cov[((size_t)r * (size_t)width + (size_t)k) * 3 + (size_t)kind] += ov > 0 ? ov : 1;
		}
	}
	sqlite3_finalize(st);
	for (int r = 0; r < nt; r++) {
		char label[32];
		snprintf(label, sizeof(label), "cpu %" PRId64, tids[r]);
		fprintf(f, "%-12s|", label);
		for (int k = 0; k < width; k++) {
			double *c = &cov[((size_t)r * (size_t)width + (size_t)k) * 3];
			int best = c[0] >= c[1] && c[0] >= c[2] ? 0 : c[1] >= c[2] ? 1 : 2;
			fputc(c[best] > 0 ? "YLA"[best] : '.', f);
		}
		fputs("|\n", f);
	}
	free(cov);
}

static int timeline_ascii(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f,
			  const struct kj_acts *acts,
			  const unsigned char *sty, const struct kj_iters *it, long sel_iter,
			  int64_t t0, int64_t lo, int64_t hi)
{
	size_t *idx = NULL, n = 0, nl = 0;
	struct lane *lanes = NULL;
	int width = o->width > 0 ? o->width : 100;
	int rc = pick(acts, it, sel_iter, &lo, &hi, &idx, &n, &lanes, &nl);
	if (rc)
		return rc;
	if (width < 10)
		width = 10;
	if (width > 2000)
		width = 2000;
	int64_t len = hi - lo > 0 ? hi - lo : 1;
	double bucket = (double)len / width;
	/* per lane and bucket: covered ns per style */
	size_t cells = (nl + 1) * (size_t)width;
	double *cov = calloc(cells * N_STYLES, sizeof(*cov));
	struct kj_ival *all = malloc((n ? n : 1) * sizeof(*all));
	if (!cov || !all) {
		free(cov);
		free(all);
		free(idx);
		free(lanes);
		return KJ_ENOMEM;
	}
	for (size_t q = 0; q < n; q++) {
		const struct kj_act *a = &acts->v[idx[q]];
		size_t l = lane_find(lanes, nl, a);
		int64_t s = a->start_ns < lo ? lo : a->start_ns, e = a->end_ns > hi ? hi : a->end_ns;
		all[q] = (struct kj_ival){s, e};
		if (e <= s)
			continue;
		long b0 = (long)((double)(s - lo) / bucket), b1 = (long)((double)(e - lo) / bucket);
		if (b1 >= width)
			b1 = width - 1;
		for (long b = b0; b <= b1; b++) {
			double bs = lo + b * bucket, be = bs + bucket;
			double ov = (e < be ? e : be) - (s > bs ? s : bs);
			if (ov > 0)
				cov[((size_t)l * (size_t)width + (size_t)b) * N_STYLES + sty[idx[q]]] += ov;
		}
	}
	int64_t busy = kj_ival_union(all, n, lo, hi, NULL, NULL, NULL);
	if (sel_iter >= 0)
		fprintf(f, "iteration %ld of %s'%s' (%s)", sel_iter, it->whole_run ? "" : "region ",
			it->whole_run ? "whole run" : it->region,
			it->v[sel_iter].skipped ? "warm-up" : "measured");
	else
		fprintf(f, "window");
	fprintf(f, ": %.1f us .. %.1f us after the run's start, %.2f us per column\n",
		(double)(lo - t0) / 1e3, (double)(hi - t0) / 1e3, bucket / 1e3);
	fprintf(f, "%zu GPU activities, busy %.1f us of %.1f us (%.1f%%), idle %.1f us\n\n", n,
		(double)busy / 1e3, (double)len / 1e3, 100.0 * (double)busy / (double)len,
		(double)(len - busy) / 1e3);
	char *line = malloc((size_t)width + 1);
	if (!line) {
		free(cov);
		free(all);
		free(idx);
		free(lanes);
		return KJ_ENOMEM;
	}
	for (size_t l = 0; l < nl; l++) {
		for (int b = 0; b < width; b++) {
			double *cv = &cov[(l * (size_t)width + (size_t)b) * N_STYLES], tot = 0, best = 0;
			int bi = -1;
			for (size_t s = 0; s < N_STYLES; s++) {
				tot += cv[s];
				if (cv[s] > best) {
					best = cv[s];
					bi = (int)s;
				}
			}
			char ch = '.';
			if (bi >= 0) {
				ch = styles[bi].ch;
				if (tot < 0.5 * bucket)
					ch = (char)(ch - 'A' + 'a'); /* mostly idle: lower case */
			}
			line[b] = ch;
		}
		line[width] = 0;
		char label[48];
		snprintf(label, sizeof(label), "gpu%" PRId64 " s%" PRId64, lanes[l].device,
			 lanes[l].stream);
		fprintf(f, "%-12s|%s|\n", label, line);
	}
	if (nl == 0)
		fprintf(f, "%-12s|%*s|\n", "(no GPU work)", width, "");
	ascii_cpu_rows(db, f, lo, hi, width, bucket);
	/* axis: a tick every 10 columns, labels in us from the window start */
	memset(line, '-', (size_t)width);
	for (int b = 0; b < width; b += 10)
		line[b] = '+';
	line[width] = 0;
	fprintf(f, "%-12s+%s+\n", "us", line);
	fprintf(f, "%-13s", "");
	for (int b = 0; b < width; b += 20) {
		char lab[32];
		int k = snprintf(lab, sizeof(lab), "%.1f", b * bucket / 1e3);
		fprintf(f, "%-20.*s", k, lab);
	}
	fputc('\n', f);
	fprintf(f, "\nlegend: ");
	for (size_t s = 0; s < N_STYLES; s++)
		if (strcmp(styles[s].tier, "copy"))
			fprintf(f, "%c %s  ", styles[s].ch, styles[s].tier);
	fprintf(f, ". idle  (lower case: busy under half the column)\n"
		   "        cpu rows: Y synchronising, L launching, A other CUDA call, . host code\n");
	free(line);
	free(cov);
	free(all);
	free(idx);
	free(lanes);
	return 0;
}

/* ---- svg ---- */

struct svg_gap {
	FILE *f;
	int64_t lo;
	double scale;
	double x0, y, h;
	int64_t n;
};

static void svg_gap_cb(void *ctx, int64_t s, int64_t e)
{
	struct svg_gap *g = ctx;
	double x = g->x0 + (double)(s - g->lo) * g->scale, w = (double)(e - s) * g->scale;
	fprintf(g->f,
		"<rect class=\"idle\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\">"
		"<title>idle %.3f us</title></rect>\n",
		x, g->y, w < 0.5 ? 0.5 : w, g->h, (double)(e - s) / 1e3);
	g->n++;
}

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

static double nice_step(double range)
{
	double raw = range / 10, p = 1;
	while (p * 10 <= raw)
		p *= 10;
	while (p > raw && p > 1e-6)
		p /= 10;
	if (raw / p >= 5)
		return 5 * p;
	if (raw / p >= 2)
		return 2 * p;
	return p;
}

/* NVTX ranges inside [lo, hi] below the iteration's own depth, one row per depth (3 at most),
 * as <rect class="nvtx"> with their names; returns the rows drawn. */
static int svg_nvtx_rows(sqlite3 *db, FILE *f, const struct kj_iters *it, long sel, int64_t lo,
			 int64_t hi, double x0, double scale, double y0, double lane_h, int draw)
{
	sqlite3_stmt *st = NULL;
	int rows = 0;
	if (kj_db_prepare(db,
			  "SELECT name, start_ns, end_ns, depth FROM nvtx_range WHERE end_ns IS NOT NULL"
			  " AND start_ns >= ?1 AND end_ns <= ?2 AND name IS NOT NULL ORDER BY start_ns",
			  &st))
		return 0;
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *nm = (const char *)sqlite3_column_text(st, 0);
		int64_t s0 = sqlite3_column_int64(st, 1), e0 = sqlite3_column_int64(st, 2);
		int depth = sqlite3_column_int(st, 3);
		if (sel >= 0 && !it->whole_run && !strcmp(nm, it->region))
			continue;
		int row = depth > 0 ? depth - 1 : 0;
		if (row > 2)
			continue;
		if (row + 1 > rows)
			rows = row + 1;
		if (!draw)
			continue;
		double x = x0 + (double)(s0 - lo) * scale, w = (double)(e0 - s0) * scale;
		double y = y0 + row * lane_h;
		fprintf(f, "<rect class=\"nvtx\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\""
			   " fill=\"#fff3c4\" stroke=\"#c9a400\" stroke-width=\"0.5\"><title>",
			x, y, w < 0.5 ? 0.5 : w, lane_h - 6);
		xml_text(f, nm);
		fprintf(f, " %.3f us</title></rect>\n", (double)(e0 - s0) / 1e3);
		if (w > 6.5 * (double)strlen(nm) + 4) { /* the name fits inside the bar */
			fprintf(f, "<text class=\"lab\" x=\"%.2f\" y=\"%.1f\" font-size=\"10\">",
				x + 2, y + lane_h / 2);
			xml_text(f, nm);
			fprintf(f, "</text>\n");
		}
	}
	sqlite3_finalize(st);
	return rows;
}

static int timeline_svg(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f,
			const struct kj_acts *acts,
			const unsigned char *sty, const struct kj_names *names,
			const struct kj_iters *it, long sel_iter, int64_t t0, int64_t lo, int64_t hi)
{
	size_t *idx = NULL, n = 0, nl = 0;
	struct lane *lanes = NULL;
	int rc = pick(acts, it, sel_iter, &lo, &hi, &idx, &n, &lanes, &nl);
	if (rc)
		return rc;
	double W = o->width > 0 ? o->width : 1400;
	if (W < 300)
		W = 300;
	double x0 = 150, plot_w = W - x0 - 20, lane_h = 26, top = 50;
	int64_t len = hi - lo > 0 ? hi - lo : 1;
	double scale = plot_w / (double)len;
	int nv_rows = svg_nvtx_rows(db, f, it, sel_iter, lo, hi, 0, 0, 0, 0, 0);
	double nvtx_y = top + (double)nl * lane_h + 6;
	double busy_y = nvtx_y + (double)nv_rows * lane_h;
	double axis_y = busy_y + lane_h + 4;
	double H = axis_y + 40 + 24 * 2;
	int used[N_STYLES] = {0};
	struct kj_ival *all = malloc((n ? n : 1) * sizeof(*all));
	if (!all) {
		free(idx);
		free(lanes);
		return KJ_ENOMEM;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\""
		   " viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		W, H, W, H);
	fprintf(f, "<style>rect.k{stroke:none} rect.idle{fill:#f4b6b6} rect.busy{fill:#555}"
		   " text.lab{fill:#222} line.tick{stroke:#999;stroke-width:0.5}</style>\n");
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
	fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">");
	if (sel_iter >= 0) {
		char t[300];
		snprintf(t, sizeof(t), "iteration %ld of %s, ", sel_iter,
			 it->whole_run ? "the whole run" : it->region);
		xml_text(f, t);
	}
	xml_text(f, o->run_path ? o->run_path : "");
	fprintf(f, ": %.1f us, %zu GPU activities</text>\n", (double)len / 1e3, n);
	/* lanes */
	for (size_t l = 0; l < nl; l++) {
		double y = top + (double)l * lane_h;
		fprintf(f, "<rect class=\"lane\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\""
			   " fill=\"%s\"/>\n",
			x0, y, plot_w, lane_h - 4, l % 2 ? "#f7f7f7" : "#efefef");
		fprintf(f, "<text class=\"lab\" x=\"10\" y=\"%.1f\">GPU %" PRId64 " stream %" PRId64
			   "</text>\n",
			y + lane_h / 2 + 2, lanes[l].device, lanes[l].stream);
	}
	for (size_t q = 0; q < n; q++) {
		const struct kj_act *a = &acts->v[idx[q]];
		size_t l = lane_find(lanes, nl, a);
		int64_t s = a->start_ns < lo ? lo : a->start_ns, e = a->end_ns > hi ? hi : a->end_ns;
		double x = x0 + (double)(s - lo) * scale, w = (double)(e - s) * scale;
		const char *nm = a->type == KJ_ACT_KERNEL ? kj_names_get(names, a->name_id)
			       : a->type == KJ_ACT_MEMCPY ? "memcpy"
							  : "memset";
		all[q] = (struct kj_ival){s, e};
		used[sty[idx[q]]] = 1;
		fprintf(f, "<rect class=\"k\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\""
			   " fill=\"%s\"><title>",
			x, top + (double)l * lane_h, w < 0.5 ? 0.5 : w, lane_h - 4,
			styles[sty[idx[q]]].color);
		xml_text(f, nm);
		fprintf(f, " (%s) %.3f us</title></rect>\n", styles[sty[idx[q]]].tier,
			(double)(a->end_ns - a->start_ns) / 1e3);
	}
	if (nv_rows) {
		fprintf(f, "<text class=\"lab\" x=\"10\" y=\"%.1f\">NVTX ranges</text>\n",
			nvtx_y + lane_h / 2);
		svg_nvtx_rows(db, f, it, sel_iter, lo, hi, x0, scale, nvtx_y, lane_h, 1);
	}
	/* busy/idle row: union of every lane, idle gaps visible (before, inside and after) */
	fprintf(f, "<text class=\"lab\" x=\"10\" y=\"%.1f\">GPU busy / idle</text>\n",
		busy_y + lane_h / 2 + 2);
	int64_t ss = 0, se = 0;
	kj_ival_union(all, n, lo, hi, &ss, &se, NULL);
	struct svg_gap g = {f, lo, scale, x0, busy_y, lane_h - 4, 0};
	if (n == 0) {
		svg_gap_cb(&g, lo, hi);
	} else {
		if (ss > lo)
			svg_gap_cb(&g, lo, ss);
		kj_ival_gaps(all, n, lo, hi, svg_gap_cb, &g);
		if (se < hi)
			svg_gap_cb(&g, se, hi);
	}
	/* busy segments */
	{
		int64_t cs = 0, ce = 0;
		int open = 0;
		for (size_t q = 0; q <= n; q++) {
			if (q < n && all[q].e <= all[q].s)
				continue;
			if (q < n && open && all[q].s <= ce) {
				if (all[q].e > ce)
					ce = all[q].e;
				continue;
			}
			if (open)
				fprintf(f, "<rect class=\"busy\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\""
					   " height=\"%.1f\"/>\n",
					x0 + (double)(cs - lo) * scale, busy_y,
					(double)(ce - cs) * scale < 0.5 ? 0.5 : (double)(ce - cs) * scale,
					lane_h - 4);
			if (q < n) {
				cs = all[q].s;
				ce = all[q].e;
				open = 1;
			}
		}
	}
	/* axis in us from the window start */
	double range_us = (double)len / 1e3, step = nice_step(range_us);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		axis_y, x0 + plot_w, axis_y);
	for (double v = 0; v <= range_us + 1e-9; v += step) {
		double x = x0 + v * 1e3 * scale;
		fprintf(f, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>\n", x,
			top - 4, x, axis_y + 4);
		fprintf(f, "<text class=\"lab\" x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
			x, axis_y + 16, v);
	}
	fprintf(f, "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">us (window starts"
		   " %.1f us after the run's first event)</text>\n",
		x0 + plot_w, axis_y + 32, (double)(lo - t0) / 1e3);
	/* legend */
	double lx = x0, ly = axis_y + 44;
	for (size_t s = 0; s < N_STYLES; s++) {
		if (!used[s])
			continue;
		fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\""
			   " fill=\"%s\"/><text class=\"lab\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			lx, ly, styles[s].color, lx + 16, ly + 11, styles[s].tier);
		lx += 110;
	}
	fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\""
		   " fill=\"#f4b6b6\"/><text class=\"lab\" x=\"%.1f\" y=\"%.1f\">GPU idle</text>\n",
		lx, ly, lx + 16, ly + 11);
	fprintf(f, "</svg>\n");
	free(all);
	free(idx);
	free(lanes);
	return ferror(f) ? KJ_EIO : 0;
}

int kj_timeline_write(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f)
{
	int64_t t0 = 0, t1 = 0, lo, hi;
	struct kj_iters it;
	long sel = -1;
	int rc = kj_run_extent(db, &t0, &t1);
	if (rc == KJ_ENOTFOUND) {
		kj_errorf("the run holds no kernels, copies, API calls or NVTX ranges: no timeline");
		return rc;
	}
	if (rc)
		return rc;
	lo = o->has_from ? t0 + o->from_ns : t0;
	hi = o->has_to ? t0 + o->to_ns : t1;
	if (hi < lo) {
		kj_errorf("--to (%.1f us) is before --from (%.1f us)", (double)o->to_ns / 1e3,
			  (double)o->from_ns / 1e3);
		return KJ_EINVAL;
	}
	memset(&it, 0, sizeof(it));
	if (o->iteration >= 0 || o->format != KJ_TL_CHROME) {
		rc = kj_iters_find(db, o->region, -1, t0, t1, o->quiet, &it);
		if (rc)
			return rc;
		if (o->iteration >= 0) {
			if ((size_t)o->iteration >= it.n) {
				kj_errorf("--iteration %ld: the run has %zu iteration(s) (0-based)",
					  o->iteration, it.n);
				kj_iters_free(&it);
				return KJ_ENOTFOUND;
			}
			sel = o->iteration;
		} else if (!o->has_from && !o->has_to) {
			sel = (long)it.skip; /* the first measured iteration */
		}
		if (sel >= 0) {
			lo = it.v[sel].start_ns;
			hi = it.v[sel].end_ns;
		}
	}
	if (o->format == KJ_TL_CHROME) {
		rc = timeline_chrome(db, o, f, t0, t1, sel >= 0 ? lo : (o->has_from ? lo : INT64_MIN),
				     sel >= 0 ? hi : (o->has_to ? hi : INT64_MAX));
		kj_iters_free(&it);
		return rc;
	}
	struct kj_acts acts;
	struct kj_names names;
	unsigned char *sty = NULL;
	memset(&names, 0, sizeof(names));
	rc = kj_acts_load(db, &acts);
	if (!rc)
		rc = kj_names_load(db, &names);
	if (!rc) {
		sty = malloc(acts.n ? acts.n : 1);
		rc = sty ? act_styles(db, &acts, &names, sty) : KJ_ENOMEM;
	}
	if (!rc) {
		if (o->format == KJ_TL_ASCII)
			rc = timeline_ascii(db, o, f, &acts, sty, &it, sel, t0, lo, hi);
		else
			rc = timeline_svg(db, o, f, &acts, sty, &names, &it, sel, t0, lo, hi);
	}
	free(sty);
	kj_names_free(&names);
	kj_acts_free(&acts);
	kj_iters_free(&it);
	return rc;
}
