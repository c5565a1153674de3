/* kjoule replay RUN: re-launch every captured unique kernel alone, in a worker process each
 * (kjoule-replay-worker, which links libcuda; kjoule does not), store and print the results; then
 * the kept iteration (kj_replay_seq_run.c). docs/replay.md describes the method. */
#include "kj_replay_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_clock_state.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_gpu_watch.h"
#include "kj_replay.h"
#include "kj_replay_host.h"
#include "kj_replay_run_internal.h"
#include "kj_store_r_plan.h"

/* The shortest energy window of a kernel when the pool is shared out: three counter updates */
#define KJ_REPLAY_ENERGY_MIN_S 0.3
/* Kernels get cold-L2 energy only while the windows stay this long: that energy is the difference
 * of two windows (flush and launch, flush alone), each carrying the flush's energy */
#define KJ_REPLAY_COLD_ENERGY_MIN_S 0.5
/* the warm-up before each energy window of a worker after its first (worker_timing.c) */
#define KJ_REPLAY_ENERGY_WARMUP_S 0.25

/* Under --budget, the kept iteration's replay starts only with this many seconds left; the
 * per-kernel replays leave it this share of the budget (at most KJ_REPLAY_SEQ_RESERVE_MAX_S, and
 * none where the share is under KJ_REPLAY_SEQ_MIN_S). */
#define KJ_REPLAY_SEQ_MIN_S 10
#define KJ_REPLAY_SEQ_RESERVE 0.3
#define KJ_REPLAY_SEQ_RESERVE_MAX_S 60.0

/* Seconds since the replay command started. */
double kj_replay_elapsed_s(const struct kj_replay_opts *o)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - o->started.tv_sec) + (t.tv_nsec - o->started.tv_nsec) * 1e-9;
}

/* The worker's --probe: the KJ_DEVICE line of the GPU it opened. */
struct probe_ctx {
	struct kj_replay_device *dev;
	int got_device;
};

static void on_probe_line(const char *line, void *arg)
{
	struct probe_ctx *c = arg;
	if (kj_replay_parse_device(line, c->dev) == 1)
		c->got_device = 1;
}

/* replay --energy on a shared GPU: NVML's energy is the whole GPU's, so other processes listed
 * before or after the measurement are named (pids as the driver reports them). Cheap: one listing
 * each time. ot accumulates distinct pids over calls; last prints the verdict. */
void kj_replay_watch_others(struct kj_replay_watch *ot, int last)
{
	int64_t p[32];
	int n = 0;
	char why[400];
	int g[32];
	int st = kj_gpu_watch_others_now(p, g, 32, &n, why, sizeof(why));
	if (st == KJ_WATCH_BLIND && !ot->blind) {
		ot->blind = 1;
		snprintf(ot->why, sizeof(ot->why), "%s", why);
	}
	for (int i = 0; i < n; i++) {
		int dup = 0;
		for (int j = 0; j < ot->n; j++)
			dup |= ot->pids[j] == p[i];
		if (!dup && ot->n < 32) {
			ot->gpus[ot->n] = g[i];
			ot->pids[ot->n++] = p[i];
		}
	}
	if (!last)
		return;
	if (ot->blind) {
		kj_warnf("replay --energy: %s; the energies per launch may include their work", ot->why);
	} else if (ot->n) {
		/* once the replay's GPU is known, only the processes on it share its energy counter */
		char list[400];
		size_t k = 0;
		int shown = 0;
		for (int i = 0; i < ot->n && k < sizeof(list); i++)
			if (ot->nvml_index < 0 || ot->gpus[i] == ot->nvml_index)
				k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%lld", shown++ ? ", " : "",
						      (long long)ot->pids[i]);
		if (shown && ot->nvml_index >= 0)
			kj_warnf("replay --energy: shared GPU: other processes (pids %s) were on the replay's GPU "
				 "(NVML %d) around the energy measurement; the energies per launch include their work",
				 list, ot->nvml_index);
		else if (shown)
			kj_warnf("replay --energy: shared GPU: other processes (pids %s) were on the GPUs around the "
				 "energy measurement; the energies per launch include their work if they shared the "
				 "replay's GPU", list);
	}
}

