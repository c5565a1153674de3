// kjoule-pipeline-worker's own kernels: pooling, normalisation and activations
// (attention: worker_attention.cu). Launchers are extern "C" and return the launch's cudaError_t.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker_kernels.cuh"
#include "worker_kernels.h"

// Threads for a block that reads one row (or plane) of n loads: one a load, whole warps, between
// lo and 1024.
static unsigned block_for_row(int64_t n, unsigned lo)
{
	return n >= 1024 ? 1024u : n <= (int64_t)lo ? lo : (unsigned)((n + 31) / 32 * 32);
}

static unsigned grid_for(size_t n, unsigned block)
{
	size_t g = (n + block - 1) / block;
	return g > 65535u * 16 ? 65535u * 16 : (unsigned)(g ? g : 1);
}

// ---- pooling, NCHW ----
template <typename T>
__global__ void pool_k(const T *x, T *y, int64_t NC, int64_t H, int64_t W, int64_t P, int64_t Q, int R,
		       int S, int sh, int sw, int ph, int pw, int avg)
{
	size_t n = (size_t)NC * P * Q;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		int64_t q = i % Q, p = (i / Q) % P, nc = i / (P * Q);
		float acc = avg ? 0.f : -INFINITY;
		int cnt = 0;
		for (int r = 0; r < R; r++) {
			int64_t h = p * sh - ph + r;
			if (h < 0 || h >= H)
				continue;
			for (int s2 = 0; s2 < S; s2++) {
				int64_t w = q * sw - pw + s2;
				if (w < 0 || w >= W)
					continue;
				float v = ld(x, (size_t)(nc * H + h) * W + w);
				acc = avg ? acc + v : fmaxf(acc, v);
				cnt++;
			}
		}
		st(y, i, avg ? acc / (float)(R * S) : acc); // count_include_pad, as torch's default
		(void)cnt;
	}
}

// V elements at vector index j of row (V 1: one element; else 16 bytes, row 16-byte aligned), as floats
template <typename T, int V> __device__ __forceinline__ void load_v(const T *row, int64_t j, float *v)
{
	if (V == 1) {
		v[0] = ld(row, j);
	} else {
		uint4 in = reinterpret_cast<const uint4 *>(row)[j];
		const T *e = reinterpret_cast<const T *>(&in);
#pragma unroll
		for (int k = 0; k < V; k++)
			v[k] = ld(e, k);
	}
}

// Global pooling (the window covers the whole plane, one output per plane: the squeeze of a
// squeeze-excite block, a classifier's average pool): one block per plane reduces it with
// coalesced loads (16 bytes a load where the planes allow), where the windowed kernel above would
// give a single thread the whole plane.
template <typename T, int V>
__global__ void gpool_k(const T *x, T *y, int64_t NC, int64_t HW, float div, int avg)
{
	__shared__ float red[32];
	for (int64_t nc = blockIdx.x; nc < NC; nc += gridDim.x) {
		const T *xp = x + (size_t)nc * HW;
		float acc = avg ? 0.f : -INFINITY, v[V];
#pragma unroll 4
		for (int64_t i = threadIdx.x; i < HW / V; i += blockDim.x) {
			load_v<T, V>(xp, i, v);
#pragma unroll
			for (int k = 0; k < V; k++)
				acc = avg ? acc + v[k] : fmaxf(acc, v[k]);
		}
		for (int o = 16; o; o >>= 1) {
			float u = __shfl_xor_sync(0xffffffffu, acc, o);
			acc = avg ? acc + u : fmaxf(acc, u);
		}
		if ((threadIdx.x & 31) == 0)
			red[threadIdx.x >> 5] = acc;
		__syncthreads();
		if (threadIdx.x == 0) {
			float r = avg ? 0.f : -INFINITY;
			for (int w = 0; w < (int)(blockDim.x >> 5); w++)
				r = avg ? r + red[w] : fmaxf(r, red[w]);
			st(y, (size_t)nc, avg ? r / div : r);
		}
		__syncthreads();
	}
}

