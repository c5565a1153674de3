// The kernels and the error check the hand-written graph targets share (graph_target,
// cond_target): an element-wise scale, a loop that keeps the GPU busy, an element-wise add.
#ifndef KJ_GRAPH_KERNELS_CUH
#define KJ_GRAPH_KERNELS_CUH
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                              \
	do {                                                                               \
		cudaError_t e_ = (x);                                                      \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,          \
				cudaGetErrorString(e_));                                   \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

__global__ void scale(float *x, int n, float a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = x[i] * a + 1.0f;
}

__global__ void busy(float *x, int n, int reps)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
	for (int r = 0; r < reps; r++)
		v = v * 0.999f + 0.001f;
	x[i] = v;
}

__global__ void add(float *y, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += x[i];
}

#endif
