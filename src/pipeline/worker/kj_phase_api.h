/* The custom-phase C API of kjoule-pipeline-worker (the seed's test_kernel_iter in C): a setup
 * callback that allocates, a capture callback that enqueues one call of the work on a stream with
 * no allocation inside (it is captured U times into a CUDA graph), a teardown that frees. */
#ifndef KJ_PHASE_API_H
#define KJ_PHASE_API_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "kj_pipeline.h"

/** Allocate and fill the phase's buffers (random, non-zero); *state receives them.
 *  Returns 0, or a negative code with the reason (vendor text included) in err. */
typedef int (*kj_phase_setup_fn)(const struct kj_phase *ph, void **state, char *err, size_t errlen);
/** Enqueue one call on stream; no allocation, no synchronisation. Returns 0 or a negative code. */
typedef int (*kj_phase_capture_fn)(void *state, cudaStream_t stream);
/** Free what setup allocated; accepts NULL. */
typedef void (*kj_phase_teardown_fn)(void *state);

struct kj_phase_ops {
	const char *name;
	kj_phase_setup_fn setup;
	kj_phase_capture_fn capture;
	kj_phase_teardown_fn teardown;
};

struct kj_kernel_iter_opts {
	int unroll;          /* calls per graph (default 100) */
	int64_t iters;       /* calls timed at least (rounded up to unroll; default 1000) */
	int energy;          /* 1: energy through kj_amortize_measure */
	double energy_s;     /* its window (default 1 s) */
	int device;          /* CUDA ordinal of the GPU */
	int nvml_index;      /* NVML's index of the same GPU (by PCI bus id); -1: none, nvml_why says why */
	char nvml_why[160];
};

/**
 * @brief Measure one phase: one checked call, single-launch event timing, then U calls captured
 *        into a CUDA graph replayed for at least iters calls (latency), and for the energy window
 *        (energy per call, power). r->status is "ok" or "failed" with the error (CUDA, cuDNN,
 *        cuBLAS text) in r->error; r->flops/bytes are left as they were.
 * @return 0, or KJ_EGPU when the CUDA context is no longer usable (the caller should exit).
 */
int kj_kernel_iter(const struct kj_phase *ph, const struct kj_phase_ops *ops,
		   const struct kj_kernel_iter_opts *o, struct kj_phase_result *r);

/** @brief A custom phase by name, from the worker's table (NULL when none). */
const struct kj_phase_ops *kj_custom_phase_find(const char *name);

/** @brief Fill n elements of a buffer of precision prec (fp16/bf16/fp32) with random values of
 *  magnitude in [scale/16, scale] and random sign (never zero), from seed. */
int kj_fill_random(void *buf, size_t n, const char *prec, uint64_t seed, float scale, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
