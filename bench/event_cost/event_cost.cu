/* What one event of a kind costs a program's thread: a loop of events of one kind, in blocks, each
 * block inside an NVTX range "step" (so `kjoule run --capture step@F:C` applies to it), timed on
 * the host clock until the block's work has completed. Run untraced and traced, the difference per
 * event is the tracer's cost for that kind (bench/event_cost/costs.py).
 *   kernel: an empty kernel launch <<<1, 1>>>
 *   nvtx:   an NVTX range pushed and popped (no GPU work)
 *   graph:  a launch of an instantiated CUDA graph of one empty kernel
 *   host:   a 4-byte device-to-host copy waited for (a host read of a device scalar, as a decode
 *           loop's argmax().item())
 * usage: event_cost KIND [EVENTS_PER_BLOCK [BLOCKS]]  (defaults 2000 and 40) — prints one JSON
 * line: kind, events, blocks, us_per_event (median over the blocks after the first three),
 * us_per_event_min, us_per_event_max. Exit 2 on bad arguments, 1 on a CUDA error. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void empty_kernel(void) {}

enum kind { KERNEL, NVTX, GRAPH, HOST };

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "event_cost: %s: %s\n", #call, cudaGetErrorString(e_));    \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

/* One block of n events of kind k on stream s; 0, or 1 on a CUDA error. */
static int block(enum kind k, long n, cudaStream_t s, cudaGraphExec_t g, int *dev, int *host)
{
	for (long i = 0; i < n; i++) {
		switch (k) {
		case KERNEL:
			empty_kernel<<<1, 1, 0, s>>>();
			break;
		case NVTX:
			nvtxRangePushA("event");
			nvtxRangePop();
			break;
		case GRAPH:
			CHECK(cudaGraphLaunch(g, s));
			break;
		case HOST:
			CHECK(cudaMemcpyAsync(host, dev, sizeof(int), cudaMemcpyDeviceToHost, s));
			CHECK(cudaStreamSynchronize(s));
			break;
		}
	}
	CHECK(cudaGetLastError());
	CHECK(cudaStreamSynchronize(s));
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"kernel", "nvtx", "graph", "host"};
	int k = -1;
	for (int i = 0; argc > 1 && i < 4; i++)
		if (!strcmp(argv[1], names[i]))
			k = i;
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 2000, blocks = argc > 3 ? strtol(argv[3], NULL, 10) : 40;
	if (k < 0 || argc > 4 || n < 1 || blocks < 4) {
		fprintf(stderr, "usage: event_cost kernel|nvtx|graph|host [EVENTS_PER_BLOCK [BLOCKS >= 4]]\n");
		return 2;
	}
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec = NULL;
	int *dev, *host;
	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&dev, sizeof(int)));
	CHECK(cudaMallocHost(&host, sizeof(int)));
	CHECK(cudaMemset(dev, 0, sizeof(int)));
	if (k == GRAPH) {
		CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
		empty_kernel<<<1, 1, 0, s>>>();
		CHECK(cudaStreamEndCapture(s, &graph));
		CHECK(cudaGraphInstantiate(&exec, graph, 0));
	}
	double *us = (double *)malloc((size_t)blocks * sizeof(double));
	if (!us)
		return 1;
	for (long b = 0; b < blocks; b++) {
		nvtxRangePushA("step");
		double t0 = now_us();
		if (block((enum kind)k, n, s, exec, dev, host))
			return 1;
		us[b] = (now_us() - t0) / (double)n;
		nvtxRangePop();
	}
	/* the first three blocks warm up (module loading, the tracer's first buffers) */
	qsort(us + 3, (size_t)(blocks - 3), sizeof(double), by_value);
	long m = blocks - 3;
	double med = m % 2 ? us[3 + m / 2] : (us[3 + m / 2 - 1] + us[3 + m / 2]) / 2;
	printf("{\"kind\": \"%s\", \"events\": %ld, \"blocks\": %ld, \"us_per_event\": %.4f, "
	       "\"us_per_event_min\": %.4f, \"us_per_event_max\": %.4f}\n",
	       names[k], n, blocks, med, us[3], us[blocks - 1]);
	free(us);
	return 0;
}
