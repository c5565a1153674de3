// A decode loop in miniature: a step kernel captured once into a CUDA graph reads its token from a
// static slot; before each launch the host feeds the next token as serving engines do: a
// host-to-device copy into a staging buffer, then a device-to-device copy into the slot. Each
// token carries a tag, and the step kernel traps on a token without it (as an index check
// asserts on a position out of range), so a replay that copies stand-in bytes faults. ITERS steps,
// each inside an NVTX range "step". The program checks its own output.
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CK(x)                                                                               \
	do {                                                                                \
		cudaError_t e_ = (x);                                                       \
		if (e_ != cudaSuccess) {                                                    \
			fprintf(stderr, "feed_target: %s: %s\n", #x, cudaGetErrorString(e_)); \
			return 1;                                                           \
		}                                                                           \
	} while (0)

enum { ITERS = 12, SLOTS = 16, N = 1 << 16 };
static const uint64_t TAG = 0x5EEDull << 48;

// token[0]: tag | step; token[1]: the row it adds to. Traps on a token without the tag or with a row
// out of range.
__global__ void step_kernel(const uint64_t *token, float *rows, int n)
{
	uint64_t t = token[0], r = token[1];
	if ((t >> 48) != (TAG >> 48) || r >= SLOTS)
		__trap();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		rows[r * n + i] += 1.0f;
}

int main(void)
{
	uint64_t *staging, *slot, host[2];
	float *rows;
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t e;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&staging, 2 * sizeof(uint64_t)));
	CK(cudaMalloc(&slot, 2 * sizeof(uint64_t)));
	CK(cudaMalloc(&rows, (size_t)SLOTS * N * sizeof(float)));
	CK(cudaMemsetAsync(rows, 0, (size_t)SLOTS * N * sizeof(float), s));
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	step_kernel<<<64, 256, 0, s>>>(slot, rows, N);
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&e, g, 0));
	for (int it = 0; it < ITERS; it++) {
		nvtxRangePushA("step");
		host[0] = TAG | (uint64_t)it;
		host[1] = (uint64_t)((it * 5) % SLOTS);
		CK(cudaMemcpyAsync(staging, host, sizeof(host), cudaMemcpyHostToDevice, s));
		CK(cudaMemcpyAsync(slot, staging, sizeof(host), cudaMemcpyDeviceToDevice, s));
		CK(cudaGraphLaunch(e, s));
		CK(cudaStreamSynchronize(s)); /* host[] is the next token's buffer */
		nvtxRangePop();
	}
	float sum[SLOTS], want;
	for (int r = 0; r < SLOTS; r++)
		CK(cudaMemcpy(&sum[r], rows + (size_t)r * N + N - 1, sizeof(float), cudaMemcpyDeviceToHost));
	for (int r = 0; r < SLOTS; r++) {
		want = 0;
		for (int it = 0; it < ITERS; it++)
			want += (it * 5) % SLOTS == r;
		if (sum[r] != want) {
			fprintf(stderr, "feed_target: row %d holds %g, want %g\n", r, sum[r], want);
			return 1;
		}
	}
	printf("feed_target: %d steps done, output checked\n", ITERS);
	return 0;
}