/* The program's GPU busy share over its measured iterations (their kernel time over the loop's
 * span, first start to last end, at most 1) when its slow power samples there say it ran against the power cap (throttled or partly:
 * more than KJ_CLOCK_CLEAN_FRAC of the readings capped); 0 otherwise, or when unknown. Kernels
 * that run into the cap back to back are then measured again at this duty, so that they meet
 * the cap as they met it in the program (docs/energy.md, "Paced energy under the power cap"). */
static double program_capped_duty(sqlite3 *db, const struct kj_replay_plan *plan)
{
	struct kj_clock_state st;
	int64_t span_ns = plan->iter_last_ns - plan->iter_first_ns;
	if (span_ns <= 0 || plan->iter_ns <= 0 ||
	    kj_clock_state_program(db, -1, plan->iter_first_ns, plan->iter_last_ns, &st) || !st.recorded ||
	    st.readings <= 0 || (double)st.throttled <= KJ_CLOCK_CLEAN_FRAC * (double)st.readings)
		return 0;
	double duty = (double)plan->iter_ns / (double)span_ns;
	kj_warnf("replay --energy: the program ran against the power cap (%lld of %lld readings capped, SM clock "
		 "median %.0f MHz) at a GPU busy share of %.2f: kernels capped back to back are measured again at it",
		 (long long)st.throttled, (long long)st.readings, st.sm_clock_median_mhz, duty > 1 ? 1.0 : duty);
	return duty > 1 ? 1.0 : duty;
}

