/* Internals of kjoule timeline --format chrome shared by its two files: the buffered writer, the
 * synthetic track ids and the state of one trace being written. kj_timeline_chrome.c writes the
 * file around the tracks (header, names of processes and threads); kj_timeline_chrome_tracks.c
 * writes the events of each track. */
#ifndef KJ_TIMELINE_CHROME_INTERNAL_H
#define KJ_TIMELINE_CHROME_INTERNAL_H

#include "kj_timeline_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Synthetic track ids: NVTX ranges get their own track beside each CPU thread, GPU streams get
 * tids far above Linux thread ids, power counters a process per device. */
#define NVTX_TID_OFF 1000000000LL
#define GPU_TID_BASE 2000000000LL
#define COUNTER_PID_BASE 3000000000LL

/* A buffered writer: bytes gather in b (cap of them) and go to f when it fills; err is set
 * once a write fails. */
struct wb {
	FILE *f;
	char *b;
	size_t n, cap;
	int err;
};

static inline void wb_flush(struct wb *w)
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
static inline void wb_jstr(struct wb *w, const char *s)
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

/* The launch points of flow arrows: (pid, correlation) -> launching thread and time. */
struct launch_map {
	struct kj_imap idx;  /* (pid, corr) hash -> index */
	int64_t *tid, *ts, *pid, *corr;
	size_t n, cap;
};

/* One chrome trace being written: the writer, the origin, the window, and the launch points
 * that flow arrows start from. */
struct chrome {
	struct wb w;
	int64_t t0;
	int first;
	int64_t flow_id;
	struct launch_map lm;
	struct kj_names names;
	int64_t lo, hi; /* window, absolute ns */
};

/* Starts an event: the separator after the one before. */
static inline void ev_begin(struct chrome *c)
{
	if (!c->first)
		WB_LIT(&c->w, ",\n");
	c->first = 0;
}

/* GPU track id of a (process, device, stream): distinct per process too, because Perfetto
 * takes tids as global thread ids; stays below 2^32 (Perfetto reads pid/tid as uint32). */
static inline int64_t gpu_tid(int64_t pid, int64_t device, int64_t stream)
{
	int64_t p = (pid < 0 ? -pid : pid) % 200, d = (device < 0 ? 0 : device) % 8;
	return GPU_TID_BASE + (p * 8 + d) * 1000000LL + (stream >= 0 ? stream % 1000000LL : 999999);
}

/* kj_timeline_chrome_tracks.c: each track's events in the window c->lo..c->hi; 0 or KJ_E* */
int tl_chrome_api(sqlite3 *db, struct chrome *c);
int tl_chrome_graph_calls(sqlite3 *db, struct chrome *c);
int tl_chrome_nvtx(sqlite3 *db, struct chrome *c, int64_t t_end);
int tl_chrome_gpu(sqlite3 *db, struct chrome *c);
int tl_chrome_counters(sqlite3 *db, struct chrome *c);
/* The launch points' memory (kj_timeline_chrome_tracks.c fills them). */
void tl_chrome_lm_free(struct launch_map *m);

#endif
