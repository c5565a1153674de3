/* bf16 GEMM loads through cuBLAS's C API and the CUDA runtime (no .cu file needed). */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_load.h"
#include "kj_gpu.h"

struct gemm_load {
	int m, n, k;
	void *a, *b, *c, *ws;
	cublasHandle_t h;
	cudaStream_t stream;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
};

#define CK(x)                                                                                     \
	do {                                                                                      \
		cudaError_t e_ = (x);                                                             \
		if (e_ != cudaSuccess) {                                                          \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                \
				cudaGetErrorString(e_));                                          \
			return -1;                                                                \
		}                                                                                 \
	} while (0)
#define CB(x)                                                                                     \
	do {                                                                                      \
		cublasStatus_t s_ = (x);                                                          \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
			fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x,  \
				(int)s_);                                                         \
			return -1;                                                                \
		}                                                                                 \
	} while (0)

int gemm_load_have_gpu(void)
{
	int n = 0;
	return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

int gemm_load_nvml_index(char *why, size_t why_len)
{
	char pci[32];
	if (cudaDeviceGetPCIBusId(pci, (int)sizeof(pci), 0) != cudaSuccess) {
		snprintf(why, why_len, "the CUDA device's PCI bus id is not known");
		return -1;
	}
	return kj_gpu_nvml_index_by_pci(pci, why, why_len);
}

const char *gemm_load_device_name(void)
{
	static struct cudaDeviceProp p;
	if (cudaGetDeviceProperties(&p, 0) != cudaSuccess)
		return "?";
	return p.name;
}

static int fill(void *dev, size_t elems)
{
	uint16_t *h = malloc(elems * sizeof(uint16_t));
	uint32_t x = 2463534242u;
	if (!h)
		return -1;
	for (size_t i = 0; i < elems; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		float f = ((float)(x & 0xffff) / 65536.0f - 0.5f) * 0.25f;
		uint32_t bits;
		memcpy(&bits, &f, 4);
		h[i] = (uint16_t)(bits >> 16); /* bf16: the top half of a float */
	}
	cudaError_t e = cudaMemcpy(dev, h, elems * 2, cudaMemcpyHostToDevice);
	free(h);
	return e == cudaSuccess ? 0 : -1;
}

int gemm_load_open(int m, int n, int k, struct gemm_load **out)
{
	struct gemm_load *g = calloc(1, sizeof(*g));
	if (!g)
		return -1;
	*out = g;
	g->m = m;
	g->n = n;
	g->k = k;
	CK(cudaMalloc(&g->a, (size_t)m * k * 2));
	CK(cudaMalloc(&g->b, (size_t)k * n * 2));
	CK(cudaMalloc(&g->c, (size_t)m * n * 2));
	CK(cudaMalloc(&g->ws, 64u << 20));
	if (fill(g->a, (size_t)m * k) || fill(g->b, (size_t)k * n))
		return -1;
	CK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
	CB(cublasCreate(&g->h));
	CB(cublasSetStream(g->h, g->stream));
	CB(cublasSetWorkspace(g->h, g->ws, 64u << 20));
	return 0;
}

void gemm_load_close(struct gemm_load *g)
{
	if (!g)
		return;
	if (g->exec)
		cudaGraphExecDestroy(g->exec);
	if (g->graph)
		cudaGraphDestroy(g->graph);
	if (g->h)
		cublasDestroy(g->h);
	cudaFree(g->a);
	cudaFree(g->b);
	cudaFree(g->c);
	cudaFree(g->ws);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	free(g);
}

int gemm_load_enqueue(struct gemm_load *g, int count)
{
	const float alpha = 1.0f, beta = 0.0f;
	for (int i = 0; i < count; i++)
		CB(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, g->m, g->n, g->k, &alpha, g->a,
				CUDA_R_16BF, g->m, g->b, CUDA_R_16BF, g->k, &beta, g->c, CUDA_R_16BF,
				g->m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	return 0;
}

int gemm_load_sync(struct gemm_load *g)
{
	CK(cudaStreamSynchronize(g->stream));
	return 0;
}

int gemm_load_capture(struct gemm_load *g, int unroll)
{
	CK(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeGlobal));
	if (gemm_load_enqueue(g, unroll))
		return -1;
	CK(cudaStreamEndCapture(g->stream, &g->graph));
	CK(cudaGraphInstantiate(&g->exec, g->graph, 0));
	return 0;
}

int gemm_load_graph_launch(struct gemm_load *g)
{
	CK(cudaGraphLaunch(g->exec, g->stream));
	return 0;
}

double gemm_load_time(struct gemm_load *g, int reps)
{
	cudaEvent_t a, b;
	float ms = 0;
	if (gemm_load_enqueue(g, 3) || gemm_load_sync(g))
		return -1;
	cudaEventCreate(&a);
	cudaEventCreate(&b);
	cudaEventRecord(a, g->stream);
	gemm_load_enqueue(g, reps);
	cudaEventRecord(b, g->stream);
	cudaEventSynchronize(b);
	cudaEventElapsedTime(&ms, a, b);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return ms / 1000.0 / reps;
}
