// kjoule-sweep-worker: fused attention for flash_atten: cuDNN's (kj_gpu_sdpa.c) tried first, else the
// mma.sync kernels (kj_gpu_fa2.cu), else the ones here (flash-attention algorithm: online softmax, no
// l x l matrix in device memory), forward and backward. fp16/bf16 with head size 64 or 128: on tensor
// cores (WMMA 16x16x16, fp32 accumulation, 4 warps a block, 64 x 64 tiles); everything else (fp32,
// other head sizes, or KJ_SWEEP_ATTN=cuda-cores) fp32 on CUDA cores with 64 x 64 tiles in shared
// memory. q, k, v, o: [bh, l, d] row-major, d <= 128; lse [bh, l] fp32 kept for the backward.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mma.h>

#include "kj_gpu_dev.cuh"
#include "kj_gpu_sdpa.h"

extern "C" int kj_gpu_fa2_supported(int dt, int64_t d);
extern "C" int kj_gpu_fa2_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
extern "C" int kj_gpu_fa2_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
			     const float *lse, float *delta, float *dq_acc, void *dq, void *dk, void *dv, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s);

using namespace nvcuda;

#define BR 64
#define SS 65 // score tile row stride (padded)

template <typename T>
__device__ __forceinline__ void load_tile(float *dst, int ds, const T *src, int64_t r0, int64_t l, int d)
{
	for (int e = threadIdx.x; e < BR * d; e += blockDim.x) {
		int r = e / d, c = e % d;
		dst[r * ds + c] = r0 + r < l ? tof(src[(r0 + r) * d + c]) : 0.f;
	}
}

template <typename T>
__global__ void __launch_bounds__(256) attn_fwd_k(const T *q, const T *k, const T *v, T *o, float *lse, int64_t l,
						  int d, float scale, int causal)
{
	extern __shared__ float sm[];
	int ds = d + 1, t = threadIdx.x, ti = t >> 2, tq = t & 3;
	float *Qs = sm, *Ks = Qs + BR * ds, *Vs = Ks + BR * ds, *Ss = Vs + BR * ds;
	float *rm = Ss + BR * SS, *rl = rm + BR, *ra = rl + BR;
	int64_t bh = blockIdx.y, q0 = (int64_t)blockIdx.x * BR;
	const T *qb = q + bh * l * d, *kb = k + bh * l * d, *vb = v + bh * l * d;
	load_tile(Qs, ds, qb, q0, l, d);
	if (t < BR)
		rm[t] = -INFINITY, rl[t] = 0.f;
	float acc[32];
#pragma unroll
	for (int u = 0; u < 32; u++)
		acc[u] = 0.f;
	int64_t kend = causal ? (q0 + BR < l ? q0 + BR : l) : l;
	for (int64_t k0 = 0; k0 < kend; k0 += BR) {
		__syncthreads();
		load_tile(Ks, ds, kb, k0, l, d);
		load_tile(Vs, ds, vb, k0, l, d);
		__syncthreads();
		for (int kk = 0; kk < 16; kk++) {
			int j = tq + 4 * kk;
			float s = 0.f;
			for (int c = 0; c < d; c++)
				s += Qs[ti * ds + c] * Ks[j * ds + c];
			s *= scale;
			if (k0 + j >= l || (causal && k0 + j > q0 + ti))
				s = -INFINITY;
			Ss[ti * SS + j] = s;
		}
		__syncthreads();
		if (t < BR) {
			float mx = rm[t];
			for (int j = 0; j < BR; j++)
				mx = fmaxf(mx, Ss[t * SS + j]);
			float alpha = __expf(rm[t] - mx), sum = 0.f;
			for (int j = 0; j < BR; j++) {
				float s = Ss[t * SS + j];
				float p = s == -INFINITY ? 0.f : __expf(s - mx);
				Ss[t * SS + j] = p;
				sum += p;
			}
			rl[t] = rl[t] * alpha + sum;
			rm[t] = mx;
			ra[t] = alpha;
		}
		__syncthreads();
		float a = ra[ti];
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d) {
				float s = acc[u] * a;
				for (int j = 0; j < BR; j++)
					s += Ss[ti * SS + j] * Vs[j * ds + c];
				acc[u] = s;
			}
		}
	}
	__syncthreads();
	if (q0 + ti < l) {
		float inv = 1.f / rl[ti];
		T *ob = o + (bh * l + q0 + ti) * d;
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d)
				ob[c] = fromf<T>(acc[u] * inv);
		}
		if (!tq)
			lse[bh * l + q0 + ti] = rm[ti] + __logf(rl[ti]);
	}
}

