/* kjoule replay's work behind the command: the per-kernel replay in batches of worker processes,
 * the kept iteration's (sequence) replay, and the shared-GPU watch around the energy. The command
 * (src/cli/cmd_replay.c) fills struct kj_replay_opts from its options and calls these; they print
 * the reports on stdout and their progress, warnings and errors on stderr. docs/replay.md. */
#ifndef KJ_REPLAY_RUN_H
#define KJ_REPLAY_RUN_H

#include <sqlite3.h>
#include <stdint.h>
#include <time.h>

/** What `kjoule replay` was asked (docs/cli.md names the options and their defaults). */
/** The bound of `replay --energy` on a whole run when no --budget is given (seconds): what a
 *  replay with energy may take on any program (docs/replay.md, "Budget"). */
#define KJ_REPLAY_ENERGY_BUDGET_S 110.0

struct kj_replay_opts {
	const char *run, *pattern, *cache, *timer;
	int runs, warmup, energy, unroll, json, jobs, device, any_arch, relocate, timeout_s, sequence;
	int nvml_index; /* NVML's index of --device, from the worker's probe; -1 until then */
	int graph, verify, no_sequence, all, energy_s_given;
	int topology; /* -1: with --graph when the iteration is graph-launched; 0 never; 1 asked */
	int back_to_back; /* --back-to-back: iteration energy unpaced even where the program paused */
	/* where the program ran against the power cap: its GPU's busy share over the measured
	 * iterations, at which kernels capped back to back are measured again (0: not asked) */
	double pace_duty;
	int dry_run;
	long long iteration;
	double energy_s, budget_s;
	double seq_reserve_s;    /* of --budget, kept for the kept iteration's replay after the kernels */
	struct timespec started; /* the command's start (CLOCK_MONOTONIC): --budget counts from here */
	/* the worker: its path when worker_found, else the path looked for (for the message); the
	 * caller finds it (a missing worker is said only where one is needed) */
	const char *worker;
	int worker_found;
};

/**
 * @brief Replay the run's unique kernels (o->pattern selects), each alone in a worker, store the
 *        results batch by batch (a replay stopped midway keeps them) and print the report (text,
 *        or JSON with o->json) on stdout; then, unless o->pattern, o->verify or o->no_sequence,
 *        the kept iteration (kj_replay_sequence with --graph), whose failure is only warned of.
 *        May change o (energy window length, the budget's reserve, graph).
 * @return 0 once the report is out; KJ_E* when nothing was reported (the reason said on stderr).
 */
int kj_replay_kernels(struct kj_replay_opts *o, sqlite3 *db);

/**
 * @brief Replay one captured iteration (o->iteration, < 0: the first) in one worker: eager, with
 *        o->graph as one graph, and its graph launches rebuilt as recorded (o->topology), on
 *        random data and, where that faults, small-integer then zero data. Stores the results and
 *        prints them (quiet: nothing on stdout). With o->dry_run: prints what would be replayed,
 *        needing no worker, and stores nothing.
 * @return 0; KJ_EGPU when the replayed iteration failed (stored and printed);
 *         other KJ_E* when there is nothing to report (said on stderr).
 */
int kj_replay_sequence(const struct kj_replay_opts *o, sqlite3 *db, int quiet);

/** Other processes seen on the GPUs around a replay's energy (NVML's energy is the whole GPU's);
 *  zero it before the first kj_replay_watch_others. */
struct kj_replay_watch {
	int64_t pids[32];
	int gpus[32];   /* each pid's GPU (NVML index) */
	int n, blind;
	int nvml_index; /* the replay's GPU (NVML index) once known, else -1: every GPU counts */
	char why[400];
};

/**
 * @brief List the other processes on the GPUs now (one NVML listing) and add their pids to w.
 *        last: also warn on stderr of those seen over all calls, or that they cannot be seen.
 */
void kj_replay_watch_others(struct kj_replay_watch *w, int last);

#endif
