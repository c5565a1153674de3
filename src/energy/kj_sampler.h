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

/** @brief kj_amortize_measure() on a given back-end (borrowed), for tests and the benchmark. */
int kj_amortize_measure_with(const struct kj_amortize_work *w, const struct kj_amortize_opts *o,
			     struct kj_gpu_backend *be, struct kj_amortize_result *r);

#endif