// delta[row] = sum_c dO[row, c] * O[row, c]: one warp a row.
template <typename T>
__global__ void attn_delta_k(const T *o, const T *dout, float *delta, int64_t rows, int d)
{
	int64_t r = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
	if (r >= rows)
		return;
	float s = 0.f;
	for (int c = threadIdx.x & 31; c < d; c += 32)
		s += tof(o[r * d + c]) * tof(dout[r * d + c]);
	for (int off = 16; off; off >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, off);
	if (!(threadIdx.x & 31))
		delta[r] = s;
}

// One block per (key tile, bh): dK, dV accumulated in registers over the query tiles; dQ added
// into dq_acc (fp32, zeroed by the caller) with atomics.
template <typename T>
__global__ void __launch_bounds__(256, 1) attn_bwd_k(const T *q, const T *k, const T *v, const T *dout,
						  const float *lse, const float *delta, float *dq_acc, T *dk,
						  T *dv, int64_t l, int d, float scale, int causal)
{
	extern __shared__ float sm[];
	int ds = d + 1, t = threadIdx.x, ti = t >> 2, tq = t & 3;
	float *Ks = sm, *Vs = Ks + BR * ds, *Qs = Vs + BR * ds, *Ds = Qs + BR * ds;
	float *Ps = Ds + BR * ds, *dPs = Ps + BR * SS, *ls = dPs + BR * SS, *dl = ls + BR;
	int64_t bh = blockIdx.y, k0 = (int64_t)blockIdx.x * BR, base = bh * l * d;
	load_tile(Ks, ds, k + base, k0, l, d);
	load_tile(Vs, ds, v + base, k0, l, d);
	float adk[32], adv[32];
#pragma unroll
	for (int u = 0; u < 32; u++)
		adk[u] = adv[u] = 0.f;
	for (int64_t q0 = causal ? k0 : 0; q0 < l; q0 += BR) {
		__syncthreads();
		load_tile(Qs, ds, q + base, q0, l, d);
		load_tile(Ds, ds, dout + base, q0, l, d);
		if (t < BR) {
			ls[t] = q0 + t < l ? lse[bh * l + q0 + t] : 0.f;
			dl[t] = q0 + t < l ? delta[bh * l + q0 + t] : 0.f;
		}
		__syncthreads();
		for (int kk = 0; kk < 16; kk++) {
			int j = tq + 4 * kk;
			float s = 0.f, dp = 0.f;
			for (int c = 0; c < d; c++) {
				s += Qs[ti * ds + c] * Ks[j * ds + c];
				dp += Ds[ti * ds + c] * Vs[j * ds + c];
			}
			int valid = q0 + ti < l && k0 + j < l && !(causal && k0 + j > q0 + ti);
			float p = valid ? __expf(s * scale - ls[ti]) : 0.f;
			Ps[ti * SS + j] = p;
			dPs[ti * SS + j] = p * (dp - dl[ti]); // dS
		}
		__syncthreads();
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d) {
				float sv = 0.f, sk = 0.f, sq = 0.f;
				for (int i = 0; i < BR; i++) {
					sv += Ps[i * SS + ti] * Ds[i * ds + c];
					sk += dPs[i * SS + ti] * Qs[i * ds + c];
				}
				for (int j = 0; j < BR; j++)
					sq += dPs[ti * SS + j] * Ks[j * ds + c];
				adv[u] += sv;
				adk[u] += sk;
				if (q0 + ti < l)
					atomicAdd(dq_acc + base + (q0 + ti) * d + c, sq * scale);
			}
		}
	}
	if (k0 + ti < l) {
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d) {
				dk[base + (k0 + ti) * d + c] = fromf<T>(adk[u] * scale);
				dv[base + (k0 + ti) * d + c] = fromf<T>(adv[u]);
			}
		}
	}
}

