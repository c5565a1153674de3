/* What one event of a kind costs a program's thread: a loop of events of one kind, in blocks, each
 * block inside an NVTX range "step" (so `kjoule run --capture step@F:C` applies to it), timed on
 * the host clock until the block's work has completed. Run untraced and traced, the difference per
 * event is the tracer's cost for that kind (bench/event_cost/costs.py).
 *   kernel: an empty kernel launch <<<1, 1>>>
 *   nvtx:   an NVTX range pushed and popped (no GPU work)
 *   graph:  a launch of an instantiated CUDA graph of one empty kernel
 *   graph64: a launch of an instantiated CUDA graph of 64 empty kernels in a chain (what a tracer
 *           costs a graph's nodes, beside its launch)
 *   host:   a 4-byte device-to-host copy waited for (a host read of a device scalar, as a decode
 *           loop's argmax().item())
 *   kernel_cold: an empty kernel launch after reading 256 KiB of other memory, a byte a cache line
 *           (as a framework's own work between two launches takes the CPU's caches from the
 *           tracer's code and data; the read costs the same traced or not)
 *   kernel_block: as kernel_cold, an empty kernel that takes a 512-byte block by value (64 words,
 *           half of them zero, one changing with every launch), as a framework's elementwise
 *           kernels take their tensors' offsets and strides: what a tracer pays for the block
 * usage: event_cost KIND [EVENTS_PER_BLOCK [BLOCKS]]  (defaults 2000 and 40) — prints one JSON
 * line: kind, events, blocks, us_per_event (median over the blocks after the first three),
 * us_per_event_min, us_per_event_max. Exit 2 on bad arguments, 1 on a CUDA error.
 *        event_cost --serve KIND EVENTS_PER_BLOCK [--kjoule-cost=BITS]  — a contestant of
 * bench/trace_overhead/turns.py (its protocol, as turn_worker.py speaks it): says {"ready": true},
 * then for each line "go N" runs N blocks, each inside an NVTX range "forward", and answers
 * {"ms": [each block's wall ms]}; "quit" answers {"vmhwm_mb": peak RSS} and ends. --kjoule-cost:
 * under kjoule run, kjoule_cost_study_set_api(BITS) of the injection library once set up. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__global__ void empty_kernel(void) {}

struct words512 {
	unsigned long long w[64];
};

__global__ void block_kernel(struct words512 b)
{
	(void)b;
}

enum kind { KERNEL, NVTX, GRAPH, HOST, GRAPH64, KERNEL_COLD, KERNEL_BLOCK };

static const char *const kind_names[] = {"kernel",  "nvtx",        "graph",       "host",
					 "graph64", "kernel_cold", "kernel_block"};
#define N_KINDS 7

#define COLD_BYTES (256 << 10)
static unsigned char cold[COLD_BYTES];
static volatile unsigned cold_sink;

/* Reads a byte of each cache line of cold: the caches then hold it instead of what ran before. */
static void cool_caches(void)
{
	unsigned sum = 0;
	for (size_t i = 0; i < COLD_BYTES; i += 64)
		sum += ((volatile unsigned char *)cold)[i];
	cold_sink = sum;
}

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
	static struct words512 words;
	for (int w = 0; w < 64; w += 2)
		words.w[w] = 0x7f0000001000ULL + (unsigned long long)w * 4096;
	for (long i = 0; i < n; i++) {
		switch (k) {
		case KERNEL:
			empty_kernel<<<1, 1, 0, s>>>();
			break;
		case KERNEL_COLD:
			cool_caches();
			empty_kernel<<<1, 1, 0, s>>>();
			break;
		case KERNEL_BLOCK:
			cool_caches();
			words.w[0]++;
			block_kernel<<<1, 1, 0, s>>>(words);
			break;
		case NVTX:
			nvtxRangePushA("event");
			nvtxRangePop();
			break;
		case GRAPH:
		case GRAPH64:
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

/* The kind named by word, or -1. */
static int kind_of(const char *word)
{
	for (int i = 0; word && i < N_KINDS; i++)
		if (!strcmp(word, kind_names[i]))
			return i;
	return -1;
}

/* What the blocks need: a stream, a device int and its pinned host copy, and for the graph kinds
 * an instantiated graph of 1 or 64 empty kernels. 0, or 1 on a CUDA error. */
static int setup(enum kind k, cudaStream_t *s, cudaGraphExec_t *exec, int **dev, int **host)
{
	cudaGraph_t graph;
	*exec = NULL;
	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(dev, sizeof(int)));
	CHECK(cudaMallocHost(host, sizeof(int)));
	CHECK(cudaMemset(*dev, 0, sizeof(int)));
	if (k == GRAPH || k == GRAPH64) {
		CHECK(cudaStreamBeginCapture(*s, cudaStreamCaptureModeThreadLocal));
		for (int i = 0; i < (k == GRAPH64 ? 64 : 1); i++)
			empty_kernel<<<1, 1, 0, *s>>>();
		CHECK(cudaStreamEndCapture(*s, &graph));
		CHECK(cudaGraphInstantiate(exec, graph, 0));
	}
	return 0;
}

static double peak_rss_mb(void)
{
	char line[256];
	double mb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			mb = strtod(line + 6, NULL) / 1024.0;
	if (f)
		fclose(f);
	return mb;
}

/* turns.py's protocol on out (a copy of stdout taken before anything else could write to it). */
static int serve(enum kind k, long n, int cost_bits, FILE *out)
{
	cudaStream_t s;
	cudaGraphExec_t exec;
	int *dev, *host;
	char line[64];
	if (setup(k, &s, &exec, &dev, &host))
		return 1;
	if (cost_bits >= 0) {
		const char *lib = getenv("CUDA_INJECTION64_PATH");
		void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
		int (*set_api)(int) = h ? (int (*)(int))dlsym(h, "kjoule_cost_study_set_api") : NULL;
		if (!set_api || set_api(cost_bits) < 0) {
			fprintf(stderr, "event_cost --kjoule-cost: kjoule's CUPTI subscriber is not active\n");
			return 1;
		}
	}
	if (block(k, n, s, exec, dev, host)) /* the first block: module loading, first buffers */
		return 1;
	fprintf(out, "{\"ready\": true, \"pid\": %d}\n", (int)getpid());
	fflush(out);
	while (fgets(line, sizeof(line), stdin)) {
		long count;
		if (!strncmp(line, "quit", 4))
			break;
		if (sscanf(line, "go %ld", &count) != 1 || count < 1) {
			fprintf(stderr, "event_cost --serve: not a turn: %s", line);
			return 2;
		}
		fputs("{\"ms\": [", out);
		for (long b = 0; b < count; b++) {
			nvtxRangePushA("forward");
			double t0 = now_us();
			if (block(k, n, s, exec, dev, host))
				return 1;
			double ms = (now_us() - t0) / 1e3;
			nvtxRangePop();
			fprintf(out, "%s%.6f", b ? ", " : "", ms);
		}
		fputs("]}\n", out);
		fflush(out);
	}
	fprintf(out, "{\"vmhwm_mb\": %.1f}\n", peak_rss_mb());
	fflush(out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--serve")) {
		int k = argc > 2 ? kind_of(argv[2]) : -1, bits = -1;
		long n = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
		char *end = NULL;
		if (argc == 5 && !strncmp(argv[4], "--kjoule-cost=", 14)) {
			long v = strtol(argv[4] + 14, &end, 10);
			bits = end != argv[4] + 14 && !*end && v >= 0 && v < 65536 ? (int)v : -1;
		}
		if (k < 0 || n < 1 || argc > 5 || (argc == 5 && bits < 0)) {
			fprintf(stderr, "usage: event_cost --serve kernel|nvtx|graph|graph64|host|kernel_cold|kernel_block EVENTS_PER_BLOCK"
					" [--kjoule-cost=BITS]\n");
			return 2;
		}
		/* the protocol goes to a copy of stdout; anything else printed to stdout goes to stderr */
		FILE *out = fdopen(dup(1), "w");
		if (!out || dup2(2, 1) < 0)
			return 1;
		return serve((enum kind)k, n, bits, out);
	}
	int k = argc > 1 ? kind_of(argv[1]) : -1;
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 2000, blocks = argc > 3 ? strtol(argv[3], NULL, 10) : 40;
	if (k < 0 || argc > 4 || n < 1 || blocks < 4) {
		fprintf(stderr, "usage: event_cost kernel|nvtx|graph|graph64|host|kernel_cold|kernel_block [EVENTS_PER_BLOCK [BLOCKS >= 4]]\n");
		return 2;
	}
	cudaStream_t s;
	cudaGraphExec_t exec;
	int *dev, *host;
	if (setup((enum kind)k, &s, &exec, &dev, &host))
		return 1;
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
	       kind_names[k], n, blocks, med, us[3], us[blocks - 1]);
	free(us);
	return 0;
}
