/* kjoule timeline --format chrome: the events of each track (CUDA API calls, graph calls, NVTX
 * ranges, GPU work with the flow arrows from its launches, power counters) in the window. */
#include "kj_timeline_chrome_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_store_e_power.h"
#include "kj_store_e_timeline.h"

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

/* one API call as an X event on its thread, a launch point when it has a correlation id */
static int api_event(void *ctx, const struct kj_store_api_call *r)
{
	struct chrome *c = ctx;
	int64_t pid = r->pid, tid = r->tid;
	int64_t s = r->start_ns;
	int64_t e = !r->has_end ? s : r->end_ns;
	if (e < s)
		e = s;
	ev_cpu_x(c, "cuda_api", r->name, pid, tid, s, e);
	int comma = 0;
	if (r->has_correlation) {
		int64_t corr = r->correlation_id;
		WB_LIT(&c->w, "\"correlation_id\":");
		wb_i64(&c->w, corr);
		comma = 1;
		/* a launch point for flow arrows: inside the call, 1 ns after its start */
		if (lm_add(&c->lm, pid, tid, corr, e > s ? s + 1 : s))
			return KJ_ENOMEM;
	}
	if (r->has_bytes) {
		if (comma)
			WB_LIT(&c->w, ",");
		WB_LIT(&c->w, "\"bytes\":");
		wb_i64(&c->w, r->bytes);
		comma = 1;
	}
	if (r->has_stream) {
		if (comma)
			WB_LIT(&c->w, ",");
		WB_LIT(&c->w, "\"stream\":");
		wb_i64(&c->w, r->stream_id);
	}
	WB_LIT(&c->w, "}}");
	return 0;
}

int tl_chrome_api(sqlite3 *db, struct chrome *c)
{
	return kj_store_e_api_calls_in(db, c->lo, c->hi, api_event, c);
}

/* Graph launches, instantiations and uploads on their CPU threads (recorded without --api, in
 * host_call), each a launch point for the flow arrows to the graph's kernels. Runs traced with
 * --api have these calls in api_call already, and runs from before host calls have none. */
/* one graph host call as an X event on its thread, and a launch point */
static int graph_event(void *ctx, const struct kj_store_graph_call *r)
{
	struct chrome *c = ctx;
	int64_t pid = r->pid, tid = r->tid;
	int64_t s = r->start_ns, e = r->end_ns;
	int64_t corr = r->correlation_id;
	const char *op = r->op;
	char name[64];
	snprintf(name, sizeof(name), "%s", op && !strcmp(op, "graph_launch") ? "cuGraphLaunch"
					   : op && !strcmp(op, "graph_upload") ? "cuGraphUpload"
									      : "cuGraphInstantiate");
	if (e < s)
		e = s;
	ev_cpu_x(c, "cuda_graph", name, pid, tid, s, e);
	WB_LIT(&c->w, "\"correlation_id\":");
	wb_i64(&c->w, corr);
	if (r->has_graph_exec) {
		WB_LIT(&c->w, ",\"graph_exec_id\":");
		wb_i64(&c->w, r->graph_exec_id);
	}
	WB_LIT(&c->w, "}}");
	if (lm_add(&c->lm, pid, tid, corr, e > s ? s + 1 : s))
		return KJ_ENOMEM;
	return 0;
}

int tl_chrome_graph_calls(sqlite3 *db, struct chrome *c)
{
	return kj_store_e_graph_calls_in(db, c->lo, c->hi, graph_event, c);
}

struct nvtx_ctx {
	struct chrome *c;
	int64_t t_end;
};

/* one NVTX range as an X event on its thread's NVTX track; an unclosed one ends at t_end */
static int nvtx_event(void *ctx, const struct kj_store_nvtx_range *r)
{
	const struct nvtx_ctx *x = ctx;
	struct chrome *c = x->c;
	int64_t s = r->start_ns;
	int unclosed = !r->has_end;
	int64_t e = unclosed ? x->t_end : r->end_ns;
	if (e < s)
		e = s;
	ev_begin(c);
	WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":");
	wb_jstr(&c->w, r->name);
	WB_LIT(&c->w, ",\"pid\":");
	wb_i64(&c->w, r->pid);
	WB_LIT(&c->w, ",\"tid\":");
	wb_i64(&c->w, r->tid + NVTX_TID_OFF);
	WB_LIT(&c->w, ",\"ts\":");
	wb_us(&c->w, s - c->t0);
	WB_LIT(&c->w, ",\"dur\":");
	wb_us(&c->w, e - s);
	WB_LIT(&c->w, ",\"args\":{\"depth\":");
	wb_i64(&c->w, r->depth);
	if (unclosed)
		WB_LIT(&c->w, ",\"unclosed\":true");
	WB_LIT(&c->w, "}}");
	return 0;
}

