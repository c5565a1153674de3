/* kjoule-replay-worker: a whole captured iteration (--sequence) replayed in order on its
 * streams with its events, eager and as one CUDA graph, and each kernel timed inside it. */
#include "worker.h"

#include "kj_replay_cond.h"
#include "kj_gpu.h"
#include "kj_replay_pace.h"

/* ---- whole-iteration (sequence) replay ---- */
struct seq_op {
	int type;              /* 0 kernel, 1 memcpy, 2 memset, 3 event record, 4 event wait */
	int stream;            /* index into streams */
	int event;             /* index into events, -1 none */
	int kernel;            /* index into launches */
	int64_t bytes;
	int copy;              /* 0 HtoD, 1 DtoH, 2 DtoD, 3 HtoH */
	int pageable;          /* host side pageable */
	uint64_t address;      /* memset: recorded destination (0 unknown), its value and element size */
	uint32_t value;
	int element_bytes;
	CUdeviceptr dst;       /* memset: the destination in a re-created region (0: scratch memory) */
	int64_t correlation, pid; /* the op's call (-1: unknown): its copy's record is found by them */
	uint64_t copy_dst, copy_src; /* memcpy: the recorded device addresses (0: unknown, or host) */
	void *data;            /* memcpy HtoD: the bytes the program's copy carried (NULL: not kept) */
	void *data_pinned;     /* the same bytes in pinned memory (a capture's copies, pinned sources) */
	CUdeviceptr cdst, csrc; /* memcpy: its sides in re-created regions (0: scratch memory) */
};

struct seq {
	struct seq_op *ops;
	size_t nops;
	struct klaunch *k;
	size_t nk;
	int64_t *stream_ids;
	CUstream *streams;
	size_t nstreams;
	int64_t *event_ids;
	CUevent *events;
	size_t nevents;
	CUevent start, stop, *join;
	CUdeviceptr d1, d2;
	void *pinned, *pinned2, *pageable, *pageable2;
	int64_t max_bytes;
	int graph_mode;       /* enqueueing into a capture: pinned host memory only */
	ssize_t refused;      /* the kernel whose launch seq_enqueue's last failure was, -1 none */
	int program_bytes;    /* host-to-device copies replayed with the bytes the program's carried */
	int cond_setters;     /* launches left out: they set a graph conditional's condition */
};

static int seq_index(int64_t **ids, size_t *n, int64_t id)
{
	for (size_t i = 0; i < *n; i++)
		if ((*ids)[i] == id)
			return (int)i;
	int64_t *ni = realloc(*ids, (*n + 1) * sizeof(*ni));
	if (!ni)
		return -1;
	*ids = ni;
	ni[*n] = id;
	return (int)(*n)++;
}

/* The recorded device addresses of the iteration's copies, and the bytes of the host-to-device
 * ones the run kept (runs before they were recorded have neither: their copies use scratch
 * memory, as before). */
