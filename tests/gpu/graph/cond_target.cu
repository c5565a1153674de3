// A hand-written CUDA program whose graph holds node kinds kjoule cannot rebuild: a WHILE
// conditional node (its body runs LOOPS times a launch, the count decided on the GPU), an IF
// conditional node, and host nodes (one added node by node, one made by cudaLaunchHostFunc in a
// stream capture). Each of ITERS iterations is one NVTX range "step" holding both graph launches.
//
// Graph C (node by node): reset -> scale -> WHILE{ step_body -> add (captured into the body) }
//   -> host node -> IF{ scale } -> add.  Kernels a launch: 2 + 2 * LOOPS + 1 + 1.
// Graph H (stream capture): scale -> host function -> busy.  Kernels a launch: 2.
// The program checks its own result (the loop ran LOOPS times, the host nodes ran) and writes what
// it did to $KJ_EXPECT (JSON) when set.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "graph_kernels.cuh"
#include <stdio.h>
#include <stdlib.h>

enum { N = 1 << 20, ITERS = 12, LOOPS = 5 };

__global__ void reset(int *counter, int loops, int *trips)
{
	*counter = loops;
	*trips = 0;
}

// The WHILE body's first kernel: some work, then one thread counts the trip down and tells the
// conditional node whether to run the body again.
__global__ void step_body(float *x, int n, int *counter, int *trips, cudaGraphConditionalHandle h)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = x[i] * 0.5f + 0.25f;
	if (i == 0) {
		int left = --*counter;
		++*trips;
		cudaGraphSetConditional(h, left > 0 ? 1u : 0u);
	}
}

// A conditional node of type `type` after `after` in g, its handle launching with 1 (so an IF
// body runs, a WHILE body runs once before its kernel decides): its body graph.
static cudaGraph_t add_conditional(cudaGraph_t g, cudaGraphNode_t after, cudaGraphConditionalNodeType type,
				   cudaGraphConditionalHandle *h, cudaGraphNode_t *node)
{
	cudaGraphNodeParams p = {};
	CK(cudaGraphConditionalHandleCreate(h, g, 1, cudaGraphCondAssignDefault));
	p.type = cudaGraphNodeTypeConditional;
	p.conditional.handle = *h;
	p.conditional.type = type;
	p.conditional.size = 1;
	CK(cudaGraphAddNode(node, g, &after, NULL, 1, &p));
	return p.conditional.phGraph_out[0];
}

static volatile int host_runs;

static void CUDART_CB host_count(void *arg)
{
	(void)arg;
	host_runs++;
}

