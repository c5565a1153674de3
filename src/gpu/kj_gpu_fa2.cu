// The GPU harness (sweep and pipeline workers): FlashAttention-2-style fused attention for
// fp16/bf16 with head sizes 32, 64, 96 and 128 (a multiple of 32), forward and backward, on mma.sync m16n8k16 (fp32 accumulation)
// with ldmatrix operand loads and cp.async double-buffered tiles. q, k, v, o, do, dk, dv: [bh, l, D]
// row-major; lse [bh, l] fp32 (natural log) kept for the backward; dq accumulated in fp32 (dq_acc,
// zeroed by the backward's first kernel) with atomics. Sequence lengths need not be multiples of
// the tiles (rows past l read as zeros and are never written); the causal mask is applied exactly
// on the tiles that straddle the diagonal and tiles entirely above it are skipped.
//
// Forward: one CTA of 4 warps per 64 MT queries of a head (MT tiles of 16 query rows a warp: 2 for
// D <= 64, 1 for 96 and 128; Q fragments in registers where they fit), keys streamed in 64-row K/V
// tiles through shared memory (two buffers, cp.async), S = Q K^T and O += P V on tensor cores,
// online softmax (base 2) in registers.
// Backward: preprocessing (delta = rowsum(dO * O) and dq_acc = 0, one kernel); then one CTA of 8
// warps per 128 keys (16 keys a warp), dK and dV accumulated in registers while 32-query tiles of
// Q, dO (and lse, delta) stream through shared memory (two buffers, cp.async): S^T = K Q^T,
// dP^T = V dO^T, P^T, dS^T = P^T (dP^T - delta), dV += P^T dO, dK += dS^T Q, and dQ += dS K
// (dS^T staged in shared memory) added into dq_acc with fp32 atomics (float2 on sm_90); last, dq
// converted from dq_acc. Warps whose keys are all masked for a query tile skip it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_gpu_dev.cuh"

#define FA_THREADS 128
#define FA_BN 64  // forward: keys a tile
#define FA_BWD_THREADS 256
#define FA_BWD_BN 128 // backward: keys a CTA (8 warps x 16)
#define FA_BQ 32  // backward: queries a tile
#define FA_LOG2E 1.4426950408889634f
#define FA_LN2 0.6931471805599453f

// ---- PTX helpers (tests/tools/fa2_emu.cpp replaces them on the host to check the kernels on a CPU) ----
#ifdef FA2_EMU
#include "fa2_emu.h"
#else
#define FA2_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared, asynchronous; ok == 0 fills zeros (src must still be a valid address).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool ok)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
		     "r"(ok ? 16 : 0));
}

__device__ __forceinline__ void cp_async4(void *dst, const void *src, bool ok)
{
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
		     "r"(ok ? 4 : 0));
}

__device__ __forceinline__ void cp_async_commit()
{
	asm volatile("cp.async.commit_group;\n" ::);
}

template <int N> __device__ __forceinline__ void cp_async_wait()
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
		     : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldsm_x4_t(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
		     : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldsm_x2_t(uint32_t &r0, uint32_t &r1, const void *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
		     : "=r"(r0), "=r"(r1)
		     : "r"(smem_u32(p)));
}

// 2^x, MUFU approximation, denormal results flushed (2^-inf = 0).
__device__ __forceinline__ float fexp2(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
	return y;
}

// c += a b, m16n8k16, row.col, fp32 accumulators.
template <typename T> __device__ __forceinline__ void mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1);

template <> __device__ __forceinline__ void mma16816<__half>(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void red_add2(float *p, float a, float b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	atomicAdd(reinterpret_cast<float2 *>(p), make_float2(a, b));
#else
	atomicAdd(p, a);
	atomicAdd(p + 1, b);
#endif
}

#endif // FA2_EMU

// acc[16 rows of A x N rows of Bt] += the k-slice kk of A Bt^T: A's 16 rows and Bt's N rows in
// shared memory, row stride lds (A as one x4 fragment, Bt 16 rows per x4 load)
template <typename T, int N>
__device__ __forceinline__ void warp_mma_bt(float (*acc)[4], const T *A, const T *Bt, int lds, int kk, int lane)
{
	uint32_t a[4];
	ldsm_x4(a[0], a[1], a[2], a[3], A + (lane & 15) * lds + kk * 16 + (lane >> 4) * 8);
#pragma unroll
	for (int np = 0; np < N / 16; np++) {
		uint32_t b0, b1, b2, b3;
		ldsm_x4(b0, b1, b2, b3, Bt + (np * 16 + ((lane >> 4) << 3) + (lane & 7)) * lds + kk * 16 + ((lane >> 3) & 1) * 8);
		mma16816<T>(acc[2 * np], a, b0, b1);
		mma16816<T>(acc[2 * np + 1], a, b2, b3);
	}
}

// Two floats as one 32-bit pair (lo in the low half), rounded to nearest.
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);

template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi)
{
	__half2 h = __floats2half2_rn(lo, hi);
	return *reinterpret_cast<uint32_t *>(&h);
}

template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi)
{
	__nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
	return *reinterpret_cast<uint32_t *>(&h);
}

// ROWS x D tile of a [l, D] matrix from row r0 into shared memory (row stride D + 8), rows past l zero.
template <typename T, int D, int ROWS, int NTH>
__device__ __forceinline__ void tile_async(T *dst, const T *src, int64_t r0, int64_t l)
{
	const int VPR = D / 8, LDS = D + 8;
#pragma unroll
	for (int e = threadIdx.x; e < ROWS * VPR; e += NTH) {
		int r = e / VPR, c = (e % VPR) * 8;
		bool ok = r0 + r < l;
		cp_async16(dst + r * LDS + c, src + (ok ? r0 + r : 0) * D + c, ok);
	}
}

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

extern "C" int kj_gpu_fa2_supported(int dt, int64_t d)
{
	return (dt == 0 || dt == 1) && (d == 32 || d == 64 || d == 96 || d == 128);
}

#define FA2_DISPATCH(dt, d, CALL)                                         \
	do {                                                              \
		if ((dt) == 0) {                                          \
			typedef __half T;                                 \
			switch (d) {                                      \
			case 32: { const int D = 32; return CALL; }      \
			case 64: { const int D = 64; return CALL; }      \
			case 96: { const int D = 96; return CALL; }      \
			case 128: { const int D = 128; return CALL; }    \
			}                                                 \
		} else if ((dt) == 1) {                                   \
			typedef __nv_bfloat16 T;                          \
			switch (d) {                                      \
			case 32: { const int D = 32; return CALL; }      \
			case 64: { const int D = 64; return CALL; }      \
			case 96: { const int D = 96; return CALL; }      \
			case 128: { const int D = 128; return CALL; }    \
			}                                                 \
		}                                                         \
	} while (0)

extern "C" int kj_gpu_fa2_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	if (bh < 1 || bh > 65535 || l < 1)
		return (int)cudaErrorInvalidValue;
	FA2_DISPATCH(dt, d, (fa2_fwd<T, D>(q, k, v, o, lse, bh, l, scale, causal, s)));
	return (int)cudaErrorInvalidValue;
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
