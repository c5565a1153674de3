/* kjoule-replay-worker: timing one kernel (CUPTI kernel timestamps or CUDA events, warm or
 * cold L2) and its energy per launch (a CUDA graph of U launches, kj_amortize_measure). */
#include <math.h>

#include "kj_clock_state.h"
#include "kj_energy_window.h"
#include "kj_gpu_harness_cu.h"
#include "kj_replay_pace.h"
#include "replay_worker.h"

/* ---- timing ---- */
#ifdef KJ_WITH_CUPTI
int64_t *g_dur, *g_start;
uint32_t *g_stream;
uint64_t *g_node;
size_t g_ndur;
static size_t g_capdur;

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*size = 1u << 20;
	*buffer = aligned_alloc(8, *size);
	*max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
				   size_t valid)
{
	CUpti_Activity *rec = NULL;
	(void)ctx;
	(void)stream_id;
	(void)size;
	while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
			continue;
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
		if (g_ndur == g_capdur) {
			size_t nc = g_capdur ? g_capdur * 2 : 256;
			int64_t *nd = realloc(g_dur, nc * sizeof(*nd));
			if (nd)
				g_dur = nd;
			int64_t *ns = realloc(g_start, nc * sizeof(*ns));
			if (ns)
				g_start = ns;
			uint32_t *nst = realloc(g_stream, nc * sizeof(*nst));
			if (nst)
				g_stream = nst;
			uint64_t *nn = realloc(g_node, nc * sizeof(*nn));
			if (nn)
				g_node = nn;
			if (!nd || !ns || !nst || !nn)
				break;
			g_capdur = nc;
		}
		g_start[g_ndur] = (int64_t)k->start;
		g_stream[g_ndur] = k->streamId;
		g_node[g_ndur] = k->graphNodeId;
		g_dur[g_ndur++] = (int64_t)(k->end - k->start);
	}
	free(buffer);
}

int cupti_start(void)
{
	static int registered;
	if (!registered) {
		if (cuptiActivityRegisterCallbacks(buf_requested, buf_completed) != CUPTI_SUCCESS)
			return -1;
		registered = 1;
	}
	g_ndur = 0;
	return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS ? 0 : -1;
}

void cupti_stop(void)
{
	cuptiActivityFlushAll(1);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityFlushAll(1);
}
#endif

/* N timed launches after W warm-up ones; cold: L2 flushed (a 2 x L2 memset) before each. */
int time_mode(struct replay *R, int cold, struct kj_replay_timing *out)
{
	int n = R->o.runs;
	int64_t *ns = calloc((size_t)n + 1, sizeof(*ns));
	CUevent *ev = calloc(2 * (size_t)n + 2, sizeof(*ev));
	int rc = KJ_EGPU, use_cupti = R->o.use_cupti;
	if (!ns || !ev) {
		free(ns);
		free(ev);
		return KJ_ENOMEM;
	}
	for (int i = 0; i < R->o.warmup; i++) {
		if (cold && cuMemsetD32Async(R->flush, 0x3F000000u + (unsigned)i, R->flush_bytes / 4, R->stream))
			goto out;
		if (launch(R) != CUDA_SUCCESS)
			goto out;
	}
	if (cuStreamSynchronize(R->stream) != CUDA_SUCCESS)
		goto out;
#ifdef KJ_WITH_CUPTI
	if (use_cupti && cupti_start())
		use_cupti = 0;
#else
	use_cupti = 0;
#endif
	for (int i = 0; i < n; i++) {
		if (!use_cupti && (cuEventCreate(&ev[2 * i], CU_EVENT_DEFAULT) ||
				   cuEventCreate(&ev[2 * i + 1], CU_EVENT_DEFAULT)))
			goto out;
		if (cold && cuMemsetD32Async(R->flush, 0x3F800000u + (unsigned)i, R->flush_bytes / 4, R->stream))
			goto out;
		if (!use_cupti && cuEventRecord(ev[2 * i], R->stream))
			goto out;
		if (launch(R) != CUDA_SUCCESS)
			goto out;
		if (!use_cupti && cuEventRecord(ev[2 * i + 1], R->stream))
			goto out;
	}
	CUresult e = cuStreamSynchronize(R->stream);
	if (e != CUDA_SUCCESS) {
		cu_fail(&R->res, "timed launches", e, __FILE__, __LINE__);
		goto out;
	}
	size_t got = 0;
#ifdef KJ_WITH_CUPTI
	if (use_cupti) {
		cupti_stop();
		for (size_t i = 0; i < g_ndur && got < (size_t)n; i++)
			ns[got++] = g_dur[i];
		snprintf(R->res.timer, sizeof(R->res.timer), "cupti");
	}
#endif
	if (!use_cupti) {
		for (int i = 0; i < n; i++) {
			float ms = 0;
			if (cuEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]) == CUDA_SUCCESS)
				ns[got++] = (int64_t)llround((double)ms * 1e6);
		}
		snprintf(R->res.timer, sizeof(R->res.timer), "events");
	}
	kj_replay_stats(ns, got, out);
	rc = got ? 0 : KJ_EGPU;
	if (!got)
		kj_replay_result_set(&R->res, "failed", "no kernel timings were recorded");
