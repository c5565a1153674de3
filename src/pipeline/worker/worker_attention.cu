// kjoule-pipeline-worker's attention: the plain kernel (scores, softmax, weighted sum in one block
// per query row), the split-key kernel for decode shapes, and the fused kernels of the GPU harness
// (cuDNN's, and the FlashAttention-2-style one) where they apply. Launchers are extern "C" and return
// the launch's cudaError_t.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker_kernels.cuh"
#include "worker_kernels.h"

// Over the block: mx = the max of sc[0, n); sc[j] = exp(sc[j] - mx); each warp's sum of those
// left in red[warp] (32 floats of shared memory), readable on return. Returns mx.
__device__ float block_exp_scores(float *sc, int64_t n, float *red)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	float mx = -INFINITY;
	for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
		mx = fmaxf(mx, sc[j]);
	for (int o = 16; o; o >>= 1)
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
	if (!lane)
		red[warp] = mx;
	__syncthreads();
	mx = -INFINITY;
	for (int w = 0; w < nw; w++)
		mx = fmaxf(mx, red[w]);
	__syncthreads();
	float sum = 0.f;
	for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
		float e = __expf(sc[j] - mx);
		sc[j] = e;
		sum += e;
	}
	for (int o = 16; o; o >>= 1)
		sum += __shfl_xor_sync(0xffffffffu, sum, o);
	if (!lane)
		red[warp] = sum;
	__syncthreads();
	return mx;
}

// ---- attention: Q [N*heads, Sq, D], K and V [N*heads, Skv, D], O like Q; one block per query ----
template <typename T>
__global__ void attn_k(const T *q, const T *k, const T *v, T *o, int64_t Sq, int64_t Skv, int D, int causal,
		       float scale)
{
	extern __shared__ float sm[]; // D query values, then Skv scores
	float *qs = sm, *sc = sm + D;
	__shared__ float red[32];
	int64_t bh = blockIdx.y, qi = blockIdx.x;
	const T *qr = q + ((size_t)bh * Sq + qi) * D;
	const T *kb = k + (size_t)bh * Skv * D;
	const T *vb = v + (size_t)bh * Skv * D;
	int64_t lim = causal ? qi + (Skv - Sq) + 1 : Skv;
	if (lim > Skv)
		lim = Skv;
	for (int d = threadIdx.x; d < D; d += blockDim.x)
		qs[d] = ld(qr, d) * scale;
	__syncthreads();
	for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
		float a = 0.f;
		for (int d = 0; d < D; d++)
			a += qs[d] * ld(kb, (size_t)j * D + d);
		sc[j] = a;
	}
	__syncthreads();
	block_exp_scores(sc, lim, red);
	float sum = 0.f;
	for (int w = 0; w < (int)(blockDim.x >> 5); w++)
		sum += red[w];
	float inv = 1.f / sum;
	T *orow = o + ((size_t)bh * Sq + qi) * D;
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.f;
		for (int64_t j = 0; j < lim; j++)
			a += sc[j] * ld(vb, (size_t)j * D + d);
		st(orow, d, a * inv);
	}
}

// ---- decode-shaped attention (few query rows, many keys): the keys split over blocks ----
// Each block scores one chunk of keys for one query row and writes the chunk's max score, its sum
// of exponentials and its unnormalised output to the scratch; a second kernel weighs the chunks by
// exp(max - global max) and normalises. Scores: one warp per key, lanes over pairs of D; the
// weighted sum: warps over keys, lanes over pairs of D, the warps' sums added in shared memory.
// With one block per query row a decoder step (9 heads x 1 query, 2048 keys) kept 9 SMs busy.
#define KJW_SPLIT_MAXD 256
template <typename T> __device__ __forceinline__ float2 ld2(const T *p, size_t i)
{
	return make_float2(ld(p, 2 * i), ld(p, 2 * i + 1));
}
template <> __device__ __forceinline__ float2 ld2<__half>(const __half *p, size_t i)
{
	return __half22float2(reinterpret_cast<const __half2 *>(p)[i]);
}
template <> __device__ __forceinline__ float2 ld2<__nv_bfloat16>(const __nv_bfloat16 *p, size_t i)
{
	return __bfloat1622float2(reinterpret_cast<const __nv_bfloat162 *>(p)[i]);
}
template <> __device__ __forceinline__ float2 ld2<float>(const float *p, size_t i)
{
	return reinterpret_cast<const float2 *>(p)[i];
}