int tl_chrome_nvtx(sqlite3 *db, struct chrome *c, int64_t t_end)
{
	struct nvtx_ctx x = {c, t_end};
	return kj_store_e_nvtx_in(db, c->lo, c->hi, nvtx_event, &x);
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

/* one kernel, copy or memset as an X event on its stream's track, with the flow arrow from its
 * launch; work that ends before it starts is left out */
static int gpu_event(void *ctx, const struct kj_store_gpu_work *r)
{
	struct chrome *c = ctx;
	int type = r->type;
	int64_t pid = r->pid, dev = r->device_id;
	int64_t stream = r->stream_id;
	int64_t s = r->start_ns, e = r->end_ns;
	int64_t gtid = gpu_tid(pid, dev, stream);
	if (e < s)
		return 0;
	ev_begin(c);
	if (type == KJ_STORE_GPU_KERNEL) {
		WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":");
		wb_jstr(&c->w, kj_names_get(&c->names, r->has_name_id ? r->name_id : -1));
	} else if (type == KJ_STORE_GPU_MEMCPY) {
		WB_LIT(&c->w, "{\"ph\":\"X\",\"cat\":\"memcpy\",\"name\":");
		char nm[96];
		const char *kind = r->kind;
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
	if (r->has_correlation) {
		WB_LIT(&c->w, ",\"correlation_id\":");
		wb_i64(&c->w, r->correlation_id);
	}
	if (type == KJ_STORE_GPU_KERNEL) {
		if (r->has_unique_id) {
			WB_LIT(&c->w, ",\"unique_id\":");
			wb_i64(&c->w, r->unique_id);
		}
		if (r->has_grid) {
			WB_LIT(&c->w, ",\"grid\":[");
			for (int k = 0; k < 3; k++) {
				if (k)
					WB_LIT(&c->w, ",");
				wb_i64(&c->w, r->grid[k]);
			}
			WB_LIT(&c->w, "],\"block\":[");
			for (int k = 0; k < 3; k++) {
				if (k)
					WB_LIT(&c->w, ",");
				wb_i64(&c->w, r->block[k]);
			}
			WB_LIT(&c->w, "]");
		}
	} else if (r->has_bytes) {
		WB_LIT(&c->w, ",\"bytes\":");
		wb_i64(&c->w, r->bytes);
	}
	WB_LIT(&c->w, "}}");
	/* the flow ends just inside the slice so that it binds to it after sorting */
	if (r->has_correlation)
		chrome_flow(c, pid, r->correlation_id, gtid, e > s ? s + 1 : s);
	return 0;
}

int tl_chrome_gpu(sqlite3 *db, struct chrome *c)
{
	return kj_store_e_gpu_work_in(db, c->lo, c->hi, gpu_event, c);
}

struct counter_ctx {
	struct chrome *c;
	int64_t last_dev, e0;
};

/* one power_sample row as counter events: power, energy since the device's first reading in the
 * window, clocks */
static int counter_event(void *ctx, const struct kj_store_power_counter *r)
{
	struct counter_ctx *x = ctx;
	struct chrome *c = x->c;
	int64_t dev = r->device_id, t = r->t_ns;
	int64_t pid = COUNTER_PID_BASE + dev;
	if (dev != x->last_dev) {
		x->last_dev = dev;
		x->e0 = -1;
	}
	if (r->has_power && r->power_mw >= 0) {
		ev_begin(c);
		WB_LIT(&c->w, "{\"ph\":\"C\",\"name\":\"power\",\"pid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"tid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"ts\":");
		wb_us(&c->w, t - c->t0);
		WB_LIT(&c->w, ",\"args\":{\"W\":");
		wb_us(&c->w, r->power_mw); /* mW/1000 = W, 3 decimals */
		WB_LIT(&c->w, "}}");
	}
	if (r->has_energy && r->energy_mj >= 0) {
		int64_t e = r->energy_mj;
		if (x->e0 < 0)
			x->e0 = e;
		ev_begin(c);
		WB_LIT(&c->w, "{\"ph\":\"C\",\"name\":\"energy\",\"pid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"tid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"ts\":");
		wb_us(&c->w, t - c->t0);
		WB_LIT(&c->w, ",\"args\":{\"J\":");
		wb_us(&c->w, e - x->e0); /* mJ/1000 = J */
		WB_LIT(&c->w, "}}");
	}
	if (r->has_sm_clock) {
		ev_begin(c);
		WB_LIT(&c->w, "{\"ph\":\"C\",\"name\":\"clocks\",\"pid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"tid\":");
		wb_i64(&c->w, pid);
		WB_LIT(&c->w, ",\"ts\":");
		wb_us(&c->w, t - c->t0);
		WB_LIT(&c->w, ",\"args\":{\"sm_MHz\":");
		wb_i64(&c->w, r->sm_clock_mhz);
		if (r->has_mem_clock) {
			WB_LIT(&c->w, ",\"mem_MHz\":");
			wb_i64(&c->w, r->mem_clock_mhz);
		}
		WB_LIT(&c->w, "}}");
	}
	return 0;
}

int tl_chrome_counters(sqlite3 *db, struct chrome *c)
{
	struct counter_ctx x = {c, INT64_MIN, -1};
	return kj_store_e_power_counters(db, c->lo, c->hi, counter_event, &x);
}
