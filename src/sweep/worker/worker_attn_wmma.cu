// kjoule-sweep-worker: flash_atten's WMMA tensor-core flash-attention kernels and their launchers.
//
// fp16/bf16, head size 64 or 128 (KJ_SWEEP_ATTN=wmma): 16x16x16 fragments, fp32 accumulation,
// 4 warps a block, 64 x 64 tiles, forward and backward (worker_attn.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <mma.h>

#include "kj_gpu_dev.cuh"
#include "worker_attn.cuh"

using namespace nvcuda;

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

extern "C" int kj_sw_attn_wmma_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse,
				   int64_t bh, int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
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

extern "C" int kj_sw_attn_wmma_bwd(int dt, const void *q, const void *k, const void *v, const void *dout,
				   const float *lse, const float *delta, float *dq_acc, void *dk, void *dv, int64_t bh,
				   int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	int rc;
#define TCB(T, D)                                                                                              \
	attn_bwd_tc<T, D>((const T *)q, (const T *)k, (const T *)v, (const T *)dout, lse, delta, dq_acc, (T *)dk, \
			  (T *)dv, bh, l, scale, causal, s)
	if (dt == 0)
		rc = d == 64 ? TCB(__half, 64) : TCB(__half, 128);
	else
		rc = d == 64 ? TCB(__nv_bfloat16, 64) : TCB(__nv_bfloat16, 128);
#undef TCB
	return rc;
}
