/* kj_kernel_iter: one phase measured the amortised way: U calls captured into a CUDA graph,
 * replayed for latency (events) and for energy (kj_amortize_measure, NVML counter edges). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_energy.h"
#include "kj_error.h"
#include "kj_phase_api.h"

/* One unit of work: the graph of U calls, or (where the phase cannot be captured) U calls
 * enqueued on the stream one by one. */
struct graph_work {
	cudaGraphExec_t exec;
	cudaStream_t stream;
	const struct kj_phase_ops *ops;
	void *state;
	int unroll;
};

static int graph_enqueue(void *ctx)
{
	struct graph_work *g = ctx;
	if (!g->exec) {
		for (int i = 0; i < g->unroll; i++)
			if (g->ops->capture(g->state, g->stream))
				return KJ_EGPU;
		return 0;
	}
	return cudaGraphLaunch(g->exec, g->stream) == cudaSuccess ? 0 : KJ_EGPU;
}

static int graph_sync(void *ctx)
{
	struct graph_work *g = ctx;
	return cudaStreamSynchronize(g->stream) == cudaSuccess ? 0 : KJ_EGPU;
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* Fill r with a failure naming the step and the CUDA error; 1 when the context is broken. */
static int failed(struct kj_phase_result *r, const char *step, cudaError_t e)
{
	snprintf(r->status, sizeof(r->status), "failed");
	if (e)
		snprintf(r->error, sizeof(r->error), "%s: %s (%s)", step, cudaGetErrorName(e), cudaGetErrorString(e));
	else if (!r->error[0])
		snprintf(r->error, sizeof(r->error), "%s failed (message above)", step);
	cudaGetLastError();
	/* a sticky error leaves the context unusable: the caller exits and is restarted */
	return cudaDeviceSynchronize() != cudaSuccess;
}

int kj_kernel_iter(const struct kj_phase *ph, const struct kj_phase_ops *ops,
		   const struct kj_kernel_iter_opts *o, struct kj_phase_result *r)
{
	void *state = NULL;
	cudaStream_t s = NULL;
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	cudaEvent_t ev[2 * 64 + 2] = {0};
	int broken = 0, U = o->unroll > 0 ? o->unroll : 100, rc;
	cudaError_t e;
	double flops = r->flops, bytes = r->bytes;

	memset(r, 0, sizeof(*r));
	r->flops = flops;
	r->bytes = bytes;
	r->dynamic_j = NAN;
	if ((rc = ops->setup(ph, &state, r->error, sizeof(r->error)))) {
		snprintf(r->status, sizeof(r->status), "failed");
		cudaGetLastError();
		return cudaDeviceSynchronize() != cudaSuccess ? KJ_EGPU : 0;
	}
	if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking))) {
		broken = failed(r, "cudaStreamCreate", e);
		goto out;
	}
	for (int i = 0; i < 2 * 64 + 2; i++)
		if ((e = cudaEventCreate(&ev[i]))) {
			broken = failed(r, "cudaEventCreate", e);
			goto out;
		}
	/* one checked call, then warm-up */
	if (ops->capture(state, s) || (e = cudaStreamSynchronize(s)) || (e = cudaGetLastError())) {
		broken = failed(r, "first call", e);
		goto out;
	}
	for (int i = 0; i < 10; i++)
		if (ops->capture(state, s)) {
			broken = failed(r, "warm-up call", cudaGetLastError());
			goto out;
		}
	/* single launches between events: the reference for the graph's per-call figure */
	float ms[64];
	for (int i = 0; i < 64; i++) {
		cudaEventRecord(ev[2 * i], s);
		ops->capture(state, s);
		cudaEventRecord(ev[2 * i + 1], s);
	}
	if ((e = cudaStreamSynchronize(s))) {
		broken = failed(r, "single calls", e);
		goto out;
	}
	for (int i = 0; i < 64; i++)
		cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]);
	qsort(ms, 64, sizeof(ms[0]), cmp_f);
	r->single_ms = 0.5 * (ms[31] + ms[32]);
	/* U calls in one graph; a phase whose calls cannot be captured runs them eagerly instead */
	char eager_why[200] = "";
	if ((e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal))) {
		broken = failed(r, "cudaStreamBeginCapture", e);
		goto out;
	}
	int cap_rc = 0;
	for (int i = 0; i < U && !cap_rc; i++)
		cap_rc = ops->capture(state, s);
	e = cudaStreamEndCapture(s, &graph);
	if (!cap_rc && !e)
		e = cudaGraphInstantiate(&exec, graph, 0);
	if (cap_rc || e) {
		cudaError_t why = e ? e : cudaGetLastError();
		snprintf(eager_why, sizeof(eager_why), "not capturable into a CUDA graph (%s): timed as %d eager "
			 "calls per unit", cudaGetErrorName(why), U);
		if (exec)
			cudaGraphExecDestroy(exec);
		if (graph)
			cudaGraphDestroy(graph);
		exec = NULL;
		graph = NULL;
		cudaGetLastError();
		if (cudaDeviceSynchronize() != cudaSuccess) {
			broken = failed(r, "graph capture", why);
			goto out;
		}
	}
	struct graph_work gw = {exec, s, ops, state, U};
	int64_t reps = (o->iters + U - 1) / U;
	/* long calls: no more replays than fill 0.5 s (the energy window repeats them anyway) */
	double rep_ms = r->single_ms * U;
	if (rep_ms > 0 && (double)reps * rep_ms > 500)
		reps = (int64_t)(500 / rep_ms);
	if (reps < 2)
		reps = 2;
	/* warm replays, then the timed ones (one event pair around all of them) */
	for (int i = 0; i < 2; i++)
		graph_enqueue(&gw);
	cudaEventRecord(ev[0], s);
	for (int64_t i = 0; i < reps; i++)
		if (graph_enqueue(&gw)) {
			broken = failed(r, exec ? "cudaGraphLaunch" : "eager calls", cudaGetLastError());
			goto out;
		}
	cudaEventRecord(ev[1], s);
	if ((e = cudaStreamSynchronize(s))) {
		broken = failed(r, "graph replays", e);
		goto out;
	}
	float tot = 0;
	cudaEventElapsedTime(&tot, ev[0], ev[1]);
	r->launches = reps * U;
	r->latency_ms = (double)tot / (double)r->launches;
	snprintf(r->status, sizeof(r->status), "ok");
	snprintf(r->error, sizeof(r->error), "%s", eager_why);
	if (o->energy) {
		struct kj_amortize_work w = {&gw, graph_enqueue, graph_sync, U};
		struct kj_amortize_opts ao;
		struct kj_amortize_result ar;
		memset(&ao, 0, sizeof(ao));
		ao.nvml_index = o->device;
		ao.min_seconds = o->energy_s > 0 ? o->energy_s : 1.0;
		ao.min_updates = ao.min_seconds * 8 >= 2 ? (int)(ao.min_seconds * 8) : 2;
		ao.warmup_max_s = 2.0;
		rc = kj_amortize_measure(&w, &ao, &ar);
		if (rc) {
			snprintf(r->error, sizeof(r->error), "%s%senergy not measured: %s", eager_why,
				 eager_why[0] ? "; " : "", kj_strerror(rc));
		} else {
			r->has_energy = 1;
			r->energy_j = ar.energy_per_launch_mj * 1e-3;
			r->energy_unc_j = ar.energy_unc_mj * 1e-3;
			r->power_w = ar.avg_power_w;
		}
	}
out:
	if (exec)
		cudaGraphExecDestroy(exec);
	if (graph)
		cudaGraphDestroy(graph);
	for (int i = 0; i < 2 * 64 + 2; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	if (s)
		cudaStreamDestroy(s);
	ops->teardown(state);
	return broken ? KJ_EGPU : 0;
}