static int seq_load_copies(struct replay *R, struct seq *S)
{
	if (!kj_db_has_column(R->db, "memcpy", "dst_address"))
		return 0;
	sqlite3_stmt *st = prepare_quiet(
		R->db, kj_db_has_column(R->db, "copy_data", "data")
			       ? "SELECT m.dst_address, m.src_address, d.data FROM memcpy m LEFT JOIN copy_data d"
				 " ON d.memcpy_id = m.id WHERE m.correlation_id = ?1 AND (?2 < 0 OR m.pid = ?2)"
				 " AND m.graph_node_id IS NULL ORDER BY m.id LIMIT 1"
			       : "SELECT m.dst_address, m.src_address, NULL FROM memcpy m WHERE m.correlation_id = ?1"
				 " AND (?2 < 0 OR m.pid = ?2) AND m.graph_node_id IS NULL ORDER BY m.id LIMIT 1");
	int rc = 0;
	if (!st)
		return 0;
	for (size_t i = 0; i < S->nops && !rc; i++) {
		struct seq_op *o = &S->ops[i];
		if (o->type != 1 || o->correlation < 0)
			continue;
		sqlite3_bind_int64(st, 1, o->correlation);
		sqlite3_bind_int64(st, 2, o->pid);
		if (sqlite3_step(st) == SQLITE_ROW) {
			int n = sqlite3_column_bytes(st, 2);
			o->copy_dst = (uint64_t)kj_db_col_i64(st, 0, 0);
			o->copy_src = (uint64_t)kj_db_col_i64(st, 1, 0);
			if (sqlite3_column_type(st, 2) == SQLITE_BLOB && n > 0 && n == o->bytes) {
				if (!(o->data = malloc((size_t)n)))
					rc = KJ_ENOMEM;
				else
					memcpy(o->data, sqlite3_column_blob(st, 2), (size_t)n);
			}
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc;
}

/* Read the ops of one iteration, their launches, and the host kinds of their copies. */
static int seq_load(struct replay *R, int64_t iteration, struct seq *S)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	/* memset destinations where the run has them (runs before memset.address existed: none); a
	 * graph's memsets share their launch's correlation and are named by row (memset_id) */
	st = prepare_quiet(R->db,
			   "SELECT s.op, s.stream_id, s.event_id, s.launch_params_id, s.bytes, s.kind,"
			   " (SELECT m.src_kind || ',' || m.dst_kind FROM memcpy m WHERE m.correlation_id ="
			   "  s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1), s.pid, s.correlation_id,"
			   " m.address, m.value, m.element_bytes"
			   " FROM sequence_op s LEFT JOIN memset m ON s.op = 'memset' AND m.id = coalesce(s.memset_id,"
			   "  (SELECT m2.id FROM memset m2 WHERE m2.correlation_id = s.correlation_id"
			   "   AND (s.pid IS NULL OR m2.pid = s.pid) ORDER BY m2.id LIMIT 1))"
			   " WHERE s.iteration = ? AND s.ordinal BETWEEN ? AND ?"
			   " ORDER BY s.ordinal, s.id");
	if (!st)
		st = prepare_quiet(R->db,
			   "SELECT s.op, s.stream_id, s.event_id, s.launch_params_id, s.bytes, s.kind,"
			   " (SELECT m.src_kind || ',' || m.dst_kind FROM memcpy m WHERE m.correlation_id ="
			   "  s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1), s.pid, s.correlation_id,"
			   " (SELECT m.address FROM memset m WHERE m.correlation_id = s.correlation_id"
			   "  AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1),"
			   " (SELECT m.value FROM memset m WHERE m.correlation_id = s.correlation_id"
			   "  AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1),"
			   " (SELECT m.element_bytes FROM memset m WHERE m.correlation_id = s.correlation_id"
			   "  AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1)"
			   " FROM sequence_op s WHERE s.iteration = ? AND s.ordinal BETWEEN ? AND ?"
			   " ORDER BY s.ordinal, s.id");
	if (!st && kj_db_prepare(R->db,
				 "SELECT s.op, s.stream_id, s.event_id, s.launch_params_id, s.bytes, s.kind,"
				 " (SELECT m.src_kind || ',' || m.dst_kind FROM memcpy m WHERE m.correlation_id ="
				 "  s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1), s.pid, s.correlation_id"
				 " FROM sequence_op s WHERE s.iteration = ? AND s.ordinal BETWEEN ? AND ?"
			   " ORDER BY s.ordinal, s.id", &st))
		return KJ_EDB;
	int with_dst = sqlite3_column_count(st) > 9;
	struct kj_cond_handles *handles = kj_cond_handles_load(R->db); /* NULL in most runs */
	sqlite3_bind_int64(st, 1, iteration);
	sqlite3_bind_int64(st, 2, R->o.seq_first);
	sqlite3_bind_int64(st, 3, R->o.seq_last);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *op = (const char *)sqlite3_column_text(st, 0);
		const char *kind = (const char *)sqlite3_column_text(st, 5);
		const char *hk = (const char *)sqlite3_column_text(st, 6);
		struct seq_op o;
		memset(&o, 0, sizeof(o));
		o.event = -1;
		o.kernel = -1;
		if (!op)
			continue;
		if (!strcmp(op, "kernel"))
			o.type = 0;
		else if (!strcmp(op, "memcpy"))
			o.type = 1;
		else if (!strcmp(op, "memset"))
			o.type = 2;
		else if (!strcmp(op, "event_record"))
			o.type = 3;
		else if (!strcmp(op, "event_wait"))
			o.type = 4;
		else
			continue; /* unknown operations are skipped */
		o.stream = seq_index(&S->stream_ids, &S->nstreams, kj_db_col_i64(st, 1, 0));
		if (o.stream < 0) {
			rc = KJ_ENOMEM;
			break;
		}
		if (o.type >= 3) {
			o.event = seq_index(&S->event_ids, &S->nevents, kj_db_col_i64(st, 2, -1));
			if (o.event < 0) {
				rc = KJ_ENOMEM;
				break;
			}
		}
		o.bytes = kj_db_col_i64(st, 4, 0);
		if (o.bytes > S->max_bytes)
			S->max_bytes = o.bytes;
		if (o.type == 1) {
			o.copy = !kind ? 2 : !strcmp(kind, "HtoD") ? 0 : !strcmp(kind, "DtoH") ? 1
				 : !strcmp(kind, "HtoH") ? 3 : 2;
			o.pageable = hk && strstr(hk, "pageable") != NULL;
		}
		if (o.type == 2 && with_dst && sqlite3_column_type(st, 9) != SQLITE_NULL) {
			o.address = (uint64_t)kj_db_col_i64(st, 9, 0);
			o.value = (uint32_t)kj_db_col_i64(st, 10, 0);
			o.element_bytes = (int)kj_db_col_i64(st, 11, 1);
		}
		o.correlation = kj_db_col_i64(st, 8, -1);
		o.pid = kj_db_col_i64(st, 7, -1);
		if (o.type == 0) {
			struct klaunch *nk = realloc(S->k, (S->nk + 1) * sizeof(*nk));
			if (!nk) {
				rc = KJ_ENOMEM;
				break;
			}
			S->k = nk;
			memset(&S->k[S->nk], 0, sizeof(S->k[0]));
			rc = load_launch_k(R, &S->k[S->nk], kj_db_col_i64(st, 3, -1));
			if (rc)
				break;
			const struct klaunch *k = &S->k[S->nk];
			if (kj_cond_setter_param(handles, k->pid, k->unique_id, k->layout, k->nlayout, k->blob,
						 k->blob_len) >= 0) {
				/* it sets a conditional node's condition through a handle that means
				 * nothing outside its graph: left out, and said so */
				klaunch_free(&S->k[S->nk]);
				S->cond_setters++;
				continue;
			}
			if (R->k.pid < 0 && sqlite3_column_type(st, 7) != SQLITE_NULL)
				R->k.pid = kj_db_col_i64(st, 7, -1);
			if (R->k.pid < 0)
				R->k.pid = S->k[S->nk].pid;
			o.kernel = (int)S->nk++;
		}
		struct seq_op *no = realloc(S->ops, (S->nops + 1) * sizeof(*no));
		if (!no) {
			rc = KJ_ENOMEM;
			break;
		}
		S->ops = no;
		S->ops[S->nops++] = o;
	}
	sqlite3_finalize(st);
	kj_cond_handles_free(handles);
	/* --ordinals: a wait whose record lies outside the range has nothing to wait for (and a
	 * capture would refuse an event recorded outside it): drop it */
	if (!rc && (R->o.seq_first > 0 || R->o.seq_last < INT64_MAX)) {
		size_t k = 0;
		for (size_t i = 0; i < S->nops; i++) {
			int keep = 1;
			if (S->ops[i].type == 4) {
				keep = 0;
				for (size_t j = 0; j < k && !keep; j++)
					keep = S->ops[j].type == 3 && S->ops[j].event == S->ops[i].event;
			}
			if (keep)
				S->ops[k++] = S->ops[i];
		}
		S->nops = k;
	}
	if (!rc && !S->nstreams)
		rc = seq_index(&S->stream_ids, &S->nstreams, 0) < 0 ? KJ_ENOMEM : 0;
	if (!rc)
		rc = seq_load_copies(R, S);
	return rc;
}

