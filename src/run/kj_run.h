/* kjoule run's work around the program it traces: the tracing environment the program starts
 * with, and, once it has ended, its run database written whole (trace files ingested, power
 * samples and the watch for other processes, the run's facts) and renamed into place. The
 * command (src/cli/cmd_run*.c) parses the options and starts, signals and waits for the program. */
#ifndef KJ_RUN_H
#define KJ_RUN_H

#include <stdint.h>
#include <sys/types.h>

#include "kj_capture_spec.h"
#include "kj_energy.h"
#include "kj_ingest.h"

/** kjoule run's options (parsed by the CLI: src/cli/cmd_run_opts.c). */
struct kj_run_opts {
	const char *output;
	int params_k;
	int api;
	int snapshot_mb; /* 0: no buffer snapshots */
	int snapshot_graphs; /* --snapshot-graphs: graphs' buffers only, once before their first launch */
	int copy_data_kb; /* keep the bytes of host-to-device copies up to this size (KiB); 0: none */
	int force;
	int params_iteration;
	int runs, warmup;
	const char *iteration_range;
	int power;
	int power_interval_ms;
	int watch_interval_ms; /* 0: do not watch for other processes */
	struct kj_capture_spec capture; /* --capture (mode KJ_CAPTURE_NONE: none) */
	int capture_attached; /* --capture-attached: CUPTI stays in the program outside the window */
	int nccl_calls; /* record NCCL's calls (libkjoule_nccl.so preloaded); 0: --no-nccl-calls */
	char **cmd;
};

/**
 * @brief Set the environment the program starts with: with inject (the injection library's
 * path; NULL: untraced) the tracing variables (spool directory, parameters, API, snapshots,
 * copies, --capture) and, with nccl (libkjoule_nccl.so's path; NULL: none), that library put
 * first in LD_PRELOAD (before any value the user set); always NVLink multicast off unless the
 * user chose (docs/multi-gpu.md).
 */
void kj_run_env(const struct kj_run_opts *o, const char *inject, const char *nccl, const char *spool);

/** What the series of runs of the program did (filled by the command as it runs them). */
struct kj_run_result {
	const char *started_iso; /* start, ISO 8601 UTC */
	int64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	int status;               /* waitpid's status of the last run */
	int exit_code;            /* the program's: its exit status, 128 + signal, or 1 */
	pid_t pid;                /* the last run's process */
	int interrupts;           /* SIGINT/SIGTERM/SIGHUP received */
	int descendants_left;     /* processes it started still ran 10 s after it ended */
	int traced;               /* the injection library was found */
	const char *nccl_calls;   /* meta nccl_calls: "on" (preloaded), "off" (--no-nccl-calls),
	                           * "missing" (libkjoule_nccl.so not found) */
	int done_runs;            /* runs that ended (of o->warmup + o->runs) */
	const int64_t *run_span;  /* start and end of each run, 2 a run */
	const pid_t *run_pid;     /* each run's process */
};

/**
 * @brief Write the run database of o->output: a temporary file in outdir named after base,
 * filled in one transaction (spool's trace files ingested, sampler's samples and watch if not
 * NULL, the run's facts, problems and, for a series, each run as a range), then renamed over
 * o->output. stats and capture receive what was ingested. Messages say what failed.
 * @return 0, or a negative KJ_E* code (no output written; the spool is left for kjoule ingest).
 */
int kj_run_record(const struct kj_run_opts *o, const struct kj_run_result *r, struct kj_sampler *sampler,
		  const char *spool, const char *outdir, const char *base, struct kj_ingest_stats *stats,
		  struct kj_capture_summary *capture);

/** @brief Remove the spool directory dir and the files in it. @return rmdir's 0 or -1. */
int kj_run_spool_remove(const char *dir);

#endif
