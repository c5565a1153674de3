/* kjoule-sweep-worker: measuring one pass the way `kjoule replay --energy` measures a kernel: the
 * pass's launches unrolled U times in one CUDA graph (stream capture), the graph replayed after
 * warm-up and timed with events (median per call), energy through kj_amortize_measure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_energy.h"
#include "kj_error.h"
#include "kj_gpu_harness.h"
#include "kj_quantile.h"
#include "sweep_worker.h"

/* What one step of a graph runs: the pass's call (fn; NULL: none), then a memset of bytes over
 * filler (NULL: none). */
struct pass {
	struct sw_ctx *c;
	void *state;
	int (*fn)(struct sw_ctx *, void *);
	void *filler;
	size_t bytes;
};

static int pass_step(void *ctx, int i, cudaStream_t s)
{
	struct pass *p = ctx;
	int rc = p->fn ? p->fn(p->c, p->state) : 0;
	if (!rc && p->filler)
		rc = sw_cuda(p->c, cudaMemsetAsync(p->filler, i & 0xff, p->bytes, s), "filler memset");
	return rc;
}

static int pass_enqueue(void *ctx)
{
	struct pass *p = ctx;
	return pass_step(ctx, 0, p->c->stream);
}

/* A harness failure as the worker's error: a step's own failure is already in c->err. */
static int harness_fail(struct sw_ctx *c, int rc, const struct kj_gpu_fail *f)
{
	if (f->err != cudaSuccess)
		return sw_cuda(c, f->err, f->what);
	return c->err[0] ? rc : sw_fail(c, f->what ? f->what : "GPU harness", "%s", kj_strerror(rc));
}

static double env_double(const char *name, double def)
{
	const char *s = getenv(name);
	return s && *s ? atof(s) : def;
}

/* One call timed with events ev (after one untimed call): the unroll factor's estimate. */
static int time_once(struct sw_ctx *c, void *state, int (*fn)(struct sw_ctx *, void *), cudaEvent_t ev[2],
		     double *us)
{
	struct pass p = {c, state, fn, NULL, 0};
	struct kj_amortize_work w = {&p, pass_enqueue, NULL, 1};
	struct kj_gpu_fail f;
	float ms = 0;
	int rc;
	if ((rc = fn(c, state)) || (rc = sw_sync(c, "first call")))
		return rc;
	if ((rc = kj_gpu_time_ms(&w, c->stream, ev, 1, &ms, &f)))
		return harness_fail(c, rc, &f);
	*us = ms * 1e3;
	return 0;
}

/* KJ_SWEEP_TIMING=span: n back-to-back replays between two events, their mean per call. Under
 * the power limit the SM clock moves every few tens of ms: a median of 30 replays of ~2 ms
 * repeated to 2.5 % on the same shape, a 0.5 s energy window's time to 0.65 %
 * (bench/results/sweep_timing.json). */
static int time_span(struct sw_ctx *c, struct kj_gpu_graph *gw, cudaEvent_t ev[2], int U, int n, double *us)
{
	struct kj_amortize_work w = kj_gpu_graph_work(gw, U);
	struct kj_gpu_fail f;
	float ms = 0;
	int rc;
	if ((rc = kj_gpu_time_ms(&w, c->stream, ev, n, &ms, &f)))
		return harness_fail(c, rc, &f);
	*us = ms * 1e3 / ((double)n * U);
	return 0;
}

/* One replay of exec between two events: its time in *us. */
static int time_replay(struct sw_ctx *c, cudaGraphExec_t exec, cudaEvent_t ev[2], double *us)
{
	struct kj_gpu_graph g = {exec, c->stream};
	struct kj_amortize_work w = kj_gpu_graph_work(&g, 1);
	struct kj_gpu_fail f;
	float ms = 0;
	int rc;
	if ((rc = kj_gpu_time_ms(&w, c->stream, ev, 1, &ms, &f)))
		return harness_fail(c, rc, &f);
	*us = ms * 1e3;
	return 0;
}

/* The default: the median of reps replays, each timed alone, per call: a burst's time, which a
 * mixed training step's GEMMs come closer to than a sustained load's (docs/sweep-operators.md). */
static int time_median(struct sw_ctx *c, struct kj_gpu_graph *gw, cudaEvent_t ev[2], int U, int reps, double *us)
{
	double *t = calloc((size_t)reps, sizeof(*t));
	int rc = 0;
	if (!t)
		return sw_fail(c, "measure", "host memory");
	for (int i = 0; i < reps && !rc; i++)
		if (!(rc = time_replay(c, gw->exec, ev, &t[i])))
			t[i] /= U;
	if (!rc) {
		kj_sort_doubles(t, (size_t)reps);
		*us = kj_quantile_sorted(t, (size_t)reps, 0.5);
	}
	free(t);
	return rc;
}

