// kjoule-sweep-worker: the column-sum kernels of worker_colsum.cu, in a header so that
// tests/tools/colsum_emu.cpp runs the same bodies on a CPU (a bias gradient: out[j] = sum_i x[i, j]).
#ifndef KJ_SWEEP_WORKER_COLSUM_CUH
#define KJ_SWEEP_WORKER_COLSUM_CUH

#include <stdint.h>

#include "kj_gpu_dev.cuh"

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

#endif
