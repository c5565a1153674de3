/* kjoule replay RUN: options in, the replay library (src/replay/kj_replay_run.h) called, exit code
 * out. The work (worker batches, the kept iteration, storage, reports) is kj_replay_kernels and
 * kj_replay_sequence; docs/replay.md describes the method. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_replay_pace.h"
#include "kj_replay_run.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule replay RUN.kjdb [--runs N] [--warmup W] [--cache warm|cold|both]\n"
		"                     [--energy] [--unroll U] [--energy-seconds S] [--kernel PATTERN]\n"
		"                     [--json] [--jobs 1] [--device D] [--timeout S] [--any-arch]\n"
		"                     [--timer cupti|events] [--relocate] [--verify] [--no-sequence]\n"
		"                     [--all] [--budget SECONDS]\n"
		"       kjoule replay RUN.kjdb --sequence [--iteration I] [--graph] [--no-topology] [--runs N]\n"
		"                     [--energy] [--back-to-back] [--dry-run]\n"
		"Re-launches each captured unique kernel alone (same binary, same parameters) in its own\n"
		"worker process and reports latency and, with --energy, energy per launch (warm/cold L2).\n"
		"Results go into the run's replay_kernel / replay_energy(_cold) tables. docs/replay.md.\n"
		"  --runs N         timed launches per cache mode (100)     --warmup W  untimed first (10)\n"
		"  --cache MODE     warm, cold (L2 flushed before each launch) or both (both)\n"
		"  --energy         CUDA graph of U launches (--unroll, 100) measured over >= S seconds;\n"
		"                   with the cold cache also L2-flush+launch pairs less the flushes alone\n"
		"                   (default: 40 s shared among the windows, 0.3..2 s each; cold windows\n"
		"                   for the largest kernels while they stay >= 0.5 s)\n"
		"  --all            energy for every kernel; by default only the kernels that hold 97 %% of\n"
		"                   the measured iterations' kernel time get it (warm-up and autotuning\n"
		"                   kernels: latency only); compare extrapolates the rest and says so\n"
		"  --budget S       bounds the whole replay (with --energy: 110 s unless given, or --all or\n"
		"                   --kernel; 0: no bound): the kernels' replays start within 0.7 S where\n"
		"                   the run keeps an iteration and S >= 34 (10-60 s kept for its replay,\n"
		"                   which comes after them; else within S), what is left listed as skipped;\n"
		"                   energy windows share at most 0.4 S; the iteration is replayed only with\n"
		"                   10 s left and stopped at S\n"
		"  --kernel PATTERN glob or substring of the mangled or demangled name\n"
		"  --timeout S      a worker silent longer is killed, its kernel marked failed (60)\n"
		"  --any-arch       replay even when this GPU's architecture differs from the captured one\n"
		"  --relocate       do not re-create original addresses: relocate pointers (testing)\n"
		"  --verify         run each kernel once on the buffers saved by `kjoule run --snapshot`\n"
		"                   and compare its outputs with the saved ones, bit for bit\n"
		"  --sequence       replay one captured iteration (kjoule run --params-iteration) in order,\n"
		"                   on its streams with its event dependencies; --graph: also as one CUDA\n"
		"                   graph (energy per iteration with --energy); results in replay_sequence\n"
		"  --topology       with --graph (the default when the iteration is graph-launched): also\n"
		"                   its graph launches rebuilt with their recorded nodes and edges, timed,\n"
		"                   with energy, each kernel node timed where it runs; node kinds that\n"
		"                   cannot be rebuilt are named. --no-topology: the linear chain only\n"
		"  --back-to-back   energy with launches back to back only. By default a kernel that\n"
		"                   runs into the power cap back to back is measured again spaced out by\n"
		"                   idle (at the program's GPU busy share where the program ran capped,\n"
		"                   else 1:1, then 1:3; method \"paced 1:R\"), and where the program's GPU\n"
		"                   waited between the iteration's graph launches (a host synchronisation\n"
		"                   after each) the iteration runs one launch per program period, as the\n"
		"                   program ran them\n"
		"  --dry-run        with --sequence: say what would be replayed (the iteration, its graph\n"
		"                   topology) without a GPU, and stop\n"
		"  --no-sequence    per-kernel replay only: without it, a run that holds an iteration\n"
		"                   (kjoule run keeps one by default) is also replayed --sequence --graph,\n"
		"                   which times every kernel where the iteration ran it\n"
		"Environment: KJ_REPLAY_WORKER names the worker (default: beside the kjoule binary).\n");
}

/* The worker's path: $KJ_REPLAY_WORKER, else beside this binary (or its build-tree place). */
static int find_worker(char *buf, size_t len)
{
	static const char *const rel[] = {"kjoule-replay-worker", "src/replay/worker/kjoule-replay-worker",
					  "../libexec/kjoule/kjoule-replay-worker", NULL};
	return kj_cli_find_beside("KJ_REPLAY_WORKER", rel, X_OK, buf, len);
}

