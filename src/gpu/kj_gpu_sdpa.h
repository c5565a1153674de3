/* The GPU harness: causal (or full) fused attention through cuDNN's graph API (kj_gpu_sdpa.c).
 * dt: 0 fp16, 1 bf16. Each call returns 0, or -1 with the reason in kj_gpu_sdpa_why(). */
#ifndef KJ_GPU_SDPA_H
#define KJ_GPU_SDPA_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 for the precisions and head sizes worth asking cuDNN about. */
int kj_gpu_sdpa_supported(int dt, int64_t d);
/* o and lse (natural log-sum-exp of the scaled scores, [bh, l]) from q, k, v [bh, l, d]. */
int kj_gpu_sdpa_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh, int64_t l,
		   int64_t d, float scale, int causal, cudaStream_t s);
/* dq, dk, dv from q, k, v, o, dout and the forward's lse. */
int kj_gpu_sdpa_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
		   const float *lse, void *dq, void *dk, void *dv, int64_t bh, int64_t l, int64_t d, float scale, int causal,
		   cudaStream_t s);
/* Why the last call that failed did (cuDNN's status and message). */
const char *kj_gpu_sdpa_why(void);
/* The cuDNN engine (global index) of the last forward (bwd = 0) or backward (1) plan used, or -1. */
int64_t kj_gpu_sdpa_engine(int bwd);
/* keep 1: no plan is freed before kj_gpu_sdpa_release (up to 64 shapes), for callers whose CUDA graphs
 * outlive the next shape's first call; 0 (the default): four shapes' plans at a time. */
void kj_gpu_sdpa_keep_plans(int keep);
/* Plans, workspaces and the handle freed (the worker's exit). */
void kj_gpu_sdpa_release(void);

#ifdef __cplusplus
}
#endif
#endif
