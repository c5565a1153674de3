// Kernels for the replay GPU test, compiled to a cubin (nvcc -cubin -arch=sm_90) and loaded with
// cuModuleLoadData by replay_gpu_record.c, which records them as the tracer would.
#include <cooperative_groups.h>
#include <cuda.h>

namespace cg = cooperative_groups;

// Pointers inside a by-value struct.
struct AxpyArgs {
	const float *x;
	const float *y;
	float *out;
	int n;
	float alpha;
};

extern "C" __global__ void kj_axpy_struct(AxpyArgs a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < a.n)
		a.out[i] = a.alpha * a.x[i] + a.y[i];
}

// TensorIterator-like: an int before the struct, sizes, then an array of data pointers.
struct Iter {
	int ndim;
	int pad;
	long long sizes[2];
	float *data[3];
};

extern "C" __global__ void kj_iter_add(int flag, Iter it, float beta)
{
	long long n = it.sizes[0] * it.sizes[1];
	for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		it.data[0][i] = it.data[1][i] + beta * it.data[2][i] + (float)flag;
}

// Launched with a launch-time cluster dimension (2,1,1).
extern "C" __global__ void kj_cluster_scale(const float *in, float *out, int n)
{
	cg::cluster_group c = cg::this_cluster();
	unsigned rank = c.block_rank();
	c.sync();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = in[i] * (1.0f + (float)rank);
}

// 64 KB of dynamic shared memory: needs cuFuncSetAttribute.
extern "C" __global__ void kj_big_smem(const float *in, float *out, int n)
{
	extern __shared__ float s[];
	const int nsm = 16384;
	for (int j = threadIdx.x; j < nsm; j += blockDim.x)
		s[j] = in[(blockIdx.x * nsm + j) % n];
	__syncthreads();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = s[(threadIdx.x * 7) % nsm] + s[threadIdx.x];
}

// Works on a stream-ordered (cuMemAllocAsync) buffer.
extern "C" __global__ void kj_async_scale(float *buf, int n, float s)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		buf[i] = buf[i] * s + 1.0f;
}

// Faults: replay must record the error and go on.
extern "C" __global__ void kj_fault(float *p)
{
	p[threadIdx.x] = 1.0f;
}

// A C++-mangled template kernel.
template <typename T> __global__ void kj_templ(T *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * (T)0.5 + (T)1;
}
template __global__ void kj_templ<float>(float *, int);

// TMA: one 32x32 fp32 tile per block through cp.async.bulk.tensor; the descriptor (a
// __grid_constant__ CUtensorMap, 128 bytes) holds the global address.
extern "C" __global__ void kj_tma_copy(const __grid_constant__ CUtensorMap tmap, float *out, int W)
{
	__shared__ alignas(128) float tile[32 * 32];
	__shared__ alignas(8) unsigned long long bar;
	int x0 = blockIdx.x * 32, y0 = blockIdx.y * 32;
	unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
	unsigned stile = (unsigned)__cvta_generic_to_shared(tile);
	if (threadIdx.x == 0) {
		asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sbar));
		asm volatile("fence.proxy.async.shared::cta;");
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sbar),
			     "r"(32 * 32 * 4));
		asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
			     " [%0], [%1, {%2, %3}], [%4];" ::"r"(stile),
			     "l"(reinterpret_cast<unsigned long long>(&tmap)), "r"(x0), "r"(y0), "r"(sbar)
			     : "memory");
	}
	asm volatile("{\n .reg .pred p;\n KJ_WAIT:\n"
		     " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
		     " @!p bra KJ_WAIT;\n}" ::"r"(sbar)
		     : "memory");
	for (int j = threadIdx.x; j < 1024; j += blockDim.x)
		out[(y0 + j / 32) * W + x0 + j % 32] = tile[j] * 2.0f;
}