template <typename T, int V>
static void gpool_launch(const T *x, T *y, int64_t NC, int64_t hw, float div, int avg, cudaStream_t s)
{
	int64_t loads = hw / V;
	unsigned threads = block_for_row(loads, 32);
	unsigned g = NC > 65535 * 16 ? 65535u * 16 : (unsigned)(NC ? NC : 1);
	gpool_k<T, V><<<g, threads, 0, s>>>(x, y, NC, hw, div, avg);
}

template <typename T>
static void pool_launch(const T *x, T *y, int64_t NC, int64_t H, int64_t W, int64_t P, int64_t Q, int R, int S,
			int sh, int sw, int ph, int pw, int avg, cudaStream_t s)
{
	if (P == 1 && Q == 1 && ph == 0 && pw == 0 && R >= H && S >= W) {
		const int V = 16 / sizeof(T);
		int64_t hw = H * W;
		float div = (float)R * (float)S; // count_include_pad, as pool_k
		if (hw % V == 0 && (uintptr_t)x % 16 == 0)
			gpool_launch<T, V>(x, y, NC, hw, div, avg, s);
		else
			gpool_launch<T, 1>(x, y, NC, hw, div, avg, s);
		return;
	}
	unsigned g = grid_for((size_t)NC * P * Q, 256);
	pool_k<<<g, 256, 0, s>>>(x, y, NC, H, W, P, Q, R, S, sh, sw, ph, pw, avg);
}

extern "C" int kjw_pool(const void *x, void *y, int dtype, int64_t NC, int64_t H, int64_t W, int64_t P,
			int64_t Q, int R, int S, int sh, int sw, int ph, int pw, int avg, cudaStream_t s)
{
	if (dtype == KJW_F16)
		pool_launch((const __half *)x, (__half *)y, NC, H, W, P, Q, R, S, sh, sw, ph, pw, avg, s);
	else if (dtype == KJW_BF16)
		pool_launch((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, NC, H, W, P, Q, R, S, sh, sw, ph, pw, avg, s);
	else
		pool_launch((const float *)x, (float *)y, NC, H, W, P, Q, R, S, sh, sw, ph, pw, avg, s);
	return (int)cudaGetLastError();
}

// ---- batch norm (inference: per-channel scale and shift), NCHW ----
template <typename T>
__global__ void bn_k(const T *x, T *y, const float *scale, const float *shift, size_t n, int64_t C, int64_t HW)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		int64_t c = (i / HW) % C;
		st(y, i, ld(x, i) * scale[c] + shift[c]);
	}
}

// The same with 16-byte loads and stores: V elements a thread (8 halves or 4 floats). When HW is a
// multiple of V the V elements share a channel, looked up once; channels-last (HW 1, C a multiple
// of V) they are V consecutive channels, found without a division each.
template <typename T, int V>
__global__ void bn_vk(const T *x, T *y, const float *scale, const float *shift, size_t nv, int64_t C, int64_t HW)
{
	for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < nv; j += (size_t)gridDim.x * blockDim.x) {
		uint4 in = reinterpret_cast<const uint4 *>(x)[j], out;
		const T *e = reinterpret_cast<const T *>(&in);
		T *o = reinterpret_cast<T *>(&out);
		size_t i0 = j * V;
		if (HW == 1 && C % V == 0) {
			// channels fastest (NHWC): the V elements are channels c0..c0+V-1
			int64_t c0 = (int64_t)(i0 % (size_t)C);
#pragma unroll
			for (int k = 0; k < V; k++)
				st(o, k, ld(e, k) * scale[c0 + k] + shift[c0 + k]);
		} else if (HW % V == 0) {
			int64_t c = (int64_t)((i0 / HW) % C);
			float a = scale[c], b = shift[c];
#pragma unroll
			for (int k = 0; k < V; k++)
				st(o, k, ld(e, k) * a + b);
		} else {
#pragma unroll
			for (int k = 0; k < V; k++) {
				int64_t c = (int64_t)(((i0 + k) / HW) % C);
				st(o, k, ld(e, k) * scale[c] + shift[c]);
			}
		}
		reinterpret_cast<uint4 *>(y)[j] = out;
	}
}

