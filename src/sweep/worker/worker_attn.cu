// kjoule-sweep-worker: flash_atten's attention dispatcher (cuDNN, mma.sync, WMMA or fp32) and what ran.
//
// cuDNN's fused attention (kj_gpu_sdpa.c) tried first, else the mma.sync kernels (kj_gpu_fa2_fwd.cu,
// kj_gpu_fa2_bwd.cu), else kjoule's own (flash-attention algorithm: online softmax, no l x l matrix
// in device memory), forward and backward: fp16/bf16 with head size 64 or 128 on WMMA tensor cores
// (worker_attn_wmma.cu), everything else (fp32, other head sizes, or KJ_SWEEP_ATTN=cuda-cores) fp32
// on CUDA cores (worker_attn_fp32.cu). q, k, v, o: [bh, l, d] row-major, d <= 128; lse [bh, l] fp32
// kept for the backward.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_gpu_dev.cuh"
#include "kj_gpu_sdpa.h"
#include "worker_attn.cuh"

extern "C" int kj_gpu_fa2_supported(int dt, int64_t d);
extern "C" int kj_gpu_fa2_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
extern "C" int kj_gpu_fa2_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
			     const float *lse, float *delta, float *dq_acc, void *dq, void *dk, void *dv, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s);

/* KJ_SWEEP_ATTN: unset: cuDNN's fused attention (kj_gpu_sdpa.c) where it builds a plan, else the
 * mma.sync kernels (kj_gpu_fa2_*.cu) where they apply, else the WMMA ones, else CUDA cores; "flash2":
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

// ---- the backward's first and last steps around kjoule's own kernels ----
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

// dq = dq_acc in T.
template <typename T>
__global__ void to_type_k(const float *src, T *dst, int64_t n)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		dst[i] = fromf<T>(src[i]);
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
	if (use_tc(dt, d))
		return kj_sw_attn_wmma_fwd(dt, q, k, v, o, lse, bh, l, d, scale, causal, s);
	return kj_sw_attn_fp32_fwd(dt, q, k, v, o, lse, bh, l, d, scale, causal, s);
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
	int rc = use_tc(dt, d) ? kj_sw_attn_wmma_bwd(dt, q, k, v, dout, lse, delta, dq_acc, dk, dv, bh, l, d, scale,
						     causal, s)
			       : kj_sw_attn_fp32_bwd(dt, q, k, v, dout, lse, delta, dq_acc, dk, dv, bh, l, d, scale,
						     causal, s);
	if (rc)
		return rc;
	DISPATCH(dt, { to_type_k<T><<<g, 256, 0, s>>>(dq_acc, (T *)dq, n); });
	return (int)cudaGetLastError();
}
