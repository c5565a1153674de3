/* What an iteration is: the NVTX range whose instances split a run into repeated steps. One
 * answer for every command (compare, timeline, api, info, ingest's kept iteration):
 *   1. the range the run was told (`kjoule run --iteration-range NAME`, meta.iteration_range);
 *   2. otherwise the top-level range (depth 0, or below only ranges that never closed), not a
 *      framework's own, whose instances hold the
 *      most GPU work, preferring names that repeat;
 *   3. otherwise none (the whole run is one iteration).
 * GPU work belongs to a range instance when the host call that issued it (its launch, the graph
 * launch it ran in, its copy call) ran inside the instance: kernel/memcpy/memset launch_ns, or
 * start_ns where a run has no launch time. */
#ifndef KJ_ITERATIONS_H
#define KJ_ITERATIONS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** @brief 1 when a range belongs to a framework or library rather than the user: XLA's
 *  (XlaModule, Thunk, XlaPass…, domain TSL), PyTorch's own (aten::, autograd::, ProfilerStep),
 *  NCCL, cuBLAS, cuDNN. Such ranges are iteration candidates only when named. domain may be NULL. */
int kj_range_is_internal(const char *domain, const char *name);

/** One instance of a candidate range: [start_ns, end_ns], its name as an index. */
struct kj_range_inst {
	int64_t start_ns, end_ns;
	size_t name;
};

/** One piece of GPU work: the time of the call that issued it, and how long it ran. */
struct kj_gpu_item {
	int64_t key_ns, dur_ns;
};

/**
 * @brief GPU time per name: gpu_ns[r[i].name] += the summed dur_ns of the items whose key_ns lies
 *        in [r[i].start_ns, r[i].end_ns]. items must be sorted by key_ns. gpu_ns has one slot per
 *        name, zeroed by the caller. Work inside two overlapping instances counts for both.
 */
void kj_ranges_gpu_time(const struct kj_range_inst *r, size_t nr, const struct kj_gpu_item *items,
			size_t nitems, int64_t *gpu_ns);

/** @brief Warm-up instances every analysis leaves out by default: 1 when a range has more than 3
 *  instances (first-touch, compilation, autotuning), else 0. */
int kj_iter_default_skip(size_t instances);

/** A range name that could define iterations. */
struct kj_iter_candidate {
	char name[256];
	char domain[64];
	int64_t instances; /* closed top-level instances */
	int64_t gpu_ns;    /* GPU work issued inside them */
	int internal;      /* kj_range_is_internal */
};

/**
 * @brief Every top-level range name of the run (pid >= 0: of that process only) with its closed
 *        instances and the GPU work issued inside them: the user's ranges before the frameworks',
 *        each most GPU work first (then most instances). *out is malloc'ed (caller frees); *n may be 0.
 * @return 0, KJ_EDB, KJ_ENOMEM.
 */
int kj_iter_candidates(sqlite3 *db, int64_t pid, struct kj_iter_candidate **out, size_t *n);

/**
 * @brief The iteration range by the rule above, into name (empty when none). *why (may be NULL)
 *        says how it was chosen: "named at run", "most GPU work", "none" (a told range the run
 *        does not hold is said too, and the rule goes on to the GPU work).
 * @return 0, KJ_EDB, KJ_ENOMEM.
 */
int kj_iter_default_range(sqlite3 *db, int64_t pid, char *name, size_t len, const char **why);

#endif
