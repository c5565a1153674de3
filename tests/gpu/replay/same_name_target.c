/* A program that loads two modules defining a kernel of one name, signature and register count
 * (same_name_module.cu built with two amounts of work) with cuModuleLoadData, as Triton and
 * XLA's autotuners do, and launches both with one geometry and one buffer, ITERS times.
 * usage: same_name_target SHORT.cubin LONG.cubin — exit 77 without a GPU. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 40
#define N (132 * 128)

static void *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	void *b = NULL;
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
	    !(b = malloc((size_t)n)) || fread(b, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "same_name_target: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	return b;
}

#define CK(x) do { CUresult e_ = (x); if (e_) { const char *s_ = "?"; cuGetErrorName(e_, &s_); \
	fprintf(stderr, "same_name_target: %s: %s\n", #x, s_); return 1; } } while (0)

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod[2];
	CUfunction fn[2];
	CUdeviceptr x;
	int n = N, count = 0;
	if (argc != 3) {
		fprintf(stderr, "usage: same_name_target SHORT.cubin LONG.cubin\n");
		return 2;
	}
	if (cuInit(0) || cuDeviceGetCount(&count) || count < 1)
		return 77;
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	for (int m = 0; m < 2; m++) {
		void *img = read_file(argv[1 + m]);
		CK(cuModuleLoadData(&mod[m], img));
		CK(cuModuleGetFunction(&fn[m], mod[m], "kj_same_name"));
		free(img);
	}
	CK(cuMemAlloc(&x, N * sizeof(float)));
	CK(cuMemsetD32(x, 0, N));
	void *args[] = {&x, &n};
	for (int it = 0; it < ITERS; it++)
		for (int m = 0; m < 2; m++)
			CK(cuLaunchKernel(fn[m], 132, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CK(cuCtxSynchronize());
	float v = -1;
	CK(cuMemcpyDtoH(&v, x, sizeof(v)));
	if (!(v > 0.5f && v <= 1.0f)) { /* every launch moves x toward 1 */
		fprintf(stderr, "same_name_target: x[0] = %g, expected in (0.5, 1]\n", v);
		return 1;
	}
	printf("same_name_target: %d launches of each module's kj_same_name, x[0] = %.4f\n", ITERS, v);
	CK(cuMemFree(x));
	CK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