template <typename T>
__global__ void attn_split_k(const T *q, const T *k, const T *v, float *ws, int64_t Sq, int64_t Skv, int D,
			     int causal, float scale, int64_t chunk)
{
	extern __shared__ float sm[]; // D query values, chunk scores, then one partial output a warp
	float *qs = sm, *sc = sm + D, *po = sc + chunk;
	__shared__ float red[32];
	const int64_t split = blockIdx.x, qi = blockIdx.y, bh = blockIdx.z, nsplit = gridDim.x;
	const T *qr = q + ((size_t)bh * Sq + qi) * D;
	const T *kb = k + (size_t)bh * Skv * D;
	const T *vb = v + (size_t)bh * Skv * D;
	float *part = ws + (((size_t)bh * Sq + qi) * nsplit + split) * (D + 2);
	int64_t lim = causal ? qi + (Skv - Sq) + 1 : Skv;
	if (lim > Skv)
		lim = Skv;
	int64_t j0 = split * chunk, j1 = j0 + chunk < lim ? j0 + chunk : lim;
	if (j0 >= j1) { // an empty chunk (causal rows): weight 0 in the combine
		for (int d = threadIdx.x; d < D; d += blockDim.x)
			part[2 + d] = 0.f;
		if (!threadIdx.x)
			part[0] = -INFINITY, part[1] = 0.f;
		return;
	}
	for (int d = threadIdx.x; d < D; d += blockDim.x)
		qs[d] = ld(qr, d) * scale;
	__syncthreads();
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5, D2 = D / 2;
	for (int64_t j = j0 + warp; j < j1; j += nw) {
		const T *kr = kb + (size_t)j * D;
		float a = 0.f;
		for (int d2 = lane; d2 < D2; d2 += 32) {
			float2 kv = ld2(kr, d2);
			a += qs[2 * d2] * kv.x + qs[2 * d2 + 1] * kv.y;
		}
		for (int o = 16; o; o >>= 1)
			a += __shfl_xor_sync(0xffffffffu, a, o);
		if (!lane)
			sc[j - j0] = a;
	}
	__syncthreads();
	const int64_t n = j1 - j0;
	const float mx = block_exp_scores(sc, n, red);
	float acc[KJW_SPLIT_MAXD / 32];
#pragma unroll
	for (int i = 0; i < KJW_SPLIT_MAXD / 32; i++)
		acc[i] = 0.f;
	for (int64_t j = warp; j < n; j += nw) {
		const float pj = sc[j];
		const T *vr = vb + (size_t)(j0 + j) * D;
#pragma unroll
		for (int i = 0; i < KJW_SPLIT_MAXD / 64; i++) {
			int d2 = lane + 32 * i;
			if (d2 < D2) {
				float2 vv = ld2(vr, d2);
				acc[2 * i] += pj * vv.x;
				acc[2 * i + 1] += pj * vv.y;
			}
		}
	}
#pragma unroll
	for (int i = 0; i < KJW_SPLIT_MAXD / 64; i++) {
		int d2 = lane + 32 * i;
		if (d2 < D2) {
			po[warp * D + 2 * d2] = acc[2 * i];
			po[warp * D + 2 * d2 + 1] = acc[2 * i + 1];
		}
	}
	__syncthreads();
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.f;
		for (int w = 0; w < nw; w++)
			a += po[w * D + d];
		part[2 + d] = a;
	}
	if (!threadIdx.x) {
		float t = 0.f;
		for (int w = 0; w < nw; w++)
			t += red[w];
		part[0] = mx, part[1] = t;
	}
}

