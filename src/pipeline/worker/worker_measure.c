/* kj_kernel_iter: one phase measured the amortised way: U calls captured into a CUDA graph,
 * replayed for latency (events) and for energy (kj_amortize_measure, NVML counter edges). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_energy.h"
#include "kj_error.h"
#include "kj_gpu_harness.h"
#include "kj_phase_api.h"

/* One unit of work: the graph of U calls, or (where the phase cannot be captured: g.exec NULL)
 * U calls enqueued on the stream one by one. */
struct phase_unit {
	struct kj_gpu_graph g;
	const struct kj_phase_ops *ops;
	void *state;
	int unroll;
};

static int unit_enqueue(void *ctx)
{
	struct phase_unit *u = ctx;
	if (!u->g.exec) {
		for (int i = 0; i < u->unroll; i++)
			if (u->ops->capture(u->state, u->g.stream))
				return KJ_EGPU;
		return 0;
	}
	return kj_gpu_graph_enqueue(&u->g);
}

static int unit_sync(void *ctx)
{
	struct phase_unit *u = ctx;
	return kj_gpu_graph_sync(&u->g);
}

/* One call of the phase, the graph's i-th (the same call each time). */
static int phase_step(void *ctx, int i, cudaStream_t s)
{
	struct phase_unit *u = ctx;
	(void)i;
	return u->ops->capture(u->state, s);
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A gate at the head of the stream: a host function that holds the stream until the host has
 * enqueued everything behind it (or GATE_TIMEOUT_MS passed: a call that synchronises the stream
 * itself would otherwise wait on the gate forever). */
#define GATE_TIMEOUT_MS 2000.0
struct gate {
	atomic_int open;
	atomic_int timed_out;
};

static void CUDART_CB gate_wait(void *arg)
{
	struct gate *g = arg;
	double t0 = now_ms();
	struct timespec nap = {0, 20000};
	while (!atomic_load(&g->open)) {
		if (now_ms() - t0 > GATE_TIMEOUT_MS) {
			atomic_store(&g->timed_out, 1);
			return;
		}
		nanosleep(&nap, NULL);
	}
}

#define SINGLE_CALLS 64
#define SINGLE_BATCH 16

/* The single-launch reference: SINGLE_CALLS calls, each between two events, enqueued in batches
 * of SINGLE_BATCH behind a gate so the GPU starts a batch only once all of it is queued. The
 * events then time each call on the GPU alone (its kernels and the gaps between them), not the
 * host's time to enqueue it (cuDNN's legacy API can spend longer on the host than a mid-sized
 * convolution takes on the GPU; ungated, the GPU then waits for the host and the events time the
 * host: 0.28 ms against 0.054 ms in the graph for a 3x3 fp16 convolution on an H100).
 * *single_ms: median GPU time per call; *host_ms: median host time to enqueue one call;
 * *gate_timeouts: batches whose gate opened by timeout (the call synchronised inside, so those
 * calls were timed with the host's time in them). Synchronises s before returning, whatever
 * happens, so the gates (on this stack) are never used after return. 0 or a CUDA error. */
static cudaError_t time_single_calls(const struct kj_phase_ops *ops, void *state, cudaStream_t s,
				     cudaEvent_t *ev, double *single_ms, double *host_ms, int *gate_timeouts)
{
	struct gate gates[SINGLE_CALLS / SINGLE_BATCH];
	float ms[SINGLE_CALLS], hms[SINGLE_CALLS];
	cudaError_t e = cudaSuccess, es;
	int done = 0;
	*gate_timeouts = 0;
	for (int b = 0; b < SINGLE_CALLS / SINGLE_BATCH && !e; b++) {
		struct gate *g = &gates[b];
		atomic_init(&g->open, 0);
		atomic_init(&g->timed_out, 0);
		if ((e = cudaLaunchHostFunc(s, gate_wait, g)))
			break;
		for (int k = 0; k < SINGLE_BATCH; k++) {
			int i = b * SINGLE_BATCH + k;
			double t0 = now_ms();
			if ((e = cudaEventRecord(ev[2 * i], s)))
				break;
			if (ops->capture(state, s)) {
				e = cudaGetLastError();
				e = e ? e : cudaErrorUnknown;
				break;
			}
			hms[i] = (float)(now_ms() - t0);
			if ((e = cudaEventRecord(ev[2 * i + 1], s)))
				break;
			done = i + 1;
		}
		atomic_store(&g->open, 1);
	}
	es = cudaStreamSynchronize(s);
	if (e || (e = es))
		return e;
	for (int b = 0; b < SINGLE_CALLS / SINGLE_BATCH; b++)
		*gate_timeouts += atomic_load(&gates[b].timed_out);
	for (int i = 0; i < done; i++)
		if ((e = cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1])))
			return e;
	qsort(ms, SINGLE_CALLS, sizeof(ms[0]), cmp_f);
	qsort(hms, SINGLE_CALLS, sizeof(hms[0]), cmp_f);
	*single_ms = 0.5 * (ms[SINGLE_CALLS / 2 - 1] + ms[SINGLE_CALLS / 2]);
	*host_ms = 0.5 * (hms[SINGLE_CALLS / 2 - 1] + hms[SINGLE_CALLS / 2]);
	return cudaSuccess;
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
	cudaGraphExec_t exec = NULL;
	cudaEvent_t ev[2 * SINGLE_CALLS + 2] = {0};
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
	for (int i = 0; i < 2 * SINGLE_CALLS + 2; i++)
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
	/* single launches between events, GPU time only: the reference for the graph's per-call figure */
	int gate_timeouts = 0;
	if ((e = time_single_calls(ops, state, s, ev, &r->single_ms, &r->host_ms, &gate_timeouts))) {
		broken = failed(r, "single calls", e);
		goto out;
	}
	char single_why[120] = "";
	if (gate_timeouts)
		snprintf(single_why, sizeof(single_why), "single calls synchronise the stream (%d of %d batches): "
			 "single_launch_ms includes host time", gate_timeouts, SINGLE_CALLS / SINGLE_BATCH);
	/* U calls in one graph; a phase whose calls cannot be captured runs them eagerly instead */
	char eager_why[160] = "";
	struct phase_unit unit = {{NULL, s}, ops, state, U};
	struct kj_gpu_fail f;
	if (kj_gpu_graph_capture(s, U, phase_step, &unit, &exec, &f)) {
		cudaError_t why = f.err ? f.err : cudaGetLastError();
		snprintf(eager_why, sizeof(eager_why), "not capturable into a CUDA graph (%s): timed as %d eager "
			 "calls per unit", cudaGetErrorName(why), U);
		cudaGetLastError();
		if (cudaDeviceSynchronize() != cudaSuccess) {
			broken = failed(r, "graph capture", why);
			goto out;
		}
	}
	unit.g.exec = exec;
	int64_t reps = (o->iters + U - 1) / U;
	/* long calls: no more replays than fill 0.5 s (the energy window repeats them anyway) */
	double rep_ms = r->single_ms * U;
	if (rep_ms > 0 && (double)reps * rep_ms > 500)
		reps = (int64_t)(500 / rep_ms);
	if (reps < 2)
		reps = 2;
	/* warm replays, then the timed ones (one event pair around all of them) */
	struct kj_amortize_work w = {&unit, unit_enqueue, unit_sync, U};
	float tot = 0;
	for (int i = 0; i < 2; i++)
		unit_enqueue(&unit);
	if (kj_gpu_time_ms(&w, s, ev, reps, &tot, &f)) {
		char step[80];
		snprintf(step, sizeof(step), "%s (%s)", exec ? "graph replays" : "eager calls", f.what);
		broken = failed(r, step, f.err);
		goto out;
	}
	r->launches = reps * U;
	r->latency_ms = (double)tot / (double)r->launches;
	snprintf(r->status, sizeof(r->status), "ok");
	/* what the figures do not say by themselves, for the error column */
	char note[sizeof(eager_why) + sizeof(single_why) + 4];
	snprintf(note, sizeof(note), "%s%s%s", eager_why, eager_why[0] && single_why[0] ? "; " : "", single_why);
	snprintf(r->error, sizeof(r->error), "%s", note);
	if (o->energy && o->nvml_index < 0) {
		snprintf(r->error, sizeof(r->error), "%.200s%senergy not measured: %.90s", note, note[0] ? "; " : "",
			 o->nvml_why);
	} else if (o->energy) {
		struct kj_amortize_opts ao;
		struct kj_amortize_result ar;
		memset(&ao, 0, sizeof(ao));
		ao.nvml_index = o->nvml_index;
		ao.min_seconds = o->energy_s > 0 ? o->energy_s : 1.0;
		ao.min_updates = ao.min_seconds * 8 >= 2 ? (int)(ao.min_seconds * 8) : 2;
		ao.warmup_max_s = 2.0;
		rc = kj_amortize_measure(&w, &ao, &ar);
		if (rc) {
			snprintf(r->error, sizeof(r->error), "%s%senergy not measured: %s", note,
				 note[0] ? "; " : "", kj_strerror(rc));
		} else {
			r->has_energy = 1;
			r->energy_j = ar.energy_per_launch_mj * 1e-3;
			r->energy_unc_j = ar.energy_unc_mj * 1e-3;
			r->power_w = ar.avg_power_w;
			r->sm_clock_mhz = ar.sm_clock_mean_mhz > 0 ? ar.sm_clock_mean_mhz : 0;
		}
	}
out:
	if (exec)
		cudaGraphExecDestroy(exec);
	for (int i = 0; i < 2 * SINGLE_CALLS + 2; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	if (s)
		cudaStreamDestroy(s);
	ops->teardown(state);
	return broken ? KJ_EGPU : 0;
}
