// kjoule-sweep-worker: device helpers shared by the memory-bound operators' kernel files.
//
// Used by worker_norm.cu, worker_softmax.cu, worker_elem.cu and worker_train.cu: the grid of a
// grid-stride launch, warp and block reductions, the online (max, sum) merge, threads for a row
// kernel, the grid-stride pack loop. Their kernels use 16-byte loads and stores (8 halves or
// 4 floats a thread), fp32 arithmetic, one pass over device memory (row kernels re-read their row
// from cache).
#ifndef KJ_SWEEP_WORKER_MEMOPS_CUH
#define KJ_SWEEP_WORKER_MEMOPS_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

static inline unsigned grid_for(size_t work, unsigned threads)
{
	size_t g = (work + threads - 1) / threads;
	return (unsigned)(g < 1 ? 1 : g > 65536 ? 65536 : g);
}

// ---- block reductions ----
__device__ __forceinline__ float warp_sum(float x)
{
	for (int o = 16; o; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

// Sum over the block; every thread gets the result. sh: 33 floats of shared memory.
static __device__ float block_sum(float x, float *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
	x = warp_sum(x);
	__syncthreads();
	if (!lane)
		sh[w] = x;
	__syncthreads();
	float t = lane < nw ? sh[lane] : 0.f;
	t = warp_sum(t);
	return t;
}

// Online (max, sum of exp(x - max)) pairs merged over the block.
__device__ __forceinline__ void ms_merge(float &m, float &s, float m2, float s2)
{
	float M = fmaxf(m, m2);
	if (M == -INFINITY)
		return;
	s = s * __expf(m - M) + s2 * __expf(m2 - M);
	m = M;
}

static __device__ void block_ms(float &m, float &s, float *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
	for (int o = 16; o; o >>= 1)
		ms_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
	__syncthreads();
	if (!lane)
		sh[w] = m, sh[32 + w] = s;
	__syncthreads();
	m = lane < nw ? sh[lane] : -INFINITY;
	s = lane < nw ? sh[32 + lane] : 0.f;
	for (int o = 16; o; o >>= 1)
		ms_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

// Threads for a row kernel: 4 packs a thread, a multiple of 32, 32 to 1024.
static inline unsigned row_threads(int64_t packs)
{
	int64_t t = (packs + 3) / 4;
	t = (t + 31) / 32 * 32;
	return (unsigned)(t < 32 ? 32 : t > 1024 ? 1024 : t);
}

// ---- elementwise: grid-stride over 16-byte packs ----
#define PACK_LOOP(n, N) \
	for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < (n) / (N); p += (int64_t)gridDim.x * blockDim.x)

#endif
