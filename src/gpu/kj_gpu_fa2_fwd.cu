// The GPU harness: the FlashAttention-2-style forward kernel and its launchers (kj_gpu_fa2_fwd).
//
// Also kj_gpu_fa2_supported, the shapes both directions take (helpers in kj_gpu_fa2_dev.cuh).
// One CTA of 4 warps per 64 MT queries of a head (MT tiles of 16 query rows a warp: 2 for
// D <= 64, 1 for 96 and 128; Q fragments in registers where they fit), keys streamed in 64-row K/V
// tiles through shared memory (two buffers, cp.async), S = Q K^T and O += P V on tensor cores,
// online softmax (base 2) in registers.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_gpu_fa2_dev.cuh"

// Forward tiling: MT m-tiles of 16 query rows a warp (MT = 2 shares every K/V fragment loaded from
// shared memory between two row tiles, halving those loads per FLOP), 4 warps, 64 MT rows a CTA.
// Q fragments stay in registers when they fit (MT D <= 128), else are re-read per k-step.
// ptxas (sm_90): MT = 2 fits without spills up to D = 64 (247 registers); D = 96 would spill with
// MT = 2 and 64-key tiles, so it stays at MT = 1. D = 128 uses MT = 2 with 32-key tiles by default
// (measured on an H100, bf16, b4 h32 l2048: 601 us against 652 us for MT = 1; fp16 596 against
// 663). KJ_SWEEP_FA2_MT=1 makes D <= 64 and D = 128 use MT = 1; KJ_SWEEP_FA2_MT=2 is D = 128's default, with
// 32-key tiles.
// BN keys a K/V tile: 64, or 32 for the opt-in D = 128, MT = 2 variant (KJ_SWEEP_FA2_MT=2), whose
// score tiles then fit the registers.
template <int D, int MT> struct Fa2Fwd {
	static const int BM = 64 * MT, BN = D > 64 && MT == 2 ? 32 : FA_BN;
	static const bool QREG = MT * D <= 128;
};

template <int D, int MT> static size_t fa2_fwd_smem(int elem)
{
	return (size_t)(Fa2Fwd<D, MT>::BM + 4 * Fa2Fwd<D, MT>::BN) * (D + 8) * elem;
}

