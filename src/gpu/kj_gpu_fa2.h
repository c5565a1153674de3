/* The GPU harness's FlashAttention-2-style kernels (kj_gpu_fa2_fwd.cu, kj_gpu_fa2_bwd.cu: mma.sync,
 * fp16/bf16, head sizes 32, 64, 96 and 128), shared by the sweep worker's flash_atten and the
 * pipeline worker's attention phase. dt: 0 fp16, 1 bf16. q, k, v, o, dout, dq, dk, dv: [bh, l, d]
 * row-major; lse [bh, l] fp32 (natural log-sum-exp of the scaled scores). Launchers return a
 * cudaError_t value. */
#ifndef KJ_GPU_FA2_H
#define KJ_GPU_FA2_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when the kernels take this precision and head size. */
int kj_gpu_fa2_supported(int dt, int64_t d);
/** o and lse from q, k, v (causal: key j <= query i); bh in [1, 65535], l >= 1. */
int kj_gpu_fa2_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh,
		   int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
/** dq, dk, dv from the forward's o and lse; delta [bh, l] and dq_acc [bh, l, d] fp32 scratch. */
int kj_gpu_fa2_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
		   const float *lse, float *delta, float *dq_acc, void *dq, void *dk, void *dv, int64_t bh, int64_t l,
		   int64_t d, float scale, int causal, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
