// A program of known steps for kjoule run --capture: --steps N steps, each inside an NVTX range
// "step" (nvtxRangePushA/Pop), each launching --launches K kernels that take the step's number as a
// parameter, so a trace tells which steps' kernels it holds. --profiler A:B calls cudaProfilerStart
// before step A and cudaProfilerStop after step B (B < 0: never stops). --graph captures the K
// launches (each adding 1) into a CUDA graph once, before step 0, and launches the graph in each
// step instead. --step-ms M sleeps M ms inside each step (a program that settles, for CUPTI's
// detach outside the window); --alloc-at S allocates and clears 64 MiB more at step S. Prints
// {"ok": true} when the GPU's sums check out.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__global__ void step_kernel(float *x, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += (float)(step + 1);
}

int main(int argc, char **argv)
{
	int steps = 10, launches = 4, pstart = -1, pstop = -1, n = 1 << 16, graph = 0, step_ms = 0, alloc_at = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
			launches = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--graph"))
			graph = 1;
		else if (!strcmp(argv[i], "--step-ms") && i + 1 < argc)
			step_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--alloc-at") && i + 1 < argc)
			alloc_at = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--profiler") && i + 1 < argc && sscanf(argv[++i], "%d:%d", &pstart, &pstop) == 2)
			;
		else {
			fprintf(stderr, "usage: capture_target [--steps N] [--launches K] [--profiler A:B] [--graph] "
					"[--step-ms M] [--alloc-at S]\n");
			return 2;
		}
	}
	float *x;
	if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess)
		return 1;
	cudaMemset(x, 0, n * sizeof(float));
	cudaStream_t st = NULL;
	cudaGraphExec_t exec = NULL;
	if (graph) {
		cudaGraph_t g;
		if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
		    cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
			return 1;
		for (int k = 0; k < launches; k++)
			step_kernel<<<(n + 255) / 256, 256, 0, st>>>(x, n, 0);
		if (cudaStreamEndCapture(st, &g) != cudaSuccess || cudaGraphInstantiate(&exec, g, 0) != cudaSuccess)
			return 1;
	}
	double want = 0;
	void *more = NULL;
	for (int s = 0; s < steps; s++) {
		if (s == pstart)
			cudaProfilerStart();
		nvtxRangePushA("step");
		if (s == alloc_at && (cudaMalloc(&more, 64 << 20) != cudaSuccess || cudaMemset(more, 1, 64 << 20) != cudaSuccess))
			return 1;
		if (step_ms > 0)
			usleep((useconds_t)step_ms * 1000);
		if (graph)
			cudaGraphLaunch(exec, st);
		for (int k = 0; k < launches && !graph; k++)
			step_kernel<<<(n + 255) / 256, 256>>>(x, n, s);
		cudaDeviceSynchronize();
		nvtxRangePop();
		want += (double)launches * (graph ? 1 : s + 1);
		if (s == pstop)
			cudaProfilerStop();
	}
	float got = 0;
	cudaMemcpy(&got, x, sizeof(float), cudaMemcpyDeviceToHost);
	cudaFree(x);
	cudaFree(more);
	/* exact while the sum stays under 2^24; past it (10,000 steps of 4 launches: 2.0e8) each float
	 * addition rounds, by at most half the spacing there: allow 1 % */
	int ok = want < 16777216.0 ? got == (float)want : fabs((double)got - want) <= 0.01 * want;
	printf("{\"ok\": %s, \"x0\": %.1f, \"want\": %.1f}\n", ok ? "true" : "false", got, want);
	return ok ? 0 : 1;
}