// ---- forward ----
template <typename T, int D, int MT>
__global__ void __launch_bounds__(FA_THREADS, 2) fa2_fwd_k(const T *__restrict__ q, const T *__restrict__ k,
							   const T *__restrict__ v, T *__restrict__ o,
							   float *__restrict__ lse, int64_t l, float scale, int causal)
{
	FA2_SMEM(smraw);
	const int LDS = D + 8, BM = Fa2Fwd<D, MT>::BM, BN = Fa2Fwd<D, MT>::BN;
	const bool QREG = Fa2Fwd<D, MT>::QREG;
	T *Qs = reinterpret_cast<T *>(smraw), *Ks = Qs + BM * LDS, *Vs = Ks + 2 * BN * LDS;
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
	// causal: the longest rows first (the grid's last query tiles have the most key tiles). Query
	// tiles vary fastest, so the CTAs in flight share a few heads' K/V in L2 (heads fastest would
	// read each head's K/V from DRAM once per query tile)
	const int qt = causal ? (int)gridDim.x - 1 - (int)blockIdx.x : (int)blockIdx.x;
	const int64_t bh = blockIdx.y, q0 = (int64_t)qt * BM, base = bh * l * D;
	const T *qb = q + base, *kb = k + base, *vb = v + base;
	const float sl2 = scale * FA_LOG2E;
	int64_t kend = causal ? (q0 + BM < l ? q0 + BM : l) : l;
	const int nkt = (int)((kend + BN - 1) / BN);
	const int64_t wr0 = q0 + w * 16 * MT; // this warp's first row
	const T *Qw = Qs + w * 16 * MT * LDS;

	tile_async<T, D, BM, FA_THREADS>(Qs, qb, q0, l);
	tile_async<T, D, BN, FA_THREADS>(Ks, kb, 0, l);
	tile_async<T, D, BN, FA_THREADS>(Vs, vb, 0, l);
	cp_async_commit();

	uint32_t qf[QREG ? MT : 1][QREG ? D / 16 : 1][4];
	float oacc[MT][D / 8][4];
	float mrow[MT][2], lrow[MT][2]; // rows g and g + 8 of each m-tile: running max (base 2), sum
#pragma unroll
	for (int mt = 0; mt < MT; mt++) {
#pragma unroll
		for (int i = 0; i < D / 8; i++)
			oacc[mt][i][0] = oacc[mt][i][1] = oacc[mt][i][2] = oacc[mt][i][3] = 0.f;
		mrow[mt][0] = mrow[mt][1] = -INFINITY;
		lrow[mt][0] = lrow[mt][1] = 0.f;
	}

	for (int j = 0; j < nkt; j++) {
		const int buf = j & 1;
		if (j + 1 < nkt) {
			tile_async<T, D, BN, FA_THREADS>(Ks + (buf ^ 1) * BN * LDS, kb, (int64_t)(j + 1) * BN, l);
			tile_async<T, D, BN, FA_THREADS>(Vs + (buf ^ 1) * BN * LDS, vb, (int64_t)(j + 1) * BN, l);
		}
		cp_async_commit();
		cp_async_wait<1>();
		__syncthreads();
		if (QREG && j == 0) {
#pragma unroll
			for (int mt = 0; mt < MT; mt++)
#pragma unroll
				for (int kk = 0; kk < (QREG ? D / 16 : 1); kk++)
					ldsm_x4(qf[mt][kk][0], qf[mt][kk][1], qf[mt][kk][2], qf[mt][kk][3],
						Qw + (mt * 16 + (lane & 15)) * LDS + kk * 16 + (lane >> 4) * 8);
		}
		const int64_t k0 = (int64_t)j * BN;
		// causal: a warp whose rows all precede this tile's keys has nothing here (warp-uniform)
		if (!(causal && k0 > wr0 + 16 * MT - 1)) {
			const T *Kt = Ks + buf * BN * LDS, *Vt = Vs + buf * BN * LDS;
			// S[16 MT x 64] = Q_w K^T
			float s[MT][BN / 8][4];
#pragma unroll
			for (int mt = 0; mt < MT; mt++)
#pragma unroll
				for (int i = 0; i < BN / 8; i++)
					s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++) {
				uint32_t qa[MT][4];
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
					if (QREG) {
						qa[mt][0] = qf[mt][QREG ? kk : 0][0], qa[mt][1] = qf[mt][QREG ? kk : 0][1];
						qa[mt][2] = qf[mt][QREG ? kk : 0][2], qa[mt][3] = qf[mt][QREG ? kk : 0][3];
					} else {
						ldsm_x4(qa[mt][0], qa[mt][1], qa[mt][2], qa[mt][3],
							Qw + (mt * 16 + (lane & 15)) * LDS + kk * 16 + (lane >> 4) * 8);
					}
				}
#pragma unroll
				for (int np = 0; np < BN / 16; np++) {
					uint32_t b0, b1, b2, b3;
					ldsm_x4(b0, b1, b2, b3,
						Kt + (np * 16 + ((lane >> 4) << 3) + (lane & 7)) * LDS + kk * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
					for (int mt = 0; mt < MT; mt++) {
						mma16816<T>(s[mt][2 * np], qa[mt], b0, b1);
						mma16816<T>(s[mt][2 * np + 1], qa[mt], b2, b3);
					}
				}
			}
			const bool mask = k0 + BN > l || (causal && k0 + BN - 1 > wr0);
			uint32_t pf[MT][BN / 16][4]; // P as A fragments (k = keys)
#pragma unroll
			for (int mt = 0; mt < MT; mt++) {
				const int64_t row0 = wr0 + mt * 16 + g, row1 = row0 + 8;
				// scores stay unscaled here (the scale is positive: the row max commutes with it),
				// scaled into base 2 inside the exponent's FMA
				if (mask) {
#pragma unroll
					for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
						for (int c = 0; c < 4; c++) {
							int64_t key = k0 + nt * 8 + 2 * tq + (c & 1), row = c < 2 ? row0 : row1;
							if (key >= l || (causal && key > row))
								s[mt][nt][c] = -INFINITY;
						}
				}
				float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
				for (int nt = 0; nt < BN / 8; nt++) {
					mx0 = fmaxf(mx0, fmaxf(s[mt][nt][0], s[mt][nt][1]));
					mx1 = fmaxf(mx1, fmaxf(s[mt][nt][2], s[mt][nt][3]));
				}
				mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
				mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
				mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
				mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
				const float n0 = fmaxf(mrow[mt][0], mx0 * sl2), n1 = fmaxf(mrow[mt][1], mx1 * sl2);
				const float u0 = n0 == -INFINITY ? 0.f : n0, u1 = n1 == -INFINITY ? 0.f : n1; // all masked so far
				const float a0 = fexp2(mrow[mt][0] - u0), a1 = fexp2(mrow[mt][1] - u1);
				mrow[mt][0] = n0, mrow[mt][1] = n1;
				float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
				for (int nt = 0; nt < BN / 8; nt++) {
					float p0 = fexp2(fmaf(s[mt][nt][0], sl2, -u0)), p1 = fexp2(fmaf(s[mt][nt][1], sl2, -u0));
					float p2 = fexp2(fmaf(s[mt][nt][2], sl2, -u1)), p3 = fexp2(fmaf(s[mt][nt][3], sl2, -u1));
					sum0 += p0 + p1, sum1 += p2 + p3;
					pf[mt][nt >> 1][(nt & 1) * 2] = pack2<T>(p0, p1);
					pf[mt][nt >> 1][(nt & 1) * 2 + 1] = pack2<T>(p2, p3);
				}
				lrow[mt][0] = lrow[mt][0] * a0 + sum0, lrow[mt][1] = lrow[mt][1] * a1 + sum1;
#pragma unroll
				for (int i = 0; i < D / 8; i++)
					oacc[mt][i][0] *= a0, oacc[mt][i][1] *= a0, oacc[mt][i][2] *= a1, oacc[mt][i][3] *= a1;
			}
			// O_w[16 MT x D] += P[16 MT x 64] V[64 x D]
#pragma unroll
			for (int kk = 0; kk < BN / 16; kk++) {
#pragma unroll
				for (int dp = 0; dp < D / 16; dp++) {
					uint32_t b0, b1, b2, b3;
					ldsm_x4_t(b0, b1, b2, b3,
						  Vt + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + dp * 16 + (lane >> 4) * 8);
#pragma unroll
					for (int mt = 0; mt < MT; mt++) {
						mma16816<T>(oacc[mt][2 * dp], pf[mt][kk], b0, b1);
						mma16816<T>(oacc[mt][2 * dp + 1], pf[mt][kk], b2, b3);
					}
				}
			}
		}
		__syncthreads(); // this buffer is refilled by the next iteration's prefetch
	}
	cp_async_wait<0>();
