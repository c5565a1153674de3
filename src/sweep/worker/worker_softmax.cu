// kjoule-sweep-worker: softmax and masked softmax's fill-mask kernels and their launchers.
//
// Softmax over rows, block-wide and one warp a row, forward and backward; each extern "C" launcher
// returns a cudaError_t value.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"
#include "worker_memops.cuh"

// softmax's rows: at most 128 threads, each with ceil(packs / 128) packs, so the busiest thread's
// share grows smoothly with the row (row_threads' 4 packs a thread leave some threads 3 and others
// 2 when the row is an odd multiple of 128 fp16 columns: 20 % slower there than a smooth curve)
static unsigned even_row_threads(int64_t packs)
{
	int64_t k = (packs + 127) / 128, t = (packs + k - 1) / k;
	t = (t + 31) / 32 * 32;
	return (unsigned)(t < 32 ? 32 : t);
}

// ---- softmax over rows (scale * x, optional causal mask: column > row % cols masked) ----
template <typename T>
__global__ void softmax_fwd_k(const T *x, T *y, int64_t cols, float scale, int causal)
{
	__shared__ float sh[64];
	const int N = Vec<T>::N;
	int64_t r = blockIdx.x, np = cols / N, qi = r % cols;
	const T *xr = x + r * cols;
	float m = -INFINITY, sum = 0.f, f[Vec<T>::N];
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(xr + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++) {
			if (causal && p * N + i > qi)
				continue;
			float v = f[i] * scale;
			ms_merge(m, sum, v, 1.f);
		}
	}
	block_ms(m, sum, sh);
	float inv = 1.f / sum;
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(xr + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			f[i] = (causal && p * N + i > qi) ? 0.f : __expf(f[i] * scale - m) * inv;
		st16(y + r * cols + p * N, f);
	}
}

template <typename T>
__global__ void softmax_bwd_k(const T *y, const T *dy, T *dx, int64_t cols, float scale)
{
	__shared__ float sh[64];
	const int N = Vec<T>::N;
	int64_t r = blockIdx.x, np = cols / N;
	float dot = 0.f, a[Vec<T>::N], b[Vec<T>::N];
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(y + r * cols + p * N, a);
		ld16(dy + r * cols + p * N, b);
#pragma unroll
		for (int i = 0; i < N; i++)
			dot += a[i] * b[i];
	}
	dot = block_sum(dot, sh);
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(y + r * cols + p * N, a);
		ld16(dy + r * cols + p * N, b);
#pragma unroll
		for (int i = 0; i < N; i++)
			a[i] = scale * a[i] * (b[i] - dot);
		st16(dx + r * cols + p * N, a);
	}
}

// Rows of up to 256 packs (2048 fp16 columns): a warp a row, four rows a block, the row held in
// registers (K = ceil(packs / 32) packs a lane) so it is read once and no block-wide barrier is needed.
__device__ __forceinline__ float warp_max(float x)
{
	for (int o = 16; o; o >>= 1)
		x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
	return x;
}

// a warp's row from its lanes' registers: pack p = lane + 32 k of K
template <typename T, int K>
__device__ __forceinline__ void warp_row_store(T *row, int lane, int64_t np, float (&f)[K][Vec<T>::N])
{
#pragma unroll
	for (int k = 0; k < K; k++)
		if (lane + 32 * k < np)
			st16(row + (lane + 32 * k) * Vec<T>::N, f[k]);
}

template <typename T, int K>
__global__ void __launch_bounds__(128) softmax_fwd_warp_k(const T *x, T *y, int64_t rows, int64_t cols, float scale,
							  int causal)
{
	const int N = Vec<T>::N, lane = threadIdx.x & 31;
	int64_t r = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5), np = cols / N;
	if (r >= rows)
		return; // a whole warp leaves together: its shuffles stay full
	int64_t qi = r % cols;
	const T *xr = x + r * cols;
	float f[K][Vec<T>::N], m = -INFINITY;
#pragma unroll
	for (int k = 0; k < K; k++) {
		int64_t p = lane + 32 * k;
		if (p < np)
			ld16(xr + p * N, f[k]);
#pragma unroll
		for (int i = 0; i < N; i++) {
			bool out = p >= np || (causal && p * N + i > qi);
			f[k][i] = out ? -INFINITY : f[k][i] * scale;
			m = fmaxf(m, f[k][i]);
		}
	}
	m = warp_max(m);
	float sum = 0.f;
#pragma unroll
	for (int k = 0; k < K; k++)
#pragma unroll
		for (int i = 0; i < N; i++) {
			f[k][i] = f[k][i] == -INFINITY ? 0.f : __expf(f[k][i] - m);
			sum += f[k][i];
		}
	float inv = 1.f / warp_sum(sum);
#pragma unroll
	for (int k = 0; k < K; k++)
