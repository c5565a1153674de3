// A custom phase for `kjoule pipeline` through the C API of src/pipeline/worker/kj_phase_api.h
// (the seed's test_kernel_iter in C): out = relu(a + b) over M x N elements of the pipeline's
// precision. setup allocates and fills the buffers (random, non-zero), capture enqueues one call
// (no allocation: it is captured U times into a CUDA graph), teardown frees. The worker's table
// (src/pipeline/worker/worker_custom.c) names it "add_relu"; a pipeline uses it as
//   - {name: my_add_relu, type: custom, kernel: add_relu, M: 4096, N: 4096}
// (examples/custom_phase/add_relu.yml). Write your own beside it and add one line to that table.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "kj_phase_api.h"

struct add_relu {
	void *a, *b, *out;
	size_t n;
	int prec; // 0 fp16, 1 bf16, 2 fp32
};

template <typename T> __global__ void add_relu_k(const T *a, const T *b, T *out, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float v = (float)a[i] + (float)b[i];
		out[i] = (T)(v > 0.f ? v : 0.f);
	}
}

static void add_relu_teardown(void *state)
{
	struct add_relu *s = (struct add_relu *)state;
	if (!s)
		return;
	cudaFree(s->a);
	cudaFree(s->b);
	cudaFree(s->out);
	free(s);
}

static int add_relu_setup(const struct kj_phase *ph, void **state, char *err, size_t errlen)
{
	struct add_relu *s = (struct add_relu *)calloc(1, sizeof(*s));
	if (!s)
		return -2;
	s->n = (size_t)ph->M * (size_t)(ph->N ? ph->N : 1);
	s->prec = ph->precision[0] == 'b' ? 1 : ph->precision[2] == '3' ? 2 : 0;
	size_t bytes = s->n * (s->prec == 2 ? 4 : 2);
	cudaError_t e;
	if ((e = cudaMalloc(&s->a, bytes)) || (e = cudaMalloc(&s->b, bytes)) || (e = cudaMalloc(&s->out, bytes))) {
		snprintf(err, errlen, "out of memory: add_relu: cudaMalloc(3 x %zu bytes): %s", bytes, cudaGetErrorString(e));
		add_relu_teardown(s);
		return -2;
	}
	if (kj_fill_random(s->a, s->n, ph->precision, 1, 1.0f, 0) || kj_fill_random(s->b, s->n, ph->precision, 2, 1.0f, 0)) {
		snprintf(err, errlen, "add_relu: random fill: %s", cudaGetErrorString(cudaGetLastError()));
		add_relu_teardown(s);
		return -8;
	}
	*state = s;
	return 0;
}

static int add_relu_capture(void *state, cudaStream_t st)
{
	struct add_relu *s = (struct add_relu *)state;
	unsigned grid = (unsigned)((s->n + 255) / 256 < 65535u * 8 ? (s->n + 255) / 256 : 65535u * 8);
	if (s->prec == 0)
		add_relu_k<<<grid, 256, 0, st>>>((const __half *)s->a, (const __half *)s->b, (__half *)s->out, s->n);
	else if (s->prec == 1)
		add_relu_k<<<grid, 256, 0, st>>>((const __nv_bfloat16 *)s->a, (const __nv_bfloat16 *)s->b,
						 (__nv_bfloat16 *)s->out, s->n);
	else
		add_relu_k<<<grid, 256, 0, st>>>((const float *)s->a, (const float *)s->b, (float *)s->out, s->n);
	return cudaGetLastError() == cudaSuccess ? 0 : -8;
}

extern "C" const struct kj_phase_ops kj_example_add_relu = {"add_relu", add_relu_setup, add_relu_capture,
							    add_relu_teardown};
