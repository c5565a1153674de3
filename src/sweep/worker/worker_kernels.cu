// kjoule-sweep-worker: the memory-bound operators' device kernels (layer/RMS norm, softmax,
// masked softmax, fill-mask, GELU, residual add, RoPE, embedding, cross entropy, Adam), each with an
// extern "C" launcher returning a cudaError_t value. 16-byte loads and stores (8 halves or 4 floats
// a thread), fp32 arithmetic, one pass over device memory (row kernels re-read their row from cache).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"

static unsigned grid_for(size_t work, unsigned threads)
{
	size_t g = (work + threads - 1) / threads;
	return (unsigned)(g < 1 ? 1 : g > 65536 ? 65536 : g);
}

// ---- block reductions ----
__device__ __forceinline__ float warp_sum(float x)
{
	for (int o = 16; o; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

// Sum over the block; every thread gets the result. sh: 33 floats of shared memory.
__device__ float block_sum(float x, float *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
	x = warp_sum(x);
	__syncthreads();
	if (!lane)
		sh[w] = x;
	__syncthreads();
	float t = lane < nw ? sh[lane] : 0.f;
	t = warp_sum(t);
	return t;
}

// Online (max, sum of exp(x - max)) pairs merged over the block.
__device__ __forceinline__ void ms_merge(float &m, float &s, float m2, float s2)
{
	float M = fmaxf(m, m2);
	if (M == -INFINITY)
		return;
	s = s * __expf(m - M) + s2 * __expf(m2 - M);
	m = M;
}

__device__ void block_ms(float &m, float &s, float *sh)
{
	int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
	for (int o = 16; o; o >>= 1)
		ms_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
	__syncthreads();
	if (!lane)
		sh[w] = m, sh[32 + w] = s;
	__syncthreads();
	m = lane < nw ? sh[lane] : -INFINITY;
	s = lane < nw ? sh[32 + lane] : 0.f;
	for (int o = 16; o; o >>= 1)
		ms_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}

// softmax's rows: at most 128 threads, each with ceil(packs / 128) packs, so the busiest thread's
// share grows smoothly with the row (row_threads' 4 packs a thread leave some threads 3 and others
// 2 when the row is an odd multiple of 128 fp16 columns: 20 % slower there than a smooth curve)
static unsigned even_row_threads(int64_t packs)
{
	int64_t k = (packs + 127) / 128, t = (packs + k - 1) / k;
	t = (t + 31) / 32 * 32;
	return (unsigned)(t < 32 ? 32 : t);
}

static unsigned row_threads(int64_t packs)
{
	int64_t t = (packs + 3) / 4;
	t = (t + 31) / 32 * 32;
	return (unsigned)(t < 32 ? 32 : t > 1024 ? 1024 : t);
}

// ---- layer norm / RMS norm: one block a row; statistics in fp32 ----
template <typename T, int RMS>
__global__ void ln_fwd_k(const T *x, const T *g, const T *b, T *y, float *mean, float *rstd, int64_t cols)
{
	__shared__ float sh[64];
	const int N = Vec<T>::N;
	int64_t r = blockIdx.x, np = cols / N;
	const T *xr = x + r * cols;
	float s1 = 0, s2 = 0, f[Vec<T>::N];
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(xr + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			s1 += f[i], s2 += f[i] * f[i];
	}
	s1 = block_sum(s1, sh);
	s2 = block_sum(s2, sh);
	float mu = RMS ? 0.f : s1 / cols;
	float var = s2 / cols - mu * mu;
	float rs = rsqrtf(fmaxf(var, 0.f) + 1e-5f);
	if (!threadIdx.x) {
		mean[r] = mu;
		rstd[r] = rs;
	}
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		float gg[Vec<T>::N], bb[Vec<T>::N];
		ld16(xr + p * N, f);
		ld16(g + p * N, gg);
		if (!RMS)
			ld16(b + p * N, bb);
#pragma unroll
		for (int i = 0; i < N; i++)
			f[i] = (f[i] - mu) * rs * gg[i] + (RMS ? 0.f : bb[i]);
		st16(y + r * cols + p * N, f);
	}
}

// Backward: dx per row; dgamma/dbeta partial sums per block (rows blockIdx, +gridDim) into
// part_g/part_b [gridDim, cols] fp32, reduced by ln_reduce_k.
template <typename T, int RMS>
__global__ void ln_bwd_k(const T *x, const T *g, const T *dy, const float *mean, const float *rstd, T *dx,
			 float *part_g, float *part_b, int64_t rows, int64_t cols)
{
	__shared__ float sh[64];
	const int N = Vec<T>::N;
	int64_t np = cols / N;
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const T *xr = x + r * cols, *dyr = dy + r * cols;
		float mu = mean[r], rs = rstd[r], c1 = 0, c2 = 0;
		float f[Vec<T>::N], d[Vec<T>::N], gg[Vec<T>::N];
		for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
			ld16(xr + p * N, f);
			ld16(dyr + p * N, d);
			ld16(g + p * N, gg);
#pragma unroll
			for (int i = 0; i < N; i++) {
				float xh = (f[i] - mu) * rs, w = gg[i] * d[i];
				c1 += xh * w;
				c2 += w;
			}
		}
		c1 = block_sum(c1, sh) / cols;
		c2 = RMS ? 0.f : block_sum(c2, sh) / cols;
		for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
			ld16(xr + p * N, f);
			ld16(dyr + p * N, d);
			ld16(g + p * N, gg);
			float o[Vec<T>::N];
			float *pg = part_g + blockIdx.x * cols + p * N, *pb = part_b + blockIdx.x * cols + p * N;
#pragma unroll
			for (int i = 0; i < N; i++) {
				float xh = (f[i] - mu) * rs;
				o[i] = (gg[i] * d[i] - xh * c1 - c2) * rs;
				float a = d[i] * xh, b = d[i];
				if (r == blockIdx.x) {
					pg[i] = a;
					if (!RMS)
						pb[i] = b;
				} else {
					pg[i] += a;
					if (!RMS)
						pb[i] += b;
				}
			}
			st16(dx + r * cols + p * N, o);
		}
	}
}