#pragma unroll
		for (int i = 0; i < N; i++)
			f[k][i] *= inv;
	warp_row_store<T, K>(y + r * cols, lane, np, f);
}

template <typename T, int K>
__global__ void __launch_bounds__(128) softmax_bwd_warp_k(const T *y, const T *dy, T *dx, int64_t rows, int64_t cols,
							  float scale)
{
	const int N = Vec<T>::N, lane = threadIdx.x & 31;
	int64_t r = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5), np = cols / N;
	if (r >= rows)
		return;
	float a[K][Vec<T>::N] = {}, b[K][Vec<T>::N] = {}, dot = 0.f;
#pragma unroll
	for (int k = 0; k < K; k++) {
		int64_t p = lane + 32 * k;
		if (p < np) {
			ld16(y + r * cols + p * N, a[k]);
			ld16(dy + r * cols + p * N, b[k]);
		}
#pragma unroll
		for (int i = 0; i < N; i++)
			dot += a[k][i] * b[k][i];
	}
	dot = warp_sum(dot);
#pragma unroll
	for (int k = 0; k < K; k++)
#pragma unroll
		for (int i = 0; i < N; i++)
			a[k][i] = scale * a[k][i] * (b[k][i] - dot);
	warp_row_store<T, K>(dx + r * cols, lane, np, a);
}

extern "C" int kj_sw_softmax_fwd(int dt, const void *x, void *y, int64_t rows, int64_t cols, float scale,
				 int causal, cudaStream_t s)
{
	DISPATCH(dt, {
		int64_t packs = cols / Vec<T>::N;
		unsigned g = (unsigned)((rows + 3) / 4);
		switch ((packs + 31) / 32) { /* packs a lane: exactly what the row needs */
		case 1: softmax_fwd_warp_k<T, 1><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 2: softmax_fwd_warp_k<T, 2><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 3: softmax_fwd_warp_k<T, 3><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 4: softmax_fwd_warp_k<T, 4><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 5: softmax_fwd_warp_k<T, 5><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 6: softmax_fwd_warp_k<T, 6><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 7: softmax_fwd_warp_k<T, 7><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 8: softmax_fwd_warp_k<T, 8><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		default:
			softmax_fwd_k<T><<<(unsigned)rows, even_row_threads(packs), 0, s>>>((const T *)x, (T *)y, cols,
											   scale, causal);
		}
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_softmax_bwd(int dt, const void *y, const void *dy, void *dx, int64_t rows, int64_t cols,
				 float scale, cudaStream_t s)
{
	DISPATCH(dt, {
		int64_t packs = cols / Vec<T>::N;
		unsigned g = (unsigned)((rows + 3) / 4);
		switch ((packs + 31) / 32) { /* packs a lane: exactly what the row needs */
		case 1: softmax_bwd_warp_k<T, 1><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 2: softmax_bwd_warp_k<T, 2><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 3: softmax_bwd_warp_k<T, 3><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 4: softmax_bwd_warp_k<T, 4><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 5: softmax_bwd_warp_k<T, 5><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 6: softmax_bwd_warp_k<T, 6><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 7: softmax_bwd_warp_k<T, 7><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 8: softmax_bwd_warp_k<T, 8><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		default:
			softmax_bwd_k<T><<<(unsigned)rows, even_row_threads(packs), 0, s>>>((const T *)y, (const T *)dy,
											    (T *)dx, cols, scale);
		}
	});
	return (int)cudaGetLastError();
}

// mask [outer, per_mask] broadcast over `heads` copies: element e -> mask[(e / (heads*per)) * per + e % per]
template <typename T>
__global__ void fillmask_k(const T *x, const uint8_t *mask, T *y, int64_t n, int64_t per, int64_t heads, float value)
{
	const int N = Vec<T>::N;
	PACK_LOOP(n, N)
	{
		float f[Vec<T>::N];
		int64_t e = p * N, mi = (e / (heads * per)) * per + e % per;
		__align__(8) uint8_t mk[8];
		if (N == 8) // one 8-byte load of the mask per 16-byte load of scores (4 bytes for fp32)
			*reinterpret_cast<uint2 *>(mk) = *reinterpret_cast<const uint2 *>(mask + mi);
		else
			*reinterpret_cast<uint32_t *>(mk) = *reinterpret_cast<const uint32_t *>(mask + mi);
		ld16(x + e, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			if (mk[i])
				f[i] = value;
		st16(y + e, f);
	}
}

extern "C" int kj_sw_fillmask(int dt, const void *x, const uint8_t *mask, void *y, int64_t n, int64_t per_mask,
			      int64_t heads, float value, cudaStream_t s)
{
	DISPATCH(dt, {
		fillmask_k<T><<<grid_for((size_t)(n / Vec<T>::N), 256), 256, 0, s>>>((const T *)x, mask, (T *)y, n,
										      per_mask, heads, value);
	});
	return (int)cudaGetLastError();
}
