// kjoule-sweep-worker: the mixture-of-experts operator's routing kernels (top-k softmax router,
// dispatch to fixed-capacity expert slots, combine, and their backward). The expert MLPs are
// batched cuBLASLt GEMMs (ops_moe.c). Capacity per expert is fixed, so every shape is static and
// the whole layer can be captured in a CUDA graph; tokens past an expert's capacity are dropped.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"

#define MOE_MAXK 8

// One warp a token: top-k of the E router logits (k rounds of a warp arg-max), softmax over the
// k chosen logits, a slot in each chosen expert (atomic counter; -1 past the capacity).
template <typename T>
__global__ void moe_route_k(const T *logits, int *idx, int *pos, float *wts, int *count, int64_t tokens, int E,
			    int k, int cap)
{
	int64_t t = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x & 31;
	if (t >= tokens)
		return;
	const T *row = logits + t * E;
	float chosen[MOE_MAXK];
	int ce[MOE_MAXK];
	for (int s = 0; s < k; s++) {
		float best = -INFINITY;
		int be = 0x7fffffff;
		for (int e = lane; e < E; e += 32) {
			int taken = 0;
			for (int q = 0; q < s; q++)
				taken |= ce[q] == e;
			float x = tof(row[e]);
			if (!taken && (x > best || (x == best && e < be)))
				best = x, be = e;
		}
		for (int o = 16; o; o >>= 1) {
			float ob = __shfl_xor_sync(0xffffffffu, best, o);
			int oe = __shfl_xor_sync(0xffffffffu, be, o);
			if (ob > best || (ob == best && oe < be))
				best = ob, be = oe;
		}
		chosen[s] = best;
		ce[s] = be;
	}
	if (lane == 0) {
		float mx = chosen[0], sum = 0.f;
		for (int s = 0; s < k; s++)
			sum += __expf(chosen[s] - mx);
		for (int s = 0; s < k; s++) {
			int p = atomicAdd(count + ce[s], 1);
			idx[t * k + s] = ce[s];
			pos[t * k + s] = p < cap ? p : -1;
			wts[t * k + s] = __expf(chosen[s] - mx) / sum;
		}
	}
}

// Xe[e, pos, :] = X[t, :] for every routed (t, s).
template <typename T>
__global__ void moe_dispatch_k(const T *x, const int *idx, const int *pos, T *xe, int64_t pairs, int k, int64_t dim,
			       int cap)
{
	const int N = Vec<T>::N;
	int64_t np = dim / N;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < pairs * np;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t pr = i / np, p = i % np, t = pr / k;
		int ps = pos[pr];
		if (ps < 0)
			continue;
		*reinterpret_cast<uint4 *>(xe + ((int64_t)idx[pr] * cap + ps) * dim + p * N) =
			*reinterpret_cast<const uint4 *>(x + t * dim + p * N);
	}
}

// y[t] = sum_s w[t,s] ye[e_s, pos_s] (dropped slots add nothing). Also the backward's dX gather
// (sum of dXe rows, weights 1) when w is NULL.
template <typename T>
__global__ void moe_combine_k(const T *ye, const int *idx, const int *pos, const float *wts, T *y, int64_t tokens,
			      int k, int64_t dim, int cap)
{
	const int N = Vec<T>::N;
	int64_t np = dim / N;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < tokens * np;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t t = i / np, p = i % np;
		float acc[Vec<T>::N], f[Vec<T>::N];
#pragma unroll
		for (int j = 0; j < N; j++)
			acc[j] = 0.f;
		for (int s = 0; s < k; s++) {
			int ps = pos[t * k + s];
			if (ps < 0)
				continue;
			float w = wts ? wts[t * k + s] : 1.f;
			ld16(ye + ((int64_t)idx[t * k + s] * cap + ps) * dim + p * N, f);
#pragma unroll
			for (int j = 0; j < N; j++)
				acc[j] += w * f[j];
		}
		st16(y + t * dim + p * N, acc);
	}
}

// Backward of combine: dYe[e, pos] = w dY[t] (rows no token uses stay as zeroed by the caller).
template <typename T>
__global__ void moe_scatter_k(const T *dy, const int *idx, const int *pos, const float *wts, T *dye, int64_t pairs,
			      int k, int64_t dim, int cap)
{
	const int N = Vec<T>::N;
	int64_t np = dim / N;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < pairs * np;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t pr = i / np, p = i % np, t = pr / k;
		int ps = pos[pr];
		if (ps < 0)
			continue;
		float f[Vec<T>::N], w = wts[pr];
		ld16(dy + t * dim + p * N, f);
#pragma unroll
		for (int j = 0; j < N; j++)
			f[j] *= w;
		st16(dye + ((int64_t)idx[pr] * cap + ps) * dim + p * N, f);
	}
}

