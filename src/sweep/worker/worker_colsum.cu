// kjoule-sweep-worker: the column sum of a row-major [rows, cols] matrix, the bias gradient of a
// linear layer (db = sum over tokens of dy, as Megatron's and PyTorch's linears compute it in their
// backward). fp32 accumulation; rows split into parts so that narrow matrices still fill the GPU,
// each part's sums written to an fp32 buffer and added by a second small kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "worker_colsum.cuh"
#include "kj_gpu_dev.cuh"

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
