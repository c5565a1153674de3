// kjoule-sweep-worker: elementwise kernels (GELU, SiLU-and-multiply, residual add, RoPE, embedding) and
// their launchers.
//
// GELU forward and backward, add, RoPE (rotate-half), embedding gather and its scatter-add
// backward; each extern "C" launcher returns a cudaError_t value.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"
#include "worker_memops.cuh"

#define GELU_K 0.7978845608028654f
template <typename T>
__global__ void gelu_fwd_k(const T *x, T *y, int64_t n)
{
	const int N = Vec<T>::N;
	PACK_LOOP(n, N)
	{
		float f[Vec<T>::N];
		ld16(x + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			f[i] = 0.5f * f[i] * (1.f + tanhf(GELU_K * (f[i] + 0.044715f * f[i] * f[i] * f[i])));
		st16(y + p * N, f);
	}
}

template <typename T>
__global__ void gelu_bwd_k(const T *x, const T *dy, T *dx, int64_t n)
{
	const int N = Vec<T>::N;
	PACK_LOOP(n, N)
	{
		float f[Vec<T>::N], d[Vec<T>::N];
		ld16(x + p * N, f);
		ld16(dy + p * N, d);
#pragma unroll
		for (int i = 0; i < N; i++) {
			float v = f[i], t = tanhf(GELU_K * (v + 0.044715f * v * v * v));
			float dg = 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * GELU_K * (1.f + 3.f * 0.044715f * v * v);
			f[i] = d[i] * dg;
		}
		st16(dx + p * N, f);
	}
}

template <typename T>
__global__ void add_k(const T *a, const T *b, T *y, int64_t n)
{
	const int N = Vec<T>::N;
	PACK_LOOP(n, N)
	{
		float f[Vec<T>::N], g[Vec<T>::N];
		ld16(a + p * N, f);
		ld16(b + p * N, g);
#pragma unroll
		for (int i = 0; i < N; i++)
			f[i] += g[i];
		st16(y + p * N, f);
	}
}

// ---- silu_mul: y = silu(g) * u; backward dg = dy * u * silu'(g), du = dy * silu(g) ----
template <typename T>
__global__ void silu_mul_fwd_k(const T *g, const T *u, T *y, int64_t n)
{
	const int N = Vec<T>::N;
	PACK_LOOP(n, N)
	{
		float a[Vec<T>::N], b[Vec<T>::N];
		ld16(g + p * N, a);
		ld16(u + p * N, b);
#pragma unroll
		for (int i = 0; i < N; i++)
			a[i] = a[i] / (1.f + __expf(-a[i])) * b[i];
		st16(y + p * N, a);
	}
}

template <typename T>
__global__ void silu_mul_bwd_k(const T *g, const T *u, const T *dy, T *dg, T *du, int64_t n)
{
	const int N = Vec<T>::N;
	PACK_LOOP(n, N)
	{
		float a[Vec<T>::N], b[Vec<T>::N], d[Vec<T>::N];
		ld16(g + p * N, a);
		ld16(u + p * N, b);
		ld16(dy + p * N, d);
#pragma unroll
		for (int i = 0; i < N; i++) {
			float sg = 1.f / (1.f + __expf(-a[i])), silu = a[i] * sg;
			float grad_g = d[i] * b[i] * (sg + a[i] * sg * (1.f - sg));
			b[i] = d[i] * silu;
			a[i] = grad_g;
		}
		st16(dg + p * N, a);
		st16(du + p * N, b);
	}
}

extern "C" int kj_sw_silu_mul_fwd(int dt, const void *g, const void *u, void *y, int64_t n, cudaStream_t s)
{
	DISPATCH(dt, {
		silu_mul_fwd_k<T><<<grid_for((size_t)(n / Vec<T>::N), 256), 256, 0, s>>>((const T *)g, (const T *)u,
											  (T *)y, n);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_silu_mul_bwd(int dt, const void *g, const void *u, const void *dy, void *dg, void *du, int64_t n,
				  cudaStream_t s)
{
	DISPATCH(dt, {
		silu_mul_bwd_k<T><<<grid_for((size_t)(n / Vec<T>::N), 256), 256, 0, s>>>(
			(const T *)g, (const T *)u, (const T *)dy, (T *)dg, (T *)du, n);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_gelu_fwd(int dt, const void *x, void *y, int64_t n, cudaStream_t s)
{
	DISPATCH(dt, { gelu_fwd_k<T><<<grid_for((size_t)(n / Vec<T>::N), 256), 256, 0, s>>>((const T *)x, (T *)y, n); });
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_gelu_bwd(int dt, const void *x, const void *dy, void *dx, int64_t n, cudaStream_t s)
{
	DISPATCH(dt, {
		gelu_bwd_k<T><<<grid_for((size_t)(n / Vec<T>::N), 256), 256, 0, s>>>((const T *)x, (const T *)dy,
										      (T *)dx, n);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_add(int dt, const void *a, const void *b, void *y, int64_t n, cudaStream_t s)
{
	DISPATCH(dt, {
		add_k<T><<<grid_for((size_t)(n / Vec<T>::N), 256), 256, 0, s>>>((const T *)a, (const T *)b, (T *)y, n);
	});
	return (int)cudaGetLastError();
}

// ---- RoPE (rotate-half): x [l, bh, d]; cos/sin [l, d/2]; inverse: the backward (sin negated) ----
template <typename T>
__global__ void rope_k(const T *x, const float *cs, const float *sn, T *y, int64_t l, int64_t bh, int64_t d,
		       float sign)
{
	const int N = Vec<T>::N;
	int64_t hp = d / 2 / N, total = l * bh * hp;
	for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = (t % hp) * N, row = t / hp, pos = row / bh;
		const T *xr = x + row * d;
		float a[Vec<T>::N], b[Vec<T>::N];
		ld16(xr + j, a);
		ld16(xr + d / 2 + j, b);
#pragma unroll
		for (int i = 0; i < N; i++) {
			float c = cs[pos * (d / 2) + j + i], s = sign * sn[pos * (d / 2) + j + i];
			float a2 = a[i] * c - b[i] * s, b2 = b[i] * c + a[i] * s;
			a[i] = a2, b[i] = b2;
		}
		st16(y + row * d + j, a);
		st16(y + row * d + d / 2 + j, b);
	}
}

extern "C" int kj_sw_rope(int dt, const void *x, const float *cosv, const float *sinv, void *y, int64_t l,
			  int64_t bh, int64_t d, int inverse, cudaStream_t s)
{
	DISPATCH(dt, {
		size_t work = (size_t)(l * bh * (d / 2 / Vec<T>::N));
		rope_k<T><<<grid_for(work, 256), 256, 0, s>>>((const T *)x, cosv, sinv, (T *)y, l, bh, d,
							       inverse ? -1.f : 1.f);
	});
	return (int)cudaGetLastError();
}

// ---- embedding: gather rows; backward scatter-adds into an fp32 table gradient ----
template <typename T>
__global__ void emb_fwd_k(const int *ids, const T *table, T *y, int64_t n, int64_t dim)
{
	const int N = Vec<T>::N;
	int64_t np = dim / N, total = n * np;
	for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = t / np, p = t % np;
		*reinterpret_cast<uint4 *>(y + r * dim + p * N) =
			*reinterpret_cast<const uint4 *>(table + (int64_t)ids[r] * dim + p * N);
	}
}

template <typename T>
__global__ void emb_bwd_k(const int *ids, const T *dy, float *dt, int64_t n, int64_t dim)
{
	const int N = Vec<T>::N;
	int64_t np = dim / N, total = n * np;
	for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = t / np, p = t % np;
		float f[Vec<T>::N];
		ld16(dy + r * dim + p * N, f);
		float *o = dt + (int64_t)ids[r] * dim + p * N;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
		// one 16-byte vector atomic per 4 floats (sm_90; dim is a multiple of the pack, so aligned)
#pragma unroll
		for (int i = 0; i < N; i += 4)
			atomicAdd(reinterpret_cast<float4 *>(o + i), make_float4(f[i], f[i + 1], f[i + 2], f[i + 3]));
#else
#pragma unroll
		for (int i = 0; i < N; i++)
			atomicAdd(o + i, f[i]);
#endif
	}
}

extern "C" int kj_sw_embedding_fwd(int dt, const int *ids, const void *table, void *y, int64_t n, int64_t dim,
				   cudaStream_t s)
{
	DISPATCH(dt, {
		emb_fwd_k<T><<<grid_for((size_t)(n * dim / Vec<T>::N), 256), 256, 0, s>>>(ids, (const T *)table,
											    (T *)y, n, dim);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_embedding_bwd(int dt, const int *ids, const void *dy, float *dtable, int64_t n, int64_t dim,
				   cudaStream_t s)
{
	DISPATCH(dt, {
		emb_bwd_k<T><<<grid_for((size_t)(n * dim / Vec<T>::N), 256), 256, 0, s>>>(ids, (const T *)dy, dtable,
											    n, dim);
	});
	return (int)cudaGetLastError();
}
