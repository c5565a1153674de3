/* kjoule run's options: parsed and checked before the program starts, so bad input is refused
 * (exit 2, naming the option) with nothing started. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_run.h"
#include "kj_cli.h"
#include "kj_error.h"
#include "kj_ingest.h"

void kj_run_usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule run [-o RUN.kjdb] [--params K | --no-params] [--api[=all]] [--runs N --warmup W]\n"
		"                  [--params-iteration N|auto|none] [--iteration-range NAME] [--snapshot[=MB]]\n"
		"                  [--capture NAME[@FIRST:COUNT] [--capture-attached] | --capture cuda-profiler-api]\n"
		"                  [--snapshot-graphs[=MB]] [--copy-data KB]\n"
		"                  [--no-power] [--no-watch] [--watch-interval-ms N]\n"
		"                  [--power-interval-ms N] [--no-nccl-calls] [--force] -- CMD [ARGS...]\n"
		"Runs CMD (no shell) with kjoule's CUPTI injection library and writes one run database.\n"
		"  -o PATH             output (default kjoule.kjdb); refused if it exists, unless --force\n"
		"  --params K          capture parameters of the first K launches of each unique kernel (1)\n"
		"  --no-params         activity only: no launch parameters (cheapest; no replay later)\n"
		"  --api               also record the CUDA driver and runtime API calls, all but ~45\n"
		"                      query functions (cudaGetDevice, cuCtxGetDevice, ...: docs/tracing.md)\n"
		"  --api=all           every API call, the queries too (they cost ~0.2 us each)\n"
		"  --params-iteration N|auto|none  keep every launch's parameters in the N-th iteration\n"
		"                      (1-based) and its operations in order, for in-sequence replay;\n"
		"                      auto (default): the middle one, when the iteration range repeats\n"
		"  --capture NAME[@FIRST:COUNT]  trace only instances FIRST..FIRST+COUNT-1 of the NVTX range\n"
		"                      NAME (counted from 0, as --skip counts: FIRST instances are skipped;\n"
		"                      default @0:1); outside them only each instance's start and end and\n"
		"                      the power samples are kept (docs/tracing.md, capture ranges)\n"
		"  --capture-attached  with --capture NAME@...: keep CUPTI in the program outside the window\n"
		"                      (by default it is taken out once the program has settled and put\n"
		"                      back one instance before the window: CUPTI costs every CUDA call)\n"
		"  --capture cuda-profiler-api  trace only from cudaProfilerStart to cudaProfilerStop\n"
		"  --iteration-range NAME  the NVTX range that marks iterations, for every analysis\n"
		"                      (default: the top-level user range holding the most GPU work)\n"
		"  --snapshot[=MB]     save the device buffers each launch group's first launch points to,\n"
		"                      before and after it (for `kjoule replay --verify`); at most MB MiB\n"
		"                      in all (default 1024). Synchronises around those launches. Graph\n"
		"                      kernels' buffers are saved once, before the first graph launch after\n"
		"                      their capture: sequence replays then run on the program's data\n"
		"  --snapshot-graphs[=MB]  the graphs' buffers alone (one copy per graph, no eager\n"
		"                      launch synchronised; as many as fit in MB MiB, default 4096): what an\n"
		"                      energy-true replay of a graph-launched program needs (docs/replay.md)\n"
		"  --copy-data KB      keep the bytes of each host-to-device copy of up to KB KiB (default\n"
		"                      64; 0: none), 256 MiB in all: a replayed iteration copies what the\n"
		"                      program copied (token ids, positions, block tables of decode loops)\n"
		"  --no-nccl-calls     do not record NCCL's calls (by default libkjoule_nccl.so is put\n"
		"                      first in LD_PRELOAD and records each collective's and send/recv's\n"
		"                      count, type and communicator size: compare's NCCL bytes and bus\n"
		"                      bandwidth per rank; docs/multi-gpu.md)\n"
		"  --no-power          do not sample GPU power and energy\n"
		"  --no-watch          do not list the other processes on the GPUs (docs/energy.md)\n"
		"  --watch-interval-ms N  list the processes on the GPUs every N ms (default 200)\n"
		"  --runs N --warmup W run CMD W+N times in one trace; each timed run is an iteration\n"
		"                      (NVTX-like range 'kjoule.run', warm-ups 'kjoule.warmup')\n"
		"SIGINT, SIGTERM and SIGHUP reach CMD and the database is still written; a second\n"
		"SIGINT stops waiting, keeps the trace files and names the kjoule ingest command.\n"
		"Exits with CMD's exit code (127: CMD not found, 128+N: CMD killed by signal N).\n");
}

/* --capture's value, once per run. */
static int parse_capture(const char *text, struct kj_run_opts *o)
{
	char why[400], had[320];
	if (o->capture.mode != KJ_CAPTURE_NONE) {
		kj_capture_format(&o->capture, had, sizeof(had));
		kj_errorf("run: --capture given twice ('%s' and '%s'): one capture range per run", had, text);
		return -1;
	}
	if (kj_capture_parse(text, &o->capture, why, sizeof(why)) != 0) {
		kj_errorf("run: --capture %s", why);
		return -1;
	}
	return 0;
}

