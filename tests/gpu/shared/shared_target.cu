// Stand-in GPU program for the shared-GPU and fault tests: steps (NVTX range "step") of 10
// spinning kernels of ~2 ms on every SM, a sync and 5 ms on the host, for SECONDS seconds counted
// from when its CUDA context is ready (under tracing the context takes seconds to create: counted
// from the start, a 2 or 3 s run made a single step), and at least MIN_STEPS steps, so that
// `kjoule compare --skip 1` always has iterations left. Writes its pid to PIDFILE once the first
// step is done, and the number of kernels it launched to PIDFILE.count when it ends normally.
// Prints how long the context and the first step took, and how many steps it made.
// usage: shared_target SECONDS [PIDFILE]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIN_STEPS 4

__global__ void kj_spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	const char *pidfile = argc > 2 ? argv[2] : NULL;
	int sms = 0, clock_khz = 0;
	long long launched = 0;
	if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) {
		fprintf(stderr, "shared_target: no GPU\n");
		return 77;
	}
	cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
	long long cycles = (long long)clock_khz * 2; /* ~2 ms */
	double t0 = now_s();
	if (cudaFree(0) != cudaSuccess) { /* the context, before the clock starts */
		fprintf(stderr, "shared_target: no CUDA context: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	double t_ctx = now_s(), t_step0 = 0, end = t_ctx + seconds;
	int step;
	for (step = 0; step < MIN_STEPS || now_s() < end; step++) {
		nvtxRangePushA("step");
		for (int k = 0; k < 10; k++) {
			kj_spin<<<sms, 128>>>(cycles);
			launched++;
		}
		cudaDeviceSynchronize();
		nvtxRangePop();
		if (step == 0)
			t_step0 = now_s() - t_ctx;
		if (step == 0 && pidfile) {
			char tmp[4096];
			snprintf(tmp, sizeof(tmp), "%s.tmp", pidfile);
			FILE *f = fopen(tmp, "w");
			if (f) {
				fprintf(f, "%d\n", (int)getpid());
				fclose(f);
				rename(tmp, pidfile);
			}
		}
		usleep(5000);
	}
	if (cudaGetLastError() != cudaSuccess)
		return 1;
	if (pidfile) {
		char path[4096];
		snprintf(path, sizeof(path), "%s.count", pidfile);
		FILE *f = fopen(path, "w");
		if (f) {
			fprintf(f, "%lld\n", launched);
			fclose(f);
		}
	}
	printf("shared_target: context %.3f s, first step %.3f s, %d steps, %lld kernels in %.3f s\n", t_ctx - t0,
	       t_step0, step, launched, now_s() - t_ctx);
	return 0;
}