template <typename T>
__global__ void to_type_k(const float *src, T *dst, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		dst[i] = fromf<T>(src[i]);
}


// ---- tensor-core forward (fp16/bf16, D = 64 or 128) ----
template <typename T, int D>
__device__ __forceinline__ void load_tile_vec(T *dst, int ld, const T *src, int64_t r0, int64_t l)
{
	const int VPR = D / 8; // 16-byte vectors per row
	for (int e = threadIdx.x; e < BR * VPR; e += blockDim.x) {
		int r = e / VPR, c = (e % VPR) * 8;
		uint4 u = make_uint4(0, 0, 0, 0);
		if (r0 + r < l)
			u = *reinterpret_cast<const uint4 *>(src + (r0 + r) * D + c);
		*reinterpret_cast<uint4 *>(dst + r * ld + c) = u;
	}
}

template <int D>
static size_t tc_smem(int elem)
{
	return (size_t)3 * BR * (D + 8) * elem + 4 * 16 * 68 * 4 + 4 * 16 * 72 * elem + 4 * 16 * (D + 4) * 4 + 3 * BR * 4;
}

template <typename T, int D>
__global__ void __launch_bounds__(128) attn_fwd_tc_k(const T *q, const T *k, const T *v, T *o, float *lse, int64_t l,
						     float scale, int causal)
{
	extern __shared__ __align__(128) unsigned char smraw[];
	const int LD = D + 8, LS = 68, LP = 72, LO = D + 4;
	T *Qs = reinterpret_cast<T *>(smraw), *Ks = Qs + BR * LD, *Vs = Ks + BR * LD;
	float *Ss = reinterpret_cast<float *>(Vs + BR * LD);
	T *Ps = reinterpret_cast<T *>(Ss + 4 * 16 * LS);
	float *Os = reinterpret_cast<float *>(Ps + 4 * 16 * LP);
	float *rm = Os + 4 * 16 * LO, *rl = rm + BR, *ra = rl + BR;
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int64_t bh = blockIdx.y, q0 = (int64_t)blockIdx.x * BR;
	const T *qb = q + bh * l * D, *kb = k + bh * l * D, *vb = v + bh * l * D;
	float *Sw = Ss + w * 16 * LS, *Ow = Os + w * 16 * LO;
	T *Pw = Ps + w * 16 * LP;
	load_tile_vec<T, D>(Qs, LD, qb, q0, l);
	for (int e = threadIdx.x; e < 4 * 16 * LO; e += blockDim.x)
		Os[e] = 0.f;
	if (threadIdx.x < BR)
		rm[threadIdx.x] = -INFINITY, rl[threadIdx.x] = 0.f;
	int64_t kend = causal ? (q0 + BR < l ? q0 + BR : l) : l;
	for (int64_t k0 = 0; k0 < kend; k0 += BR) {
		__syncthreads();
		load_tile_vec<T, D>(Ks, LD, kb, k0, l);
		load_tile_vec<T, D>(Vs, LD, vb, k0, l);
		__syncthreads();
		// S[16 x 64] = Q_w K^T
#pragma unroll
		for (int j = 0; j < 4; j++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
			wmma::fill_fragment(acc, 0.f);
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
				wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
				wmma::load_matrix_sync(a, Qs + w * 16 * LD + kk * 16, LD);
				wmma::load_matrix_sync(b, Ks + j * 16 * LD + kk * 16, LD);
				wmma::mma_sync(acc, a, b, acc);
			}
			wmma::store_matrix_sync(Sw + j * 16, acc, LS, wmma::mem_row_major);
		}
		__syncwarp();
		if (lane < 16) {
			int r = lane;
			int64_t qi = q0 + w * 16 + r;
			float mold = rm[w * 16 + r], mx = mold, sum = 0.f;
			for (int j = 0; j < BR; j++) {
				float s = Sw[r * LS + j] * scale;
				if (k0 + j >= l || (causal && k0 + j > qi))
					s = -INFINITY;
				Sw[r * LS + j] = s;
				mx = fmaxf(mx, s);
			}
			for (int j = 0; j < BR; j++) {
				float s = Sw[r * LS + j];
				T p = fromf<T>(s == -INFINITY ? 0.f : __expf(s - mx));
				Pw[r * LP + j] = p;
				sum += tof(p); // the normaliser of exactly the probabilities multiplied below
			}
			float alpha = __expf(mold - mx);
			rl[w * 16 + r] = rl[w * 16 + r] * alpha + sum;
			rm[w * 16 + r] = mx;
			ra[w * 16 + r] = alpha;
		}
		__syncwarp();
		for (int e = lane; e < 16 * D; e += 32)
			Ow[(e / D) * LO + e % D] *= ra[w * 16 + e / D];
		__syncwarp();
		// O_w[16 x D] += P_w[16 x 64] V[64 x D]
#pragma unroll
		for (int c = 0; c < D / 16; c++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
			wmma::load_matrix_sync(acc, Ow + c * 16, LO, wmma::mem_row_major);
#pragma unroll
			for (int kk = 0; kk < 4; kk++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
				wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
				wmma::load_matrix_sync(a, Pw + kk * 16, LP);
				wmma::load_matrix_sync(b, Vs + kk * 16 * LD + c * 16, LD);
				wmma::mma_sync(acc, a, b, acc);
			}
			wmma::store_matrix_sync(Ow + c * 16, acc, LO, wmma::mem_row_major);
		}
		__syncwarp();
	}
	for (int e = lane; e < 16 * D; e += 32) {
		int r = e / D, c = e % D;
		int64_t qi = q0 + w * 16 + r;
		if (qi < l)
			o[(bh * l + qi) * D + c] = fromf<T>(Ow[r * LO + c] / rl[w * 16 + r]);
	}
	if (lane < 16 && q0 + w * 16 + lane < l)
		lse[bh * l + q0 + w * 16 + lane] = rm[w * 16 + lane] + __logf(rl[w * 16 + lane]);
}