template <typename T> __global__ void attn_combine_k(const float *ws, T *o, int nsplit, int D)
{
	const size_t row = blockIdx.x;
	const float *base = ws + row * nsplit * (D + 2);
	float M = -INFINITY, L = 0.f;
	for (int sp = 0; sp < nsplit; sp++)
		M = fmaxf(M, base[(size_t)sp * (D + 2)]);
	for (int sp = 0; sp < nsplit; sp++) {
		float m = base[(size_t)sp * (D + 2)];
		L += m == -INFINITY ? 0.f : __expf(m - M) * base[(size_t)sp * (D + 2) + 1];
	}
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.f;
		for (int sp = 0; sp < nsplit; sp++) {
			float m = base[(size_t)sp * (D + 2)];
			if (m != -INFINITY)
				a += __expf(m - M) * base[(size_t)sp * (D + 2) + 2 + d];
		}
		st(o, row * D + d, L > 0.f ? a / L : 0.f);
	}
}

// how many chunks the keys of each query row are split into: enough blocks for two per SM, chunks
// of at least 64 keys and at most 16384 (their scores sit in shared memory), at most 1024 chunks;
// 1 (no split) where the rows alone fill the GPU, or D is odd or over KJW_SPLIT_MAXD
static int64_t attn_splits(int64_t BH, int64_t Sq, int64_t Skv, int D)
{
	int dev = 0, sms = 132;
	if (cudaGetDevice(&dev) == cudaSuccess)
		cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	int64_t rows = BH * Sq, want_blocks = 2 * (int64_t)sms;
	if (rows >= want_blocks || Skv < 256 || Sq > 65535 || BH > 65535 || D % 2 || D > KJW_SPLIT_MAXD)
		return 1;
	int64_t n = (want_blocks + rows - 1) / rows;
	if (n > Skv / 64)
		n = Skv / 64;
	if (n < (Skv + 16383) / 16384)
		n = (Skv + 16383) / 16384;
	if (n > 1024)
		n = 1024;
	return n < 2 ? 1 : n;
}

extern "C" size_t kjw_attention_split_floats(int dtype, int64_t BH, int64_t Sq, int64_t Skv, int D)
{
	if (kjw_attention_fused(dtype, BH, Sq, Skv, D))
		return 0;
	int64_t n = attn_splits(BH, Sq, Skv, D);
	return n > 1 ? (size_t)(BH * Sq * n) * (size_t)(D + 2) : 0;
}

