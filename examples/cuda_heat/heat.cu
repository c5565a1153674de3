/* A hand-written CUDA program kjoule was not tuned for: a 2-D heat solver (damped Jacobi sweeps),
 * written the way solver codes are, not the way ML frameworks are.
 *
 * Each step (one NVTX range `step`) does two sweeps, a -> b then b -> a, and each sweep runs:
 *   jacobi_tile      the interior on stream 0, from a 130 x 98 shared-memory tile (50,960 bytes of
 *                    dynamic shared memory: above the 48 KiB default, raised by cudaFuncSetAttribute)
 *   fix_edges        the boundary rows and columns on stream 1, joined back with events
 *   relax            damped Jacobi (weight 0.8), compiled at start-up from source with NVRTC and
 *                    launched through the driver API (cuModuleLoadData of the PTX, cuLaunchKernel)
 *   residual_coop    max |new - old| in one cooperative kernel (grid-wide sync between its phases)
 *   downsample       a coarse copy for monitoring, into scratch from cudaMallocAsync/cudaFreeAsync
 * Every --check-every steps the host copies the residual back (cudaMemcpyAsync to pinned memory),
 * queues a host function (cudaLaunchHostFunc) and synchronises, as a convergence check does.
 * --graph captures one step (both streams, the cooperative and driver-API launches, the
 * stream-ordered allocation) into a CUDA graph and launches it instead.
 *
 * Prints one JSON line at the end: ms per step (CUDA events over the measured steps), the residual
 * and the mean temperature, which must be finite and the residual falling.
 * usage: cuda_heat [--n 4096] [--steps 400] [--warmup 10] [--check-every 50] [--graph] */
#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>
#include <nvtx3/nvToolsExt.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace cg = cooperative_groups;

#define TX 128
#define TY 96
#define ROWS_PER_THREAD (TY / 8)

#define CK(x) check_rt((x), #x, __LINE__)
#define CKD(x) check_drv((x), #x, __LINE__)
#define CKR(x) check_nvrtc((x), #x, __LINE__)

static void check_rt(cudaError_t e, const char *what, int line)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "cuda_heat: line %d: %s: %s\n", line, what, cudaGetErrorString(e));
		exit(1);
	}
}

static void check_drv(CUresult e, const char *what, int line)
{
	if (e != CUDA_SUCCESS) {
		const char *s = NULL;
		cuGetErrorString(e, &s);
		fprintf(stderr, "cuda_heat: line %d: %s: %s\n", line, what, s ? s : "?");
		exit(1);
	}
}

static void check_nvrtc(nvrtcResult e, const char *what, int line)
{
	if (e != NVRTC_SUCCESS) {
		fprintf(stderr, "cuda_heat: line %d: %s: %s\n", line, what, nvrtcGetErrorString(e));
		exit(1);
	}
}

/* The interior of one sweep: each block loads its tile and a one-cell halo into shared memory and
 * writes the 5-point average of every interior cell it owns. */
__global__ void jacobi_tile(const float *__restrict__ a, float *__restrict__ b, int n)
{
	extern __shared__ float tile[]; /* (TY + 2) x (TX + 2) */
	const int W = TX + 2;
	int x0 = blockIdx.x * TX, y0 = blockIdx.y * TY;
	for (int k = threadIdx.y * blockDim.x + threadIdx.x; k < (TY + 2) * W; k += blockDim.x * blockDim.y) {
		int ty = k / W, tx = k % W;
		int gy = y0 + ty - 1, gx = x0 + tx - 1;
		tile[k] = (gy >= 0 && gy < n && gx >= 0 && gx < n) ? a[(size_t)gy * n + gx] : 0.f;
	}
	__syncthreads();
	int tx = threadIdx.x + 1, gx = x0 + threadIdx.x;
	for (int r = 0; r < ROWS_PER_THREAD; r++) {
		int ty = threadIdx.y * ROWS_PER_THREAD + r + 1, gy = y0 + ty - 1;
		if (gx <= 0 || gx >= n - 1 || gy <= 0 || gy >= n - 1)
			continue;
		b[(size_t)gy * n + gx] = 0.25f * (tile[(ty - 1) * W + tx] + tile[(ty + 1) * W + tx] +
						 tile[ty * W + tx - 1] + tile[ty * W + tx + 1]);
	}
}

/* Dirichlet boundaries: the top edge held at 1 (its corners excepted), the other three at 0. Each
 * cell has one writer with one value, so the result does not depend on the threads' order. */
__global__ void fix_edges(float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	if (i > 0 && i < n - 1) {
		b[i] = 1.f;
		b[(size_t)(n - 1) * n + i] = 0.f;
	}
	b[(size_t)i * n] = 0.f;
	b[(size_t)i * n + n - 1] = 0.f;
}

/* The maximum of v over the block (blockDim.x a power of two, at most 256), in m[0]. */
__device__ void block_max(float v, float *m)
{
	m[threadIdx.x] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			m[threadIdx.x] = fmaxf(m[threadIdx.x], m[threadIdx.x + s]);
		__syncthreads();
	}
}

