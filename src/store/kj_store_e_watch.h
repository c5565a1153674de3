/* The run database's rows of the watch for other processes, typed: the run's own processes read
 * back, the GPU's traced activity, and the gpu_process_sample and foreign_activity rows written.
 * kj_gpu_watch.c decides what they hold. */
#ifndef KJ_STORE_E_WATCH_H
#define KJ_STORE_E_WATCH_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_intervals.h"

/** @brief Create the watch's tables where the run lacks them. @return 0 or KJ_EDB. */
int kj_store_e_watch_tables(sqlite3 *db);

/** @brief Call fn(ctx, pid, start_ns, end_ns) for each row of the process table; stops at fn's
 *  first non-zero result and returns it. @return 0, fn's result, or KJ_EDB when it cannot be
 *  prepared (a row that cannot be read ends the walk quietly). */
int kj_store_e_processes(sqlite3 *db, int (*fn)(void *ctx, int64_t pid, int64_t start_ns, int64_t end_ns),
			 void *ctx);

/** @brief The [start_ns, end_ns] of every kernel, copy and memset of device_id (kernels, then
 *  copies, then memsets; unsorted) into an array the caller frees (NULL when none).
 *  @return 0, KJ_EDB or KJ_ENOMEM (nothing kept). */
int kj_store_e_traced_spans(sqlite3 *db, int64_t device_id, struct kj_interval **out, size_t *n);

/** A prepared writer of gpu_process_sample and foreign_activity rows (opaque). */
struct kj_store_watch_writer;

/** @brief Prepare both inserts on db. @return 0, KJ_EDB (SQLite's message printed) or KJ_ENOMEM. */
int kj_store_e_watch_writer_open(sqlite3 *db, struct kj_store_watch_writer **out);
/** @brief Free a writer; accepts NULL. */
void kj_store_e_watch_writer_close(struct kj_store_watch_writer *w);

/** One process listing of a GPU: name NULL or empty, used_memory_bytes and sm_util_pct < 0 are
 *  stored as NULL. */
struct kj_store_gpu_process_sample {
	int64_t device_id, t_ns, pid;
	const char *name;
	int64_t used_memory_bytes;
	int sm_util_pct;
	int traced; /* 1 the run's own, 0 another process */
};

/** @brief Insert one gpu_process_sample row. @return 0, or KJ_EDB with "gpu_process_sample
 *  insert: <SQLite's message>". */
int kj_store_e_watch_sample(struct kj_store_watch_writer *w, const struct kj_store_gpu_process_sample *r);

/** @brief Insert one foreign_activity row [start_ns, end_ns] of device_id; pid <= 0 and a NULL or
 *  empty name are stored as NULL. @return 0 or KJ_EDB (quiet). */
int kj_store_e_watch_foreign(struct kj_store_watch_writer *w, int64_t device_id, int64_t pid,
			     const char *name, int64_t start_ns, int64_t end_ns, const char *source);

#endif
