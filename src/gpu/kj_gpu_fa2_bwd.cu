// The GPU harness: the FlashAttention-2-style backward kernels and their launcher (kj_gpu_fa2_bwd).
//
// Helpers in kj_gpu_fa2_dev.cuh. Preprocessing (delta = rowsum(dO * O) and dq_acc = 0, one
// kernel); then one CTA of 8 warps per 128 keys (16 keys a warp), dK and dV accumulated in
// registers while 32-query tiles of Q, dO (and lse, delta) stream through shared memory (two
// buffers, cp.async): S^T = K Q^T, dP^T = V dO^T, P^T, dS^T = P^T (dP^T - delta), dV += P^T dO,
// dK += dS^T Q, and dQ += dS K (dS^T staged in shared memory) added into dq_acc with fp32 atomics
// (float2 on sm_90); last, dq converted from dq_acc (zeroed by the first kernel). Warps whose keys
// are all masked for a query tile skip it.
#include <math.h>
#include <stdint.h>

#include "kj_gpu_fa2_dev.cuh"

// ---- backward ----
template <int D> static size_t fa2_bwd_smem(int elem)
{
	return (size_t)(2 * FA_BWD_BN + 4 * FA_BQ) * (D + 8) * elem + (size_t)FA_BWD_BN * (FA_BQ + 8) * elem +
	       (size_t)4 * FA_BQ * sizeof(float);
}

