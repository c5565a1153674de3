/* kjoule-replay-worker: a whole captured iteration (--sequence) replayed in order on its
 * streams with its events, eager and as one CUDA graph, and each kernel timed inside it. */
#include "kj_gpu_harness_cu.h"
#include "worker_seq.h"

/* The iteration as the one step of a graph capture: seq_enqueue on its own streams (forked from
 * the first, which the harness captures); its CUresult kept. */
struct seq_capture {
	struct seq *S;
	CUresult e;
};

static int seq_step(void *ctx, int i, CUstream s)
{
	struct seq_capture *c = ctx;
	(void)i;
	(void)s;
	c->e = seq_enqueue(c->S);
	return c->e == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

/* Replay one captured iteration eagerly and, with graph, as one CUDA graph; prints KJ_SEQ lines. */
int sequence_run(struct replay *R, int64_t iteration, int graph)
{
	struct seq S, P;
	struct kj_replay_seq eager, gr;
	int rc, *used = NULL, moved = 0, prefix = 0, emitted = 0;
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
	worker_nvml_map(R);
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
		apply_snapshot(R, &applied, NULL, 0);
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
		struct seq_capture sc = {&S, CUDA_SUCCESS};
		struct kj_gpu_cu_fail f;
		e = CUDA_SUCCESS;
		if (kj_gpu_cu_graph_capture(S.streams[0], 1, seq_step, &sc, &exec, &f))
			e = sc.e != CUDA_SUCCESS ? sc.e : f.err != CUDA_SUCCESS ? f.err : CUDA_ERROR_UNKNOWN;
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

