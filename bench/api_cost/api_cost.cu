/* API-call cost under tracing: nanoseconds per call of a few CUDA calls a framework makes on
 * every operator (cudaGetDevice, cudaLaunchKernel of an empty kernel, cuCtxGetCurrent), so the
 * cost kjoule's --api callbacks add per call can be read off as a difference between runs; and
 * launches that cycle through 256 distinct kernels, as a framework's do.
 * usage: api_cost [calls]  — prints one JSON line. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void empty_kernel(void) {}

/* 256 distinct kernels, launched in turn: a framework's launch path touches many functions, and
 * a per-launch cost that grows with the number of registered kernels shows up here only */
template <int N> __global__ void many_kernel(int *p)
{
	if (p)
		p[0] = N;
}
typedef void (*many_fn)(int *);
template <int Lo, int Hi> struct many_table { /* [Lo, Hi), split in halves: shallow recursion */
	static void fill(many_fn *t)
	{
		many_table<Lo, (Lo + Hi) / 2>::fill(t);
		many_table<(Lo + Hi) / 2, Hi>::fill(t);
	}
};
template <int Lo> struct many_table<Lo, Lo + 1> {
	static void fill(many_fn *t) { t[Lo] = many_kernel<Lo>; }
};
#define KJ_MANY 256

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int dev = 0;
	CUcontext ctx;
	if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "api_cost: no CUDA device\n");
		return 77;
	}
	for (int i = 0; i < 1000; i++)
		empty_kernel<<<1, 32>>>();
	cudaDeviceSynchronize();

	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		cudaGetDevice(&dev);
	double t1 = now_ns();
	for (long i = 0; i < n; i++)
		cuCtxGetCurrent(&ctx);
	double t2 = now_ns();
	long launches = n / 4;
	for (long i = 0; i < launches; i++) {
		empty_kernel<<<1, 32>>>();
		if ((i & 1023) == 1023)
			cudaDeviceSynchronize(); /* keep the queue short: measure the call, not back-pressure */
	}
	cudaDeviceSynchronize();
	double t3 = now_ns();
	static many_fn table[KJ_MANY];
	many_table<0, KJ_MANY>::fill(table);
	for (int i = 0; i < KJ_MANY; i++) /* first launches load and register outside the timing */
		table[i]<<<1, 32>>>(NULL);
	cudaDeviceSynchronize();
	double t4 = now_ns();
	for (long i = 0; i < launches; i++) {
		table[i % KJ_MANY]<<<1, 32>>>(NULL);
		if ((i & 1023) == 1023)
			cudaDeviceSynchronize();
	}
	cudaDeviceSynchronize();
	double t5 = now_ns();
	printf("{\"calls\": %ld, \"cudaGetDevice_ns\": %.1f, \"cuCtxGetCurrent_ns\": %.1f, "
	       "\"launch_ns\": %.1f, \"launch_256_kernels_ns\": %.1f}\n",
	       n, (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / launches, (t5 - t4) / launches);
	return 0;
}
