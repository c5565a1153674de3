/* kjoule run's watch for other processes on the GPUs: what the sampler's listings mean once the
 * run's own processes are known, written into the run database (docs/energy.md, docs/schema.md). */
#ifndef KJ_GPU_WATCH_H
#define KJ_GPU_WATCH_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_intervals.h"
#include "kj_sampler.h"

/** How long after a kernel NVML's utilisation may still show it: a reading gives the last
 *  complete sample period (1/6 s to 1 s by product) and stays until the next one completes, so
 *  up to two periods. */
#define KJ_WATCH_UTIL_LOOKBACK_NS 2000000000LL
/** Fewest readings of a kept secondary-signal stretch: a lone reading is noise. */
#define KJ_WATCH_UTIL_MIN_READINGS 2

/**
 * @brief The secondary signal's stretches of one GPU: runs of consecutive utilisation readings
 * above 0 that no traced activity explains (none ending within KJ_WATCH_UTIL_LOOKBACK_NS before
 * the reading), each of at least KJ_WATCH_UTIL_MIN_READINGS readings. When the GPU has traced
 * activity, only readings inside its span (first start to last end) count: before it, the
 * driver's own context and module set-up shows as utilisation; after it, NVML's lag and the
 * teardown do; neither is another process, and no iteration lies there.
 * @param t_ns, util  n readings in time order
 * @param iv          m traced intervals, sorted by start and merged (kj_intervals_merge)
 * @param out         receives a malloc'ed array of [first, last] reading times (caller frees;
 *                    NULL when none); *n_out their number
 * @return 0 or KJ_ENOMEM.
 */
int kj_watch_util_stretches(const int64_t *t_ns, const int *util, size_t n, const struct kj_interval *iv, size_t m,
			    int64_t **out, size_t *n_out);

/**
 * @brief Write the watch's findings into a run database, inside the caller's transaction and
 * after the trace was ingested (the process table names the traced processes):
 * gpu_process_sample rows (traced 1: ours, 0: another process, NULL: cannot tell),
 * foreign_activity intervals (source 'process': another process listed; 'utilization': the GPU
 * busy while no traced kernel or copy ran, a secondary signal) and the meta keys gpu_watch,
 * gpu_watch_note, gpu_watch_interval_ms, gpu_watch_pid_match, gpu_mig, gpu_mps.
 * Writes nothing when the sampler did not watch.
 * @param own_pids  pids the run started itself (its command's processes), besides the process table
 * @return 0 or a negative kj error code.
 */
int kj_gpu_watch_write_db(struct kj_sampler *s, sqlite3 *db, const int64_t *own_pids,
			  size_t n_own, int watch_interval_ms);

/**
 * @brief One listing, now, of the processes NVML reports on this machine's GPUs other than this
 * process (for `replay --energy`, which runs no sampler of its own).
 * @param pids  receives up to max distinct pids, as the driver reports them; *n their number
 * @param gpus  NULL, or receives each pid's GPU (NVML index; the first listed where it is on several)
 * @return KJ_WATCH_OK, KJ_WATCH_BLIND (*why: "other processes cannot be seen here: ...") or
 * KJ_WATCH_OFF (no NVML; *why says why).
 */
int kj_gpu_watch_others_now(int64_t *pids, int *gpus, int max, int *n, char *why, size_t why_len);

/** @brief 1 when an MPS control daemon's pipe directory is present on this machine. */
int kj_gpu_watch_mps_present(void);

#endif