#pragma unroll
	for (int mt = 0; mt < MT; mt++) {
		float l0 = lrow[mt][0], l1 = lrow[mt][1];
		l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
		l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
		l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
		l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
		const float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
		const int64_t row0 = wr0 + mt * 16 + g, row1 = row0 + 8;
#pragma unroll
		for (int nt = 0; nt < D / 8; nt++) {
			int c = nt * 8 + 2 * tq;
			if (row0 < l)
				*reinterpret_cast<uint32_t *>(o + base + row0 * D + c) =
					pack2<T>(oacc[mt][nt][0] * i0, oacc[mt][nt][1] * i0);
			if (row1 < l)
				*reinterpret_cast<uint32_t *>(o + base + row1 * D + c) =
					pack2<T>(oacc[mt][nt][2] * i1, oacc[mt][nt][3] * i1);
		}
		if (tq == 0) {
			if (row0 < l)
				lse[bh * l + row0] = l0 > 0.f ? (mrow[mt][0] + log2f(l0)) * FA_LN2 : -INFINITY;
			if (row1 < l)
				lse[bh * l + row1] = l1 > 0.f ? (mrow[mt][1] + log2f(l1)) * FA_LN2 : -INFINITY;
		}
	}
}

#ifndef FA2_EMU
// ---- launchers ----
template <typename T, int D, int MT>
static int fa2_fwd_mt(const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh, int64_t l,
		      float scale, int causal, cudaStream_t s)
{
	static size_t raised; /* set once, outside graph capture (the first call is never captured) */
	size_t sm = fa2_fwd_smem<D, MT>((int)sizeof(T));
	if (raised < sm) {
		cudaError_t e =
			cudaFuncSetAttribute(fa2_fwd_k<T, D, MT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
		if (e != cudaSuccess)
			return (int)e;
		raised = sm;
	}
	dim3 grid((unsigned)((l + Fa2Fwd<D, MT>::BM - 1) / Fa2Fwd<D, MT>::BM), (unsigned)bh);
	fa2_fwd_k<T, D, MT><<<grid, FA_THREADS, sm, s>>>((const T *)q, (const T *)k, (const T *)v, (T *)o, lse, l,
							  scale, causal);
	return (int)cudaGetLastError();
}

static int fa2_mt_env(void) // KJ_SWEEP_FA2_MT: 1 or 2 (0: the default)
{
	static int mt = -1;
	if (mt < 0) {
		const char *e = getenv("KJ_SWEEP_FA2_MT");
		mt = e && !strcmp(e, "1") ? 1 : e && !strcmp(e, "2") ? 2 : 0;
	}
	return mt;
}

template <typename T, int D>
static int fa2_fwd(const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh, int64_t l,
		   float scale, int causal, cudaStream_t s)
{
	int mt = fa2_mt_env();
	if constexpr (D <= 64 || D == 128) {
		if (mt != 1)
			return fa2_fwd_mt<T, D, 2>(q, k, v, o, lse, bh, l, scale, causal, s);
	}
	return fa2_fwd_mt<T, D, 1>(q, k, v, o, lse, bh, l, scale, causal, s);
}

extern "C" int kj_gpu_fa2_supported(int dt, int64_t d)
{
	return (dt == 0 || dt == 1) && (d == 32 || d == 64 || d == 96 || d == 128);
}

extern "C" int kj_gpu_fa2_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	if (bh < 1 || bh > 65535 || l < 1)
		return (int)cudaErrorInvalidValue;
	FA2_DISPATCH(dt, d, (fa2_fwd<T, D>(q, k, v, o, lse, bh, l, scale, causal, s)));
	return (int)cudaErrorInvalidValue;
}
#endif // FA2_EMU
