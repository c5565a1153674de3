// kjoule-sweep-worker: layer norm / RMS norm kernels, forward and backward, and their launchers.
//
// The one-pass backward's row kernels are in worker_norm_bwd.cuh; each extern "C" launcher returns
// a cudaError_t value.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"
#include "worker_memops.cuh"

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