/* --capture-attached means something only beside an NVTX --capture range. */
static int check_capture_attached(const struct kj_run_opts *o)
{
	if (o->capture_attached && o->capture.mode != KJ_CAPTURE_NVTX) {
		kj_errorf("run: --capture-attached goes with --capture NAME[@FIRST:COUNT] (CUPTI is taken out "
			  "of the program only outside such a window)");
		return -1;
	}
	return 0;
}

int kj_run_parse(int argc, char **argv, struct kj_run_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = "kjoule.kjdb";
	o->params_k = 1;
	o->copy_data_kb = 64;
	o->params_iteration = KJ_ITERATION_AUTO;
	o->power = 1;
	o->power_interval_ms = 5;
	o->watch_interval_ms = 200;
	o->runs = 1;
	o->nccl_calls = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			o->cmd = argv + i + 1;
			return argv[i + 1] ? check_capture_attached(o) : -1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			kj_run_usage(stdout);
			exit(0);
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && next) {
			o->output = next;
			i++;
		} else if (!strcmp(a, "--params") && next) {
			char *end;
			long k = strtol(next, &end, 10);
			if (*end || k < 0 || k > 1000000) {
				kj_errorf("run: --params wants a count 0..1000000, got '%s'", next);
				return -1;
			}
			o->params_k = (int)k;
			i++;
		} else if (!strcmp(a, "--no-params")) {
			o->params_k = 0;
		} else if (!strcmp(a, "--copy-data") && next) {
			if (kj_cli_parse_int_range("run", "--copy-data (KiB)", next, 0, 1048576, &o->copy_data_kb))
				return -1;
			i++;
		} else if (!strcmp(a, "--api")) {
			o->api = 1;
		} else if (!strcmp(a, "--api=all")) {
			o->api = 2;
		} else if (!strcmp(a, "--snapshot")) {
			o->snapshot_mb = 1024;
		} else if (!strcmp(a, "--snapshot-graphs")) {
			o->snapshot_mb = 4096;
			o->snapshot_graphs = 1;
		} else if (!strncmp(a, "--snapshot=", 11) || !strncmp(a, "--snapshot-graphs=", 18)) {
			int graphs = !strncmp(a, "--snapshot-graphs=", 18);
			const char *v = a + (graphs ? 18 : 11);
			char *end;
			long mb = strtol(v, &end, 10);
			if (*end || end == v || mb < 1 || mb > 1048576) {
				kj_errorf("run: %s=MB wants 1..1048576 MiB, got '%s'", graphs ? "--snapshot-graphs" : "--snapshot", v);
				return -1;
			}
			o->snapshot_mb = (int)mb;
			o->snapshot_graphs = graphs;
		} else if (!strcmp(a, "--force")) {
			o->force = 1;
		} else if (!strcmp(a, "--no-nccl-calls")) {
			o->nccl_calls = 0;
		} else if (!strcmp(a, "--no-power")) {
			o->power = 0;
		} else if (!strcmp(a, "--no-watch")) {
			o->watch_interval_ms = 0;
		} else if (!strcmp(a, "--watch-interval-ms") && next) {
			if (kj_cli_parse_int_range("run", "--watch-interval-ms", next, 20, 60000, &o->watch_interval_ms))
				return -1;
			i++;
		} else if (!strcmp(a, "--power-interval-ms") && next) {
			o->power_interval_ms = atoi(next);
			if (o->power_interval_ms < 1 || o->power_interval_ms > 10000) {
				kj_errorf("run: --power-interval-ms wants 1..10000, got '%s'", next);
				return -1;
			}
			i++;
		} else if ((!strcmp(a, "--runs") || !strcmp(a, "--warmup")) && next) {
			char *end;
			long v = strtol(next, &end, 10);
			int runs = !strcmp(a, "--runs");
			if (*end || v < (runs ? 1 : 0) || v > 100000) {
				kj_errorf("run: %s wants a count %d..100000, got '%s'", a, runs, next);
				return -1;
			}
			if (runs)
				o->runs = (int)v;
			else
				o->warmup = (int)v;
			i++;
		} else if (!strcmp(a, "--params-iteration") && next) {
			if (kj_cli_parse_iteration("run", next, &o->params_iteration))
				return -1;
			i++;
		} else if ((!strcmp(a, "--capture") && next) || !strncmp(a, "--capture=", 10)) {
			if (parse_capture(a[9] == '=' ? a + 10 : next, o) != 0)
				return -1;
			i += a[9] != '=';
		} else if (!strcmp(a, "--capture-attached")) {
			o->capture_attached = 1;
		} else if (!strcmp(a, "--iteration-range") && next) {
			o->iteration_range = next;
			i++;
		} else if (a[0] != '-') {
			o->cmd = argv + i; /* CMD without "--" */
			return check_capture_attached(o);
		} else {
			kj_errorf("run: unknown or incomplete option '%s'", a);
			return -1;
		}
	}
	return -1;
}