int main(void)
{
	float *x, *y, *z;
	int *counter, *trips, host_trips = 0;
	cudaStream_t s, cap;
	cudaGraph_t gc, gh;
	cudaGraphExec_t ec, eh;
	const int threads = 256, blocks = (N + threads - 1) / threads;
	int n = N, loops = LOOPS, reps_busy = 1000;
	float a = 0.5f;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
	CK(cudaMalloc(&x, N * sizeof(float)));
	CK(cudaMalloc(&y, N * sizeof(float)));
	CK(cudaMalloc(&z, N * sizeof(float)));
	CK(cudaMalloc(&counter, sizeof(int)));
	CK(cudaMalloc(&trips, sizeof(int)));
	CK(cudaMemset(x, 0, N * sizeof(float)));
	CK(cudaMemset(y, 0, N * sizeof(float)));
	CK(cudaMemset(z, 0, N * sizeof(float)));

	/* graph C, node by node */
	CK(cudaGraphCreate(&gc, 0));
	cudaGraphNode_t nreset, nscale, nwhile, nhost, nif, nadd;
	cudaKernelNodeParams kp = {};
	kp.gridDim = dim3(1), kp.blockDim = dim3(1);
	void *reset_args[] = {&counter, &loops, &trips};
	kp.func = (void *)reset, kp.kernelParams = reset_args;
	CK(cudaGraphAddKernelNode(&nreset, gc, NULL, 0, &kp));
	kp.gridDim = dim3(blocks), kp.blockDim = dim3(threads);
	void *scale_args[] = {&x, &n, &a};
	kp.func = (void *)scale, kp.kernelParams = scale_args;
	CK(cudaGraphAddKernelNode(&nscale, gc, &nreset, 1, &kp));

	cudaGraphConditionalHandle hw;
	cudaGraph_t body = add_conditional(gc, nscale, cudaGraphCondTypeWhile, &hw, &nwhile);
	/* the body: step_body added node by node, then add captured into the body */
	cudaGraphNode_t nstep;
	void *step_args[] = {&x, &n, &counter, &trips, &hw};
	kp.func = (void *)step_body, kp.kernelParams = step_args;
	CK(cudaGraphAddKernelNode(&nstep, body, NULL, 0, &kp));
	CK(cudaStreamBeginCaptureToGraph(cap, body, &nstep, NULL, 1, cudaStreamCaptureModeGlobal));
	add<<<blocks, threads, 0, cap>>>(y, x, N);
	cudaGraph_t captured_body;
	CK(cudaStreamEndCapture(cap, &captured_body));

	cudaHostNodeParams hp = {};
	hp.fn = host_count, hp.userData = NULL;
	CK(cudaGraphAddHostNode(&nhost, gc, &nwhile, 1, &hp));

	cudaGraphConditionalHandle hi;
	cudaGraph_t if_body = add_conditional(gc, nhost, cudaGraphCondTypeIf, &hi, &nif);
	cudaGraphNode_t nifscale;
	kp.func = (void *)scale, kp.kernelParams = scale_args;
	CK(cudaGraphAddKernelNode(&nifscale, if_body, NULL, 0, &kp));
	void *add_args[] = {&z, &x, &n};
	kp.func = (void *)add, kp.kernelParams = add_args;
	CK(cudaGraphAddKernelNode(&nadd, gc, &nif, 1, &kp));
	CK(cudaGraphInstantiate(&ec, gc, 0));

	/* graph H, by stream capture, with a host function between two kernels */
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	scale<<<blocks, threads, 0, s>>>(z, N, 0.25f);
	CK(cudaLaunchHostFunc(s, host_count, NULL));
	busy<<<blocks, threads, 0, s>>>(z, N, reps_busy);
	CK(cudaStreamEndCapture(s, &gh));
	CK(cudaGraphInstantiate(&eh, gh, 0));

	for (int it = 0; it < ITERS; it++) {
		nvtxRangePushA("step");
		CK(cudaGraphLaunch(ec, s));
		CK(cudaGraphLaunch(eh, s));
		nvtxRangePop();
		CK(cudaStreamSynchronize(s));
		CK(cudaMemcpy(&host_trips, trips, sizeof(int), cudaMemcpyDeviceToHost));
		if (host_trips != LOOPS) {
			fprintf(stderr, "cond_target: the WHILE body ran %d times, not %d\n", host_trips, LOOPS);
			return 1;
		}
	}
	if (host_runs != 2 * ITERS) {
		fprintf(stderr, "cond_target: the host nodes ran %d times, not %d\n", host_runs, 2 * ITERS);
		return 1;
	}
	const char *exp = getenv("KJ_EXPECT");
	if (exp) {
		FILE *f = fopen(exp, "w");
		if (f) {
			fprintf(f, "{\"iterations\": %d, \"graph_kernels_per_iteration\": %d,"
				   " \"graph_launches_per_iteration\": 2, \"while_trips\": %d}\n",
				ITERS, 2 + 2 * LOOPS + 1 + 1 + 2, LOOPS);
			fclose(f);
		}
	}
	CK(cudaGraphExecDestroy(ec));
	CK(cudaGraphExecDestroy(eh));
	CK(cudaGraphDestroy(gc));
	CK(cudaGraphDestroy(gh));
	printf("cond_target: %d iterations done, %d trips of the WHILE body each\n", ITERS, LOOPS);
	return 0;
}