out:
	for (int i = 0; i < 2 * n; i++)
		if (ev[i])
			cuEventDestroy(ev[i]);
	if (rc == KJ_EGPU && !strcmp(R->res.status, "ok"))
		kj_replay_result_set(&R->res, "failed", "timed launches failed");
	free(ns);
	free(ev);
	return rc;
}

/* ---- energy ---- */
/* One step of an energy graph: an L2 flush (a 2 x L2 memset) when flush, the kernel's launch when
 * kernel; the driver's error kept for the result. */
struct energy_step {
	struct replay *R;
	int flush, kernel;
	unsigned long long gap_ns; /* > 0: an idle spacer of this long after each step */
	CUresult e;
};

/* the idle spacer, loaded once into the worker's context; the gap of the kernel's paced energy
 * (0: measured back to back), which its cold-L2 windows keep */
static struct kj_gpu_cu_spin g_spin;
static unsigned long long g_paced_gap_ns;

static int energy_step(void *ctx, int i, CUstream s)
{
	struct energy_step *st = ctx;
	struct replay *R = st->R;
	CUresult e = st->flush ? cuMemsetD32Async(R->flush, 0x3E000000u + (unsigned)i, R->flush_bytes / 4, s)
			       : CUDA_SUCCESS;
	if (e == CUDA_SUCCESS && st->kernel)
		e = launch(R);
	if (e == CUDA_SUCCESS && st->gap_ns)
		e = kj_gpu_cu_spin_launch(&g_spin, s, st->gap_ns);
	st->e = e;
	return e == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

/* Energy per step of a CUDA graph of U = R->o.unroll steps, each an L2 flush (a 2 x L2 memset)
 * when flush, the kernel's launch when kernel, and an idle spacer of gap_ns when gap_ns > 0 (the
 * spacer loaded first): kj_amortize_measure over it, into *ar. 0, or a KJ_E* code (CUDA failures
 * also in R->res). */
static int amortize_graph(struct replay *R, int flush, int kernel, unsigned long long gap_ns,
			  struct kj_amortize_result *ar)
{
	struct energy_step st = {R, flush, kernel, gap_ns, CUDA_SUCCESS};
	struct kj_gpu_cu_graph gw = {NULL, R->stream};
	struct kj_gpu_cu_fail f;
	struct kj_amortize_opts ao;
	int rc;

	if (kj_gpu_cu_graph_capture(R->stream, R->o.unroll, energy_step, &st, &gw.exec, &f)) {
		cu_fail(&R->res, f.what, f.err != CUDA_SUCCESS ? f.err : st.e, __FILE__, __LINE__);
		return KJ_EGPU;
	}
	struct kj_amortize_work w = kj_gpu_cu_graph_work(&gw, R->o.unroll);
	memset(&ao, 0, sizeof(ao));
	ao.nvml_index = R->nvml_index;
	ao.min_seconds = R->o.energy_s;
	/* counter updates come every ~100 ms: ask for 8 per second of --energy-seconds (16 at the
	 * default 2 s), so a kernel costs ~S + 0.5 s of warm-up rather than the primitive's 20+3 */
	ao.min_updates = R->o.energy_s * 8 >= 4 ? (int)(R->o.energy_s * 8) : 4;
	ao.warmup_max_s = 0;
	/* the kernels of one worker run back to back: after the first, the clocks are already up
	 * and five steady readings (250 ms) suffice */
	static int measured_before;
	ao.warmup_min_s = measured_before++ ? 0.25 : 0.5;
	memset(ar, 0, sizeof(*ar));
	rc = kj_amortize_measure(&w, &ao, ar);
	cuGraphExecDestroy(gw.exec);
	return rc;
}

/* The kernel's energy with its data out of L2, as the cold timing has it: a graph of flush and
 * launch pairs less a graph of the flushes alone, measured right after it (so both see the same
 * clocks and temperature); each step followed by the idle spacer where the warm energy was
 * measured paced (g_paced_gap_ns). Absent (has_energy_cold 0) when either measurement fails or the
 * difference is not above zero by more than its uncertainty. */
static void measure_energy_cold(struct replay *R)
{
	struct kj_amortize_result a, b;
	char status[sizeof(R->res.status)], error[sizeof(R->res.error)];
	memcpy(status, R->res.status, sizeof(status));
	memcpy(error, R->res.error, sizeof(error));
	int rc = amortize_graph(R, 1, 1, g_paced_gap_ns, &a);
	if (!rc)
		rc = amortize_graph(R, 1, 0, g_paced_gap_ns, &b);
	if (rc) { /* the kernel's timing and warm energy stand */
		kj_warnf("unique kernel %" PRId64 ": cold-L2 energy not measured: %s", R->o.unique,
			 strcmp(R->res.status, status) ? R->res.error : kj_strerror(rc));
		memcpy(R->res.status, status, sizeof(status));
		memcpy(R->res.error, error, sizeof(error));
		return;
	}
	double mj, unc, ns;
	int kept = kj_amortize_difference(&a, &b, &mj, &unc, &ns);
	R->res.flush_mj = b.energy_per_launch_mj;
	R->res.flush_unc_mj = b.energy_unc_mj;
	if (!kept) {
		kj_warnf("unique kernel %" PRId64 ": cold-L2 energy not kept: flush and launch %.4g mJ, flush alone "
			 "%.4g mJ (± %.2g): the kernel's part is lost in the flush's", R->o.unique,
			 a.energy_per_launch_mj, b.energy_per_launch_mj, unc);
		return;
	}
	R->res.has_energy_cold = 1;
	R->res.energy_cold_launches = a.launches;
	R->res.energy_cold_seconds = a.seconds + b.seconds;
	R->res.energy_cold_mj_per_launch = mj;
	R->res.energy_cold_unc_mj = unc;
	R->res.energy_cold_ns_per_launch = ns;
}

/* The reasons that say the power limit held the clocks down: what spacing the launches out eases */
#define POWER_CAPPING (KJ_CLOCK_SW_POWER_CAP | KJ_CLOCK_HW_SLOWDOWN | KJ_CLOCK_HW_POWER_BRAKE)

static int power_capped(int64_t reasons)
{
	return reasons > 0 && ((uint64_t)reasons & POWER_CAPPING);
}

/* A kernel whose launches back to back drew the GPU into its power cap: its energy measured again
 * with the launches spaced out by an idle spacer (a graph of launch and spacer pairs less a graph
 * of the spacers alone, measured right after). Where the program itself ran against the cap
 * (--pace-duty D, the program's GPU busy share), once at that duty, so that the kernel meets the
 * cap as it did in the program (none at D >= 0.95: the program ran as back to back). Otherwise
 * at a 1:1 duty, then 1:3 while the cap still acts: in a program that never reached the cap the
 * kernel ran at the top clock. The last spacing whose difference stands replaces the
 * back-to-back figures (method "paced 1:N"; g_paced_gap_ns keeps its gap for the cold-L2
 * windows); the back-to-back ones stay when none does, each attempt said on stderr. */
static void measure_energy_paced(struct replay *R, double idle_mw)
{
	struct kj_gpu_cu_fail f;
	char status[sizeof(R->res.status)], error[sizeof(R->res.error)];
	double kernel_ns = R->res.warm.median_ns > 0 ? (double)R->res.warm.median_ns
			 : R->res.energy_launches > 0 ? R->res.seconds * 1e9 / (double)R->res.energy_launches : 0;
	if (kernel_ns <= 0)
		return;
	if (kj_gpu_cu_spin_load(&g_spin, &f)) {
		kj_warnf("unique kernel %" PRId64 ": ran at the power cap back to back; not measured spaced "
			 "out: %s failed (%d)", R->o.unique, f.what, (int)f.err);
		return;
	}
	memcpy(status, R->res.status, sizeof(status));
	memcpy(error, R->res.error, sizeof(error));
	double b2b_mhz = R->res.sm_clock_mean_mhz, b2b_mj = R->res.energy_mj_per_launch;
	double b2b_ns = R->res.energy_launches > 0 ? R->res.seconds * 1e9 / (double)R->res.energy_launches : -1;
	double ratios[KJ_PACE_RATIOS_MAX];
	size_t nratios = 0;
	char why[256];
	if (kj_pace_ratios(ratios, &nratios, why, sizeof(why))) { /* replay refused it before: defaults */
		kj_warnf("%s; spacing 1:1, then 1:3", why);
		ratios[0] = 1, ratios[1] = 3, nratios = 2;
	}
	if (R->o.pace_duty > 0) {
		if (R->o.pace_duty >= 0.95)
			return;
		ratios[0] = (1 - R->o.pace_duty) / R->o.pace_duty;
		nratios = 1;
	}
	for (size_t i = 0; i < nratios; i++) {
		struct kj_amortize_result a, b;
		unsigned long long gap = (unsigned long long)(kernel_ns * ratios[i]);
		gap = gap < 2000 ? 2000 : gap;
		int rc = amortize_graph(R, 0, 1, gap, &a);
		if (!rc)
			rc = amortize_graph(R, 0, 0, gap, &b);
		if (rc) {
			kj_warnf("unique kernel %" PRId64 ": energy spaced out 1:%.2g not measured: %s", R->o.unique,
				 ratios[i], strcmp(R->res.status, status) ? R->res.error : kj_strerror(rc));
			memcpy(R->res.status, status, sizeof(status));
			memcpy(R->res.error, error, sizeof(error));
			return;
		}
		double mj, unc, ns;
		if (!kj_amortize_difference(&a, &b, &mj, &unc, &ns)) {
			kj_warnf("unique kernel %" PRId64 ": energy spaced out 1:%.2g not kept: launch and spacer "
				 "%.4g mJ, spacer alone %.4g mJ (± %.2g)", R->o.unique, ratios[i],
				 a.energy_per_launch_mj, b.energy_per_launch_mj, unc);
			return;
		}
		kj_warnf("unique kernel %" PRId64 ": ran at the power cap back to back (%.0f MHz, %.4g mJ a "
			 "launch); spaced out 1:%.2g: %.0f MHz, %.4g mJ ± %.2g%s", R->o.unique,
			 b2b_mhz, b2b_mj, ratios[i], a.sm_clock_mean_mhz, mj,
			 unc, power_capped(a.throttle_reasons) ? " (still capped)" : "");
		R->res.energy_launches = a.launches;
		R->res.seconds = a.seconds + b.seconds;
		R->res.energy_mj_per_launch = mj;
		R->res.energy_unc_mj = unc;
		/* the kernel's own power, so that energy over power is its time per launch */
		R->res.power_mw = ns > 0 ? mj / (ns * 1e-9) : NAN;
		R->res.dynamic_mj_per_launch = idle_mw >= 0 ? mj - idle_mw * ns * 1e-9 : NAN;
		snprintf(R->res.method, sizeof(R->res.method), "paced 1:%.2g", ratios[i]);
		if (b2b_ns > 0 && b2b_mhz > 0) { /* the kernel at the clock the cap left it, kept beside */
			R->res.has_b2b = 1;
			R->res.b2b_ns_per_launch = b2b_ns;
			R->res.b2b_mj_per_launch = b2b_mj;
			R->res.b2b_sm_clock_mhz = b2b_mhz;
		}
		g_paced_gap_ns = gap;
		R->res.sm_clock_mean_mhz = a.sm_clock_mean_mhz;
		R->res.sm_clock_min_mhz = a.sm_clock_min_mhz;
		R->res.sm_clock_max_mhz = a.sm_clock_max_mhz;
		R->res.throttle_reasons = a.throttle_reasons;
		if (!power_capped(a.throttle_reasons))
			return;
	}
}

/* A back-to-back energy window whose launches ran off the pace of the kernel's timed launches did
 * other work than the kernel (kj_energy_window.h): measured again, up to WINDOW_TRIES windows in
 * all, and the one closest to the timed pace kept in *ar, each step said on stderr. One still off
 * stays as measured; compare finds it the same way and does not judge by it. */
#define WINDOW_TRIES 3
static void window_on_pace(struct replay *R, struct kj_amortize_result *ar)
{
	double timed_ns = (double)R->res.warm.median_ns, ratio;
	for (int tries = 1; tries < WINDOW_TRIES &&
			    kj_energy_window_off_pace(ar->time_per_launch_ns, timed_ns, &ratio); tries++) {
		struct kj_amortize_result again;
		kj_warnf("unique kernel %" PRId64 ": its energy window ran %.2fx its timed launches (%.1f us a "
			 "launch against %.1f): measured again", R->o.unique, ratio, ar->time_per_launch_ns * 1e-3,
			 timed_ns * 1e-3);
		char status[sizeof(R->res.status)], error[sizeof(R->res.error)];
		memcpy(status, R->res.status, sizeof(status));
		memcpy(error, R->res.error, sizeof(error));
		if (amortize_graph(R, 0, 1, 0, &again) || power_capped(again.throttle_reasons)) {
			memcpy(R->res.status, status, sizeof(status)); /* the windows before stand */
			memcpy(R->res.error, error, sizeof(error));
			return;
		}
		if (fabs(log(again.time_per_launch_ns / timed_ns)) < fabs(log(ratio)))
			*ar = again;
	}
	if (kj_energy_window_off_pace(ar->time_per_launch_ns, timed_ns, &ratio))
		kj_warnf("unique kernel %" PRId64 ": its energy window still ran %.2fx its timed launches after "
			 "%d windows: kept as measured, and compare does not judge by it", R->o.unique, ratio,
			 WINDOW_TRIES);
}

void worker_nvml_map(struct replay *R)
{
	char pci[64];
	R->nvml_index = -1;
	if (cuDeviceGetPCIBusId(pci, sizeof(pci), R->dev) != CUDA_SUCCESS)
		snprintf(R->nvml_why, sizeof(R->nvml_why), "no PCI bus id for CUDA device %d", R->o.device);
	else
		R->nvml_index = kj_gpu_nvml_index_by_pci(pci, R->nvml_why, sizeof(R->nvml_why));
}

int measure_energy(struct replay *R)
{
	if (R->nvml_index < 0) {
		kj_warnf("unique kernel %" PRId64 ": energy not measured: %s", R->o.unique, R->nvml_why);
		return 0; /* timing stands; energy stays absent */
	}
	struct kj_amortize_result ar;
	g_paced_gap_ns = 0;
	int rc = amortize_graph(R, 0, 1, 0, &ar);
	if (rc == KJ_EGPU && !strcmp(R->res.status, "failed"))
		return rc; /* the capture or instantiation failed: the result says where */
	if (rc) {
		kj_warnf("unique kernel %" PRId64 ": energy not measured: %s", R->o.unique, kj_strerror(rc));
		return 0; /* timing stands; energy stays absent */
	}
	if (!power_capped(ar.throttle_reasons))
		window_on_pace(R, &ar);
	double idle = R->device_id >= 0 ? kj_energy_idle_mw(R->db, R->device_id) : -1;
	R->res.has_energy = 1;
	R->res.unroll = R->o.unroll;
	R->res.energy_launches = ar.launches;
	R->res.seconds = ar.seconds;
	R->res.energy_mj_per_launch = ar.energy_per_launch_mj;
	R->res.energy_unc_mj = ar.energy_unc_mj;
	R->res.power_mw = ar.avg_power_w * 1e3;
	R->res.idle_mw = idle;
	R->res.dynamic_mj_per_launch =
		idle >= 0 ? ar.energy_per_launch_mj - idle * ar.time_per_launch_ns * 1e-9 : NAN;
	snprintf(R->res.method, sizeof(R->res.method), "%s", ar.method ? ar.method : "amortized");
	R->res.sm_clock_mean_mhz = ar.sm_clock_mean_mhz;
	R->res.sm_clock_min_mhz = ar.sm_clock_min_mhz;
	R->res.sm_clock_max_mhz = ar.sm_clock_max_mhz;
	R->res.throttle_reasons = ar.throttle_reasons;
	if (power_capped(ar.throttle_reasons) && !R->o.no_pace)
		measure_energy_paced(R, idle);
	if (R->o.cold && R->flush && !R->o.no_cold_energy)
		measure_energy_cold(R);
	return 0;
}

