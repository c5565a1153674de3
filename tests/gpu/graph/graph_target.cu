// A hand-written CUDA program that launches its work as CUDA graphs, for kjoule's graph tests.
// Each of ITERS iterations is one NVTX range "iteration" holding two graph launches: graph A,
// built node by node (memset -> add; scale -> busy -> add: 3 kernels, 1 memset), and graph B,
// built by stream capture (scale, busy: 2 kernels). The range closes as soon as the launches
// return, long before the graphs' work (about 0.8 ms) has run, as in real graph programs.
// After the loop, outside any range, `spin_until` waits for a host-written value (XLA's
// DelayKernel does the like): replayed alone it spins until its own 200 ms timeout.
// Writes what it did to $KJ_EXPECT (JSON) when set.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "graph_kernels.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { N = 1 << 20, ITERS = 12, MAGIC = 0x5eed };

// Spins until *flag == MAGIC, or until about timeout_ns have passed (then writes 1 to *gave_up).
__global__ void spin_until(volatile int *flag, int *gave_up, long long timeout_ns)
{
	long long t0;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	for (;;) {
		long long t;
		if (*flag == MAGIC)
			return;
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		if (t - t0 > timeout_ns) {
			*gave_up = 1;
			return;
		}
	}
}

int main(void)
{
	float *x, *y, *z;
	int *flag, *gave_up, magic = MAGIC, host_gave_up = 0;
	cudaStream_t s, side;
	cudaGraph_t ga, gb;
	cudaGraphExec_t ea, eb;
	cudaGraphNode_t nmemset, nscale, nbusy, nadd;
	const int threads = 256, blocks = (N + threads - 1) / threads;
	int n = N, reps_busy = 2000;
	float a = 0.5f;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
	CK(cudaMalloc(&x, N * sizeof(float)));
	CK(cudaMalloc(&y, N * sizeof(float)));
	CK(cudaMalloc(&z, N * sizeof(float)));
	CK(cudaMalloc(&flag, sizeof(int)));
	CK(cudaMalloc(&gave_up, sizeof(int)));
	CK(cudaMemset(x, 0x3f, N * sizeof(float)));
	CK(cudaMemset(z, 0x3f, N * sizeof(float)));
	CK(cudaMemset(flag, 0, sizeof(int)));
	CK(cudaMemset(gave_up, 0, sizeof(int)));

	/* graph A, node by node */
	CK(cudaGraphCreate(&ga, 0));
	cudaMemsetParams mp = {};
	mp.dst = y, mp.value = 0, mp.elementSize = 4, mp.width = N, mp.height = 1, mp.pitch = 0;
	CK(cudaGraphAddMemsetNode(&nmemset, ga, NULL, 0, &mp));
	void *scale_args[] = {&x, &n, &a};
	cudaKernelNodeParams kp = {};
	kp.func = (void *)scale, kp.gridDim = dim3(blocks), kp.blockDim = dim3(threads);
	kp.kernelParams = scale_args;
	CK(cudaGraphAddKernelNode(&nscale, ga, NULL, 0, &kp));
	void *busy_args[] = {&x, &n, &reps_busy};
	kp.func = (void *)busy, kp.kernelParams = busy_args;
	CK(cudaGraphAddKernelNode(&nbusy, ga, &nscale, 1, &kp));
	void *add_args[] = {&y, &x, &n};
	cudaGraphNode_t deps[2] = {nmemset, nbusy};
	kp.func = (void *)add, kp.kernelParams = add_args;
	CK(cudaGraphAddKernelNode(&nadd, ga, deps, 2, &kp));
	CK(cudaGraphInstantiate(&ea, ga, 0));

	/* graph B, by stream capture */
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	scale<<<blocks, threads, 0, s>>>(z, N, 0.25f);
	busy<<<blocks, threads, 0, s>>>(z, N, reps_busy);
	CK(cudaStreamEndCapture(s, &gb));
	CK(cudaGraphInstantiate(&eb, gb, 0));

	for (int it = 0; it < ITERS; it++) {
		nvtxRangePushA("iteration");
		CK(cudaGraphLaunch(ea, s));
		CK(cudaGraphLaunch(eb, s));
		nvtxRangePop();
		CK(cudaStreamSynchronize(s));
	}

	/* the waiting kernel, released by a copy on another stream (left out where the tracer
	 * synchronises after each launch, as --snapshot does: nothing could release it) */
	if (getenv("GRAPH_TARGET_NO_SPIN"))
		goto expectations;
	spin_until<<<1, 1, 0, s>>>(flag, gave_up, 200000000LL);
	CK(cudaGetLastError());
	usleep(2000);
	CK(cudaMemcpyAsync(flag, &magic, sizeof(int), cudaMemcpyHostToDevice, side));
	CK(cudaStreamSynchronize(side));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(&host_gave_up, gave_up, sizeof(int), cudaMemcpyDeviceToHost));
	if (host_gave_up) {
		fprintf(stderr, "graph_target: spin_until was not released in time\n");
		return 1;
	}
expectations:;
	const char *exp = getenv("KJ_EXPECT");
	if (exp) {
		FILE *f = fopen(exp, "w");
		if (f) {
			fprintf(f, "{\"iterations\": %d, \"graph_kernels_per_iteration\": 5,"
				   " \"graph_memsets_per_iteration\": 1, \"graph_launches_per_iteration\": 2}\n",
				ITERS);
			fclose(f);
		}
	}
	CK(cudaGraphExecDestroy(ea));
	CK(cudaGraphExecDestroy(eb));
	CK(cudaGraphDestroy(ga));
	CK(cudaGraphDestroy(gb));
	printf("graph_target: %d iterations done\n", ITERS);
	return 0;
}
