// One kernel, built twice with a different amount of work (-DREPS=...): two modules that define a
// function of one name, signature and register count, as a JIT autotuner's candidates do.
#ifndef REPS
#error "build with -DREPS=N"
#endif
extern "C" __global__ void kj_same_name(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
#pragma unroll 1
	for (int r = 0; r < REPS; r++)
		v = v * 0.999f + 0.001f;
	x[i] = v;
}