template <typename T, int D>
__global__ void __launch_bounds__(FA_BWD_THREADS, 1)
	fa2_bwd_k(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v, const T *__restrict__ dout,
		  const float *__restrict__ lse, const float *__restrict__ delta, float *__restrict__ dq_acc,
		  T *__restrict__ dk, T *__restrict__ dv, int64_t l, float scale, int causal)
{
	FA2_SMEM(smraw);
	const int LDS = D + 8, LDP = FA_BQ + 8, NTH = FA_BWD_THREADS, BN = FA_BWD_BN;
	T *Ks = reinterpret_cast<T *>(smraw), *Vs = Ks + BN * LDS;
	T *Qs = Vs + BN * LDS, *Os = Qs + 2 * FA_BQ * LDS; // two buffers each: Q tile, dO tile
	T *dSs = Os + 2 * FA_BQ * LDS;                      // dS^T [128 keys][32 queries]
	float *Ls = reinterpret_cast<float *>(dSs + BN * LDP), *Dl = Ls + 2 * FA_BQ; // lse, delta
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
	// key tiles vary fastest (the CTAs in flight share a few heads' Q/dO in L2); causal, the first
	// key tiles of a head, which walk the most query tiles, start first
	const int64_t bh = blockIdx.y, k0 = (int64_t)blockIdx.x * BN, base = bh * l * D;
	const T *qb = q + base, *ob = dout + base;
	const float *lb = lse + bh * l, *db = delta + bh * l;
	const float sl2 = scale * FA_LOG2E;
	const int64_t qstart = causal ? k0 : 0; // queries before the first key see none of them
	const int nqt = (int)((l - qstart + FA_BQ - 1) / FA_BQ);

	tile_async<T, D, FA_BWD_BN, NTH>(Ks, k + base, k0, l);
	tile_async<T, D, FA_BWD_BN, NTH>(Vs, v + base, k0, l);
	auto load_q = [&](int t, int buf) {
		int64_t q0 = qstart + (int64_t)t * FA_BQ;
		tile_async<T, D, FA_BQ, NTH>(Qs + buf * FA_BQ * LDS, qb, q0, l);
		tile_async<T, D, FA_BQ, NTH>(Os + buf * FA_BQ * LDS, ob, q0, l);
		if (threadIdx.x < 2 * FA_BQ) {
			int r = threadIdx.x & (FA_BQ - 1);
			bool ok = q0 + r < l;
			const float *src = (threadIdx.x < FA_BQ ? lb : db) + (ok ? q0 + r : 0);
			cp_async4((threadIdx.x < FA_BQ ? Ls : Dl) + buf * FA_BQ + r, src, ok);
		}
	};
	load_q(0, 0);
	cp_async_commit();

	float adk[D / 8][4], adv[D / 8][4]; // this warp's 16 keys x D
#pragma unroll
	for (int i = 0; i < D / 8; i++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			adk[i][c] = adv[i][c] = 0.f;
	const int64_t kw0 = k0 + w * 16, key0 = kw0 + g, key1 = key0 + 8;
	const T *Kw = Ks + w * 16 * LDS, *Vw = Vs + w * 16 * LDS;

	for (int t = 0; t < nqt; t++) {
		const int buf = t & 1;
		const int64_t q0 = qstart + (int64_t)t * FA_BQ;
		if (t + 1 < nqt)
			load_q(t + 1, buf ^ 1);
		cp_async_commit();
		cp_async_wait<1>();
		__syncthreads();
		const T *Qt = Qs + buf * FA_BQ * LDS, *Ot = Os + buf * FA_BQ * LDS;
		const float *Lt = Ls + buf * FA_BQ, *Dt = Dl + buf * FA_BQ;
		// a warp whose 16 keys are all past l, or (causal) all after every query of the tile, has P = 0:
		// it only clears its rows of dS^T
		const bool idle = kw0 >= l || (causal && kw0 > q0 + FA_BQ - 1);
		if (idle) {
#pragma unroll
			for (int nt = 0; nt < FA_BQ / 8; nt++) {
				*reinterpret_cast<uint32_t *>(dSs + (w * 16 + g) * LDP + nt * 8 + 2 * tq) = 0u;
				*reinterpret_cast<uint32_t *>(dSs + (w * 16 + g + 8) * LDP + nt * 8 + 2 * tq) = 0u;
			}
		} else {
			// S^T_w = K_w Q^T and dP^T_w = V_w dO^T: [16 keys x 32 queries]
			float s[FA_BQ / 8][4], dp[FA_BQ / 8][4];
#pragma unroll
			for (int i = 0; i < FA_BQ / 8; i++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					s[i][c] = dp[i][c] = 0.f;
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++) {
				warp_mma_bt<T, FA_BQ>(s, Kw, Qt, LDS, kk, lane);
				warp_mma_bt<T, FA_BQ>(dp, Vw, Ot, LDS, kk, lane);
			}
			// P^T = exp(S^T scale - lse), dS^T = P^T (dP^T - delta); as A fragments (k = queries), and
			// dS^T into shared memory for dQ
			const bool mask = q0 + FA_BQ > l || kw0 + 16 > l || (causal && kw0 + 15 > q0);
			uint32_t pa[FA_BQ / 16][4], sa[FA_BQ / 16][4];
#pragma unroll
			for (int nt = 0; nt < FA_BQ / 8; nt++) {
				float p[4], d[4];
#pragma unroll
				for (int c = 0; c < 4; c++) {
					int qi = nt * 8 + 2 * tq + (c & 1);
					float x = fexp2(fmaf(s[nt][c], sl2, -Lt[qi] * FA_LOG2E));
					if (mask) {
						int64_t qq = q0 + qi, key = c < 2 ? key0 : key1;
						if (qq >= l || key >= l || (causal && key > qq))
							x = 0.f;
					}
					p[c] = x;
					d[c] = x * (dp[nt][c] - Dt[qi]);
				}
				pa[nt >> 1][(nt & 1) * 2] = pack2<T>(p[0], p[1]);
				pa[nt >> 1][(nt & 1) * 2 + 1] = pack2<T>(p[2], p[3]);
				uint32_t d01 = pack2<T>(d[0], d[1]), d23 = pack2<T>(d[2], d[3]);
				sa[nt >> 1][(nt & 1) * 2] = d01;
				sa[nt >> 1][(nt & 1) * 2 + 1] = d23;
				*reinterpret_cast<uint32_t *>(dSs + (w * 16 + g) * LDP + nt * 8 + 2 * tq) = d01;
				*reinterpret_cast<uint32_t *>(dSs + (w * 16 + g + 8) * LDP + nt * 8 + 2 * tq) = d23;
			}
			// dV_w += P^T_w dO ; dK_w += dS^T_w Q  ([16 x 32] x [32 x D])
#pragma unroll
			for (int kk = 0; kk < FA_BQ / 16; kk++) {
#pragma unroll
				for (int dq = 0; dq < D / 16; dq++) {
					uint32_t b0, b1, b2, b3;
					ldsm_x4_t(b0, b1, b2, b3,
						  Ot + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dq * 16 + (lane >> 4) * 8);
					mma16816<T>(adv[2 * dq], pa[kk], b0, b1);
					mma16816<T>(adv[2 * dq + 1], pa[kk], b2, b3);
					ldsm_x4_t(b0, b1, b2, b3,
						  Qt + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dq * 16 + (lane >> 4) * 8);
					mma16816<T>(adk[2 * dq], sa[kk], b0, b1);
					mma16816<T>(adk[2 * dq + 1], sa[kk], b2, b3);
				}
			}
		}
		__syncthreads(); // dS^T of every warp in place
		// dQ[32 q x D] += dS [32 x 128 keys] K [128 x D]: warp w takes query rows 16 (w & 1).. and the
		// D/4 columns from (w >> 1) D/4 (D/32 n-tiles of 8)
		{
			const int NQ = D / 32, mt = w & 1, c0 = (w >> 1) * (D / 4);
			// k-steps that can hold a nonzero dS: keys < l and (causal) keys <= the tile's last query
			int64_t kend = k0 + BN < l ? k0 + BN : l;
			if (causal && kend > q0 + FA_BQ)
				kend = q0 + FA_BQ;
			const int nkk = (int)((kend - k0 + 15) / 16);
			float aq[NQ][4];
#pragma unroll
			for (int i = 0; i < NQ; i++)
				aq[i][0] = aq[i][1] = aq[i][2] = aq[i][3] = 0.f;
#pragma unroll
			for (int kk = 0; kk < BN / 16; kk++) {
				if (kk < nkk) {
					uint32_t a[4];
					ldsm_x4_t(a[0], a[1], a[2], a[3],
						  dSs + (kk * 16 + (lane >> 4) * 8 + (lane & 7)) * LDP + mt * 16 + ((lane >> 3) & 1) * 8);
					const T *Kk = Ks + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + c0;
#pragma unroll
					for (int dq = 0; dq + 1 < NQ; dq += 2) {
						uint32_t b0, b1, b2, b3;
						ldsm_x4_t(b0, b1, b2, b3, Kk + dq * 8 + (lane >> 4) * 8);
						mma16816<T>(aq[dq], a, b0, b1);
						mma16816<T>(aq[dq + 1], a, b2, b3);
					}
					if (NQ & 1) {
						uint32_t b0, b1;
						ldsm_x2_t(b0, b1, Kk + (NQ - 1) * 8);
						mma16816<T>(aq[NQ - 1], a, b0, b1);
					}
				}
			}
			const int64_t r0 = q0 + mt * 16 + g, r1 = r0 + 8;
#pragma unroll
			for (int nt = 0; nt < NQ; nt++) {
				int c = c0 + nt * 8 + 2 * tq;
				if (r0 < l)
					red_add2(dq_acc + base + r0 * D + c, aq[nt][0] * scale, aq[nt][1] * scale);
				if (r1 < l)
					red_add2(dq_acc + base + r1 * D + c, aq[nt][2] * scale, aq[nt][3] * scale);
			}
		}
		__syncthreads(); // dS^T and this buffer are reused by the next iteration
	}
	cp_async_wait<0>();
#pragma unroll
	for (int nt = 0; nt < D / 8; nt++) {
		int c = nt * 8 + 2 * tq;
		if (key0 < l) {
			*reinterpret_cast<uint32_t *>(dk + base + key0 * D + c) = pack2<T>(adk[nt][0] * scale, adk[nt][1] * scale);
			*reinterpret_cast<uint32_t *>(dv + base + key0 * D + c) = pack2<T>(adv[nt][0], adv[nt][1]);
		}
		if (key1 < l) {
			*reinterpret_cast<uint32_t *>(dk + base + key1 * D + c) = pack2<T>(adk[nt][2] * scale, adk[nt][3] * scale);
			*reinterpret_cast<uint32_t *>(dv + base + key1 * D + c) = pack2<T>(adv[nt][2], adv[nt][3]);
		}
	}
}

// ---- backward preprocessing and dq conversion ----
// delta[r] = sum_c dO[r, c] O[r, c] in fp32, and dq_acc row r zeroed: 16 threads a row (16 bytes each).
template <typename T, int D>
__global__ void __launch_bounds__(256) fa2_prep_k(const T *__restrict__ o, const T *__restrict__ dout,
						  float *__restrict__ delta, float *__restrict__ dq_acc, int64_t rows)
{
	const int64_t r = ((int64_t)blockIdx.x * 256 + threadIdx.x) >> 4;
	const int j = threadIdx.x & 15, c = j * 8;
	float sum = 0.f;
	if (r < rows && c < D) {
		float a[8], b[8];
		ld16(o + r * D + c, a);
		ld16(dout + r * D + c, b);
#pragma unroll
		for (int e = 0; e < 8; e++)
			sum += a[e] * b[e];
	}
#pragma unroll
	for (int off = 8; off; off >>= 1) // within the row's 16 lanes (every lane of the warp takes part)
		sum += __shfl_xor_sync(0xffffffffu, sum, off);
	if (r < rows) {
		if (j == 0)
			delta[r] = sum;
		for (int z = j * 4; z < D; z += 64)
			*reinterpret_cast<float4 *>(dq_acc + r * D + z) = make_float4(0.f, 0.f, 0.f, 0.f);
	}
}

// dq = dq_acc in T, 8 elements (two float4 loads, one 16-byte store) a thread and step.
template <typename T>
__global__ void __launch_bounds__(256) fa2_dq_k(const float *__restrict__ src, T *__restrict__ dst, int64_t n8)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n8; i += (int64_t)gridDim.x * blockDim.x) {
		float4 a = reinterpret_cast<const float4 *>(src)[2 * i], b = reinterpret_cast<const float4 *>(src)[2 * i + 1];
		float f[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
		st16(dst + 8 * i, f);
	}
}

