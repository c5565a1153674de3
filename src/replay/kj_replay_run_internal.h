/* Between the replay command's flow (kj_replay_run.c), its worker batches (kj_replay_batch.c)
 * and its sequence replay (kj_replay_seq_run.c). */
#ifndef KJ_REPLAY_RUN_INTERNAL_H
#define KJ_REPLAY_RUN_INTERNAL_H

#include "kj_replay.h"
#include "kj_replay_run.h"

/** @brief Seconds since o->started (the command's start, which --budget counts from). */
double kj_replay_elapsed_s(const struct kj_replay_opts *o);

/**
 * @brief Replay every plan item that is not skipped with o->worker: batches of kernels per
 *        worker process (one context each); a worker that dies or hangs costs the kernel it was
 *        on, and the rest go on in a new one. Kernels that fail in a data-dependent way are
 *        retried on small-integer data, then zeros, and their error says so. Under --budget,
 *        what the kernels' part of it does not reach is marked skipped with the reason.
 *        Each batch's results are stored as they come (kj_replay_plan_store_some); a progress
 *        line per settled kernel goes to stderr (not under --json unless stderr is a terminal).
 * @return 0; KJ_ENOMEM, KJ_EIO (a worker could not be started), KJ_EDB (said on stderr).
 */
int kj_replay_batches(const struct kj_replay_opts *o, sqlite3 *db, struct kj_replay_plan *plan);

#endif