/* Marks used the allocations a copy replayed on the program's memory touches: the destination of
 * a host-to-device copy whose bytes the run kept, both sides of a device-to-device copy. So a
 * copy into a buffer that only another copy reads (a graph's static input) still lands. */
static void seq_mark_copies(struct replay *R, const struct seq *S, int *used)
{
	for (size_t i = 0; i < S->nops; i++) {
		const struct seq_op *o = &S->ops[i];
		uint64_t a[2] = {0, 0};
		if (o->type != 1)
			continue;
		if (o->copy == 0 && o->data)
			a[0] = o->copy_dst;
		else if (o->copy == 2 && o->copy_dst && o->copy_src)
			a[0] = o->copy_dst, a[1] = o->copy_src;
		for (int j = 0; j < 2; j++) {
			ssize_t r = a[j] ? kj_replay_range_find(R->ranges, R->nranges, a[j]) : -1;
			if (r >= 0)
				used[r] = 1;
		}
	}
}

/* Enqueue one iteration: fork every stream from the first, the ops in recorded order, join. */
static CUresult seq_enqueue(struct seq *S)
{
	CUresult e;
	CUstream o = S->streams[0];
	if ((e = cuEventRecord(S->start, o)))
		return e;
	for (size_t i = 1; i < S->nstreams; i++)
		if ((e = cuStreamWaitEvent(S->streams[i], S->start, 0)))
			return e;
	unsigned char *recorded = calloc(S->nevents + 1, 1);
	S->refused = -1;
	if (!recorded)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < S->nops; i++) {
		const struct seq_op *op = &S->ops[i];
		CUstream s = S->streams[op->stream];
		size_t b = (size_t)op->bytes;
		void *h = op->pageable && !S->graph_mode ? S->pageable : S->pinned;
		void *h2 = op->pageable && !S->graph_mode ? S->pageable2 : S->pinned2;
		switch (op->type) {
		case 0:
			e = launch_k(&S->k[op->kernel], s);
			break;
		case 1:
			if (!b)
				continue;
			/* on the program's memory where its copy's sides were re-created (and, from the
			 * host, with the bytes it carried); on scratch memory otherwise */
			if (op->copy == 0 && op->cdst)
				e = cuMemcpyHtoDAsync(op->cdst, op->pageable && !S->graph_mode ? op->data : op->data_pinned, b, s);
			else if (op->copy == 2 && op->cdst && op->csrc)
				e = cuMemcpyDtoDAsync(op->cdst, op->csrc, b, s);
			else if (op->copy == 1 && op->csrc)
				e = cuMemcpyDtoHAsync(h, op->csrc, b, s);
			else
			e = op->copy == 0 ? cuMemcpyHtoDAsync(S->d1, h, b, s)
			    : op->copy == 1 ? cuMemcpyDtoHAsync(h, S->d1, b, s)
			    : op->copy == 3 ? cuMemcpyAsync((CUdeviceptr)h2, (CUdeviceptr)h, b, s)
					    : cuMemcpyDtoDAsync(S->d2, S->d1, b, s);
			break;
		case 2:
			if (!b)
				e = CUDA_SUCCESS;
			else if (op->dst && op->element_bytes == 4)
				e = cuMemsetD32Async(op->dst, op->value, (size_t)b / 4, s);
			else if (op->dst && op->element_bytes == 2)
				e = cuMemsetD16Async(op->dst, (unsigned short)op->value, (size_t)b / 2, s);
			else if (op->dst)
				e = cuMemsetD8Async(op->dst, (unsigned char)op->value, (size_t)b, s);
			else
				e = cuMemsetD8Async(S->d1, 0x3c, b, s);
			break;
		case 3:
			e = cuEventRecord(S->events[op->event], s);
			recorded[op->event] = 1;
			break;
		default: /* a wait on an event recorded before the iteration began has nothing to wait for */
			e = recorded[op->event] ? cuStreamWaitEvent(s, S->events[op->event], 0) : CUDA_SUCCESS;
			break;
		}
		if (e) {
			if (op->type == 0)
				S->refused = (ssize_t)op->kernel;
			free(recorded);
			return e;
		}
	}
	free(recorded);
	for (size_t i = 1; i < S->nstreams; i++) {
		if ((e = cuEventRecord(S->join[i], S->streams[i])) ||
		    (e = cuStreamWaitEvent(o, S->join[i], 0)))
			return e;
	}
	return CUDA_SUCCESS;
}

