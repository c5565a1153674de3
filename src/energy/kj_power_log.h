/* kjoule power's work over a running sampler: the CSV log of every reading (rows of all GPUs in
 * time order) and the idle power of one GPU, with its row in the run's idle_power table. */
#ifndef KJ_POWER_LOG_H
#define KJ_POWER_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "kj_sampler.h"

/** @brief Write the log's CSV header line to f and flush it. */
void kj_power_log_header(FILE *f);

/** A streaming writer of the sampler's rows; opaque. */
struct kj_power_log;

/**
 * @brief A writer of the rows of every GPU of s (borrowed; it must outlive the writer) to f
 * (borrowed, never closed here), each GPU from its first row. @return 0 or KJ_ENOMEM.
 */
int kj_power_log_open(struct kj_sampler *s, FILE *f, struct kj_power_log **out);

/**
 * @brief Write every row that is ready (all of them once the sampler is stopped), of all GPUs,
 * in time order (ties by NVML index), and flush. @return 0, KJ_ENOMEM, or KJ_EIO when the write
 * failed (errno says why).
 */
int kj_power_log_drain(struct kj_power_log *l);

/** @brief Rows written so far. */
int64_t kj_power_log_rows(const struct kj_power_log *l);

/** @brief Free the writer (NULL accepted); the file stays open. */
void kj_power_log_close(struct kj_power_log *l);

/** Idle power of one GPU, from what the sampler recorded. */
struct kj_power_idle {
	double median_w, p10_w, p90_w;
	size_t count;       /* counter periods or power readings the figures come from */
	const char *source; /* "nvml-counter" (>= 5 counter periods) or "nvml-power" (static) */
	int max_util_pct;   /* highest GPU utilisation seen; -1 when never read */
};

/**
 * @brief Idle power of the GPU in slot: per energy-counter period when there are at least 5 of
 * them (the counter is exact), else per instantaneous (or averaged) power reading.
 * @return 0, KJ_ENOMEM, or KJ_ENOTFOUND when there is no reading at all (*out's count is 0).
 */
int kj_power_idle_of(struct kj_sampler *s, int slot, struct kj_power_idle *out);

/**
 * @brief Store m as the idle_power row of device_id (replacing an older one), measured now.
 * db_path only names the database in messages. @return 0; KJ_EDB when the statement could not
 * be made (kj_db_prepare said why; nothing tried); KJ_EIO when the row was refused (said here).
 */
int kj_power_idle_store(sqlite3 *db, const char *db_path, int64_t device_id,
			const struct kj_power_idle *m);

#endif
