/* A run's watch for other processes on its GPUs (kj_shared.h), in the words and the JSON that
 * info, compare and the report page use (docs/energy.md). */
#ifndef KJ_SHARED_OUT_H
#define KJ_SHARED_OUT_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>

#include "kj_shared.h"

/** @brief "pids 12, 34" (as the driver reports them), or "" when none were listed. */
void kj_shared_pids_text(const struct kj_shared *sh, char *buf, size_t len);

/** @brief The sentence a report prints for the run's watch, without the iteration figures:
 *  not watched / cannot be seen here / no other process seen / other processes (pids …) seen.
 *  Plus the MIG/MPS note where one applies. */
void kj_shared_describe(const struct kj_shared *sh, char *buf, size_t len);

/** @brief The run's watch as a new JSON object the caller owns (`kjoule info`'s "shared_gpu":
 *  watched, summary, other_pids, other_processes_s, unexplained_utilization_intervals, mig, mps);
 *  {} when it cannot be read. */
json_t *kj_shared_json(sqlite3 *db);

#endif
