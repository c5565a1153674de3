/* kjoule-pipeline-worker's own kernels (worker_kernels.cu, worker_attention.cu): C launchers
 * returning cudaError_t as int. Element types: KJW_F16, KJW_BF16, KJW_F32. */
#ifndef KJ_WORKER_KERNELS_H
#define KJ_WORKER_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

enum { KJW_F16, KJW_BF16, KJW_F32 };
enum { KJW_RELU, KJW_RELU6, KJW_GELU, KJW_SILU, KJW_SIGMOID, KJW_HARDSWISH, KJW_HARDSIGMOID, KJW_ADD,
       KJW_MUL, KJW_ADD_RELU };

#ifdef __cplusplus
extern "C" {
#endif
/* NC = N x C planes of H x W into P x Q */
int kjw_pool(const void *x, void *y, int dtype, int64_t NC, int64_t H, int64_t W, int64_t P, int64_t Q,
	     int R, int S, int sh, int sw, int ph, int pw, int avg, cudaStream_t s);
/* kind 0 batch (a, b: per-channel scale, shift), 1 layer, 2 rms (a, b: gamma, beta over C), 3 batch
 * one block per channel plane and batch chunk, one element a load (NCHW; PyTorch's eval kernel) */
int kjw_norm(const void *x, void *y, int dtype, int kind, const float *a, const float *b, int64_t N,
	     int64_t C, int64_t HW, cudaStream_t s);
int kjw_act(const void *x, const void *b, void *y, int dtype, int op, size_t n, int64_t HW, cudaStream_t s);
/* 1 when the GPU harness's fused FlashAttention-2-style kernel (src/gpu/kj_gpu_fa2_*.cu)
 * runs this attention: fp16/bf16, head size 32/64/96/128, self-attention (Sq == Skv), BH <= 65535;
 * it then needs a float scratch of BH * Sq (the log-sum-exp it writes). */
int kjw_attention_fused(int dtype, int64_t BH, int64_t Sq, int64_t Skv, int D);
/* Floats of scratch the split-key kernel needs for this attention (decode-shaped: too few query
 * rows to fill the GPU, 256 keys or more), 0 where it does not apply (the fused kernel runs it, or
 * the rows alone fill the GPU). */
size_t kjw_attention_split_floats(int dtype, int64_t BH, int64_t Sq, int64_t Skv, int D);
/* O = softmax(Q K^T / sqrt(D)) V (causal: key j <= query i + Skv - Sq); with lse (kjw_attention_fused's
 * scratch) the fused kernel; with ws (kjw_attention_split_floats' scratch) the keys split over
 * blocks; else the plain one (one block per query row). */
int kjw_attention(const void *q, const void *k, const void *v, void *o, int dtype, int64_t BH, int64_t Sq,
		  int64_t Skv, int D, int causal, float *lse, float *ws, cudaStream_t s);
#ifdef __cplusplus
}
#endif
#endif