/* max |b - a| over the grid in one cooperative launch: each block's maximum into partial[], a
 * grid-wide sync, then block 0 reduces the partials into *res. */
__global__ void residual_coop(const float *a, const float *b, size_t cells, float *partial, float *res)
{
	__shared__ float m[256];
	cg::grid_group grid = cg::this_grid();
	float v = 0.f;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < cells; i += (size_t)gridDim.x * blockDim.x)
		v = fmaxf(v, fabsf(b[i] - a[i]));
	block_max(v, m);
	if (threadIdx.x == 0)
		partial[blockIdx.x] = m[0];
	grid.sync();
	if (blockIdx.x == 0) {
		v = 0.f;
		for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x)
			v = fmaxf(v, partial[i]);
		block_max(v, m);
		if (threadIdx.x == 0)
			*res = m[0];
	}
}

/* A coarse copy (every 8th cell each way), for monitoring. */
__global__ void downsample(const float *a, float *coarse, int n)
{
	int c = n / 8, i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < c * c)
		coarse[i] = a[(size_t)(i / c) * 8 * n + (size_t)(i % c) * 8];
}

/* The damping step, compiled at start-up (NVRTC) and launched through the driver API. */
static const char *relax_src =
	"extern \"C\" __global__ void relax(const float *a, float *b, unsigned long long cells, float omega)\n"
	"{\n"
	"	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < cells;\n"
	"	     i += (unsigned long long)gridDim.x * blockDim.x)\n"
	"		b[i] = a[i] + omega * (b[i] - a[i]);\n"
	"}\n";

static CUfunction compile_relax(CUmodule *mod)
{
	nvrtcProgram p;
	int major = 0, minor = 0;
	char arch[64];
	size_t ptx_len = 0;
	CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
	CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
	snprintf(arch, sizeof(arch), "--gpu-architecture=compute_%d%d", major, minor);
	const char *opts[] = {arch};
	CKR(nvrtcCreateProgram(&p, relax_src, "relax.cu", 0, NULL, NULL));
	if (nvrtcCompileProgram(p, 1, opts) != NVRTC_SUCCESS) {
		size_t n = 0;
		nvrtcGetProgramLogSize(p, &n);
		char *log = (char *)malloc(n + 1);
		nvrtcGetProgramLog(p, log);
		fprintf(stderr, "cuda_heat: relax.cu does not compile:\n%s\n", log);
		exit(1);
	}
	CKR(nvrtcGetPTXSize(p, &ptx_len));
	char *ptx = (char *)malloc(ptx_len);
	CKR(nvrtcGetPTX(p, ptx));
	CKR(nvrtcDestroyProgram(&p));
	CUfunction f;
	CKD(cuModuleLoadData(mod, ptx)); /* the driver JIT-compiles the PTX */
	CKD(cuModuleGetFunction(&f, *mod, "relax"));
	free(ptx);
	return f;
}

struct solver {
	int n, coop_blocks;
	size_t cells;
	float *a, *b, *partial, *res;
	cudaStream_t s0, s1;
	cudaEvent_t fork, join;
	CUfunction relax;
	float omega;
};

/* One sweep from src into dst, on both streams. */
static void sweep(struct solver *s, float *src, float *dst)
{
	dim3 grid((s->n + TX - 1) / TX, (s->n + TY - 1) / TY), block(TX, 8);
	size_t shmem = (size_t)(TY + 2) * (TX + 2) * sizeof(float);
	CK(cudaEventRecord(s->fork, s->s0));
	jacobi_tile<<<grid, block, shmem, s->s0>>>(src, dst, s->n);
	CK(cudaGetLastError());
	CK(cudaStreamWaitEvent(s->s1, s->fork, 0));
	fix_edges<<<(s->n + 255) / 256, 256, 0, s->s1>>>(dst, s->n);
	CK(cudaGetLastError());
	CK(cudaEventRecord(s->join, s->s1));
	CK(cudaStreamWaitEvent(s->s0, s->join, 0));
	unsigned long long cells = s->cells;
	void *rargs[] = {&src, &dst, &cells, &s->omega};
	CKD(cuLaunchKernel(s->relax, 1024, 1, 1, 256, 1, 1, 0, (CUstream)s->s0, rargs, NULL));
	void *cargs[] = {&src, &dst, &s->cells, &s->partial, &s->res};
	CK(cudaLaunchCooperativeKernel((void *)residual_coop, s->coop_blocks, 256, cargs, 0, s->s0));
	float *coarse = NULL;
	int c = s->n / 8;
	CK(cudaMallocAsync((void **)&coarse, (size_t)c * c * sizeof(float), s->s0));
	downsample<<<(c * c + 255) / 256, 256, 0, s->s0>>>(dst, coarse, s->n);
	CK(cudaGetLastError());
	CK(cudaFreeAsync(coarse, s->s0));
}

static void step(struct solver *s)
{
	sweep(s, s->a, s->b);
	sweep(s, s->b, s->a);
}

static void CUDART_CB checked(void *arg)
{
	(*(int *)arg)++;
}

