/* kjoule-replay-worker: replays ONE unique kernel of a run database on the GPU and prints its
 * results on stdout in the protocol of kj_replay_emit() (kj_replay.h). `kjoule replay` runs one
 * worker process per unique kernel, so a kernel that faults poisons only its own context.
 *
 * Steps: context on the device; the recorded allocations that the kernel's parameters point into
 * re-created at their original virtual addresses (cuMemAddressReserve with the address as the
 * hint, cuMemCreate, cuMemMap, cuMemSetAccess), relocating the pointer words where an address is
 * taken; buffers filled with random non-zero data (or the run's snapshot); the module loaded from
 * the database; one checked launch; timing warm and/or cold (CUPTI kernel timestamps, or CUDA
 * events); energy through a CUDA graph of U launches measured by kj_amortize_measure().
 * This file: setup, the per-kernel steps in order, the command line. worker_load.c (the launch
 * from the database), worker_memory.c (addresses, regions, data), worker_snapshot.c (--snapshot
 * data, --verify), worker_timing.c (timing, energy), worker_sequence.c (--sequence),
 * worker_topology.c (--sequence --graph --topology: the graph launches with their own topology).
 *
 * usage: kjoule-replay-worker --probe [--device D]
 *        kjoule-replay-worker --db RUN --unique ID [--runs N] [--warmup W] [--cache warm|cold|both]
 *                             [--energy] [--unroll U] [--energy-seconds S] [--device D]
 *                             [--timer cupti|events] [--relocate] [--verify]
 *        kjoule-replay-worker --db RUN --sequence ITERATION [--graph [--topology [--no-pace]]] [--runs N] [--energy]
 * Exit code: 0 when a KJ_RESULT line was printed (whatever its status), 2 usage, 1 otherwise. */
#include "replay_worker.h"

#include <execinfo.h>
#include <signal.h>

/* A worker that crashes says where, on stderr (the parent relays it): the raw frames, which
 * `nm -n` on this binary names; then the signal takes its course. */
static void on_crash(int sig)
{
	static const char head[] = "kjoule-replay-worker: crashed; frames:\n";
	void *frames[48];
	int n = backtrace(frames, 48);
	if (write(2, head, sizeof(head) - 1) < 0)
		n = 0;
	backtrace_symbols_fd(frames, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void report_crashes(void)
{
	void *warm[1];
	backtrace(warm, 1); /* loads libgcc now: a crashed process should not have to */
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGFPE, on_crash);
	signal(SIGILL, on_crash);
}

static int probe(int device)
{
	CUdevice dev;
	int maj = 0, min = 0, l2 = 0;
	char name[128] = "";
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, device) != CUDA_SUCCESS) {
		fprintf(stderr, "kjoule-replay-worker: no CUDA device %d\n", device);
		return 1;
	}
	cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
	cuDeviceGetName(name, sizeof(name), dev);
	for (char *p = name; *p; p++)
		if (*p == '\t' || *p == '\n')
			*p = ' ';
	char pci[64], why[160];
	int nvml = cuDeviceGetPCIBusId(pci, sizeof(pci), dev) == CUDA_SUCCESS
			   ? kj_gpu_nvml_index_by_pci(pci, why, sizeof(why)) : -1;
	printf("KJ_DEVICE\tcc_major=%d\tcc_minor=%d\tl2=%d\tnvml_index=%d\tname=%s\n", maj, min, l2, nvml, name);
	return 0;
}

/* Per-kernel state back to empty; the context, the loaded modules and the database stay. */
static void kernel_close(struct replay *R)
{
	if (R->ctx && !R->poisoned) {
		if (R->flush)
			cuMemFree(R->flush);
		for (size_t g = 0; R->region_va && g < R->nregions; g++) {
			if (!R->region_va[g])
				continue;
			cuMemUnmap(R->region_va[g], R->regions[g].bytes);
			if (R->region_h[g])
				cuMemRelease(R->region_h[g]);
			if (!R->region_owned || R->region_owned[g])
				cuMemAddressFree(R->region_va[g], R->regions[g].bytes);
		}
		if (R->stream)
			cuStreamDestroy(R->stream);
	}
	free(R->region_owned);
	R->region_owned = NULL;
	free(R->premem);
	R->premem = NULL;
	R->npremem = 0;
	R->flush = 0;
	R->stream = NULL;
	klaunch_free(&R->k);
	free(R->ranges);
	free(R->regions);
	free(R->region_of);
	free(R->region_va);
	free(R->region_h);
	free(R->region_moved);
	R->ranges = NULL;
	R->nranges = 0;
	R->regions = NULL;
	R->nregions = 0;
	R->region_of = NULL;
	R->region_va = NULL;
	R->region_h = NULL;
	R->region_moved = NULL;
}

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}


