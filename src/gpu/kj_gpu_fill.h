/* The GPU harness's random fill: operands of measured work are never all zeros (DESIGN.md,
 * "Measurement method"). Two distributions, the sweep worker's and the pipeline worker's, each
 * giving the same values it always gave for a seed. Element types in the workers' numbering. */
#ifndef KJ_GPU_FILL_H
#define KJ_GPU_FILL_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum kj_gpu_dtype { KJ_GPU_F16 = 0, KJ_GPU_BF16 = 1, KJ_GPU_F32 = 2, KJ_GPU_I32 = 3, KJ_GPU_U8 = 4 };

enum kj_gpu_fill_dist {
	/* uniform in [-scale, scale], never zero (scale < 0: in (0, -scale]); KJ_GPU_I32: ids in
	 * [0, scale); KJ_GPU_U8: masks of 0 and 1 (the sweep worker's operands) */
	KJ_GPU_FILL_UNIFORM,
	/* magnitude in [scale/16, scale], random sign, never zero; F16, BF16, else F32 (the pipeline
	 * worker's phases, and kj_fill_random of its custom-phase API) */
	KJ_GPU_FILL_MAGNITUDE,
};

/** @brief Fill n elements of dtype at d, on stream s, with values of dist drawn from seed (the
 *  same values for the same seed, whatever the GPU). Returns the launch's cudaError_t value. */
int kj_gpu_fill(void *d, size_t n, int dtype, enum kj_gpu_fill_dist dist, float scale, uint64_t seed,
		cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
