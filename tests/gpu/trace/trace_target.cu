// A CUDA program of known behaviour for the tracer's GPU test: it does exactly what
// expected.json (written at the end) says, and check_trace.py compares the run database with it.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
	fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define CKD(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char *m = 0; cuGetErrorString(e, &m); \
	fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, m); exit(1); } } while (0)

struct Pair { float *in; float *out; int n; float scale; };

__global__ void kj_scale(const float *in, float *out, int n, float s)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = in[i] * s;
}

__global__ void kj_struct_arg(Pair p)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < p.n) p.out[i] = p.in[i] * p.scale + 1.0f;
}

__global__ void __cluster_dims__(2, 1, 1) kj_cluster(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] += 1.0f;
}

__global__ void kj_cluster_ex(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] *= 0.5f;
}

int main(void)
{
	const int n = 1 << 20;
	const size_t bytes = n * sizeof(float);
	float *a, *b, *h_pageable, *h_pinned;
	cudaStream_t s1, s2;
	int scale_launches = 0, struct_launches = 0, cluster_launches = 0, clusterex_launches = 0;
	int graph_nodes = 0, driver_launches = 0;
	int htod = 0, dtoh = 0, dtod = 0, memsets = 0;

	CK(cudaSetDevice(0));
	int dev = -1;
	CK(cudaGetDevice(&dev)); /* a query function: in --api=all runs only */
	CK(cudaMalloc(&a, bytes));
	CK(cudaMalloc(&b, bytes));
	CK(cudaStreamCreate(&s1));
	CK(cudaStreamCreate(&s2));
	h_pageable = (float *)malloc(bytes);
	CK(cudaMallocHost(&h_pinned, bytes));
	for (int i = 0; i < n; i++) h_pageable[i] = h_pinned[i] = (float)(i % 97) * 0.25f;

	nvtxRangePushA("setup");
	CK(cudaMemcpy(a, h_pageable, bytes, cudaMemcpyHostToDevice)); htod++;
	CK(cudaMemcpyAsync(b, h_pinned, bytes, cudaMemcpyHostToDevice, s1)); htod++;
	CK(cudaMemsetAsync(b, 0, 4096, s2)); memsets++;
	CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s1)); dtod++;
	nvtxRangePop();

	cudaEvent_t done1;
	CK(cudaEventCreateWithFlags(&done1, cudaEventDisableTiming));
	for (int it = 0; it < 3; it++) {
		nvtxRangePushA("iteration");
		nvtxRangePushA("scale");
		kj_scale<<<n / 256, 256, 0, s1>>>(a, b, n, 2.0f); scale_launches++;
		CK(cudaEventRecord(done1, s1)); /* s2 reads what s1 wrote: an event orders them */
		CK(cudaStreamWaitEvent(s2, done1, 0));
		kj_scale<<<n / 256, 256, 0, s2>>>(b, a, n, 0.5f); scale_launches++;
		nvtxRangePop();
		Pair p = {a, b, n, 3.0f};
		kj_struct_arg<<<n / 512, 512, 0, s1>>>(p); struct_launches++;
		kj_cluster<<<n / 256, 256, 0, s1>>>(b, n); cluster_launches++;
		{
			cudaLaunchConfig_t cfg = {};
			cudaLaunchAttribute attr[1];
			cfg.gridDim = dim3(n / 128);
			cfg.blockDim = dim3(128);
			cfg.stream = s2;
			attr[0].id = cudaLaunchAttributeClusterDimension;
			attr[0].val.clusterDim.x = 4; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
			cfg.attrs = attr;
			cfg.numAttrs = 1;
			CK(cudaLaunchKernelEx(&cfg, kj_cluster_ex, b, n)); clusterex_launches++;
		}
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		nvtxRangePop();
	}

	// a driver-API launch of the same kernel with another size: a different unique kernel
	{
		CUfunction f;
		CKD(cuCtxSynchronize());
		CK(cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)kj_scale));
		int m = n / 2;
		float s = 4.0f;
		void *args[] = {&a, &b, &m, &s};
		CKD(cuLaunchKernel(f, m / 256, 1, 1, 256, 1, 1, 0, 0, args, NULL)); driver_launches++;
		CK(cudaDeviceSynchronize());
	}

	// stream-ordered allocation and a CUDA graph of 4 kernels, replayed twice
	{
		float *pool_buf;
		cudaGraph_t g;
		cudaGraphExec_t ge;
		CK(cudaMallocAsync(&pool_buf, bytes, s1));
		CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
		for (int k = 0; k < 4; k++) {
			kj_scale<<<n / 256, 256, 0, s1>>>(a, pool_buf, n, 1.5f);
			graph_nodes++;
		}
		CK(cudaStreamEndCapture(s1, &g));
		CK(cudaGraphInstantiate(&ge, g, 0));
		nvtxRangePushA("graph");
		CK(cudaGraphLaunch(ge, s1));
		CK(cudaGraphLaunch(ge, s1));
		CK(cudaStreamSynchronize(s1));
		nvtxRangePop();
		CK(cudaFreeAsync(pool_buf, s1));
		CK(cudaStreamSynchronize(s1));
		CK(cudaGraphExecDestroy(ge));
		CK(cudaGraphDestroy(g));
	}

	CK(cudaMemcpy(h_pageable, b, bytes, cudaMemcpyDeviceToHost)); dtoh++;
	CK(cudaMemcpyAsync(h_pinned, a, bytes, cudaMemcpyDeviceToHost, s2)); dtoh++;
	CK(cudaStreamSynchronize(s2));

	FILE *f = fopen(getenv("KJ_EXPECT") ? getenv("KJ_EXPECT") : "expected.json", "w");
	if (!f) return 1;
	fprintf(f, "{\"kernels\": {\"kj_scale\": %d, \"kj_struct_arg\": %d, \"kj_cluster\": %d,"
		" \"kj_cluster_ex\": %d}, \"graph_launches\": 2, \"graph_kernels\": %d,"
		" \"unique\": {\"kj_scale\": 4, \"kj_struct_arg\": 1, \"kj_cluster\": 1, \"kj_cluster_ex\": 1},"
		" \"memcpy\": {\"HtoD\": %d, \"DtoH\": %d, \"DtoD\": %d}, \"memset\": %d,"
		" \"nvtx\": {\"setup\": 1, \"iteration\": 3, \"scale\": 3, \"graph\": 1},"
		" \"grid\": {\"kj_scale\": %d, \"kj_struct_arg\": %d, \"kj_cluster_ex\": %d},"
		" \"cluster\": {\"kj_cluster\": 2, \"kj_cluster_ex\": 4}, \"bytes\": %zu,"
		" \"streams\": 2, \"pool_allocs\": 1}\n",
		scale_launches + driver_launches, struct_launches, cluster_launches, clusterex_launches,
		graph_nodes * 2, htod, dtoh, dtod, memsets, n / 256, n / 512, n / 128, bytes);
	fclose(f);
	printf("trace_target: done\n");
	return 0;
}
