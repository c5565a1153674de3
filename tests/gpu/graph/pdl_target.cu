// A two-layer forward captured once into a CUDA graph, its second layer launched with programmatic
// dependent launch (PDL) so the capture makes a programmatic edge, each layer inside an NVTX range
// open at capture ("model" > "a", "b"); ITERS graph launches, each inside a "step" range. Layer b
// reads what layer a wrote. The program checks its own output, so a tracer that disturbed it fails.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CK(x)                                                                              \
	do {                                                                               \
		cudaError_t e_ = (x);                                                      \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "pdl_target: %s: %s\n", #x, cudaGetErrorString(e_)); \
			return 1;                                                          \
		}                                                                          \
	} while (0)

enum { N = 1 << 20, ITERS = 20 };

__global__ void layer_a(const float *w, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = w[i] * x[i] + 1.0f;
	cudaTriggerProgrammaticLaunchCompletion(); /* the dependent kernel may start */
}

__global__ void layer_b(const float *w, const float *y, float *z, int n)
{
	cudaGridDependencySynchronize(); /* layer a's writes are visible from here */
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		z[i] = w[i] * y[i];
}

int main(void)
{
	float *w1, *w2, *x, *y, *z;
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t e;
	const int threads = 256, blocks = (N + threads - 1) / threads;
	int n = N;
	float *h = (float *)malloc(N * sizeof(float));
	if (!h)
		return 1;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&w1, N * sizeof(float)));
	CK(cudaMalloc(&w2, N * sizeof(float)));
	CK(cudaMalloc(&x, N * sizeof(float)));
	CK(cudaMalloc(&y, N * sizeof(float)));
	CK(cudaMalloc(&z, N * sizeof(float)));
	for (int i = 0; i < N; i++)
		h[i] = 0.5f + (float)(i % 7) * 0.25f;
	CK(cudaMemcpy(w1, h, N * sizeof(float), cudaMemcpyHostToDevice));
	for (int i = 0; i < N; i++)
		h[i] = 2.0f - (float)(i % 5) * 0.125f;
	CK(cudaMemcpy(w2, h, N * sizeof(float), cudaMemcpyHostToDevice));
	for (int i = 0; i < N; i++)
		h[i] = (float)(i % 11) * 0.5f;
	CK(cudaMemcpy(x, h, N * sizeof(float), cudaMemcpyHostToDevice));

	cudaLaunchAttribute pdl[1];
	pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	pdl[0].val.programmaticStreamSerializationAllowed = 1;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(blocks);
	cfg.blockDim = dim3(threads);
	cfg.stream = s;
	cfg.attrs = pdl;
	cfg.numAttrs = 1;

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	nvtxRangePushA("model");
	nvtxRangePushA("a");
	layer_a<<<blocks, threads, 0, s>>>(w1, x, y, n);
	nvtxRangePop();
	nvtxRangePushA("b");
	CK(cudaLaunchKernelEx(&cfg, layer_b, (const float *)w2, (const float *)y, z, n));
	nvtxRangePop();
	nvtxRangePop();
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&e, g, 0));

	for (int it = 0; it < ITERS; it++) {
		nvtxRangePushA("step");
		CK(cudaGraphLaunch(e, s));
		nvtxRangePop();
		CK(cudaStreamSynchronize(s));
	}
	CK(cudaMemcpy(h, z, N * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i += 4099) {
		float a = 0.5f + (float)(i % 7) * 0.25f, b = 2.0f - (float)(i % 5) * 0.125f, xi = (float)(i % 11) * 0.5f;
		float want = b * (a * xi + 1.0f);
		if (h[i] < want - 1e-3f || h[i] > want + 1e-3f) {
			fprintf(stderr, "pdl_target: z[%d] = %g, want %g\n", i, h[i], want);
			return 1;
		}
	}
	CK(cudaGraphExecDestroy(e));
	CK(cudaGraphDestroy(g));
	printf("pdl_target: %d iterations done\n", ITERS);
	free(h);
	return 0;
}