int main(int argc, char **argv)
{
	int n = 4096, steps = 400, warmup = 10, every = 50, use_graph = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--graph"))
			use_graph = 1;
		else if (i + 1 < argc && !strcmp(argv[i], "--n"))
			n = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--steps"))
			steps = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--warmup"))
			warmup = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--check-every"))
			every = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: cuda_heat [--n N] [--steps S] [--warmup W] [--check-every C] [--graph]\n");
			return 2;
		}
	}
	if (n < 64 || n % 8 || steps < 1 || warmup < 0 || every < 1) {
		fprintf(stderr, "cuda_heat: --n must be a multiple of 8 and at least 64; --steps, --check-every positive\n");
		return 2;
	}
	struct solver s;
	memset(&s, 0, sizeof(s));
	s.n = n;
	s.cells = (size_t)n * n;
	s.omega = 0.8f; /* damped: weights above 1 diverge for Jacobi */
	CK(cudaSetDevice(0));
	CKD(cuInit(0));
	CUmodule mod;
	s.relax = compile_relax(&mod);
	size_t shmem = (size_t)(TY + 2) * (TX + 2) * sizeof(float);
	CK(cudaFuncSetAttribute(jacobi_tile, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem));
	int sms = 0, per_sm = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, residual_coop, 256, 0));
	s.coop_blocks = sms * (per_sm < 2 ? per_sm : 2);
	CK(cudaMalloc(&s.a, s.cells * sizeof(float)));
	CK(cudaMalloc(&s.b, s.cells * sizeof(float)));
	CK(cudaMalloc(&s.partial, (size_t)s.coop_blocks * sizeof(float)));
	CK(cudaMalloc(&s.res, sizeof(float)));
	CK(cudaMemset(s.a, 0, s.cells * sizeof(float)));
	CK(cudaMemset(s.b, 0, s.cells * sizeof(float)));
	CK(cudaStreamCreateWithFlags(&s.s0, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s.s1, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&s.join, cudaEventDisableTiming));
	float *res_host;
	CK(cudaMallocHost((void **)&res_host, sizeof(float)));

	cudaGraphExec_t exec = NULL;
	if (use_graph) {
		cudaGraph_t g;
		CK(cudaStreamBeginCapture(s.s0, cudaStreamCaptureModeGlobal));
		step(&s);
		CK(cudaStreamEndCapture(s.s0, &g));
		CK(cudaGraphInstantiate(&exec, g, 0));
		CK(cudaGraphUpload(exec, s.s0));
		CK(cudaGraphDestroy(g));
	}
	cudaEvent_t t0, t1;
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	int checks = 0;
	float first_res = -1.f;
	for (int i = 0; i < warmup + steps; i++) {
		if (i == warmup)
			CK(cudaEventRecord(t0, s.s0));
		nvtxRangePushA("step");
		if (exec)
			CK(cudaGraphLaunch(exec, s.s0));
		else
			step(&s);
		if ((i + 1) % every == 0) {
			CK(cudaMemcpyAsync(res_host, s.res, sizeof(float), cudaMemcpyDeviceToHost, s.s0));
			CK(cudaLaunchHostFunc(s.s0, checked, &checks));
			CK(cudaStreamSynchronize(s.s0));
			if (first_res < 0)
				first_res = *res_host;
		}
		nvtxRangePop();
	}
	CK(cudaEventRecord(t1, s.s0));
	CK(cudaMemcpyAsync(res_host, s.res, sizeof(float), cudaMemcpyDeviceToHost, s.s0));
	CK(cudaStreamSynchronize(s.s0));
	float ms = 0.f;
	CK(cudaEventElapsedTime(&ms, t0, t1));
	float *host = (float *)malloc(s.cells * sizeof(float));
	CK(cudaMemcpy(host, s.a, s.cells * sizeof(float), cudaMemcpyDeviceToHost));
	double mean = 0;
	int finite = 1;
	for (size_t i = 0; i < s.cells; i++) {
		finite &= isfinite(host[i]) != 0;
		mean += host[i];
	}
	mean /= (double)s.cells;
	int ok = finite && isfinite(*res_host) && *res_host > 0.f && (first_res < 0 || *res_host <= first_res) &&
		 checks == (warmup + steps) / every;
	printf("{\"program\": \"cuda_heat\", \"n\": %d, \"graph\": %s, \"steps\": %d, \"ms_per_step\": %.4f, "
	       "\"residual\": %.6g, \"residual_first_check\": %.6g, \"mean_temperature\": %.6g, \"host_checks\": %d, "
	       "\"ok\": %s}\n",
	       n, exec ? "true" : "false", steps, ms / steps, *res_host, first_res, mean, checks, ok ? "true" : "false");
	free(host);
	if (exec)
		CK(cudaGraphExecDestroy(exec));
	CKD(cuModuleUnload(mod));
	CK(cudaFreeHost(res_host));
	CK(cudaFree(s.a));
	CK(cudaFree(s.b));
	CK(cudaFree(s.partial));
	CK(cudaFree(s.res));
	return ok ? 0 : 1;
}
