// The GPU harness: FlashAttention-2 device helpers shared by kj_gpu_fa2_fwd.cu and kj_gpu_fa2_bwd.cu.
//
// The tile sizes, the PTX helpers (mma.sync m16n8k16, ldmatrix, cp.async; tests/tools/fa2_emu.h
// stands in for them on the host), the fragment and tile helpers both directions share, and the
// dtype/head-size dispatch of the launchers. fp16/bf16, head sizes 32, 64, 96 and 128 (a multiple
// of 32); q, k, v, o, do, dk, dv: [bh, l, D] row-major; lse [bh, l] fp32 (natural log) kept for the
// backward. Sequence lengths need not be multiples of the tiles (rows past l read as zeros and are
// never written); the causal mask is applied exactly on the tiles that straddle the diagonal and
// tiles entirely above it are skipped.
#ifndef KJ_GPU_FA2_DEV_CUH
#define KJ_GPU_FA2_DEV_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

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

// The launchers' table: CALL with T the element type of dt (0 fp16, 1 bf16) and D the head size;
// falls through for any other pair.
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

#endif