template <typename T, int D>
static int attn_fwd_tc(const T *q, const T *k, const T *v, T *o, float *lse, int64_t bh, int64_t l, float scale,
		       int causal, cudaStream_t s)
{
	static size_t raised; /* set once, outside graph capture (the first call is never captured) */
	size_t sm = tc_smem<D>((int)sizeof(T));
	if (raised < sm) {
		cudaError_t e = cudaFuncSetAttribute(attn_fwd_tc_k<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
		if (e != cudaSuccess)
			return (int)e;
		raised = sm;
	}
	dim3 grid((unsigned)((l + BR - 1) / BR), (unsigned)bh);
	attn_fwd_tc_k<T, D><<<grid, 128, sm, s>>>(q, k, v, o, lse, l, scale, causal);
	return (int)cudaGetLastError();
}


// ---- tensor-core backward (fp16/bf16, D = 64 or 128): one block per (64 keys, head), 4 warps of
// 16 keys; dK, dV in accumulator fragments over the query tiles; dQ per 64 x 64 tile pair summed
// on chip and added into dq_acc (fp32) with one atomic per element ----
template <int D>
static size_t tcb_smem(int elem)
{
	return (size_t)4 * BR * (D + 8) * elem + 2 * 4 * 16 * 68 * 4 + 2 * BR * 72 * elem + 4 * 16 * 20 * 4 + 2 * BR * 4;
}

template <typename T, int D>
__global__ void __launch_bounds__(128) attn_bwd_tc_k(const T *q, const T *k, const T *v, const T *dout,
						     const float *lse, const float *delta, float *dq_acc, T *dk,
						     T *dv, int64_t l, float scale, int causal)
{
	extern __shared__ __align__(128) unsigned char smraw[];
	const int LD = D + 8, LF = 68, LP = 72, LX = 20;
	T *Ks = reinterpret_cast<T *>(smraw), *Vs = Ks + BR * LD, *Qs = Vs + BR * LD, *Ds = Qs + BR * LD;
	float *Sf = reinterpret_cast<float *>(Ds + BR * LD), *Df = Sf + 4 * 16 * LF;
	T *Pt = reinterpret_cast<T *>(Df + 4 * 16 * LF), *dSt = Pt + BR * LP;
	float *X = reinterpret_cast<float *>(dSt + BR * LP), *ls = X + 4 * 16 * LX, *dl = ls + BR;
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int64_t bh = blockIdx.y, k0 = (int64_t)blockIdx.x * BR, base = bh * l * D;
	float *Sw = Sf + w * 16 * LF, *Dw = Df + w * 16 * LF, *Xw = X + w * 16 * LX;
	load_tile_vec<T, D>(Ks, LD, k + base, k0, l);
	load_tile_vec<T, D>(Vs, LD, v + base, k0, l);
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> fdk[D / 16], fdv[D / 16];
#pragma unroll
	for (int c = 0; c < D / 16; c++) {
		wmma::fill_fragment(fdk[c], 0.f);
		wmma::fill_fragment(fdv[c], 0.f);
	}
	for (int64_t q0 = causal ? k0 : 0; q0 < l; q0 += BR) {
		__syncthreads();
		load_tile_vec<T, D>(Qs, LD, q + base, q0, l);
		load_tile_vec<T, D>(Ds, LD, dout + base, q0, l);
		if (threadIdx.x < BR) {
			ls[threadIdx.x] = q0 + threadIdx.x < l ? lse[bh * l + q0 + threadIdx.x] : 0.f;
			dl[threadIdx.x] = q0 + threadIdx.x < l ? delta[bh * l + q0 + threadIdx.x] : 0.f;
		}
		__syncthreads();
		// S^T_w = K_w Q^T and dP^T_w = V_w dO^T, each [16 keys x 64 queries]
#pragma unroll
		for (int j = 0; j < 4; j++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float> as, ap;
			wmma::fill_fragment(as, 0.f);
			wmma::fill_fragment(ap, 0.f);
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
				wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
				wmma::load_matrix_sync(a, Ks + w * 16 * LD + kk * 16, LD);
				wmma::load_matrix_sync(b, Qs + j * 16 * LD + kk * 16, LD);
				wmma::mma_sync(as, a, b, as);
				wmma::load_matrix_sync(a, Vs + w * 16 * LD + kk * 16, LD);
				wmma::load_matrix_sync(b, Ds + j * 16 * LD + kk * 16, LD);
				wmma::mma_sync(ap, a, b, ap);
			}
			wmma::store_matrix_sync(Sw + j * 16, as, LF, wmma::mem_row_major);
			wmma::store_matrix_sync(Dw + j * 16, ap, LF, wmma::mem_row_major);
		}
		__syncwarp();
		for (int e = lane; e < 16 * BR; e += 32) {
			int kr = e / BR, qi = e % BR;
			int64_t key = k0 + w * 16 + kr, qq = q0 + qi;
			int valid = qq < l && key < l && !(causal && key > qq);
			float p = valid ? __expf(Sw[kr * LF + qi] * scale - ls[qi]) : 0.f;
			Pt[(w * 16 + kr) * LP + qi] = fromf<T>(p);
			dSt[(w * 16 + kr) * LP + qi] = fromf<T>(p * (Dw[kr * LF + qi] - dl[qi]));
		}
		__syncwarp();
		// dV_w += P^T_w dO ; dK_w += dS^T_w Q
#pragma unroll
		for (int c = 0; c < D / 16; c++) {
#pragma unroll
			for (int kk = 0; kk < 4; kk++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
				wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
				wmma::load_matrix_sync(a, Pt + w * 16 * LP + kk * 16, LP);
				wmma::load_matrix_sync(b, Ds + kk * 16 * LD + c * 16, LD);
				wmma::mma_sync(fdv[c], a, b, fdv[c]);
				wmma::load_matrix_sync(a, dSt + w * 16 * LP + kk * 16, LP);
				wmma::load_matrix_sync(b, Qs + kk * 16 * LD + c * 16, LD);
				wmma::mma_sync(fdk[c], a, b, fdk[c]);
			}
		}
		__syncthreads(); // dS^T of all four warps in place
		// dQ rows 16w.. of this query tile: dS[16 q x 64 keys] K[64 keys x D]
		int64_t qrow = q0 + w * 16;
#pragma unroll
		for (int c = 0; c < D / 16; c++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float> aq;
			wmma::fill_fragment(aq, 0.f);
#pragma unroll
			for (int kk = 0; kk < 4; kk++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major> a;
				wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
				wmma::load_matrix_sync(a, dSt + kk * 16 * LP + w * 16, LP);
				wmma::load_matrix_sync(b, Ks + kk * 16 * LD + c * 16, LD);
				wmma::mma_sync(aq, a, b, aq);
			}
			wmma::store_matrix_sync(Xw, aq, LX, wmma::mem_row_major);
			__syncwarp();
			for (int e = lane; e < 256; e += 32) {
				int r = e >> 4, cc = e & 15;
				if (qrow + r < l)
					atomicAdd(dq_acc + base + (qrow + r) * D + c * 16 + cc, Xw[r * LX + cc] * scale);
			}
			__syncwarp();
		}
	}
	// dK (times the scale) and dV of this warp's 16 keys
#pragma unroll
	for (int c = 0; c < D / 16; c++) {
#pragma unroll
		for (int which = 0; which < 2; which++) {
			wmma::store_matrix_sync(Xw, which ? fdv[c] : fdk[c], LX, wmma::mem_row_major);
			__syncwarp();
			for (int e = lane; e < 256; e += 32) {
				int r = e >> 4, cc = e & 15;
				int64_t key = k0 + w * 16 + r;
				if (key < l) {
					T *dst = which ? dv : dk;
					dst[base + key * D + c * 16 + cc] = fromf<T>(Xw[r * LX + cc] * (which ? 1.f : scale));
				}
			}
			__syncwarp();
		}
	}
}