/* Open the run, hold the host address ranges of every kernel's allocations, then make the
 * context (once for all the kernels of this worker). */
static int worker_setup(struct replay *R)
{
	int rc;
	double t0 = mono_s();
	if ((rc = kj_db_open(R->o.db, 0, &R->db)))
		return rc;
	for (size_t u = 0; u < R->o.nuniques && !R->o.relocate; u++) {
		R->o.unique = R->o.uniques[u];
		if (!load_launch(R) && !load_ranges(R)) {
			int *used = calloc(R->nranges + 1, sizeof(*used));
			if (used && !scan_launch(R, &R->k, used))
				for (size_t i = 0; i < R->nranges; i++)
					if (used[i]) {
						const uint64_t g = va_align_bytes();
						uint64_t b = R->ranges[i].address & ~(g - 1);
						uint64_t e = (R->ranges[i].address + R->ranges[i].bytes + g - 1) & ~(g - 1);
						struct early *ne = realloc(R->early, (R->nearly + 1) * sizeof(*ne));
						if (ne) {
							R->early = ne;
							R->early[R->nearly].base = b;
							R->early[R->nearly].len = e - b;
							R->early[R->nearly].va = 0;
							R->nearly++;
						}
					}
			free(used);
		}
		kernel_close(R);
	}
	/* merge the intervals of all kernels, and hold them in host address space */
	qsort(R->early, R->nearly, sizeof(*R->early), early_cmp);
	size_t m = 0;
	for (size_t i = 0; i < R->nearly; i++) {
		if (m && R->early[i].base <= R->early[m - 1].base + R->early[m - 1].len) {
			uint64_t e = R->early[i].base + R->early[i].len;
			if (e > R->early[m - 1].base + R->early[m - 1].len)
				R->early[m - 1].len = e - R->early[m - 1].base;
		} else {
			R->early[m++] = R->early[i];
		}
	}
	R->nearly = m;
	for (size_t i = 0; i < R->nearly; i++)
		prereserve(R, (uintptr_t)R->early[i].base, (size_t)R->early[i].len);
	memset(&R->res, 0, sizeof(R->res));
	R->device_id = kj_store_first_process_device(R->db, 0);
	CU(cuInit(0));
	CU(cuDeviceGet(&R->dev, R->o.device));
	worker_nvml_map(R);
	/* device address space before the context exists, when it can; after it otherwise */
	int early_ok = early_reserve(R, 0);
	CU(cuDevicePrimaryCtxRetain(&R->ctx, R->dev));
	CU(cuCtxSetCurrent(R->ctx));
	int early_ok2 = early_reserve(R, 1);
	if (R->o.debug)
		fprintf(stderr, "kjoule-replay-worker: setup %.3f s, %zu host ranges held, %zu regions, %d+%d "
				"reserved at their addresses before+after the context\n", mono_s() - t0, R->npre,
			R->nearly, early_ok, early_ok2);
	return 0;
}

