// kjoule-sweep-worker: the column sum of a row-major [rows, cols] matrix, the bias gradient of a
// linear layer (db = sum over tokens of dy, as Megatron's and PyTorch's linears compute it in their
// backward). fp32 accumulation; rows split into parts so that narrow matrices still fill the GPU,
// each part's sums written to an fp32 buffer and added by a second small kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "worker_dev.cuh"

#define COLSUM_WARPS 8

// Block (x, y): columns [x * 32 * VN, +32 * VN), rows of part y; warp w takes every 8th row of the
// part, lane l its VN columns (one 16-byte load a row when the row is 16-byte aligned).
template <typename T>
__global__ void __launch_bounds__(32 * COLSUM_WARPS) colsum_k(const T *x, float *part, T *out, int64_t rows,
							      int64_t cols, int64_t rows_per_part, int vec)
{
	const int VN = Vec<T>::N;
	__shared__ float red[COLSUM_WARPS][32 * Vec<T>::N];
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	int64_t c0 = (int64_t)blockIdx.x * 32 * VN + lane * VN;
	int64_t r0 = (int64_t)blockIdx.y * rows_per_part, r1 = r0 + rows_per_part < rows ? r0 + rows_per_part : rows;
	float acc[Vec<T>::N];
#pragma unroll
	for (int i = 0; i < VN; i++)
		acc[i] = 0.f;
	for (int64_t r = r0 + warp; r < r1; r += COLSUM_WARPS) {
		const T *row = x + r * cols;
		if (vec && c0 + VN <= cols) {
			float f[Vec<T>::N];
			ld16(row + c0, f);
#pragma unroll
			for (int i = 0; i < VN; i++)
				acc[i] += f[i];
		} else {
#pragma unroll
			for (int i = 0; i < VN; i++)
				if (c0 + i < cols)
					acc[i] += tof(row[c0 + i]);
		}
	}
#pragma unroll
	for (int i = 0; i < VN; i++)
		red[warp][lane * VN + i] = acc[i];
	__syncthreads();
	for (int j = threadIdx.x; j < 32 * VN; j += blockDim.x) {
		int64_t c = (int64_t)blockIdx.x * 32 * VN + j;
		if (c >= cols)
			continue;
		float s = 0.f;
#pragma unroll
		for (int w = 0; w < COLSUM_WARPS; w++)
			s += red[w][j];
		if (gridDim.y == 1)
			out[c] = fromf<T>(s);
		else
			part[(int64_t)blockIdx.y * cols + c] = s;
	}
}

template <typename T>
__global__ void colsum_parts_k(const float *part, int parts, T *out, int64_t cols)
{
	int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	float s = 0.f;
	for (int k = 0; k < parts; k++)
		s += part[(int64_t)k * cols + c];
	out[c] = fromf<T>(s);
}

static int64_t col_blocks(int dt, int64_t cols)
{
	int vn = dt == 0 || dt == 1 ? 8 : 4;
	return (cols + 32 * vn - 1) / (32 * vn);
}

// The row parts colsum_k runs for [rows, cols] on sms SMs: about four blocks an SM, at least 32 rows
// a part (four a warp); kj_sw_colsum needs a part buffer of parts * cols floats when it is above 1.
extern "C" int kj_sw_colsum_parts(int dt, int64_t rows, int64_t cols, int sms)
{
	int64_t gx = col_blocks(dt, cols), want = (4 * (int64_t)(sms > 0 ? sms : 1) + gx - 1) / gx;
	int64_t most = (rows + 31) / 32;
	int64_t parts = want < most ? want : most;
	return (int)(parts < 1 ? 1 : parts > 65535 ? 65535 : parts);
}

extern "C" int kj_sw_colsum(int dt, const void *x, float *part, void *out, int64_t rows, int64_t cols, int parts,
			    cudaStream_t s)
{
	if (rows < 1 || cols < 1 || parts < 1)
		return (int)cudaErrorInvalidValue;
	int64_t per = (rows + parts - 1) / parts;
	dim3 grid((unsigned)col_blocks(dt, cols), (unsigned)parts);
	DISPATCH(dt, {
		int vec = cols % Vec<T>::N == 0 && ((uintptr_t)x & 15) == 0;
		colsum_k<T><<<grid, 32 * COLSUM_WARPS, 0, s>>>((const T *)x, part, (T *)out, rows, cols, per, vec);
		if (parts > 1)
			colsum_parts_k<T><<<(unsigned)((cols + 255) / 256), 256, 0, s>>>(part, parts, (T *)out, cols);
	});
	return (int)cudaGetLastError();
}