#ifndef FA2_EMU
// ---- launchers ----
template <typename T, int D>
static int fa2_bwd(const void *q, const void *k, const void *v, const void *o, const void *dout, const float *lse,
		   float *delta, float *dq_acc, void *dq, void *dk, void *dv, int64_t bh, int64_t l, float scale,
		   int causal, cudaStream_t s)
{
	int64_t rows = bh * l, n8 = rows * D / 8;
	fa2_prep_k<T, D><<<(unsigned)((rows + 15) / 16), 256, 0, s>>>((const T *)o, (const T *)dout, delta, dq_acc, rows);
	static size_t raised;
	size_t sm = fa2_bwd_smem<D>((int)sizeof(T));
	if (raised < sm) {
		cudaError_t e = cudaFuncSetAttribute(fa2_bwd_k<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
		if (e != cudaSuccess)
			return (int)e;
		raised = sm;
	}
	dim3 grid((unsigned)((l + FA_BWD_BN - 1) / FA_BWD_BN), (unsigned)bh);
	fa2_bwd_k<T, D><<<grid, FA_BWD_THREADS, sm, s>>>((const T *)q, (const T *)k, (const T *)v, (const T *)dout, lse,
						      delta, dq_acc, (T *)dk, (T *)dv, l, scale, causal);
	unsigned g = (unsigned)((n8 + 255) / 256 < 65535 ? (n8 + 255) / 256 : 65535);
	fa2_dq_k<T><<<g, 256, 0, s>>>(dq_acc, (T *)dq, n8);
	return (int)cudaGetLastError();
}

// The whole backward: delta and dq_acc = 0 (fa2_prep_k), fa2_bwd_k, dq from dq_acc (fa2_dq_k).
extern "C" int kj_gpu_fa2_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
			     const float *lse, float *delta, float *dq_acc, void *dq, void *dk, void *dv, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	if (bh < 1 || bh > 65535 || l < 1)
		return (int)cudaErrorInvalidValue;
	FA2_DISPATCH(dt, d,
		     (fa2_bwd<T, D>(q, k, v, o, dout, lse, delta, dq_acc, dq, dk, dv, bh, l, scale, causal, s)));
	return (int)cudaErrorInvalidValue;
}
#endif // FA2_EMU
