/* The sampler's extra interface for `kjoule power`, the amortised primitive and the benchmark:
 * full rows (clocks, temperature, ...), streaming reads while it runs, a pluggable back-end.
 * The basic start/stop/write_db/close calls are declared in kj_energy.h. */
#ifndef KJ_SAMPLER_H
#define KJ_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "kj_energy.h"
#include "kj_gpu.h"

/** One stored reading (a power_sample row): either a power read (power fields set, and every
 *  slow_every-th one the state fields) or a counter read (energy_mj set). Unread fields are -1. */
struct kj_sampler_row {
	struct kj_power_sample s;
	int64_t realtime_ns;
	struct kj_gpu_state st;
};

/** Where a streaming reader stands in one GPU's rows; zero it before the first fetch. */
struct kj_sampler_cursor {
	size_t power, counter;
};

/** Counts for one GPU since start. */
struct kj_sampler_stats {
	int64_t power_reads, counter_reads, edges, errors;
	int64_t first_ns, last_ns;       /* span of the power reads */
	double counter_read_ns_mean;     /* how long one counter read takes */
};

/**
 * @brief Start sampling with a given back-end (borrowed: it must outlive the sampler).
 * kj_sampler_start() opens NVML itself and owns that back-end.
 */
int kj_sampler_start_with(const struct kj_sampler_opts *o, struct kj_gpu_backend *be,
			  struct kj_sampler **out);

/** @brief Number of GPUs sampled (slots 0..n-1). */
int kj_sampler_ndev(const struct kj_sampler *s);
/** @brief Facts of the GPU in a slot (NVML index in nvml_index). */
const struct kj_gpu_info *kj_sampler_info(const struct kj_sampler *s, int slot, int *nvml_index);

/**
 * @brief Rows of one GPU recorded since the cursor, in time order, up to max. While sampling
 * runs only rows older than every thread's latest read are returned (so order never breaks);
 * after kj_sampler_stop() everything. @return number copied into buf.
 */
size_t kj_sampler_fetch(struct kj_sampler *s, int slot, struct kj_sampler_cursor *cur,
			struct kj_sampler_row *buf, size_t max);

/** @brief All samples of one GPU so far, sorted, as the estimator takes them (malloc'ed). */
int kj_sampler_samples(struct kj_sampler *s, int slot, struct kj_power_sample **out, size_t *n);

/** @brief Counts of one GPU. */
void kj_sampler_get_stats(struct kj_sampler *s, int slot, struct kj_sampler_stats *st);

/** @brief Text of the first error the sampler met (empty if none); errors are kept, never fatal. */
const char *kj_sampler_first_error(struct kj_sampler *s);

/** @brief Device rows (by UUID, created when missing) for every sampled GPU; ids[slot] receives
 *  each row's id. Writes no samples. */
int kj_sampler_device_ids(struct kj_sampler *s, sqlite3 *db, int64_t *ids);

/** One process seen on a GPU at one listing (kjoule run's watch for other processes). */
struct kj_watch_row {
	int64_t t_ns;              /* the listing's time */
	int64_t pid;               /* as the driver reports it */
	int64_t used_memory_bytes; /* -1: not reported */
	int sm_util_pct;           /* -1: no per-process sample */
	int visible;               /* 1: /proc/<pid> existed in our pid namespace at t_ns */
	char name[64];             /* /proc/<pid>/comm, else the driver's name, else empty */
};

/** What the watch for other processes could do. */
enum kj_watch_state { KJ_WATCH_OFF = 0, KJ_WATCH_OK = 1, KJ_WATCH_BLIND = -1 };

/**
 * @brief The watch's listings of one GPU (valid after kj_sampler_stop(), owned by the sampler):
 * rows in time order and the times of every listing (an empty listing has a time and no rows).
 * @return KJ_WATCH_OK, KJ_WATCH_OFF (not asked for, or no process list in this back-end) or
 * KJ_WATCH_BLIND (the driver refused to list processes: *why says why, once).
 */
int kj_sampler_watch(const struct kj_sampler *s, int slot, const struct kj_watch_row **rows,
		     size_t *n, const int64_t **listings, size_t *n_listings, const char **why);

/** @brief 1 when MIG mode was on for the GPU in slot, 0 when off, -1 unknown. */
int kj_sampler_mig(const struct kj_sampler *s, int slot);

/** @brief kj_amortize_measure() on a given back-end (borrowed), for tests and the benchmark. */
int kj_amortize_measure_with(const struct kj_amortize_work *w, const struct kj_amortize_opts *o,
			     struct kj_gpu_backend *be, struct kj_amortize_result *r);

#endif
