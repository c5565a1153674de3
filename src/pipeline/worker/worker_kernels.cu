// kjoule-pipeline-worker's own kernels: random fill, pooling, normalisation, activations and a
// plain attention (scores, softmax, weighted sum in one block per query row). Launchers are
// extern "C" and return the launch's cudaError_t.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "worker_kernels.h"

template <typename T> __device__ __forceinline__ float ld(const T *p, size_t i) { return (float)p[i]; }
template <> __device__ __forceinline__ float ld<__half>(const __half *p, size_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16 *p, size_t i)
{
	return __bfloat162float(p[i]);
}
template <typename T> __device__ __forceinline__ void st(T *p, size_t i, float v) { p[i] = (T)v; }
template <> __device__ __forceinline__ void st<__half>(__half *p, size_t i, float v) { p[i] = __float2half(v); }
template <> __device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16 *p, size_t i, float v)
{
	p[i] = __float2bfloat16(v);
}

static unsigned grid_for(size_t n, unsigned block)
{
	size_t g = (n + block - 1) / block;
	return g > 65535u * 16 ? 65535u * 16 : (unsigned)(g ? g : 1);
}

// ---- random fill: |v| in [scale/16, scale], random sign, never zero ----
__device__ __forceinline__ uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

template <typename T> __global__ void fill_k(T *p, size_t n, uint64_t seed, float scale)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint64_t h = mix(seed ^ (i * 0x9e3779b97f4a7c15ULL));
		float u = (float)(h >> 40) * (1.0f / 16777216.0f); // [0, 1)
		float v = scale * (0.0625f + 0.9375f * u);
		st(p, i, (h & 1) ? -v : v);
	}
}