// The same transform one channel plane at a time, as PyTorch's NCHW eval batch norm launches it:
// grid (C, batch chunks), a block of tf x tb threads, x over the plane's HW elements one element a
// load, y over the batch. Its 2-byte loads (fp16) reach about half the bandwidth of bn_vk's.
template <typename T>
__global__ void bn_plane_k(const T *x, T *y, const float *scale, const float *shift, int64_t N, int64_t C,
			   int64_t HW)
{
	int64_t c = blockIdx.x;
	float a = scale[c], b = shift[c];
	for (int64_t n = threadIdx.y + (int64_t)blockIdx.y * blockDim.y; n < N; n += (int64_t)blockDim.y * gridDim.y) {
		size_t base = ((size_t)n * C + c) * HW;
		for (int64_t f = threadIdx.x; f < HW; f += blockDim.x)
			st(y, base + f, ld(x, base + f) * a + b);
	}
}

// Threads for n elements: the first of 32, 64, 128, 256, 512 that covers n, else 512.
static int plane_threads(int64_t n)
{
	for (int t = 32; t < 512; t *= 2)
		if (n <= t)
			return t;
	return 512;
}

template <typename T>
static void bn_plane_launch(const T *x, T *y, const float *a, const float *b, int64_t N, int64_t C, int64_t HW,
			    cudaStream_t s)
{
	int tf = plane_threads(HW / 4), t_all = plane_threads(HW);
	int t64 = t_all < 64 ? t_all : 64;
	tf = tf > t64 ? tf : t64;
	int tb = 64 / tf > 1 ? 64 / tf : 1;
	int64_t gy = (N + tb - 1) / tb, cap = (256 * 1024) / C;
	gy = gy < cap ? gy : cap;
	gy = gy < 1 ? 1 : gy > 65535 ? 65535 : gy;
	bn_plane_k<<<dim3((unsigned)C, (unsigned)gy), dim3(tf, tb), 0, s>>>(x, y, a, b, N, C, HW);
}

static int aligned16(const void *a, const void *b, const void *c)
{
	return ((uintptr_t)a % 16 == 0) && ((uintptr_t)b % 16 == 0) && ((uintptr_t)c % 16 == 0);
}

// ---- layer / RMS norm over the last dimension C, one block per row ----
// V elements a load: 8 halves or 4 floats in 16 bytes where the row allows (C a multiple of V,
// 16-byte aligned rows), else 1. The block has as many threads as the row has loads, up to 1024,
// so that a single long row (a decoder's norm at batch 1) is read by the whole block at once.
template <typename T, int V>
__global__ void ln_k(const T *x, T *y, const float *gamma, const float *beta, int64_t C, int rms)
{
	__shared__ float red[2][32];
	const T *xr = x + (size_t)blockIdx.x * C;
	T *yr = y + (size_t)blockIdx.x * C;
	const int64_t nv = C / V;
	float s = 0.f, s2 = 0.f, v[V];
#pragma unroll 4
	for (int64_t j = threadIdx.x; j < nv; j += blockDim.x) {
		load_v<T, V>(xr, j, v);
#pragma unroll
		for (int k = 0; k < V; k++) {
			s += v[k];
			s2 += v[k] * v[k];
		}
	}
	for (int o = 16; o; o >>= 1) {
		s += __shfl_xor_sync(0xffffffffu, s, o);
		s2 += __shfl_xor_sync(0xffffffffu, s2, o);
	}
	if ((threadIdx.x & 31) == 0) {
		red[0][threadIdx.x >> 5] = s;
		red[1][threadIdx.x >> 5] = s2;
	}
	__syncthreads();
	if (threadIdx.x < 32) {
		int nw = blockDim.x >> 5;
		s = threadIdx.x < nw ? red[0][threadIdx.x] : 0.f;
		s2 = threadIdx.x < nw ? red[1][threadIdx.x] : 0.f;
		for (int o = 16; o; o >>= 1) {
			s += __shfl_xor_sync(0xffffffffu, s, o);
			s2 += __shfl_xor_sync(0xffffffffu, s2, o);
		}
		if (!threadIdx.x) {
			red[0][0] = s;
			red[1][0] = s2;
		}
	}
	__syncthreads();
	float mean = rms ? 0.f : red[0][0] / (float)C;
	float var = red[1][0] / (float)C - mean * mean;
	float inv = rsqrtf(fmaxf(var, 0.f) + 1e-5f);
#pragma unroll 4
	for (int64_t j = threadIdx.x; j < nv; j += blockDim.x) {
		load_v<T, V>(xr, j, v);
		int64_t c0 = j * V;
		if (V == 1) {
			st(yr, c0, (v[0] - mean) * inv * gamma[c0] + (rms ? 0.f : beta[c0]));
		} else {
			uint4 out;
			T *o = reinterpret_cast<T *>(&out);
#pragma unroll
			for (int k = 0; k < V; k++)
				st(o, k, (v[k] - mean) * inv * gamma[c0 + k] + (rms ? 0.f : beta[c0 + k]));
			reinterpret_cast<uint4 *>(yr)[j] = out;
		}
	}
}

