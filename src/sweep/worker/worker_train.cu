// kjoule-sweep-worker: training-step kernels (cross entropy, AdamW, casts) and their launchers.
//
// Cross entropy over a vocabulary row, forward and backward; AdamW on fp32 master parameters;
// dtype casts; each extern "C" launcher returns a cudaError_t value.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"
#include "worker_memops.cuh"

// ---- cross entropy over a vocabulary row (Megatron's vocab-parallel form on one rank): the
// forward writes the loss and keeps the softmax; the backward turns the softmax into the gradient ----
template <typename T>
__global__ void xent_fwd_k(const T *x, const int *tg, float *loss, T *sm, int64_t v)
{
	__shared__ float sh[64];
	const int N = Vec<T>::N;
	int64_t r = blockIdx.x, np = v / N;
	float m = -INFINITY, s = 0.f, f[Vec<T>::N];
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(x + r * v + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			ms_merge(m, s, f[i], 1.f);
	}
	block_ms(m, s, sh);
	float inv = 1.f / s;
	if (!threadIdx.x)
		loss[r] = m + __logf(s) - tof(x[r * v + tg[r]]);
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(x + r * v + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			f[i] = __expf(f[i] - m) * inv;
		st16(sm + r * v + p * N, f);
	}
}

template <typename T>
__global__ void xent_bwd_k(const T *sm, const int *tg, T *g, int64_t v, float dloss)
{
	const int N = Vec<T>::N;
	int64_t r = blockIdx.x, np = v / N, t = tg[r];
	float f[Vec<T>::N];
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(sm + r * v + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			f[i] = (f[i] - (p * N + i == t ? 1.f : 0.f)) * dloss;
		st16(g + r * v + p * N, f);
	}
}

extern "C" int kj_sw_xent_fwd(int dt, const void *logits, const int *target, float *loss, void *softmax,
			      int64_t rows, int64_t v, cudaStream_t s)
{
	DISPATCH(dt, {
		xent_fwd_k<T><<<(unsigned)rows, row_threads(v / Vec<T>::N), 0, s>>>((const T *)logits, target, loss,
										    (T *)softmax, v);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_xent_bwd(int dt, const void *softmax, const int *target, void *grad, int64_t rows, int64_t v,
			      float dloss, cudaStream_t s)
{
	DISPATCH(dt, {
		xent_bwd_k<T><<<(unsigned)rows, row_threads(v / Vec<T>::N), 0, s>>>((const T *)softmax, target,
										    (T *)grad, v, dloss);
	});
	return (int)cudaGetLastError();
}

// ---- Adam (AdamW, decoupled weight decay) on fp32 master parameters; a half copy written ----
template <typename H>
__global__ void adam_k(float *p, float *m, float *v, const float *g, H *ph, int64_t n, float lr, float b1,
		       float b2, float eps, float wd, float c1, float c2)
{
	for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n / 4; q += (int64_t)gridDim.x * blockDim.x) {
		float4 P = reinterpret_cast<float4 *>(p)[q], M = reinterpret_cast<float4 *>(m)[q];
		float4 V = reinterpret_cast<float4 *>(v)[q], G = reinterpret_cast<const float4 *>(g)[q];
		float pp[4] = {P.x, P.y, P.z, P.w}, mm[4] = {M.x, M.y, M.z, M.w}, vv[4] = {V.x, V.y, V.z, V.w};
		float gg[4] = {G.x, G.y, G.z, G.w};
#pragma unroll
		for (int i = 0; i < 4; i++) {
			mm[i] = b1 * mm[i] + (1.f - b1) * gg[i];
			vv[i] = b2 * vv[i] + (1.f - b2) * gg[i] * gg[i];
			float mh = mm[i] / c1, vh = vv[i] / c2;
			pp[i] = pp[i] - lr * (mh / (sqrtf(vh) + eps) + wd * pp[i]);
		}
		reinterpret_cast<float4 *>(p)[q] = make_float4(pp[0], pp[1], pp[2], pp[3]);
		reinterpret_cast<float4 *>(m)[q] = make_float4(mm[0], mm[1], mm[2], mm[3]);
		reinterpret_cast<float4 *>(v)[q] = make_float4(vv[0], vv[1], vv[2], vv[3]);
		if (ph) {
#pragma unroll
			for (int i = 0; i < 4; i++)
				ph[q * 4 + i] = fromf<H>(pp[i]);
		}
	}
}

// ---- cast: y = x converted, 8 elements a thread (n a multiple of 8) ----
template <typename T> __device__ __forceinline__ void ld8(const T *p, float *f)
{
	ld16(p, f);
	if (Vec<T>::N == 4)
		ld16(p + 4, f + 4);
}

template <typename T> __device__ __forceinline__ void st8(T *p, const float *f)
{
	st16(p, f);
	if (Vec<T>::N == 4)
		st16(p + 4, f + 4);
}

template <typename TI, typename TO>
__global__ void cast8_k(const TI *x, TO *y, int64_t n8)
{
	for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n8; q += (int64_t)gridDim.x * blockDim.x) {
		float f[8];
		ld8(x + q * 8, f);
		st8(y + q * 8, f);
	}
}

extern "C" int kj_sw_cast(int dt_in, const void *x, int dt_out, void *y, int64_t n, cudaStream_t s)
{
	if (n % 8)
		return (int)cudaErrorInvalidValue;
	unsigned gr = grid_for((size_t)(n / 8), 256);
	if (dt_out == 2) {
		DISPATCH(dt_in, { cast8_k<T, float><<<gr, 256, 0, s>>>((const T *)x, (float *)y, n / 8); });
	} else if (dt_in == 2) {
		DISPATCH(dt_out, { cast8_k<float, T><<<gr, 256, 0, s>>>((const float *)x, (T *)y, n / 8); });
	} else {
		return (int)cudaErrorInvalidValue; /* half to half is no cast */
	}
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_adam(float *p, float *m, float *v, const float *g, void *p_half, int dt_half, int64_t n,
			  float lr, float b1, float b2, float eps, float wd, int step, cudaStream_t s)
{
	float c1 = 1.f - powf(b1, (float)step), c2 = 1.f - powf(b2, (float)step);
	unsigned gr = grid_for((size_t)(n / 4), 256);
	if (dt_half == 0)
		adam_k<__half><<<gr, 256, 0, s>>>(p, m, v, g, (__half *)p_half, n, lr, b1, b2, eps, wd, c1, c2);
	else if (dt_half == 1)
		adam_k<__nv_bfloat16><<<gr, 256, 0, s>>>(p, m, v, g, (__nv_bfloat16 *)p_half, n, lr, b1, b2, eps, wd,
							 c1, c2);
	else
		adam_k<float><<<gr, 256, 0, s>>>(p, m, v, g, (float *)NULL, n, lr, b1, b2, eps, wd, c1, c2);
	return (int)cudaGetLastError();
}