/* Graph of U calls of fn (NULL: none), each followed by a memset of bytes over filler (NULL:
 * none), instantiated into *exec. */
static int capture_calls(struct sw_ctx *c, void *state, int (*fn)(struct sw_ctx *, void *), int U,
			 void *filler, size_t bytes, cudaGraphExec_t *exec)
{
	struct pass p = {c, state, fn, filler, bytes};
	struct kj_gpu_fail f;
	int rc = kj_gpu_graph_capture(c->stream, U, pass_step, &p, exec, &f);
	return rc ? harness_fail(c, rc, &f) : 0;
}

/* KJ_SWEEP_TIMING=mixed: each call followed by a memory-bound memset about as long as the call,
 * as a training step interleaves its GEMMs with memory-bound kernels, so the SM clock is the one
 * such a mix holds under the power limit rather than a GEMM-only load's (PyTorch's own GEMMs ran
 * 7-11 % faster so on an H200: bench/results/gemm_clocks.json). The call's time is the graph's
 * median less the memsets' graph median, per call; the two graphs' replays alternate. */
static int time_mixed(struct sw_ctx *c, void *state, int (*fn)(struct sw_ctx *, void *), double est, int U,
		      int reps, cudaEvent_t ev[2], double *us)
{
	/* about 3 MB a microsecond: a memset of the call's duration at HBM write bandwidth */
	double want = est > 0 ? est * 3e6 : 64e6;
	size_t bytes = want < 8e6 ? (size_t)8 << 20 : want > 1e9 ? (size_t)1 << 30 : ((size_t)want + 0xfffff) & ~(size_t)0xfffff;
	void *filler = NULL;
	struct kj_gpu_graph m = {NULL, c->stream}, f = {NULL, c->stream};
	double *t = calloc(2 * (size_t)reps, sizeof(*t));
	int rc;
	if (!t)
		return sw_fail(c, "mixed timing", "host memory");
	if ((rc = sw_cuda(c, cudaMalloc(&filler, bytes), "mixed timing: the filler's memory")) ||
	    (rc = capture_calls(c, state, fn, U, filler, bytes, &m.exec)) ||
	    (rc = capture_calls(c, state, NULL, U, filler, bytes, &f.exec)))
		goto out;
	/* at least 100 ms of the mix first, as the plain timing warms up */
	double per = est > 0 ? 2 * est * U : 1000;
	int warm_n = (int)(100000.0 / per) + 1;
	for (int i = 0; i < (warm_n > 2000 ? 2000 : warm_n) && !rc; i++)
		rc = sw_cuda(c, cudaGraphLaunch(m.exec, c->stream), "warm-up graph launch");
	if (rc || (rc = sw_sync(c, "mixed warm-up")))
		goto out;
	for (int i = 0; i < reps && !rc; i++)
		for (int k = 0; k < 2 && !rc; k++)
			rc = time_replay(c, k ? f.exec : m.exec, ev, &t[k * (size_t)reps + (size_t)i]);
	if (rc)
		goto out;
	kj_sort_doubles(t, (size_t)reps);
	kj_sort_doubles(t + reps, (size_t)reps);
	double d = kj_quantile_sorted(t, (size_t)reps, 0.5) - kj_quantile_sorted(t + reps, (size_t)reps, 0.5);
	if (!(d > 0))
		rc = sw_fail(c, "mixed timing", "the call's time is lost in the filler's (%.1f us a graph of %d)",
			     kj_quantile_sorted(t + reps, (size_t)reps, 0.5), U);
	else
		*us = d / U;
out:
	if (m.exec)
		cudaGraphExecDestroy(m.exec);
	if (f.exec)
		cudaGraphExecDestroy(f.exec);
	if (filler)
		cudaFree(filler);
	free(t);
	return rc;
}

static int energy_windows; /* energy windows measured by this worker so far */

/* Energy per call of an instantiated graph of U calls over one kj_amortize_measure window of
 * secs; 0 or a KJ_E* code. */