template <typename T, int V>
static void ln_launch(const T *x, T *y, const float *gamma, const float *beta, int64_t rows, int64_t C, int rms,
		      cudaStream_t s)
{
	int64_t loads = C / V;
	unsigned threads = block_for_row(loads, 64);
	ln_k<T, V><<<(unsigned)rows, threads, 0, s>>>(x, y, gamma, beta, C, rms);
}

template <typename T, int V>
static void ln_pick(const T *x, T *y, const float *gamma, const float *beta, int64_t rows, int64_t C, int rms,
		    cudaStream_t s)
{
	if (C % V == 0 && aligned16(x, y, NULL))
		ln_launch<T, V>(x, y, gamma, beta, rows, C, rms, s);
	else
		ln_launch<T, 1>(x, y, gamma, beta, rows, C, rms, s);
}

extern "C" int kjw_norm(const void *x, void *y, int dtype, int kind, const float *a, const float *b, int64_t N,
			int64_t C, int64_t HW, cudaStream_t s)
{
	size_t n = (size_t)N * C * HW;
	if (kind == 3) {
		if (dtype == KJW_F16)
			bn_plane_launch((const __half *)x, (__half *)y, a, b, N, C, HW, s);
		else if (dtype == KJW_BF16)
			bn_plane_launch((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, a, b, N, C, HW, s);
		else
			bn_plane_launch((const float *)x, (float *)y, a, b, N, C, HW, s);
	} else if (kind == 0 && aligned16(x, y, NULL) && n % (dtype == KJW_F32 ? 4 : 8) == 0) {
		size_t nv = n / (dtype == KJW_F32 ? 4 : 8);
		unsigned g = grid_for(nv, 256);
		if (dtype == KJW_F16)
			bn_vk<__half, 8><<<g, 256, 0, s>>>((const __half *)x, (__half *)y, a, b, nv, C, HW);
		else if (dtype == KJW_BF16)
			bn_vk<__nv_bfloat16, 8>
				<<<g, 256, 0, s>>>((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, a, b, nv, C, HW);
		else
			bn_vk<float, 4><<<g, 256, 0, s>>>((const float *)x, (float *)y, a, b, nv, C, HW);
	} else if (kind == 0) {
		unsigned g = grid_for(n, 256);
		if (dtype == KJW_F16)
			bn_k<<<g, 256, 0, s>>>((const __half *)x, (__half *)y, a, b, n, C, HW);
		else if (dtype == KJW_BF16)
			bn_k<<<g, 256, 0, s>>>((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, a, b, n, C, HW);
		else
			bn_k<<<g, 256, 0, s>>>((const float *)x, (float *)y, a, b, n, C, HW);
	} else {
		int64_t rows = N * HW;
		int rms = kind == 2;
		if (dtype == KJW_F16)
			ln_pick<__half, 8>((const __half *)x, (__half *)y, a, b, rows, C, rms, s);
		else if (dtype == KJW_BF16)
			ln_pick<__nv_bfloat16, 8>((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, a, b, rows, C, rms, s);
		else
			ln_pick<float, 4>((const float *)x, (float *)y, a, b, rows, C, rms, s);
	}
	return (int)cudaGetLastError();
}

// ---- activations; binary ones read b (mul: b broadcast over HW, as a squeeze-excite scale) ----
__device__ __forceinline__ float act_f(int op, float v)
{
	switch (op) {
	case KJW_RELU: return fmaxf(v, 0.f);
	case KJW_RELU6: return fminf(fmaxf(v, 0.f), 6.f);
	case KJW_GELU: return 0.5f * v * (1.f + erff(v * 0.70710678f));
	case KJW_SILU: return v / (1.f + __expf(-v));
	case KJW_SIGMOID: return 1.f / (1.f + __expf(-v));
	case KJW_HARDSWISH: return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;
	case KJW_HARDSIGMOID: return fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;
	default: return v;
	}
}

// One element of an activation phase: v, the second operand's element at the same index (ADD,
// ADD_RELU) and the per-channel factor (MUL); each path loads only what its op reads.
template <typename T>
__device__ __forceinline__ float act_one(int op, float v, const T *b, size_t same, size_t chan)
{
	if (op == KJW_ADD)
		return v + ld(b, same);
	if (op == KJW_ADD_RELU)
		return fmaxf(v + ld(b, same), 0.f);
	if (op == KJW_MUL)
		return v * ld(b, chan);
	return act_f(op, v);
}

template <typename T>
__global__ void act_k(const T *x, const T *b, T *y, size_t n, int op, int64_t HW)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		st(y, i, act_one(op, ld(x, i), b, i, i / HW));
}

// The same with 16-byte loads and stores, V elements a thread (the second operand too, except
// for the per-channel MUL, read element by element).
template <typename T, int V>
__global__ void act_vk(const T *x, const T *b, T *y, size_t nv, int op, int64_t HW)
{
	for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < nv; j += (size_t)gridDim.x * blockDim.x) {
		uint4 in = reinterpret_cast<const uint4 *>(x)[j], in2, out;
		const T *e = reinterpret_cast<const T *>(&in), *f = reinterpret_cast<const T *>(&in2);
		T *o = reinterpret_cast<T *>(&out);
		if (op == KJW_ADD || op == KJW_ADD_RELU)
			in2 = reinterpret_cast<const uint4 *>(b)[j];
#pragma unroll
		for (int k = 0; k < V; k++) {
			/* the second operand of ADD/ADD_RELU from this thread's loaded vector f; MUL's factor
			 * from b by channel */
			float v = ld(e, k);
			st(o, k, op == KJW_MUL ? act_one(op, v, b, 0, (j * V + k) / HW) : act_one(op, v, f, k, 0));
		}
		reinterpret_cast<uint4 *>(y)[j] = out;
	}
}

extern "C" int kjw_act(const void *x, const void *b, void *y, int dtype, int op, size_t n, int64_t HW,
		       cudaStream_t s)
{
	int V = dtype == KJW_F32 ? 4 : 8;
	const void *b16 = op == KJW_ADD || op == KJW_ADD_RELU ? b : NULL;
	if (n % V == 0 && aligned16(x, y, b16)) {
		size_t nv = n / V;
		unsigned g = grid_for(nv, 256);
		if (dtype == KJW_F16)
			act_vk<__half, 8><<<g, 256, 0, s>>>((const __half *)x, (const __half *)b, (__half *)y, nv, op, HW);
		else if (dtype == KJW_BF16)
			act_vk<__nv_bfloat16, 8><<<g, 256, 0, s>>>((const __nv_bfloat16 *)x, (const __nv_bfloat16 *)b,
								   (__nv_bfloat16 *)y, nv, op, HW);
		else
			act_vk<float, 4><<<g, 256, 0, s>>>((const float *)x, (const float *)b, (float *)y, nv, op, HW);
		return (int)cudaGetLastError();
	}
	unsigned g = grid_for(n, 256);
	if (dtype == KJW_F16)
		act_k<<<g, 256, 0, s>>>((const __half *)x, (const __half *)b, (__half *)y, n, op, HW);
	else if (dtype == KJW_BF16)
		act_k<<<g, 256, 0, s>>>((const __nv_bfloat16 *)x, (const __nv_bfloat16 *)b, (__nv_bfloat16 *)y, n,
					op, HW);
	else
		act_k<<<g, 256, 0, s>>>((const float *)x, (const float *)b, (float *)y, n, op, HW);
	return (int)cudaGetLastError();
}
