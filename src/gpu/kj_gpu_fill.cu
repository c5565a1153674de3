// The GPU harness's random fill (kj_gpu_fill.h): a counter hash of the element's index and the
// seed, so the values do not depend on the launch's geometry.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"
#include "kj_gpu_fill.h"

__device__ __forceinline__ uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

// ---- KJ_GPU_FILL_UNIFORM ----
__device__ __forceinline__ uint32_t hash32(uint64_t i, uint64_t seed)
{
	return (uint32_t)mix64(i * 0x9E3779B97F4A7C15ull ^ (seed + 0x632BE59BD9B4E019ull));
}

template <typename T> __global__ void uniform_k(T *d, size_t n, float scale, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float u = ((hash32(i, seed) >> 8) + 0.5f) * (1.0f / 16777216.0f);
		d[i] = fromf<T>(scale < 0 ? u * -scale : (2.f * u - 1.f) * scale);
	}
}

__global__ void ids_k(int *d, size_t n, int range, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		d[i] = (int)(hash32(i, seed) % (uint32_t)range);
}

__global__ void mask_k(uint8_t *d, size_t n, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		d[i] = (uint8_t)(hash32(i, seed) & 1);
}

// ---- KJ_GPU_FILL_MAGNITUDE ----
template <typename T> __global__ void magnitude_k(T *p, size_t n, uint64_t seed, float scale)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint64_t h = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
		float u = (float)(h >> 40) * (1.0f / 16777216.0f); // [0, 1)
		float v = scale * (0.0625f + 0.9375f * u);
		p[i] = fromf<T>((h & 1) ? -v : v);
	}
}

static unsigned grid_for(size_t work, unsigned threads)
{
	size_t g = (work + threads - 1) / threads;
	return (unsigned)(g < 1 ? 1 : g > 65536 ? 65536 : g);
}

extern "C" int kj_gpu_fill(void *d, size_t n, int dtype, enum kj_gpu_fill_dist dist, float scale, uint64_t seed,
			   cudaStream_t s)
{
	unsigned g = grid_for(n, 256);
	if (dist == KJ_GPU_FILL_MAGNITUDE) {
		if (dtype == KJ_GPU_F16)
			magnitude_k<<<g, 256, 0, s>>>((__half *)d, n, seed, scale);
		else if (dtype == KJ_GPU_BF16)
			magnitude_k<<<g, 256, 0, s>>>((__nv_bfloat16 *)d, n, seed, scale);
		else
			magnitude_k<<<g, 256, 0, s>>>((float *)d, n, seed, scale);
		return (int)cudaGetLastError();
	}
	switch (dtype) {
	case KJ_GPU_F16: uniform_k<<<g, 256, 0, s>>>((__half *)d, n, scale, seed); break;
	case KJ_GPU_BF16: uniform_k<<<g, 256, 0, s>>>((__nv_bfloat16 *)d, n, scale, seed); break;
	case KJ_GPU_F32: uniform_k<<<g, 256, 0, s>>>((float *)d, n, scale, seed); break;
	case KJ_GPU_I32: ids_k<<<g, 256, 0, s>>>((int *)d, n, scale < 1 ? 1 : (int)scale, seed); break;
	default: mask_k<<<g, 256, 0, s>>>((uint8_t *)d, n, seed); break;
	}
	return (int)cudaGetLastError();
}