static int parse_args(int argc, char **argv, struct kj_replay_opts *o)
{
	int budget_given = 0;
	memset(o, 0, sizeof(*o));
	o->runs = 100;
	o->warmup = 10;
	o->cache = "both";
	o->unroll = 100;
	o->jobs = 1;
	o->timeout_s = 60;
	o->nvml_index = -1;
	o->energy_s = 2.0;
	o->iteration = -1;
	o->topology = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "--energy")) {
			o->energy = 1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--any-arch")) {
			o->any_arch = 1;
		} else if (!strcmp(a, "--relocate")) {
			o->relocate = 1;
		} else if (!strcmp(a, "--verify")) {
			o->verify = 1;
		} else if (!strcmp(a, "--sequence")) {
			o->sequence = 1;
		} else if (!strcmp(a, "--no-sequence")) {
			o->no_sequence = 1;
		} else if (!strcmp(a, "--graph")) {
			o->graph = 1;
		} else if (!strcmp(a, "--topology")) {
			o->topology = 1;
		} else if (!strcmp(a, "--no-topology")) {
			o->topology = 0;
		} else if (!strcmp(a, "--back-to-back")) {
			o->back_to_back = 1;
		} else if (!strcmp(a, "--dry-run")) {
			o->dry_run = 1;
		} else if (!strcmp(a, "--all")) {
			o->all = 1;
		} else if (v && !strcmp(a, "--budget")) {
			char *end;
			o->budget_s = strtod(v, &end), i++;
			budget_given = 1;
			if (*end || end == v || !(o->budget_s >= 0)) {
				fprintf(stderr, "kjoule replay: --budget wants seconds >= 0 (0: no bound), got '%s'\n", v);
				return 2;
			}
		} else if (v && !strcmp(a, "--iteration")) {
			o->iteration = atoll(v), i++;
		} else if (v && !strcmp(a, "--runs")) {
			o->runs = atoi(v), i++;
		} else if (v && !strcmp(a, "--warmup")) {
			o->warmup = atoi(v), i++;
		} else if (v && !strcmp(a, "--cache")) {
			o->cache = v, i++;
		} else if (v && !strcmp(a, "--unroll")) {
			o->unroll = atoi(v), i++;
		} else if (v && !strcmp(a, "--energy-seconds")) {
			o->energy_s = atof(v), i++;
			o->energy_s_given = 1;
		} else if (v && !strcmp(a, "--kernel")) {
			o->pattern = v, i++;
		} else if (v && !strcmp(a, "--jobs")) {
			o->jobs = atoi(v), i++;
		} else if (v && !strcmp(a, "--device")) {
			o->device = atoi(v), i++;
		} else if (v && !strcmp(a, "--timeout")) {
			o->timeout_s = atoi(v), i++;
		} else if (v && !strcmp(a, "--timer")) {
			o->timer = v, i++;
		} else if (a[0] == '-') {
			fprintf(stderr, "kjoule replay: unknown or incomplete option '%s'\n", a);
			return 2;
		} else if (!o->run) {
			o->run = a;
		} else {
			fprintf(stderr, "kjoule replay: one run database only ('%s')\n", a);
			return 2;
		}
	}
	if (!o->run || o->runs < 1 || o->warmup < 0 || o->unroll < 1 || o->timeout_s < 1 ||
	    o->energy_s <= 0 ||
	    (strcmp(o->cache, "warm") && strcmp(o->cache, "cold") && strcmp(o->cache, "both")) ||
	    (o->timer && strcmp(o->timer, "cupti") && strcmp(o->timer, "events"))) {
		usage(stderr);
		return 2;
	}
	double ratios[KJ_PACE_RATIOS_MAX];
	size_t nratios;
	char why[256];
	if (kj_pace_ratios(ratios, &nratios, why, sizeof(why))) {
		fprintf(stderr, "kjoule replay: %s\n", why);
		return 2;
	}
	if (o->dry_run && !o->sequence) {
		fprintf(stderr, "kjoule replay: --dry-run goes with --sequence (it says what the iteration's "
				"replay would rebuild)\n");
		return 2;
	}
	if (o->topology == 1 && !o->graph) {
		fprintf(stderr, "kjoule replay: --topology rebuilds the graph launches beside the one-graph "
				"replay: give it with --sequence --graph\n");
		return 2;
	}
	if (o->jobs != 1) {
		kj_warnf("--jobs %d: replays run one at a time on one GPU (timing needs the GPU alone)", o->jobs);
		o->jobs = 1;
	}
	/* a replay with energy of a whole run is bounded unless told otherwise: the kernels inside
	 * the iterations come first, and what the bound leaves out is listed as skipped */
	if (o->energy && !budget_given && !o->all && !o->pattern && !o->sequence && !o->verify) {
		o->budget_s = KJ_REPLAY_ENERGY_BUDGET_S;
		if (!o->json)
			fprintf(stderr, "kjoule replay: --energy: bounded to %.0f s (--budget S sets another bound,"
					" --budget 0 none)\n", o->budget_s);
	}
	return 0;
}

int cmd_replay(int argc, char **argv)
{
	struct kj_replay_watch ot;
	struct kj_replay_opts o;
	sqlite3 *db = NULL;
	char worker[PATH_MAX];
	int rc;

	memset(&ot, 0, sizeof(ot));
	ot.nvml_index = -1;
	if ((rc = parse_args(argc, argv, &o)))
		return rc == 1 ? 0 : rc;
	clock_gettime(CLOCK_MONOTONIC, &o.started);
	/* looked for now, said missing by the library where a worker is needed (not by --dry-run) */
	o.worker_found = find_worker(worker, sizeof(worker)) == 0;
	o.worker = worker;
	/* a dry run writes nothing, so it opens read-only: the run keeps its schema too */
	if (kj_db_open(o.run, !o.dry_run, &db))
		return 1;
	if (o.energy)
		kj_replay_watch_others(&ot, 0);
	if (o.sequence) {
		rc = kj_replay_sequence(&o, db, 0);
		if (o.energy)
			kj_replay_watch_others(&ot, 1);
		kj_db_close(db);
		return rc ? 1 : 0;
	}
	rc = kj_replay_kernels(&o, db);
	ot.nvml_index = o.nvml_index;
	if (o.energy && rc == 0)
		kj_replay_watch_others(&ot, 1);
	kj_db_close(db);
	return rc ? 1 : 0;
}