template <typename T, int D>
static int attn_bwd_tc(const T *q, const T *k, const T *v, const T *dout, const float *lse, const float *delta,
		       float *dq_acc, T *dk, T *dv, int64_t bh, int64_t l, float scale, int causal, cudaStream_t s)
{
	static size_t raised;
	size_t sm = tcb_smem<D>((int)sizeof(T));
	if (raised < sm) {
		cudaError_t e = cudaFuncSetAttribute(attn_bwd_tc_k<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
		if (e != cudaSuccess)
			return (int)e;
		raised = sm;
	}
	dim3 grid((unsigned)((l + BR - 1) / BR), (unsigned)bh);
	attn_bwd_tc_k<T, D><<<grid, 128, sm, s>>>(q, k, v, dout, lse, delta, dq_acc, dk, dv, l, scale, causal);
	return (int)cudaGetLastError();
}

/* KJ_SWEEP_ATTN: unset: cuDNN's fused attention (kj_gpu_sdpa.c) where it builds a plan, else the
 * mma.sync kernels (kj_gpu_fa2.cu) where they apply, else the WMMA ones, else CUDA cores; "flash2":
 * never cuDNN; "wmma": never cuDNN nor the mma.sync ones; "cuda-cores": CUDA cores only. */
static int attn_mode(void)
{
	static int mode = -1;
	if (mode < 0) {
		const char *e = getenv("KJ_SWEEP_ATTN");
		mode = !e ? 0
		       : !strcmp(e, "cuda-cores") ? 3
		       : !strcmp(e, "wmma")	   ? 2
		       : !strcmp(e, "flash2")	   ? 1
						   : 0;
	}
	return mode;
}

static int use_fa2(int dt, int64_t d)
{
	return attn_mode() <= 1 && kj_gpu_fa2_supported(dt, d);
}

static int use_tc(int dt, int64_t d)
{
	return attn_mode() < 3 && dt != 2 && (d == 64 || d == 128);
}

/* What ran last, per direction (0 forward, 1 backward): 0 cuDNN, 1 mma.sync, 2 WMMA, 3 CUDA cores;
 * and, when cuDNN was asked and failed, why. */
static int g_ran[2] = {-1, -1};
static char g_cudnn_why[2][200];

static void ran(int bwd, int dt, int64_t d)
{
	g_ran[bwd] = use_fa2(dt, d) ? 1 : use_tc(dt, d) ? 2 : 3;
}

/* cuDNN first (mode 0); 1 when it ran the call, else 0 with the reason kept for the answer. */
static int try_cudnn(int bwd, int rc)
{
	if (rc == 0) {
		g_ran[bwd] = 0;
		g_cudnn_why[bwd][0] = '\0';
		return 1;
	}
	snprintf(g_cudnn_why[bwd], sizeof(g_cudnn_why[bwd]), "%s", kj_gpu_sdpa_why());
	for (char *c = g_cudnn_why[bwd]; *c; c++)
		if (*c == '"' || *c == '\n')
			*c = '\'';
	cudaGetLastError();
	return 0;
}

/* Each implementation g_ran names: short (the answer's f_algo/b_algo) and as msg says it. */
static const struct {
	const char *algo, *msg;
} impls[4] = {{"cudnn-sdpa", "cudnn-sdpa"},
	      {"kjoule-flash2", "kjoule-flash2(mma.sync)"},
	      {"kjoule-flash-wmma", "kjoule-flash(wmma)"},
	      {"kjoule-flash-fp32", "kjoule-flash(fp32 cuda cores)"}};

static const char *impl_name(int k)
{
	return k >= 0 && k < 4 ? impls[k].msg : "none";
}

static size_t fwd_smem(int d)
{
	return (size_t)(3 * BR * (d + 1) + BR * SS + 3 * BR) * sizeof(float);
}

static size_t bwd_smem(int d)
{
	return (size_t)(4 * BR * (d + 1) + 2 * BR * SS + 2 * BR) * sizeof(float);
}

extern "C" const char *kj_sw_attn_ran(int bwd)
{
	static char buf[2][48];
	int k = g_ran[bwd ? 1 : 0];
	if (k == 0)
		snprintf(buf[bwd ? 1 : 0], sizeof(buf[0]), "cudnn-sdpa.e%lld", (long long)kj_gpu_sdpa_engine(bwd ? 1 : 0));
	else
		snprintf(buf[bwd ? 1 : 0], sizeof(buf[0]), "%s", k > 0 && k < 4 ? impls[k].algo : "none");
	return buf[bwd ? 1 : 0];
}

/* The implementation of the last forward and backward calls, for the answer's msg (no double quotes). */
extern "C" const char *kj_sw_attn_impl(int dt, int64_t d)
{
	static char buf[600];
	(void)dt, (void)d;
	int n = snprintf(buf, sizeof(buf), "attention=fwd:%s", impl_name(g_ran[0]));
	if (g_ran[0] == 0)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "(engine %lld)", (long long)kj_gpu_sdpa_engine(0));
	n += snprintf(buf + n, sizeof(buf) - (size_t)n, ",bwd:%s", impl_name(g_ran[1]));
	if (g_ran[1] == 0)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "(engine %lld)", (long long)kj_gpu_sdpa_engine(1));
	for (int b = 0; b < 2 && n < (int)sizeof(buf); b++)
		if (g_ran[b] != 0 && g_cudnn_why[b][0])
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, " cudnn %s not used: %s", b ? "bwd" : "fwd",
				      g_cudnn_why[b]);
	return buf;
}

