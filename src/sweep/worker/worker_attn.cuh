// kjoule-sweep-worker: the launchers of kjoule's own WMMA and fp32 attention kernels, for worker_attn.cu.
//
// WMMA tensor cores in worker_attn_wmma.cu, fp32 CUDA cores in worker_attn_fp32.cu; and the tile
// size both use. q, k, v, o, dout, dk, dv: [bh, l, d] row-major; lse, delta [bh, l] fp32; dq_acc
// [bh, l, d] fp32, zeroed by the caller. Each returns a cudaError_t value.
#ifndef KJ_SWEEP_WORKER_ATTN_CUH
#define KJ_SWEEP_WORKER_ATTN_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#define BR 64 // rows (queries or keys) of a tile

/* fp16/bf16 (dt 0 or 1) with head size 64 or 128 only: o and lse from q, k, v. */
extern "C" int kj_sw_attn_wmma_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse,
				   int64_t bh, int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
/* fp16/bf16 with head size 64 or 128 only: dk, dv, and dq (times the scale) added into dq_acc, from
 * the forward's lse and delta = rowsum(dO * O); the caller converts dq_acc. */
extern "C" int kj_sw_attn_wmma_bwd(int dt, const void *q, const void *k, const void *v, const void *dout,
				   const float *lse, const float *delta, float *dq_acc, void *dk, void *dv, int64_t bh,
				   int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
/* Any dtype, head size 1..128: o and lse from q, k, v. */
extern "C" int kj_sw_attn_fp32_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse,
				   int64_t bh, int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
/* Any dtype, head size 1..128: as kj_sw_attn_wmma_bwd. A launch error is left for the caller's
 * cudaGetLastError after its last kernel; a non-zero return is cudaFuncSetAttribute's. */
extern "C" int kj_sw_attn_fp32_bwd(int dt, const void *q, const void *k, const void *v, const void *dout,
				   const float *lse, const float *delta, float *dq_acc, void *dk, void *dv, int64_t bh,
				   int64_t l, int64_t d, float scale, int causal, cudaStream_t s);

#endif