template <typename T>
static int attn_split_launch(const T *q, const T *k, const T *v, T *o, float *ws, int64_t BH, int64_t Sq,
			     int64_t Skv, int D, int causal, int64_t nsplit, cudaStream_t s)
{
	const int threads = 256;
	int64_t chunk = (Skv + nsplit - 1) / nsplit;
	size_t smem = ((size_t)D + (size_t)chunk + (size_t)(threads / 32) * D) * sizeof(float);
	if (smem > 48 * 1024) {
		cudaError_t e = cudaFuncSetAttribute(attn_split_k<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
		if (e)
			return (int)e;
	}
	attn_split_k<T><<<dim3((unsigned)nsplit, (unsigned)Sq, (unsigned)BH), threads, smem, s>>>(q, k, v, ws, Sq, Skv, D,
											 causal, rsqrtf((float)D), chunk);
	attn_combine_k<T><<<(unsigned)(BH * Sq), D < 128 ? 64 : 128, 0, s>>>(ws, o, (int)nsplit, D);
	return (int)cudaGetLastError();
}

// the GPU harness's fused attention (src/gpu/kj_gpu_fa2_*.cu), and cuDNN's (src/gpu/kj_gpu_sdpa.c),
// tried first for the fused cases; both shared with the sweep worker
#include "kj_gpu_fa2.h"
#include "kj_gpu_sdpa.h"

static int fa2_dt(int dtype)
{
	return dtype == KJW_F16 ? 0 : dtype == KJW_BF16 ? 1 : -1;
}

extern "C" int kjw_attention_fused(int dtype, int64_t BH, int64_t Sq, int64_t Skv, int D)
{
	return fa2_dt(dtype) >= 0 && kj_gpu_fa2_supported(fa2_dt(dtype), D) && Sq == Skv && Sq >= 1 && BH >= 1 &&
	       BH <= 65535;
}

extern "C" int kjw_attention(const void *q, const void *k, const void *v, void *o, int dtype, int64_t BH,
			     int64_t Sq, int64_t Skv, int D, int causal, float *lse, float *ws, cudaStream_t s)
{
	if (lse && kjw_attention_fused(dtype, BH, Sq, Skv, D)) {
		/* cuDNN's fused attention, as PyTorch's SDPA runs it, unless KJ_PIPELINE_ATTN=flash2 or cuDNN
		 * declines the graph (then the harness's mma.sync kernel, kj_gpu_fa2) */
		static int cudnn = -1;
		if (cudnn < 0) {
			cudnn = !(getenv("KJ_PIPELINE_ATTN") && !strcmp(getenv("KJ_PIPELINE_ATTN"), "flash2"));
			kj_gpu_sdpa_keep_plans(1); /* the phases' graphs hold their plans' workspaces */
		}
		if (cudnn && !kj_gpu_sdpa_fwd(fa2_dt(dtype), q, k, v, o, lse, BH, Sq, D, rsqrtf((float)D), causal, s))
			return 0;
		cudaGetLastError();
		return kj_gpu_fa2_fwd(fa2_dt(dtype), q, k, v, o, lse, BH, Sq, D, rsqrtf((float)D), causal, s);
	}
	int64_t nsplit = ws ? attn_splits(BH, Sq, Skv, D) : 1;
	if (nsplit > 1) {
		if (dtype == KJW_F16)
			return attn_split_launch((const __half *)q, (const __half *)k, (const __half *)v, (__half *)o, ws,
						 BH, Sq, Skv, D, causal, nsplit, s);
		if (dtype == KJW_BF16)
			return attn_split_launch((const __nv_bfloat16 *)q, (const __nv_bfloat16 *)k,
						 (const __nv_bfloat16 *)v, (__nv_bfloat16 *)o, ws, BH, Sq, Skv, D, causal,
						 nsplit, s);
		return attn_split_launch((const float *)q, (const float *)k, (const float *)v, (float *)o, ws, BH, Sq,
					 Skv, D, causal, nsplit, s);
	}
	size_t smem = ((size_t)D + (size_t)Skv) * sizeof(float);
	dim3 grid((unsigned)Sq, (unsigned)BH);
	float scale = rsqrtf((float)D);
	cudaError_t e = cudaSuccess;
	if (smem > 48 * 1024) {
		if (dtype == KJW_F16)
			e = cudaFuncSetAttribute(attn_k<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
		else if (dtype == KJW_BF16)
			e = cudaFuncSetAttribute(attn_k<__nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
						 (int)smem);
		else
			e = cudaFuncSetAttribute(attn_k<float>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
		if (e)
			return (int)e;
	}
	if (dtype == KJW_F16)
		attn_k<<<grid, 128, smem, s>>>((const __half *)q, (const __half *)k, (const __half *)v, (__half *)o, Sq,
					       Skv, D, causal, scale);
	else if (dtype == KJW_BF16)
		attn_k<<<grid, 128, smem, s>>>((const __nv_bfloat16 *)q, (const __nv_bfloat16 *)k,
					       (const __nv_bfloat16 *)v, (__nv_bfloat16 *)o, Sq, Skv, D, causal, scale);
	else
		attn_k<<<grid, 128, smem, s>>>((const float *)q, (const float *)k, (const float *)v, (float *)o, Sq, Skv,
					       D, causal, scale);
	return (int)cudaGetLastError();
}