// Router backward, one warp a token: dw_s = dY[t] . Ye[e_s, pos_s] (0 when dropped), then through
// the softmax over the chosen logits: dlogit_s = w_s (dw_s - sum_j w_j dw_j); other logits 0
// (dlogits zeroed by the caller).
template <typename T>
__global__ void moe_route_bwd_k(const T *dy, const T *ye, const int *idx, const int *pos, const float *wts,
				T *dlogits, int64_t tokens, int E, int k, int64_t dim, int cap)
{
	int64_t t = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x & 31;
	if (t >= tokens)
		return;
	float dw[MOE_MAXK], sum = 0.f;
	for (int s = 0; s < k; s++) {
		int ps = pos[t * k + s];
		float d = 0.f;
		if (ps >= 0) {
			const T *r = ye + ((int64_t)idx[t * k + s] * cap + ps) * dim;
			for (int64_t c = lane; c < dim; c += 32)
				d += tof(dy[t * dim + c]) * tof(r[c]);
			for (int o = 16; o; o >>= 1)
				d += __shfl_xor_sync(0xffffffffu, d, o);
		}
		dw[s] = d;
		sum += wts[t * k + s] * d;
	}
	if (lane < k) {
		float w = 0.f, d = 0.f;
		for (int s = 0; s < k; s++)
			if (s == lane)
				w = wts[t * k + s], d = dw[s];
		dlogits[t * E + idx[t * k + lane]] = fromf<T>(w * (d - sum));
	}
}

static unsigned grid_of(int64_t work)
{
	int64_t g = (work + 255) / 256;
	return (unsigned)(g < 1 ? 1 : g > 65536 ? 65536 : g);
}

extern "C" int kj_sw_moe_route(int dt, const void *logits, int *idx, int *pos, float *wts, int *count,
			       int64_t tokens, int E, int k, int cap, cudaStream_t s)
{
	if (k < 1 || k > MOE_MAXK || k > E)
		return (int)cudaErrorInvalidValue;
	cudaError_t e = cudaMemsetAsync(count, 0, (size_t)E * sizeof(int), s);
	if (e != cudaSuccess)
		return (int)e;
	DISPATCH(dt, {
		moe_route_k<T><<<(unsigned)((tokens + 7) / 8), 256, 0, s>>>((const T *)logits, idx, pos, wts, count, tokens,
									   E, k, cap);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_moe_dispatch(int dt, const void *x, const int *idx, const int *pos, void *xe, int64_t tokens,
				  int k, int64_t dim, int cap, cudaStream_t s)
{
	DISPATCH(dt, {
		moe_dispatch_k<T><<<grid_of(tokens * k * dim / Vec<T>::N), 256, 0, s>>>((const T *)x, idx, pos, (T *)xe,
											  tokens * k, k, dim, cap);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_moe_combine(int dt, const void *ye, const int *idx, const int *pos, const float *wts, void *y,
				 int64_t tokens, int k, int64_t dim, int cap, cudaStream_t s)
{
	DISPATCH(dt, {
		moe_combine_k<T><<<grid_of(tokens * dim / Vec<T>::N), 256, 0, s>>>((const T *)ye, idx, pos, wts, (T *)y,
										     tokens, k, dim, cap);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_moe_scatter(int dt, const void *dy, const int *idx, const int *pos, const float *wts, void *dye,
				 int64_t tokens, int k, int64_t dim, int cap, int E, cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(dye, 0, (size_t)E * cap * dim * (dt == 2 ? 4 : 2), s);
	if (e != cudaSuccess)
		return (int)e;
	DISPATCH(dt, {
		moe_scatter_k<T><<<grid_of(tokens * k * dim / Vec<T>::N), 256, 0, s>>>((const T *)dy, idx, pos, wts,
											 (T *)dye, tokens * k, k, dim, cap);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_moe_route_bwd(int dt, const void *dy, const void *ye, const int *idx, const int *pos,
				   const float *wts, void *dlogits, int64_t tokens, int E, int k, int64_t dim, int cap,
				   cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(dlogits, 0, (size_t)tokens * E * (dt == 2 ? 4 : 2), s);
	if (e != cudaSuccess)
		return (int)e;
	DISPATCH(dt, {
		moe_route_bwd_k<T><<<(unsigned)((tokens + 7) / 8), 256, 0, s>>>((const T *)dy, (const T *)ye, idx, pos,
									       wts, (T *)dlogits, tokens, E, k, dim, cap);
	});
	return (int)cudaGetLastError();
}