/* Replay one unique kernel (R->o.unique) in the worker's context. */
static int replay_one(struct replay *R)
{
	int rc, l2 = 0, applied = 0, exact = 0;
	double t0 = mono_s(), t1, t2, t3;
	if ((rc = load_launch(R)) || (rc = load_ranges(R)))
		return rc;
	/* address space first: nothing of ours should take the recorded addresses */
	if ((rc = map_allocations(R)))
		return rc;
	CU(cuStreamCreate(&R->stream, CU_STREAM_NON_BLOCKING));
	/* a kernel whose own launch was not saved runs on the fill alone: other launches' buffers,
	 * saved at other moments (an arena's regions not yet written among them), drew far less
	 * power than either (docs/replay.md, "Data"); KJOULE_REPLAY_OTHER_SAVED=1 keeps them. Without
	 * rows of its own launch nothing is laid over the fill at all */
	const char *other = getenv("KJOULE_REPLAY_OTHER_SAVED");
	int own_only = !(other && !strcmp(other, "1"));
	if ((rc = fill_regions(R)) || (rc = apply_snapshot(R, &applied, &exact, own_only)))
		return rc;
	if (applied && !exact && own_only) {
		if ((rc = fill_regions(R)))
			return rc;
		applied = 0;
	}
	if ((rc = relocate(R)) || (rc = load_premem(R)))
		return rc;
	snprintf(R->res.data, sizeof(R->res.data), "%s", exact ? "saved" : applied ? "other_saved" : "fill");
	t1 = mono_s();
	if ((rc = load_function(R)))
		return rc;
	t2 = mono_s();
	if ((rc = prepare_launch(R)))
		return rc;
	if (R->o.verify) /* the checked launch ran on the snapshot's inputs: compare before timing */
		verify_outputs(R, exact);
	if (R->o.cold) {
		CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, R->dev));
		R->flush_bytes = kj_l2_flush_bytes(l2);
		CU(cuMemAlloc(&R->flush, R->flush_bytes));
	}
	if (R->o.warm && (rc = time_mode(R, 0, &R->res.warm)))
		return rc;
	if (R->o.cold && (rc = time_mode(R, 1, &R->res.cold)))
		return rc;
	t3 = mono_s();
	if (R->o.energy && (rc = measure_energy(R)))
		return rc;
	if (R->o.debug) {
		size_t mapped = 0;
		for (size_t g = 0; g < R->nregions; g++)
			mapped += R->regions[g].bytes;
		fprintf(stderr, "kjoule-replay-worker: unique %" PRId64 ": map+fill %.3f s (%zu MiB), module %.3f s, "
				"time %.3f s, energy %.3f s\n", R->o.unique, t1 - t0, mapped >> 20, t2 - t1,
			t3 - t2, mono_s() - t3);
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: kjoule-replay-worker --probe [--device D]\n"
			"       kjoule-replay-worker --db RUN --unique ID [--runs N] [--warmup W]\n"
			"              [--cache warm|cold|both] [--energy [--no-cold-energy]] [--unroll U]\n"
			"              [--energy-seconds S]\n"
			"              [--device D] [--timer cupti|events] [--relocate]\n"
			"       kjoule-replay-worker --db RUN --sequence ITERATION [--ordinals A:B] [--graph [--topology]]\n"
			"              [--runs N]\n"
			"              [--warmup W] [--energy] [--energy-seconds S] [--device D]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct replay R;
	memset(&R, 0, sizeof(R));
	R.o.unique = -1;
	R.o.sequence = -1;
	R.o.seq_last = INT64_MAX;
	R.o.runs = 100;
	R.o.warmup = 10;
	R.o.warm = 1;
	R.o.cold = 1;
	R.o.unroll = 100;
	R.o.energy_s = 2.0;
	R.o.use_cupti = 1;
	R.o.hang_s = 10.0;
	R.o.debug = getenv("KJ_REPLAY_DEBUG") != NULL;
	report_crashes();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--probe")) {
			R.o.probe = 1;
		} else if (!strcmp(a, "--energy")) {
			R.o.energy = 1;
		} else if (!strcmp(a, "--no-cold-energy")) {
			R.o.no_cold_energy = 1;
		} else if (!strcmp(a, "--pace-duty") && v) {
			R.o.pace_duty = atof(v);
			i++;
		} else if (!strcmp(a, "--relocate")) {
			R.o.relocate = 1;
		} else if (!strcmp(a, "--verify")) {
			R.o.verify = 1;
		} else if (!strcmp(a, "--graph")) {
			R.o.graph = 1;
		} else if (!strcmp(a, "--topology")) {
			R.o.topology = 1;
		} else if (!strcmp(a, "--no-pace")) {
			R.o.no_pace = 1;
		} else if (v && !strcmp(a, "--ordinals")) {
			char *colon = NULL;
			R.o.seq_first = strtoll(v, &colon, 10);
			R.o.seq_last = colon && *colon == ':' ? strtoll(colon + 1, NULL, 10) : R.o.seq_first;
			i++;
		} else if (v && !strcmp(a, "--sequence")) {
			R.o.sequence = strtoll(v, NULL, 10), i++;
		} else if (v && !strcmp(a, "--db")) {
			R.o.db = v, i++;
		} else if (v && !strcmp(a, "--unique")) {
			int64_t *nu = realloc(R.o.uniques, (R.o.nuniques + 1) * sizeof(*nu));
			if (!nu)
				return 1;
			R.o.uniques = nu;
			R.o.uniques[R.o.nuniques++] = strtoll(v, NULL, 10), i++;
		} else if (v && !strcmp(a, "--fill")) {
			R.o.fill = !strcmp(v, "smallint") ? 1 : !strcmp(v, "zero") ? 2 : 0, i++;
		} else if (v && !strcmp(a, "--hang-seconds")) {
			R.o.hang_s = atof(v), i++;
		} else if (v && !strcmp(a, "--runs")) {
			R.o.runs = atoi(v), i++;
		} else if (v && !strcmp(a, "--warmup")) {
			R.o.warmup = atoi(v), i++;
		} else if (v && !strcmp(a, "--unroll")) {
			R.o.unroll = atoi(v), i++;
		} else if (v && !strcmp(a, "--device")) {
			R.o.device = atoi(v), i++;
		} else if (v && !strcmp(a, "--energy-seconds")) {
			R.o.energy_s = atof(v), i++;
		} else if (v && !strcmp(a, "--timer")) {
			R.o.use_cupti = strcmp(v, "events") != 0, i++;
		} else if (v && !strcmp(a, "--cache")) {
			R.o.warm = !strcmp(v, "warm") || !strcmp(v, "both");
			R.o.cold = !strcmp(v, "cold") || !strcmp(v, "both");
			if (!R.o.warm && !R.o.cold)
				return usage();
			i++;
		} else {
			return usage();
		}
	}
	if (R.o.probe)
		return probe(R.o.device);
	if (R.o.db && R.o.sequence >= 0 && R.o.runs >= 1 && R.o.warmup >= 0)
		return sequence_run(&R, R.o.sequence, R.o.graph) ? 1 : 0;
	if (!R.o.db || !R.o.nuniques || R.o.runs < 1 || R.o.warmup < 0 || R.o.unroll < 1)
		return usage();
	int rc = worker_setup(&R);
	for (size_t u = 0; u < R.o.nuniques; u++) {
		struct kj_replay_result setup_res = R.res;
		memset(&R.res, 0, sizeof(R.res));
		R.o.unique = R.o.uniques[u];
		R.res.unique_id = R.o.unique;
		snprintf(R.res.status, sizeof(R.res.status), "ok");
		R.res.dynamic_mj_per_launch = NAN;
		printf("KJ_BEGIN\tunique=%" PRId64 "\n", R.o.unique);
		fflush(stdout);
		if (rc) { /* no context: every kernel fails the same way */
			R.res = setup_res;
			R.res.unique_id = R.o.unique;
			if (!strcmp(R.res.status, "ok") || !R.res.status[0])
				kj_replay_result_set(&R.res, "failed", "worker setup: %s", kj_strerror(rc));
			kj_replay_emit(stdout, &R.res);
			continue;
		}
		int krc = replay_one(&R);
		if (krc && (!strcmp(R.res.status, "ok") || !strcmp(R.res.status, "relocated")))
			kj_replay_result_set(&R.res, "failed", "%s", kj_strerror(krc));
		/* a sticky error poisons the context: report, then leave the rest to a new worker */
		if (krc && !R.poisoned && cuCtxSynchronize() != CUDA_SUCCESS)
			R.poisoned = 1;
		kj_replay_emit(stdout, &R.res);
		if (R.poisoned)
			return 3;
		kernel_close(&R);
	}
	if (R.ctx)
		cuDevicePrimaryCtxRelease(R.dev);
	kj_db_close(R.db);
	return 0;
}