/* The per-kernel replay and then the kept iteration's (kj_replay_run.h). */
int kj_replay_kernels(struct kj_replay_opts *o, sqlite3 *db)
{
	struct kj_replay_plan plan;
	struct kj_replay_device dev;
	int status, timed_out, rc = KJ_EIO;

	memset(&plan, 0, sizeof(plan));
	snprintf(plan.run_path, sizeof(plan.run_path), "%s", o->run);
	plan.cache_warm = strcmp(o->cache, "cold") != 0;
	plan.cache_cold = strcmp(o->cache, "warm") != 0;
	if ((rc = kj_replay_plan_load(db, o->pattern, &plan)))
		goto out;
	/* runs made before snapshot phases existed have none */
	if (o->verify && !kj_store_r_has_after_snapshot(db)) {
		kj_errorf("%s holds no after-launch buffer snapshots: --verify compares outputs with them; "
			  "trace the program again with `kjoule run --snapshot`", o->run);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	if (!o->worker_found) {
		kj_errorf("replay worker not found (%s); build kjoule with CUDA (KJ_WITH_CUDA) or set "
			  "KJ_REPLAY_WORKER", o->worker);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	/* energies measured on kjoule's fill are not the program's: say so once, and the cure */
	if (o->energy && !kj_db_has_snapshot(db))
		kj_warnf("replay --energy: %s holds no buffer snapshots: the kernels run on kjoule's random "
			 "fill, and operand values move a kernel's power by tens of percent; trace with "
			 "`kjoule run --snapshot` to measure them on the program's own buffers (docs/energy.md)",
			 o->run);
	/* the GPU we are on, against the one the run was captured on */
	{
		char devs[16];
		snprintf(devs, sizeof(devs), "%d", o->device);
		char *pargv[] = {(char *)o->worker, "--probe", "--device", devs, NULL};
		struct probe_ctx c = {&dev, 0};
		memset(&dev, 0, sizeof(dev));
		if (kj_replay_host_run(pargv, 60, on_probe_line, &c, &status, &timed_out) || !c.got_device) {
			kj_errorf("no usable GPU for replay (the worker's probe of device %d failed)", o->device);
			rc = KJ_ENODEV;
			goto out;
		}
		o->nvml_index = dev.nvml_index;
	}
	if (plan.captured_cc_major >= 0 &&
	    (plan.captured_cc_major != dev.cc_major || plan.captured_cc_minor != dev.cc_minor)) {
		if (!o->any_arch) {
			kj_errorf("%s was captured on %s (sm_%d%d); this GPU is %s (sm_%d%d): its kernels are "
				  "binaries for the captured architecture. Replay on a sm_%d%d GPU, or re-trace "
				  "here (`kjoule run`); --any-arch tries anyway",
				  o->run, plan.captured_gpu[0] ? plan.captured_gpu : "another GPU",
				  plan.captured_cc_major, plan.captured_cc_minor, dev.name, dev.cc_major,
				  dev.cc_minor, plan.captured_cc_major, plan.captured_cc_minor);
			rc = KJ_EUNSUP;
			goto out;
		}
		kj_warnf("captured on sm_%d%d, replaying on sm_%d%d (--any-arch)", plan.captured_cc_major,
			 plan.captured_cc_minor, dev.cc_major, dev.cc_minor);
	}
	if ((rc = kj_replay_plan_rank(db, &plan, o->energy, o->all)))
		goto out;
	if (o->energy && !o->back_to_back)
		o->pace_duty = program_capped_duty(db, &plan);
	/* with the cold cache a kernel's energy is measured warm, then with its data out of L2
	 * (flush and launch pairs, then the flushes alone): three windows */
	size_t ne = 0, ncold = 0;
	for (size_t i = 0; i < plan.n; i++)
		ne += plan.items[i].energy && !plan.items[i].skip[0];
	ncold = plan.cache_cold ? ne : 0;
	if (o->energy && !o->energy_s_given) {
		/* 40 s of energy windows shared out, 0.3 to 2 s each: the counter moves every 100 ms;
		 * under --budget at most 40 % of it, leaving the rest to latencies and the iteration.
		 * The cold windows go to the largest kernels first, as many as the pool holds */
		double pool = o->budget_s > 0 && 0.4 * o->budget_s < 40.0 ? 0.4 * o->budget_s : 40.0;
		/* each window also warms up for KJ_REPLAY_ENERGY_WARMUP_S */
		double windows = pool / (KJ_REPLAY_COLD_ENERGY_MIN_S + KJ_REPLAY_ENERGY_WARMUP_S);
		if (ncold && (double)(ne + 2 * ncold) > windows)
			ncold = windows > (double)ne ? (size_t)((windows - (double)ne) / 2) : 0;
		o->energy_s = ne ? pool / (double)(ne + 2 * ncold) - KJ_REPLAY_ENERGY_WARMUP_S : 2.0;
		o->energy_s = o->energy_s < KJ_REPLAY_ENERGY_MIN_S ? KJ_REPLAY_ENERGY_MIN_S
			    : o->energy_s > 2.0 ? 2.0 : o->energy_s;
	}
	for (size_t i = 0, taken = 0; i < plan.n; i++) /* plan order: largest share first */
		if (plan.items[i].energy && !plan.items[i].skip[0] && taken < ncold) {
			plan.items[i].energy = 2;
			taken++;
		}
	if (!o->json) {
		size_t ni = 0;
		char cold[160] = "";
		for (size_t i = 0; i < plan.n; i++)
			ni += plan.items[i].iter_launches > 0;
		if (o->energy && ncold == ne && ne)
			snprintf(cold, sizeof(cold), ", each also with cold L2 (two windows more)");
		else if (o->energy && ncold)
			snprintf(cold, sizeof(cold), ", the largest %zu also with cold L2 (two windows more each, as many as"
				 " keep windows of %.1f s or more; --energy-seconds S measures all)", ncold,
				 KJ_REPLAY_COLD_ENERGY_MIN_S);
		else if (o->energy && plan.cache_cold && ne)
			snprintf(cold, sizeof(cold), ", none with cold L2 (two windows more each would take windows under"
				 " %.1f s; --energy-seconds S measures all)", KJ_REPLAY_COLD_ENERGY_MIN_S);
		char bound[64] = "";
		if (o->budget_s > 0)
			snprintf(bound, sizeof(bound), "; all within %.0f s", o->budget_s);
		fprintf(stderr, "kjoule replay: %zu unique kernels, %zu of them inside the iterations ('%s')"
			"%s; energy for %zu at %.2g s a window%s%s%s\n", plan.n, ni,
			plan.iteration_range[0] ? plan.iteration_range : "none: the whole run",
			ni ? ", replayed first" : "", o->energy ? ne : 0, o->energy ? o->energy_s : 0.0, cold,
			o->energy && !o->all && ne < plan.n ? "; --all measures every kernel's" : "", bound);
	}
	/* the kept iteration is replayed after the kernels; under --budget, part of it is kept for that */
	const int then_sequence = !o->pattern && !o->verify && !o->no_sequence &&
				  kj_store_r_has_sequence(db);
	if (o->budget_s > 0 && then_sequence) {
		o->seq_reserve_s = KJ_REPLAY_SEQ_RESERVE * o->budget_s;
		if (o->seq_reserve_s > KJ_REPLAY_SEQ_RESERVE_MAX_S)
			o->seq_reserve_s = KJ_REPLAY_SEQ_RESERVE_MAX_S;
		if (o->seq_reserve_s < KJ_REPLAY_SEQ_MIN_S) /* too little for it: the kernels take it all */
			o->seq_reserve_s = 0;
	}
	if ((rc = kj_replay_batches(o, db, &plan)))
		goto out;
	{
		/* what was not replayed, and why, counted by reason */
		size_t nskip = 0;
		for (size_t i = 0; i < plan.n; i++)
			nskip += plan.items[i].skip[0] != 0;
		if (nskip && !o->json) {
			fprintf(stderr, "kjoule replay: %zu kernel(s) not replayed:\n", nskip);
			for (size_t i = 0; i < plan.n; i++) {
				const char *why = plan.items[i].skip;
				int first = 1;
				size_t count = 0;
				if (!why[0])
					continue;
				for (size_t j = 0; j < plan.n; j++) {
					if (j < i && !strcmp(plan.items[j].skip, why))
						first = 0;
					count += !strcmp(plan.items[j].skip, why);
				}
				if (first)
					fprintf(stderr, "  %zu x %s\n", count, why);
			}
		}
	}
	/* what the batches did not store already: the kernels skipped, or never reached */
	unsigned char *rest = calloc(plan.n + 1, 1);
	for (size_t i = 0; rest && i < plan.n; i++)
		rest[i] = !plan.items[i].stored;
	rc = rest ? kj_replay_plan_store_some(db, &plan, rest) : kj_replay_plan_store(db, &plan);
	free(rest);
	if (rc)
		goto out;
	if (o->json) {
		char *text = kj_replay_report_json(&plan);
		if (!text) {
			kj_errorf("out of memory writing JSON");
			rc = KJ_ENOMEM;
			goto out;
		}
		printf("%s\n", text);
		free(text);
	} else {
		printf("kjoule replay %s on %s (sm_%d%d), %d runs, cache %s%s\n", o->run, dev.name,
		       dev.cc_major, dev.cc_minor, o->runs, o->cache, o->energy ? ", energy" : "");
		kj_replay_report_print(stdout, &plan);
	}
	rc = 0;
	/* the kept iteration too: in-sequence kernel times, eager and graph iteration */
	double left_s = o->budget_s - kj_replay_elapsed_s(o);
	if (then_sequence && o->budget_s > 0 && left_s < KJ_REPLAY_SEQ_MIN_S) {
		kj_warnf("the kept iteration was not replayed: %.0f s of the --budget of %g s were left, under the"
			 " %d s a sequence replay needs at least; `kjoule replay %s --sequence --graph` replays it",
			 left_s > 0 ? left_s : 0, o->budget_s, KJ_REPLAY_SEQ_MIN_S, o->run);
	} else if (then_sequence) {
		o->graph = 1;
		if (!o->json)
			printf("\n");
		if (kj_replay_sequence(o, db, o->json))
			kj_warnf("the per-kernel results are stored; the sequence replay failed (above). "
				 "`kjoule replay %s --sequence --graph` tries it alone", o->run);
	}
out:
	kj_replay_plan_free(&plan);
	return rc;
}