static int energy_of(struct sw_ctx *c, cudaGraphExec_t exec, int U, double secs, struct kj_amortize_result *ar)
{
	struct kj_gpu_graph g = {exec, c->stream};
	struct kj_amortize_work w = kj_gpu_graph_work(&g, U);
	struct kj_amortize_opts ao;
	memset(&ao, 0, sizeof(ao));
	memset(ar, 0, sizeof(*ar));
	ao.nvml_index = c->nvml_index;
	ao.min_seconds = secs;
	/* at least 5 counter periods inside the window (kj_amortize adds 3 to min_updates) */
	ao.min_updates = secs * 8 >= 5 ? (int)(secs * 8) : secs >= 0.5 ? 5 : 2;
	/* the GPU is already warm after the worker's first energy window: a shorter settle check
	 * (still 5 steady clock readings) as kjoule replay does */
	ao.warmup_min_s = energy_windows++ ? 0.25 : 0.5;
	int rc = kj_amortize_measure(&w, &ao, ar);
	cudaGetLastError();
	return rc ? rc : ar->energy_per_launch_mj > 0 ? 0 : KJ_EGPU;
}

/* The calls' energy with their data out of L2, as kjoule replay measures a kernel's: U pairs of a
 * 2 x L2 flush (memset) and the call, less U flushes alone, per call, into *uj and *unc. 0, or a
 * KJ_E* code with the reason in c->energy_why (the pass's timing and warm energy stand). */
static int energy_cold(struct sw_ctx *c, void *state, int (*fn)(struct sw_ctx *, void *), int U, double secs,
		       double *uj, double *unc)
{
	void *flush = NULL; /* the harness keeps it for the worker's life */
	size_t flush_bytes = 0;
	cudaGraphExec_t pairs = NULL, alone = NULL;
	struct kj_amortize_result a, b;
	struct kj_gpu_fail f;
	int rc;
	if (kj_gpu_l2_flush(&flush, &flush_bytes, &f)) {
		snprintf(c->energy_why, sizeof(c->energy_why), "cold-L2 energy: no memory for the %zu MiB flush",
			 flush_bytes >> 20);
		return KJ_ENOMEM;
	}
	if ((rc = capture_calls(c, state, fn, U, flush, flush_bytes, &pairs)) ||
	    (rc = capture_calls(c, state, NULL, U, flush, flush_bytes, &alone)))
		snprintf(c->energy_why, sizeof(c->energy_why), "cold-L2 energy: %.180s", c->err);
	else if ((rc = energy_of(c, pairs, U, secs, &a)) || (rc = energy_of(c, alone, U, secs, &b)))
		snprintf(c->energy_why, sizeof(c->energy_why), "cold-L2 energy: kj_amortize_measure: %s", kj_strerror(rc));
	if (pairs)
		cudaGraphExecDestroy(pairs);
	if (alone)
		cudaGraphExecDestroy(alone);
	if (rc)
		return rc;
	double mj, unc_mj, ns;
	int kept = kj_amortize_difference(&a, &b, &mj, &unc_mj, &ns);
	*uj = mj * 1e3;
	*unc = unc_mj * 1e3;
	if (!kept) {
		snprintf(c->energy_why, sizeof(c->energy_why), "cold-L2 energy lost in the flush's: flush and call %.4g uJ,"
			 " flush alone %.4g uJ (± %.2g)", a.energy_per_launch_mj * 1e3, b.energy_per_launch_mj * 1e3, *unc);
		return KJ_EINVAL;
	}
	return 0;
}

