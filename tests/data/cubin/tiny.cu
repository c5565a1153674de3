// Source of tiny_sm90.cubin and tiny.fatbin (tests of the module symbol reader):
//   nvcc -cubin -arch=sm_90 -o tiny_sm90.cubin tiny.cu
//   nvcc -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 -o tiny.fatbin tiny.cu
__global__ void kj_scale(const float *in, float *out, int n, float s)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = in[i] * s;
}
extern "C" __global__ void kj_plain(int *x) { x[threadIdx.x] = threadIdx.x; }