extern "C" int kj_sw_attn_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse,
			      int64_t bh, int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	if (d < 1 || d > 128 || bh > 65535)
		return (int)cudaErrorInvalidValue;
	if (attn_mode() == 0 && kj_gpu_sdpa_supported(dt, d) &&
	    try_cudnn(0, kj_gpu_sdpa_fwd(dt, q, k, v, o, lse, bh, l, d, scale, causal, s)))
		return 0;
	ran(0, dt, d);
	if (use_fa2(dt, d))
		return kj_gpu_fa2_fwd(dt, q, k, v, o, lse, bh, l, d, scale, causal, s);
	if (use_tc(dt, d)) {
		if (dt == 0)
			return d == 64 ? attn_fwd_tc<__half, 64>((const __half *)q, (const __half *)k, (const __half *)v,
							      (__half *)o, lse, bh, l, scale, causal, s)
				       : attn_fwd_tc<__half, 128>((const __half *)q, (const __half *)k, (const __half *)v,
							       (__half *)o, lse, bh, l, scale, causal, s);
		typedef __nv_bfloat16 B;
		return d == 64 ? attn_fwd_tc<B, 64>((const B *)q, (const B *)k, (const B *)v, (B *)o, lse, bh, l, scale,
						     causal, s)
			       : attn_fwd_tc<B, 128>((const B *)q, (const B *)k, (const B *)v, (B *)o, lse, bh, l, scale,
						      causal, s);
	}
	dim3 grid((unsigned)((l + BR - 1) / BR), (unsigned)bh);
	size_t sm = fwd_smem((int)d);
	DISPATCH(dt, {
		static size_t raised; /* set once, outside graph capture (the first call is never captured) */
		if (raised < sm) {
			cudaError_t e = cudaFuncSetAttribute(attn_fwd_k<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
			if (e != cudaSuccess)
				return (int)e;
			raised = sm;
		}
		attn_fwd_k<T><<<grid, 256, sm, s>>>((const T *)q, (const T *)k, (const T *)v, (T *)o, lse, l, (int)d,
						     scale, causal);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_attn_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
			      const float *lse, float *delta, float *dq_acc, void *dq, void *dk, void *dv, int64_t bh,
			      int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	if (d < 1 || d > 128 || bh > 65535)
		return (int)cudaErrorInvalidValue;
	if (attn_mode() == 0 && kj_gpu_sdpa_supported(dt, d) &&
	    try_cudnn(1, kj_gpu_sdpa_bwd(dt, q, k, v, o, dout, lse, dq, dk, dv, bh, l, d, scale, causal, s)))
		return 0;
	ran(1, dt, d);
	if (use_fa2(dt, d)) /* its own preprocessing and dq conversion */
		return kj_gpu_fa2_bwd(dt, q, k, v, o, dout, lse, delta, dq_acc, dq, dk, dv, bh, l, d, scale, causal, s);
	int64_t rows = bh * l, n = rows * d;
	dim3 grid((unsigned)((l + BR - 1) / BR), (unsigned)bh);
	unsigned g = (unsigned)((n + 255) / 256 < 65536 ? (n + 255) / 256 : 65536);
	cudaError_t e = cudaMemsetAsync(dq_acc, 0, (size_t)n * sizeof(float), s);
	if (e != cudaSuccess)
		return (int)e;
	DISPATCH(dt, {
		attn_delta_k<T><<<(unsigned)((rows + 7) / 8), 256, 0, s>>>((const T *)o, (const T *)dout, delta, rows,
									   (int)d);
	});
	if ((e = cudaGetLastError()) != cudaSuccess)
		return (int)e;
	if (use_tc(dt, d)) {
		int rc;
#define TCB(T, D)                                                                                              \
	attn_bwd_tc<T, D>((const T *)q, (const T *)k, (const T *)v, (const T *)dout, lse, delta, dq_acc, (T *)dk, \
			  (T *)dv, bh, l, scale, causal, s)
		if (dt == 0)
			rc = d == 64 ? TCB(__half, 64) : TCB(__half, 128);
		else
			rc = d == 64 ? TCB(__nv_bfloat16, 64) : TCB(__nv_bfloat16, 128);
#undef TCB
		if (rc)
			return rc;
	} else {
		size_t sm = bwd_smem((int)d);
		DISPATCH(dt, {
			static size_t raised;
			if (raised < sm) {
				e = cudaFuncSetAttribute(attn_bwd_k<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
				if (e != cudaSuccess)
					return (int)e;
				raised = sm;
			}
			attn_bwd_k<T><<<grid, 256, sm, s>>>((const T *)q, (const T *)k, (const T *)v, (const T *)dout, lse,
							     delta, dq_acc, (T *)dk, (T *)dv, l, (int)d, scale, causal);
		});
	}
	DISPATCH(dt, { to_type_k<T><<<g, 256, 0, s>>>(dq_acc, (T *)dq, n); });
	return (int)cudaGetLastError();
}