int sw_measure(struct sw_ctx *c, const struct sw_op *op, void *state,
	       int (*fn)(struct sw_ctx *, void *), int energy, struct sw_measure *m)
{
	struct kj_gpu_graph gw = {NULL, c->stream};
	cudaEvent_t ev[2] = {NULL, NULL};
	double est = 0;
	/* the config's warmup and active (KJ_SWEEP_WARMUP/ACTIVE from kjoule sweep) as graph replays */
	int rc, reps = (int)env_double("KJ_SWEEP_ACTIVE", 30), warm = (int)env_double("KJ_SWEEP_WARMUP", 3);
	(void)op;
	m->us = m->uj = m->uj_unc = m->mhz = m->t_mhz = m->win_us = m->uj_warm = m->uj_cold = -1;
	m->algo[0] = '\0';
	sw_gemm_ran_reset(c);
	c->kernel_impl[0] = '\0';
	if ((rc = sw_cuda(c, cudaEventCreate(&ev[0]), "event")) || (rc = sw_cuda(c, cudaEventCreate(&ev[1]), "event")) ||
	    (rc = time_once(c, state, fn, ev, &est)))
		goto out;
	/* U calls per graph: about 2 ms of work per replay, between 1 and 100 calls */
	int U = est > 0 ? (int)(2000.0 / est) : 100;
	U = U < 1 ? 1 : U > 100 ? 100 : U;
	if (getenv("KJ_SWEEP_UNROLL"))
		U = atoi(getenv("KJ_SWEEP_UNROLL")) > 0 ? atoi(getenv("KJ_SWEEP_UNROLL")) : U;
	m->unroll = U;
	if ((rc = capture_calls(c, state, fn, U, NULL, 0, &gw.exec)))
		goto out;
	/* warm-up: the config's replays, and at least 100 ms of work, so that the clocks have left
	 * whatever state the host-side work between shapes let them fall into before timing */
	int warm_n = warm > 1 ? warm : 1, min_warm = est > 0 ? (int)(100000.0 / (est * U)) + 1 : 1;
	warm_n = warm_n > min_warm ? warm_n : min_warm > 2000 ? 2000 : min_warm;
	for (int i = 0; i < warm_n; i++)
		if ((rc = sw_cuda(c, cudaGraphLaunch(gw.exec, c->stream), "warm-up graph launch")))
			goto out;
	if ((rc = sw_sync(c, "warm-up replays")))
		goto out;
	/* KJ_SWEEP_SETTLE=1: on until the SM clock is steady (a power-bound GEMM's clock falls for a
	 * few hundred ms after its load starts). It did not make the timing more repeatable
	 * (bench/results/sweep_timing.json): the clock keeps moving under the power limit. */
	const char *settle = getenv("KJ_SWEEP_SETTLE");
	if (settle && !strcmp(settle, "1") && c->nvml_index >= 0) {
		struct kj_amortize_work sw = kj_gpu_graph_work(&gw, U);
		int mhz = -1;
		if (kj_amortize_settle(&sw, c->nvml_index, 0.25, 3.0, &mhz) == 0 && mhz > 0)
			m->t_mhz = mhz;
		if ((rc = sw_sync(c, "settling replays")))
			goto out;
	}
	reps = reps < 5 ? 5 : reps;
	const char *timing = getenv("KJ_SWEEP_TIMING");
	int span = timing && !strcmp(timing, "span");
	if (timing && !strcmp(timing, "mixed")) {
		rc = time_mixed(c, state, fn, est, U, reps, ev, &m->us);
	} else if (span) {
		/* with an energy window to come, whose time replaces this one, the active replays only */
		double span_us = energy && c->nvml_index >= 0 ? 0 : env_double("KJ_SWEEP_TIME_S", 0.25) * 1e6;
		double replay_us = est > 0 ? est * U : 0;
		int n = replay_us > 0 && span_us / replay_us > reps ? (int)(span_us / replay_us) + 1 : reps;
		rc = time_span(c, &gw, ev, U, n > 100000 ? 100000 : n, &m->us);
	} else {
		rc = time_median(c, &gw, ev, U, reps, &m->us);
	}
	if (rc)
		goto out;
	sw_gemm_describe(c, m->algo, sizeof(m->algo));
	if (!m->algo[0] && c->kernel_impl[0])
		snprintf(m->algo, sizeof(m->algo), "%s", c->kernel_impl);
	if (energy && c->nvml_index < 0) {
		snprintf(c->energy_why, sizeof(c->energy_why), "%s", c->nvml_why);
		c->energy_warm_only = 0;
	} else if (energy) {
		struct kj_amortize_result ar;
		double secs = env_double("KJ_SWEEP_ENERGY_S", 2.0);
		const char *cache = getenv("KJ_SWEEP_ENERGY_CACHE");
		int erc = energy_of(c, gw.exec, U, secs, &ar);
		if (erc == 0) {
			m->uj = m->uj_warm = ar.energy_per_launch_mj * 1e3;
			m->uj_unc = ar.energy_unc_mj * 1e3;
			m->mhz = ar.sm_clock_mean_mhz;
			m->win_us = ar.time_per_launch_ns > 0 ? ar.time_per_launch_ns / 1e3 : -1;
			/* the window's time is the longer span's, at the clock its energy was drawn at */
			if (m->win_us > 0 && span)
				m->us = m->win_us;
			/* the pass counted as kjoule replay counts a kernel: the mean of warm and cold */
			double cold = -1, cold_unc = -1;
			int warm_asked = cache && !strcmp(cache, "warm");
			if (!warm_asked && energy_cold(c, state, fn, U, secs, &cold, &cold_unc) == 0) {
				m->uj_cold = cold;
				m->uj = (m->uj_warm + cold) / 2;
				m->uj_unc = sqrt(m->uj_unc * m->uj_unc + cold_unc * cold_unc) / 2;
			} else if (!warm_asked) {
				c->energy_warm_only = 1; /* energy_why says why the cold half is missing */
			}
		} else {
			snprintf(c->energy_why, sizeof(c->energy_why), "kj_amortize_measure: %s", kj_strerror(erc));
			c->energy_warm_only = 0;
		}
	}
out:
	for (int i = 0; i < 2; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	if (gw.exec)
		cudaGraphExecDestroy(gw.exec);
	return rc;
}