extern "C" int kjw_fill(void *p, size_t n, int dtype, uint64_t seed, float scale, cudaStream_t s)
{
	unsigned g = grid_for(n, 256);
	if (dtype == KJW_F16)
		fill_k<<<g, 256, 0, s>>>((__half *)p, n, seed, scale);
	else if (dtype == KJW_BF16)
		fill_k<<<g, 256, 0, s>>>((__nv_bfloat16 *)p, n, seed, scale);
	else
		fill_k<<<g, 256, 0, s>>>((float *)p, n, seed, scale);
	return (int)cudaGetLastError();
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

extern "C" int kjw_pool(const void *x, void *y, int dtype, int64_t NC, int64_t H, int64_t W, int64_t P,
			int64_t Q, int R, int S, int sh, int sw, int ph, int pw, int avg, cudaStream_t s)
{
	unsigned g = grid_for((size_t)NC * P * Q, 256);
	if (dtype == KJW_F16)
		pool_k<<<g, 256, 0, s>>>((const __half *)x, (__half *)y, NC, H, W, P, Q, R, S, sh, sw, ph, pw, avg);
	else if (dtype == KJW_BF16)
		pool_k<<<g, 256, 0, s>>>((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, NC, H, W, P, Q, R, S, sh, sw,
					 ph, pw, avg);
	else
		pool_k<<<g, 256, 0, s>>>((const float *)x, (float *)y, NC, H, W, P, Q, R, S, sh, sw, ph, pw, avg);
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

static int aligned16(const void *a, const void *b, const void *c)
{
	return ((uintptr_t)a % 16 == 0) && ((uintptr_t)b % 16 == 0) && ((uintptr_t)c % 16 == 0);
}

// ---- layer / RMS norm over the last dimension C, one block per row ----
template <typename T>
__global__ void ln_k(const T *x, T *y, const float *gamma, const float *beta, int64_t C, int rms)
{
	__shared__ float red[2][32];
	const T *xr = x + (size_t)blockIdx.x * C;
	T *yr = y + (size_t)blockIdx.x * C;
	float s = 0.f, s2 = 0.f;
	for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
		float v = ld(xr, c);
		s += v;
		s2 += v * v;
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
	for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
		st(yr, c, (ld(xr, c) - mean) * inv * gamma[c] + (rms ? 0.f : beta[c]));
}

extern "C" int kjw_norm(const void *x, void *y, int dtype, int kind, const float *a, const float *b, int64_t N,
			int64_t C, int64_t HW, cudaStream_t s)
{
	size_t n = (size_t)N * C * HW;
	if (kind == 0 && aligned16(x, y, NULL) && n % (dtype == KJW_F32 ? 4 : 8) == 0) {
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
		unsigned rows = (unsigned)(N * HW);
		int rms = kind == 2;
		if (dtype == KJW_F16)
			ln_k<<<rows, 256, 0, s>>>((const __half *)x, (__half *)y, a, b, C, rms);
		else if (dtype == KJW_BF16)
			ln_k<<<rows, 256, 0, s>>>((const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, a, b, C, rms);
		else
			ln_k<<<rows, 256, 0, s>>>((const float *)x, (float *)y, a, b, C, rms);
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

// ---- attention: Q [N*heads, Sq, D], K and V [N*heads, Skv, D], O like Q; one block per query ----
template <typename T>
__global__ void attn_k(const T *q, const T *k, const T *v, T *o, int64_t Sq, int64_t Skv, int D, int causal,
		       float scale)
{
	extern __shared__ float sm[]; // D query values, then Skv scores
	float *qs = sm, *sc = sm + D;
	__shared__ float red[32];
	int64_t bh = blockIdx.y, qi = blockIdx.x;
	const T *qr = q + ((size_t)bh * Sq + qi) * D;
	const T *kb = k + (size_t)bh * Skv * D;
	const T *vb = v + (size_t)bh * Skv * D;
	int64_t lim = causal ? qi + (Skv - Sq) + 1 : Skv;
	if (lim > Skv)
		lim = Skv;
	for (int d = threadIdx.x; d < D; d += blockDim.x)
		qs[d] = ld(qr, d) * scale;
	__syncthreads();
	float mx = -INFINITY;
	for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
		float a = 0.f;
		for (int d = 0; d < D; d++)
			a += qs[d] * ld(kb, (size_t)j * D + d);
		sc[j] = a;
		mx = fmaxf(mx, a);
	}
	for (int off = 16; off; off >>= 1)
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = mx;
	__syncthreads();
	mx = -INFINITY;
	for (int w = 0; w < (int)(blockDim.x >> 5); w++)
		mx = fmaxf(mx, red[w]);
	__syncthreads();
	float sum = 0.f;
	for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
		float e = __expf(sc[j] - mx);
		sc[j] = e;
		sum += e;
	}
	for (int off = 16; off; off >>= 1)
		sum += __shfl_xor_sync(0xffffffffu, sum, off);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = sum;
	__syncthreads();
	sum = 0.f;
	for (int w = 0; w < (int)(blockDim.x >> 5); w++)
		sum += red[w];
	float inv = 1.f / sum;
	T *orow = o + ((size_t)bh * Sq + qi) * D;
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.f;
		for (int64_t j = 0; j < lim; j++)
			a += sc[j] * ld(vb, (size_t)j * D + d);
		st(orow, d, a * inv);
	}
}

// the sweep worker's fused attention (src/sweep/worker/worker_fa2.cu); dt 0 = fp16, 1 = bf16
extern "C" int kj_sw_fa2_supported(int dt, int64_t d);
extern "C" int kj_sw_fa2_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh,
			     int64_t l, int64_t d, float scale, int causal, cudaStream_t s);

static int fa2_dt(int dtype)
{
	return dtype == KJW_F16 ? 0 : dtype == KJW_BF16 ? 1 : -1;
}

extern "C" int kjw_attention_fused(int dtype, int64_t BH, int64_t Sq, int64_t Skv, int D)
{
	return fa2_dt(dtype) >= 0 && kj_sw_fa2_supported(fa2_dt(dtype), D) && Sq == Skv && Sq >= 1 && BH >= 1 &&
	       BH <= 65535;
}

extern "C" int kjw_attention(const void *q, const void *k, const void *v, void *o, int dtype, int64_t BH,
			     int64_t Sq, int64_t Skv, int D, int causal, float *lse, cudaStream_t s)
{
	if (lse && kjw_attention_fused(dtype, BH, Sq, Skv, D))
		return kj_sw_fa2_fwd(fa2_dt(dtype), q, k, v, o, lse, BH, Sq, D, rsqrtf((float)D), causal, s);
	size_t smem = ((size_t)D + (size_t)Skv) * sizeof(float);
	dim3 grid((unsigned)Sq, (unsigned)BH);
	float scale = rsqrtf((float)D);
	cudaError_t e = cudaSuccess;
	if (smem > 48 * 1024) {
		if (dtype == KJW_F16)
			e = cudaFuncSetAttribute(attn_k<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
		else if (dtype == KJW_BF16)
			e = cudaFuncSetAttribute(attn_k<__nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
						 (int)smem);
		else
			e = cudaFuncSetAttribute(attn_k<float>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
		if (e)
			return (int)e;
	}
	if (dtype == KJW_F16)
		attn_k<<<grid, 128, smem, s>>>((const __half *)q, (const __half *)k, (const __half *)v, (__half *)o, Sq,
					       Skv, D, causal, scale);
	else if (dtype == KJW_BF16)
		attn_k<<<grid, 128, smem, s>>>((const __nv_bfloat16 *)q, (const __nv_bfloat16 *)k,
					       (const __nv_bfloat16 *)v, (__nv_bfloat16 *)o, Sq, Skv, D, causal, scale);
	else
		attn_k<<<grid, 128, smem, s>>>((const float *)q, (const float *)k, (const float *)v, (float *)o, Sq, Skv,
					       D, causal, scale);
	return (int)cudaGetLastError();
}