template <typename T>
__global__ void ln_reduce_k(const float *part, int nparts, T *out, int64_t cols)
{
	int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	float s = 0;
	for (int i = 0; i < nparts; i++)
		s += part[(int64_t)i * cols + c];
	out[c] = fromf<T>(s);
}

#include "worker_norm_bwd.cuh"

template <typename T, int RMS>
static int ln_bwd_rows(const void *x, const void *g, const void *dy, const float *mean, const float *rstd, void *dx,
		       float *part_g, float *part_b, int nparts, void *dg, void *db, int64_t rows, int64_t cols,
		       cudaStream_t s)
{
	int ppt;
	unsigned tpb;
	int64_t per, parts;
	static int sms; /* set by the first call, never captured */
	if (!sms) {
		int dev = 0;
		if (cudaGetDevice(&dev) != cudaSuccess ||
		    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
			sms = 132;
	}
	ln_bwd_plan(cols / Vec<T>::N, rows, nparts, sms, &ppt, &tpb, &per, &parts);
#define LNB(P)                                                                                       \
	ln_bwd_rows_k<T, RMS, P><<<(unsigned)parts, tpb, 0, s>>>((const T *)x, (const T *)g, (const T *)dy, \
								  mean, rstd, (T *)dx, part_g, part_b, rows, cols, per)
	if (ppt == 1)
		LNB(1);
	else if (ppt == 2)
		LNB(2);
	else if constexpr (sizeof(T) == 4) // 16-bit types stop at 2 packs a thread (registers)
		LNB(4);
	else
		return (int)cudaErrorInvalidValue;
#undef LNB
	dim3 gr((unsigned)((cols + 31) / 32), RMS ? 1 : 2);
	ln_colsum_k<T><<<gr, 256, 0, s>>>(part_g, part_b, (int)parts, (T *)dg, (T *)db, cols);
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_layernorm_fwd(int dt, const void *x, const void *g, const void *b, void *y, float *mean,
				   float *rstd, int64_t rows, int64_t cols, int rms, cudaStream_t s)
{
	DISPATCH(dt, {
		unsigned t = row_threads(cols / Vec<T>::N);
		if (rms)
			ln_fwd_k<T, 1><<<(unsigned)rows, t, 0, s>>>((const T *)x, (const T *)g, (const T *)b, (T *)y,
								    mean, rstd, cols);
		else
			ln_fwd_k<T, 0><<<(unsigned)rows, t, 0, s>>>((const T *)x, (const T *)g, (const T *)b, (T *)y,
								    mean, rstd, cols);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_layernorm_bwd(int dt, const void *x, const void *g, const void *dy, const float *mean,
				   const float *rstd, void *dx, float *part_g, float *part_b, int nparts,
				   void *dg, void *db, int64_t rows, int64_t cols, int rms, cudaStream_t s)
{
	unsigned parts = (unsigned)(rows < nparts ? rows : nparts);
	DISPATCH(dt, {
		if (rows > 0 && cols <= 8192) /* up to 2 packs (4 for fp32) of 512 threads a row */
			return rms ? ln_bwd_rows<T, 1>(x, g, dy, mean, rstd, dx, part_g, part_b, (int)parts, dg, db, rows,
						      cols, s)
				   : ln_bwd_rows<T, 0>(x, g, dy, mean, rstd, dx, part_g, part_b, (int)parts, dg, db, rows,
						      cols, s);
		unsigned t = row_threads(cols / Vec<T>::N);
		if (rms)
			ln_bwd_k<T, 1><<<parts, t, 0, s>>>((const T *)x, (const T *)g, (const T *)dy, mean, rstd,
							   (T *)dx, part_g, part_b, rows, cols);
		else
			ln_bwd_k<T, 0><<<parts, t, 0, s>>>((const T *)x, (const T *)g, (const T *)dy, mean, rstd,
							   (T *)dx, part_g, part_b, rows, cols);
		unsigned gr = (unsigned)((cols + 255) / 256);
		ln_reduce_k<T><<<gr, 256, 0, s>>>(part_g, (int)parts, (T *)dg, cols);
		if (!rms)
			ln_reduce_k<T><<<gr, 256, 0, s>>>(part_b, (int)parts, (T *)db, cols);
	});
	return (int)cudaGetLastError();
}

// ---- softmax over rows (scale * x, optional causal mask: column > row % cols masked) ----
template <typename T>
__global__ void softmax_fwd_k(const T *x, T *y, int64_t cols, float scale, int causal)
{
	__shared__ float sh[64];
	const int N = Vec<T>::N;
	int64_t r = blockIdx.x, np = cols / N, qi = r % cols;
	const T *xr = x + r * cols;
	float m = -INFINITY, sum = 0.f, f[Vec<T>::N];
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(xr + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++) {
			if (causal && p * N + i > qi)
				continue;
			float v = f[i] * scale;
			ms_merge(m, sum, v, 1.f);
		}
	}
	block_ms(m, sum, sh);
	float inv = 1.f / sum;
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(xr + p * N, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			f[i] = (causal && p * N + i > qi) ? 0.f : __expf(f[i] * scale - m) * inv;
		st16(y + r * cols + p * N, f);
	}
}

template <typename T>
__global__ void softmax_bwd_k(const T *y, const T *dy, T *dx, int64_t cols, float scale)
{
	__shared__ float sh[64];
	const int N = Vec<T>::N;
	int64_t r = blockIdx.x, np = cols / N;
	float dot = 0.f, a[Vec<T>::N], b[Vec<T>::N];
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(y + r * cols + p * N, a);
		ld16(dy + r * cols + p * N, b);
#pragma unroll
		for (int i = 0; i < N; i++)
			dot += a[i] * b[i];
	}
	dot = block_sum(dot, sh);
	for (int64_t p = threadIdx.x; p < np; p += blockDim.x) {
		ld16(y + r * cols + p * N, a);
		ld16(dy + r * cols + p * N, b);
#pragma unroll
		for (int i = 0; i < N; i++)
			a[i] = scale * a[i] * (b[i] - dot);
		st16(dx + r * cols + p * N, a);
	}
}

// Rows of up to 256 packs (2048 fp16 columns): a warp a row, four rows a block, the row held in
// registers (K = ceil(packs / 32) packs a lane) so it is read once and no block-wide barrier is needed.
__device__ __forceinline__ float warp_max(float x)
{
	for (int o = 16; o; o >>= 1)
		x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
	return x;
}

// a warp's row from its lanes' registers: pack p = lane + 32 k of K
template <typename T, int K>
__device__ __forceinline__ void warp_row_store(T *row, int lane, int64_t np, float (&f)[K][Vec<T>::N])
{
#pragma unroll
	for (int k = 0; k < K; k++)
		if (lane + 32 * k < np)
			st16(row + (lane + 32 * k) * Vec<T>::N, f[k]);
}

template <typename T, int K>
__global__ void __launch_bounds__(128) softmax_fwd_warp_k(const T *x, T *y, int64_t rows, int64_t cols, float scale,
							  int causal)
{
	const int N = Vec<T>::N, lane = threadIdx.x & 31;
	int64_t r = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5), np = cols / N;
	if (r >= rows)
		return; // a whole warp leaves together: its shuffles stay full
	int64_t qi = r % cols;
	const T *xr = x + r * cols;
	float f[K][Vec<T>::N], m = -INFINITY;
#pragma unroll
	for (int k = 0; k < K; k++) {
		int64_t p = lane + 32 * k;
		if (p < np)
			ld16(xr + p * N, f[k]);
#pragma unroll
		for (int i = 0; i < N; i++) {
			bool out = p >= np || (causal && p * N + i > qi);
			f[k][i] = out ? -INFINITY : f[k][i] * scale;
			m = fmaxf(m, f[k][i]);
		}
	}
	m = warp_max(m);
	float sum = 0.f;
#pragma unroll
	for (int k = 0; k < K; k++)
#pragma unroll
		for (int i = 0; i < N; i++) {
			f[k][i] = f[k][i] == -INFINITY ? 0.f : __expf(f[k][i] - m);
			sum += f[k][i];
		}
	float inv = 1.f / warp_sum(sum);
#pragma unroll
	for (int k = 0; k < K; k++)
#pragma unroll
		for (int i = 0; i < N; i++)
			f[k][i] *= inv;
	warp_row_store<T, K>(y + r * cols, lane, np, f);
}

template <typename T, int K>
__global__ void __launch_bounds__(128) softmax_bwd_warp_k(const T *y, const T *dy, T *dx, int64_t rows, int64_t cols,
							  float scale)
{
	const int N = Vec<T>::N, lane = threadIdx.x & 31;
	int64_t r = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5), np = cols / N;
	if (r >= rows)
		return;
	float a[K][Vec<T>::N] = {}, b[K][Vec<T>::N] = {}, dot = 0.f;
#pragma unroll
	for (int k = 0; k < K; k++) {
		int64_t p = lane + 32 * k;
		if (p < np) {
			ld16(y + r * cols + p * N, a[k]);
			ld16(dy + r * cols + p * N, b[k]);
		}
#pragma unroll
		for (int i = 0; i < N; i++)
			dot += a[k][i] * b[k][i];
	}
	dot = warp_sum(dot);
#pragma unroll
	for (int k = 0; k < K; k++)
#pragma unroll
		for (int i = 0; i < N; i++)
			a[k][i] = scale * a[k][i] * (b[k][i] - dot);
	warp_row_store<T, K>(dx + r * cols, lane, np, a);
}

extern "C" int kj_sw_softmax_fwd(int dt, const void *x, void *y, int64_t rows, int64_t cols, float scale,
				 int causal, cudaStream_t s)
{
	DISPATCH(dt, {
		int64_t packs = cols / Vec<T>::N;
		unsigned g = (unsigned)((rows + 3) / 4);
		switch ((packs + 31) / 32) { /* packs a lane: exactly what the row needs */
		case 1: softmax_fwd_warp_k<T, 1><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 2: softmax_fwd_warp_k<T, 2><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 3: softmax_fwd_warp_k<T, 3><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 4: softmax_fwd_warp_k<T, 4><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 5: softmax_fwd_warp_k<T, 5><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 6: softmax_fwd_warp_k<T, 6><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 7: softmax_fwd_warp_k<T, 7><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		case 8: softmax_fwd_warp_k<T, 8><<<g, 128, 0, s>>>((const T *)x, (T *)y, rows, cols, scale, causal); break;
		default:
			softmax_fwd_k<T><<<(unsigned)rows, even_row_threads(packs), 0, s>>>((const T *)x, (T *)y, cols,
											   scale, causal);
		}
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_softmax_bwd(int dt, const void *y, const void *dy, void *dx, int64_t rows, int64_t cols,
				 float scale, cudaStream_t s)
{
	DISPATCH(dt, {
		int64_t packs = cols / Vec<T>::N;
		unsigned g = (unsigned)((rows + 3) / 4);
		switch ((packs + 31) / 32) { /* packs a lane: exactly what the row needs */
		case 1: softmax_bwd_warp_k<T, 1><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 2: softmax_bwd_warp_k<T, 2><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 3: softmax_bwd_warp_k<T, 3><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 4: softmax_bwd_warp_k<T, 4><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 5: softmax_bwd_warp_k<T, 5><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 6: softmax_bwd_warp_k<T, 6><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 7: softmax_bwd_warp_k<T, 7><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		case 8: softmax_bwd_warp_k<T, 8><<<g, 128, 0, s>>>((const T *)y, (const T *)dy, (T *)dx, rows, cols, scale); break;
		default:
			softmax_bwd_k<T><<<(unsigned)rows, even_row_threads(packs), 0, s>>>((const T *)y, (const T *)dy,
											    (T *)dx, cols, scale);
		}
	});
	return (int)cudaGetLastError();
}

// ---- elementwise: grid-stride over 16-byte packs ----
#define PACK_LOOP(n, N) \
	for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < (n) / (N); p += (int64_t)gridDim.x * blockDim.x)

// mask [outer, per_mask] broadcast over `heads` copies: element e -> mask[(e / (heads*per)) * per + e % per]
template <typename T>
__global__ void fillmask_k(const T *x, const uint8_t *mask, T *y, int64_t n, int64_t per, int64_t heads, float value)
{
	const int N = Vec<T>::N;
	PACK_LOOP(n, N)
	{
		float f[Vec<T>::N];
		int64_t e = p * N, mi = (e / (heads * per)) * per + e % per;
		__align__(8) uint8_t mk[8];
		if (N == 8) // one 8-byte load of the mask per 16-byte load of scores (4 bytes for fp32)
			*reinterpret_cast<uint2 *>(mk) = *reinterpret_cast<const uint2 *>(mask + mi);
		else
			*reinterpret_cast<uint32_t *>(mk) = *reinterpret_cast<const uint32_t *>(mask + mi);
		ld16(x + e, f);
#pragma unroll
		for (int i = 0; i < N; i++)
			if (mk[i])
				f[i] = value;
		st16(y + e, f);
	}
}

extern "C" int kj_sw_fillmask(int dt, const void *x, const uint8_t *mask, void *y, int64_t n, int64_t per_mask,
			      int64_t heads, float value, cudaStream_t s)
{
	DISPATCH(dt, {
		fillmask_k<T><<<grid_for((size_t)(n / Vec<T>::N), 256), 256, 0, s>>>((const T *)x, mask, (T *)y, n,
										      per_mask, heads, value);
	});
	return (int)cudaGetLastError();
}

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