struct seq_graph {
	CUgraphExec exec;
	CUstream stream;
	int64_t pace_ns; /* > 0: one launch per pace_ns, each waited for (kj_replay_pace.h) */
	int64_t next_ns; /* when the next paced launch may go */
};

/* One launch; paced: not before the program's period has passed since the last one, and waited
 * for on the host, as a program that synchronises after each iteration runs it. */
static int seq_graph_enqueue(void *ctx)
{
	struct seq_graph *g = ctx;
	if (g->pace_ns > 0) {
		int64_t now;
		while ((now = kj_now_ns()) < g->next_ns)
			; /* the program's host spent this time too: spin, do not sleep */
		g->next_ns = now + g->pace_ns;
	}
	if (cuGraphLaunch(g->exec, g->stream) != CUDA_SUCCESS)
		return KJ_EGPU;
	return g->pace_ns > 0 && cuStreamSynchronize(g->stream) != CUDA_SUCCESS ? KJ_EGPU : 0;
}

static int seq_graph_sync(void *ctx)
{
	struct seq_graph *g = ctx;
	return cuStreamSynchronize(g->stream) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

/* Time one mode on stream o: N iterations after W, each bracketed by events; the graph exec when
 * given, else the eager iteration S. */
static int time_loop(struct replay *R, struct seq *S, CUgraphExec exec, CUstream o, struct kj_replay_seq *out)
{
	int n = R->o.runs;
	int64_t *ns = calloc((size_t)n + 1, sizeof(*ns));
	CUevent a = NULL, b = NULL;
	CUresult e = CUDA_SUCCESS;
	if (!ns)
		return KJ_ENOMEM;
	if ((e = cuEventCreate(&a, 0)) || (e = cuEventCreate(&b, 0)))
		goto out;
	for (int i = -R->o.warmup; i < n; i++) {
		if ((e = cuEventRecord(a, o)))
			goto out;
		e = exec ? cuGraphLaunch(exec, o) : seq_enqueue(S);
		if (e || (e = cuEventRecord(b, o)) || (e = cuEventSynchronize(b)))
			goto out;
		float ms;
		if ((e = cuEventElapsedTime(&ms, a, b)))
			goto out;
		if (i >= 0)
			ns[i] = (int64_t)llround((double)ms * 1e6);
	}
	struct kj_replay_timing t;
	kj_replay_stats(ns, (size_t)n, &t);
	out->runs = t.runs;
	out->min_ns = t.min_ns;
	out->median_ns = t.median_ns;
	out->max_ns = t.max_ns;
out:
	if (a)
		cuEventDestroy(a);
	if (b)
		cuEventDestroy(b);
	free(ns);
	if (e) {
		const char *name = NULL;
		cuGetErrorName(e, &name);
		snprintf(out->status, sizeof(out->status), "failed");
		snprintf(out->error, sizeof(out->error), "%s replay: %s", out->mode, name ? name : "?");
		return KJ_EGPU;
	}
	return 0;
}

/* Time one mode: the eager iteration, or the graph exec, on the first stream. */
static int seq_time(struct replay *R, struct seq *S, CUgraphExec exec, struct kj_replay_seq *out)
{
	return time_loop(R, S, exec, S->streams[0], out);
}

int graph_time(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out)
{
	return time_loop(R, NULL, exec, s, out);
}

/* The program's launch period where it left its GPU idle between the iteration's graph launches
 * (said on stderr), else 0; 0 with --no-pace. */
static int64_t program_pace(struct replay *R, int64_t iteration)
{
	struct kj_pace pace;
	if (R->o.no_pace || kj_pace_load(R->db, iteration, &pace))
		return 0;
	fprintf(stderr, "kjoule-replay-worker: iteration energy %s\n", pace.why);
	return pace.period_ns;
}

#ifdef KJ_HAVE_AMORTIZE
void graph_energy(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out)
{
	struct seq_graph g = {exec, s, out->pace_ns, 0};
	struct kj_amortize_work w = {&g, seq_graph_enqueue, seq_graph_sync, 1};
	struct kj_amortize_opts ao;
	struct kj_amortize_result ar;
	memset(&ao, 0, sizeof(ao));
	memset(&ar, 0, sizeof(ar));
	ao.nvml_index = R->o.device;
	ao.min_seconds = R->o.energy_s;
	if (kj_amortize_measure(&w, &ao, &ar) == 0) {
		out->has_energy = 1;
		out->energy_mj = ar.energy_per_launch_mj;
		out->energy_unc_mj = ar.energy_unc_mj;
		out->sm_clock_mean_mhz = ar.sm_clock_mean_mhz;
		out->sm_clock_min_mhz = ar.sm_clock_min_mhz;
		out->sm_clock_max_mhz = ar.sm_clock_max_mhz;
		out->throttle_reasons = ar.throttle_reasons;
		if (out->pace_ns > 0) /* the period as it ran: a slower host stretches it */
			out->pace_ns = (int64_t)ar.time_per_launch_ns;
	} else
		out->pace_ns = 0;
}
#else
void graph_energy(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out)
{
	(void)R;
	(void)exec;
	(void)s;
	(void)out;
	(void)seq_graph_enqueue;
	(void)seq_graph_sync;
	kj_warnf("sequence energy not measured: this worker was built without kj_amortize_measure");
}
#endif

/* Replay one captured iteration eagerly and, with graph, as one CUDA graph; prints KJ_SEQ lines. */
#ifdef KJ_WITH_CUPTI
struct seq_rec {
	uint32_t stream;
	int64_t start, dur;
};

static int seq_rec_cmp(const void *a, const void *b)
{
	const struct seq_rec *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Each kernel's time where the iteration puts it: L2 holds what its predecessors left, as in
 * the traced run. The eager iteration runs `runs` times under CUPTI; on each stream the i-th
 * kernel record is the i-th kernel launched there. One KJ_TIMING line (cache=sequence) per
 * unique kernel: statistics over all its launches in the iteration and all runs. */
static void seq_per_kernel(struct replay *R, struct seq *S)
{
	int runs = R->o.runs < 20 ? R->o.runs : 20;
	uint32_t *sid = calloc(S->nstreams + 1, sizeof(*sid));
	size_t *nks = calloc(S->nstreams + 1, sizeof(*nks)), **order = calloc(S->nstreams + 1, sizeof(*order));
	struct seq_rec *rec = NULL;
	int64_t *per = NULL;
	if (!sid || !nks || !order || runs < 1)
		goto out;
	for (size_t s = 0; s < S->nstreams; s++)
		if (cuptiGetStreamIdEx(R->ctx, S->streams[s], 0, &sid[s]) != CUPTI_SUCCESS)
			goto out;
	for (size_t s = 0; s < S->nstreams; s++) {
		order[s] = calloc(S->nk + 1, sizeof(**order));
		if (!order[s])
			goto out;
	}
	for (size_t i = 0; i < S->nops; i++)
		if (S->ops[i].type == 0)
			order[S->ops[i].stream][nks[S->ops[i].stream]++] = (size_t)S->ops[i].kernel;
	if (cupti_start())
		goto out;
	CUresult e = CUDA_SUCCESS;
	for (int r = 0; r < runs && !e; r++)
		if (!(e = seq_enqueue(S)))
			e = cuCtxSynchronize();
	cupti_stop();
	if (e || g_ndur != (size_t)runs * S->nk)
		goto out; /* records missing or extra: no per-kernel figures rather than wrong ones */
	rec = malloc(g_ndur * sizeof(*rec));
	per = malloc(((size_t)runs * S->nk + 1) * sizeof(*per));
	if (!rec || !per)
		goto out;
	for (size_t i = 0; i < g_ndur; i++)
		rec[i] = (struct seq_rec){g_stream[i], g_start[i], g_dur[i]};
	qsort(rec, g_ndur, sizeof(*rec), seq_rec_cmp);
	/* kernel index of each record, stream by stream */
	int64_t *dur_of = malloc((size_t)runs * S->nk * sizeof(*dur_of));
	size_t *k_of = malloc((size_t)runs * S->nk * sizeof(*k_of));
	if (!dur_of || !k_of) {
		free(dur_of);
		free(k_of);
		goto out;
	}
	size_t at = 0, bad = 0;
	for (size_t s = 0; s < S->nstreams && !bad; s++) {
		size_t want = (size_t)runs * nks[s];
		for (size_t j = 0; j < want; j++, at++) {
			if (at >= g_ndur || rec[at].stream != sid[s]) {
				bad = 1;
				break;
			}
			k_of[at] = order[s][j % nks[s]];
			dur_of[at] = rec[at].dur;
		}
	}
	if (!bad && at == g_ndur) {
		int *done = calloc(S->nk + 1, sizeof(*done));
		for (size_t i = 0; done && i < S->nk; i++) {
			if (done[i] || S->k[i].unique_id < 0)
				continue;
			size_t n = 0;
			for (size_t j = 0; j < g_ndur; j++)
				if (S->k[k_of[j]].unique_id == S->k[i].unique_id) {
					per[n++] = dur_of[j];
					done[k_of[j]] = 1;
				}
			struct kj_replay_timing t;
			kj_replay_stats(per, n, &t);
			kj_replay_emit_timing(stdout, S->k[i].unique_id, "sequence", "cupti", &t);
		}
		free(done);
		fflush(stdout);
	}
	free(dur_of);
	free(k_of);
out:
	for (size_t s = 0; order && s < S->nstreams; s++)
		free(order[s]);
	free(order);
	free(nks);
	free(sid);
	free(rec);
	free(per);
}
#endif

/* A loaded sequence made ready on the GPU: launches relocated, memsets at their destinations,
 * functions loaded, streams, events and copy buffers. *moved: relocated launches added. */
static int seq_gpu_ready(struct replay *R, struct seq *S, int *moved)
{
	int rc;
	for (size_t i = 0; i < S->nk; i++)
		*moved += relocate_launch(R, &S->k[i], 0) > 0;
	/* memsets at their recorded destinations where those lie in re-created regions (a kernel's
	 * semaphores must be zero as the program left them), on scratch memory otherwise */
	for (size_t i = 0; i < S->nops; i++) {
		struct seq_op *op = &S->ops[i];
		size_t b = (size_t)op->bytes;
		if (op->type == 2 && op->address)
			op->dst = region_address(R, op->address, b);
		if (op->type != 1)
			continue;
		if (op->copy == 0 && op->data && op->copy_dst)
			op->cdst = region_address(R, op->copy_dst, b);
		if (op->copy == 2 && op->copy_dst && op->copy_src) { /* both sides re-created, or scratch */
			CUdeviceptr d = region_address(R, op->copy_dst, b), from = region_address(R, op->copy_src, b);
			if (d && from)
				op->cdst = d, op->csrc = from;
		}
		if (op->copy == 1 && op->copy_src)
			op->csrc = region_address(R, op->copy_src, b);
		if (op->cdst && op->data) {
			if (cuMemHostAlloc(&op->data_pinned, b, 0))
				return KJ_EGPU;
			memcpy(op->data_pinned, op->data, b);
			S->program_bytes++;
		}
	}
	for (size_t i = 0; i < S->nk; i++)
		if ((rc = load_function_k(R, &S->k[i])) || (rc = prepare_k(R, &S->k[i], NULL, 0)))
			return rc;
	S->streams = calloc(S->nstreams, sizeof(*S->streams));
	S->join = calloc(S->nstreams, sizeof(*S->join));
	S->events = calloc(S->nevents + 1, sizeof(*S->events));
	if (!S->streams || !S->join || !S->events)
		return KJ_ENOMEM;
	for (size_t i = 0; i < S->nstreams; i++)
		if (cuStreamCreate(&S->streams[i], CU_STREAM_NON_BLOCKING) ||
		    cuEventCreate(&S->join[i], CU_EVENT_DISABLE_TIMING))
			return KJ_EGPU;
	for (size_t i = 0; i < S->nevents; i++)
		if (cuEventCreate(&S->events[i], CU_EVENT_DISABLE_TIMING))
			return KJ_EGPU;
	if (cuEventCreate(&S->start, CU_EVENT_DISABLE_TIMING))
		return KJ_EGPU;
	size_t mb = (size_t)(S->max_bytes > 0 ? S->max_bytes : 16);
	if (cuMemAlloc(&S->d1, mb) || cuMemAlloc(&S->d2, mb) || cuMemHostAlloc(&S->pinned, mb, 0) ||
	    cuMemHostAlloc(&S->pinned2, mb, 0))
		return KJ_EGPU;
	S->pageable = malloc(mb);
	S->pageable2 = malloc(mb);
	if (!S->pageable || !S->pageable2)
		return KJ_ENOMEM;
	fill_pattern(S->pinned, mb, 7);
	fill_pattern(S->pageable, mb, 8);
	return 0;
}

int sequence_run(struct replay *R, int64_t iteration, int graph)
{
	struct seq S, P;
	struct kj_replay_seq eager, gr;
	int rc, *used = NULL, moved = 0, prefix = 0, emitted = 0;
	CUgraph g = NULL;
	CUgraphExec exec = NULL;
	struct topo *tp = NULL;
	struct kj_replay_seq topo;
	/* the recorded topology needs the whole iteration (--ordinals cuts it) */
	int whole = R->o.seq_first <= 0 && R->o.seq_last == INT64_MAX; /* the whole iteration, not a range */
	int want_topo = graph && R->o.topology && whole;

	memset(&S, 0, sizeof(S));
	memset(&P, 0, sizeof(P));
	memset(&topo, 0, sizeof(topo));
	memset(&eager, 0, sizeof(eager));
	memset(&gr, 0, sizeof(gr));
	eager.iteration = gr.iteration = iteration;
	snprintf(eager.mode, sizeof(eager.mode), "eager");
	snprintf(gr.mode, sizeof(gr.mode), "graph");
	snprintf(eager.status, sizeof(eager.status), "ok");
	snprintf(gr.status, sizeof(gr.status), "ok");
	R->device_id = 0;
	R->k.pid = -1;
	R->k.launch_ns = -1;
	if ((rc = kj_db_open(R->o.db, 0, &R->db)))
		goto fail;
	if ((rc = seq_load(R, iteration, &S)))
		goto fail;
	if (S.cond_setters)
		fprintf(stderr, "kjoule-replay-worker: iteration %" PRId64 ": %d launch(es) of kernels that set a"
			" CUDA graph conditional node's condition left out: its handle means something only"
			" inside its graph, and the replayed chain runs the trips the program's loop made\n",
			iteration, S.cond_setters);
	/* a range that starts later in an iteration whose buffers the run saved (they hold the state
	 * before the whole iteration): the ops before it run once first, on those buffers, so the
	 * range reads the activations the program's iteration gave it */
	if (R->o.seq_first > 0 && kj_db_has_snapshot(R->db)) {
		int64_t f = R->o.seq_first, l = R->o.seq_last;
		R->o.seq_first = 0;
		R->o.seq_last = f - 1;
		prefix = seq_load(R, iteration, &P) == 0 && P.nops > 0;
		R->o.seq_first = f;
		R->o.seq_last = l;
	}
	if ((rc = load_ranges(R)))
		goto fail;
	eager.launches = gr.launches = (int64_t)S.nk;
	eager.ops = gr.ops = (int64_t)S.nops;
	used = calloc(R->nranges + 1, sizeof(*used));
	if (!used) {
		rc = KJ_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < S.nk && !rc; i++)
		rc = scan_launch(R, &S.k[i], used);
	for (size_t i = 0; prefix && i < P.nk && !rc; i++)
		rc = scan_launch(R, &P.k[i], used);
	if (!rc)
		seq_mark_copies(R, &S, used);
	if (!rc && prefix)
		seq_mark_copies(R, &P, used);
	/* the address space of every referenced allocation, held before the driver starts */
	for (size_t i = 0; i < R->nranges && !rc && !R->o.relocate; i++)
		if (used[i]) {
			const uint64_t g = va_align_bytes();
			uint64_t b = R->ranges[i].address & ~(g - 1);
			uint64_t e = (R->ranges[i].address + R->ranges[i].bytes + g - 1) & ~(g - 1);
			struct early *ne = realloc(R->early, (R->nearly + 1) * sizeof(*ne));
			if (!ne)
				break;
			R->early = ne;
			R->early[R->nearly].base = b;
			R->early[R->nearly].len = e - b;
			R->early[R->nearly].va = 0;
			if (R->nearly && b <= R->early[R->nearly - 1].base + R->early[R->nearly - 1].len) {
				if (e > R->early[R->nearly - 1].base + R->early[R->nearly - 1].len)
					R->early[R->nearly - 1].len = e - R->early[R->nearly - 1].base;
			} else {
				R->nearly++;
			}
		}
	for (size_t i = 0; i < R->nearly; i++)
		prereserve(R, (uintptr_t)R->early[i].base, (size_t)R->early[i].len);
	if (cuInit(0) || cuDeviceGet(&R->dev, R->o.device)) {
		rc = KJ_ENODEV;
		goto fail;
	}
	early_reserve(R, 0);
	if (cuDevicePrimaryCtxRetain(&R->ctx, R->dev) || cuCtxSetCurrent(R->ctx)) {
		rc = KJ_ENODEV;
		goto fail;
	}
	early_reserve(R, 1);
	if (rc || (rc = map_used(R, used)))
		goto fail;
	if ((rc = fill_regions(R)))
		goto fail;
	/* the run's saved buffers hold the state before the whole iteration: a range that starts
	 * later gets them only with its prefix, which computes its inputs from them */
	int applied, pmoved = 0;
	if (R->o.seq_first <= 0 || prefix)
		apply_snapshot(R, &applied, NULL);
	if ((rc = seq_gpu_ready(R, &S, &moved)))
		goto fail;
	if (prefix) {
		CUresult pe = CUDA_ERROR_UNKNOWN;
		if ((rc = seq_gpu_ready(R, &P, &pmoved)))
			goto fail;
		pe = seq_enqueue(&P);
		if (!pe)
			pe = cuCtxSynchronize();
		if (pe) {
			const char *name = NULL;
			cuGetErrorName(pe, &name);
			snprintf(R->res.error, sizeof(R->res.error), "the ops before the range (run once on the"
				 " saved buffers) failed: %s", name ? name : "?");
			rc = KJ_EGPU;
			goto fail;
		}
	}
	if (moved) {
		snprintf(eager.status, sizeof(eager.status), "relocated");
		snprintf(gr.status, sizeof(gr.status), "relocated");
		snprintf(eager.error, sizeof(eager.error), "%d launches relocated", moved);
		snprintf(gr.error, sizeof(gr.error), "%d launches relocated", moved);
	}
	if (prefix) { /* said beside the results: what the range's inputs came from */
		char note[sizeof(eager.error)];
		snprintf(note, sizeof(note), "%.120s%sinputs from the %zu operations before the range, run once on"
			 " the run's saved buffers", eager.error, eager.error[0] ? "; " : "", P.nops);
		memcpy(eager.error, note, sizeof(note));
		memcpy(gr.error, note, sizeof(note));
	}
	/* one checked iteration first: a fault fails the replay here, with its error */
	CUresult e = seq_enqueue(&S);
	if (!e)
		e = cuCtxSynchronize();
	if (e) {
		const char *name = NULL;
		cuGetErrorName(e, &name);
		snprintf(eager.status, sizeof(eager.status), "failed");
		if (S.refused >= 0) { /* a launch refused as it was enqueued: which, and whether its function is the traced one */
			const struct klaunch *k = &S.k[S.refused];
			char why[600];
			snprintf(why, sizeof(why), "first iteration: the launch of %.60s refused: %s%s%s%s",
				 k->mangled, name ? name : "?",
				 k->fn_unmatched ? " (no captured module holds a loadable function of this name with the"
						   " traced registers;" : "", k->fn_unmatched ? k->unmatched_why : "",
				 k->fn_unmatched ? ")" : "");
			memcpy(eager.error, why, sizeof(eager.error) - 1); /* truncated to the result's field */
			eager.error[sizeof(eager.error) - 1] = '\0';
		} else {
			snprintf(eager.error, sizeof(eager.error), "first iteration: %s", name ? name : "?");
		}
		gr = eager;
		snprintf(gr.mode, sizeof(gr.mode), "graph");
		goto emit;
	}
	seq_time(R, &S, NULL, &eager);
	/* each function runs with the L1/shared split it had in the program (replay_carveout), in the
	 * eager iteration and in the graphs alike: said beside the eager result */
	int kept = 0;
	for (size_t i = 0; i < S.nk; i++)
		kept += S.k[i].carveout_set >= 0;
	if (kept) {
		char note[sizeof(eager.error)];
		snprintf(note, sizeof(note), "%.150s%sL1/shared split as traced for %d of %zu launches", eager.error,
			 eager.error[0] ? "; " : "", kept, S.nk);
		memcpy(eager.error, note, sizeof(note));
	}
	if (S.program_bytes) { /* what the iteration's inputs from the host were */
		char note[sizeof(eager.error)];
		snprintf(note, sizeof(note), "%.180s%s%d host-to-device copies with the program's bytes", eager.error,
			 eager.error[0] ? "; " : "", S.program_bytes);
		memcpy(eager.error, note, sizeof(note));
	}
	/* whole iterations' energy paced as the program ran them (kj_replay_pace.h), read once for
	 * the linear graph and the topology graph */
	int64_t pace_ns = graph && whole && R->o.energy ? program_pace(R, iteration) : 0;
	topo.pace_ns = pace_ns;
	if (graph) {
		S.graph_mode = 1;
		e = cuStreamBeginCapture(S.streams[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
		if (!e) {
			CUresult e2 = seq_enqueue(&S);
			e = cuStreamEndCapture(S.streams[0], &g);
			if (e2)
				e = e2;
		}
		if (!e)
			e = cuGraphInstantiate(&exec, g, 0);
		if (e) {
			const char *name = NULL;
			cuGetErrorName(e, &name);
			snprintf(gr.status, sizeof(gr.status), "failed");
			snprintf(gr.error, sizeof(gr.error), "graph capture: %s", name ? name : "?");
		} else {
			seq_time(R, &S, exec, &gr);
			if (R->o.energy && strcmp(gr.status, "failed")) {
				gr.pace_ns = pace_ns;
				graph_energy(R, exec, S.streams[0], &gr);
			}
		}
	}
	/* said now: a topology replay that brings the worker down (a driver crash was seen in
	 * cuGraphLaunch) leaves the eager and graph results standing */
	kj_replay_seq_emit(stdout, &eager);
	if (graph)
		kj_replay_seq_emit(stdout, &gr);
	fflush(stdout);
	emitted = 1;
	/* the graph launches as the program built them: same nodes, same edges */
	if (want_topo) {
		topology_run(R, iteration, S.k, S.nk, S.streams[0], &topo, &tp);
		if (moved && !strcmp(topo.status, "ok")) {
			snprintf(topo.status, sizeof(topo.status), "relocated");
			snprintf(topo.error, sizeof(topo.error), "%d launches relocated", moved);
		}
	}
	/* last: the graph replay measured 16 % slower when it ran after this CUPTI pass in the same
	 * process (BLOOM-560M, H200), so the event-timed modes above come first */
#ifdef KJ_WITH_CUPTI
	S.graph_mode = 0;
	if (R->o.use_cupti)
		seq_per_kernel(R, &S);
	if (R->o.use_cupti && tp && strcmp(topo.status, "failed"))
		topology_per_node(R, tp, S.streams[0]);
#endif
emit:
	if (!emitted) {
		kj_replay_seq_emit(stdout, &eager);
		if (graph)
			kj_replay_seq_emit(stdout, &gr);
	}
	if (want_topo && topo.mode[0])
		kj_replay_seq_emit(stdout, &topo);
	topology_free(tp);
	free(used);
	return 0;
fail:
	snprintf(eager.status, sizeof(eager.status), "failed");
	snprintf(eager.error, sizeof(eager.error), "%.200s%s%s", R->res.error[0] ? R->res.error : "",
		 R->res.error[0] ? "; " : "", kj_strerror(rc));
	kj_replay_seq_emit(stdout, &eager);
	free(used);
	return rc;
}

