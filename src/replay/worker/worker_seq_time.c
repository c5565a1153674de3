/* kjoule-replay-worker: a captured iteration (--sequence) enqueued and timed: eager, as one CUDA
 * graph, its energy, and each kernel inside it (worker_seq.h). */
#include "worker_seq.h"

#include "kj_gpu.h"
#include "kj_replay_pace.h"

/* Enqueue one iteration: fork every stream from the first, the ops in recorded order, join. */
CUresult seq_enqueue(struct seq *S)
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
int seq_time(struct replay *R, struct seq *S, CUgraphExec exec, struct kj_replay_seq *out)
{
	return time_loop(R, S, exec, S->streams[0], out);
}

int graph_time(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out)
{
	return time_loop(R, NULL, exec, s, out);
}

/* The program's launch period where it left its GPU idle between the iteration's graph launches
 * (said on stderr), else 0; 0 with --no-pace. */
int64_t program_pace(struct replay *R, int64_t iteration)
{
	struct kj_pace pace;
	if (R->o.no_pace || kj_pace_load(R->db, iteration, &pace))
		return 0;
	fprintf(stderr, "kjoule-replay-worker: iteration energy %s\n", pace.why);
	return pace.period_ns;
}

void graph_energy(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out)
{
	struct seq_graph g = {exec, s, out->pace_ns, 0};
	struct kj_amortize_work w = {&g, seq_graph_enqueue, seq_graph_sync, 1};
	struct kj_amortize_opts ao;
	struct kj_amortize_result ar;
	if (R->nvml_index < 0) {
		kj_warnf("sequence energy not measured: %s", R->nvml_why);
		out->pace_ns = 0;
		return;
	}
	memset(&ao, 0, sizeof(ao));
	memset(&ar, 0, sizeof(ar));
	ao.nvml_index = R->nvml_index;
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
void seq_per_kernel(struct replay *R, struct seq *S)
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
