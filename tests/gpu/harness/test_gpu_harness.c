/* GPU test of src/gpu (label gpu; exit 77 without a GPU). kj_gpu_graph_capture and
 * kj_gpu_cu_graph_capture: steps called n times with i = 0..n-1, the graph replays them (a memset
 * per step, checked on the host), a failing step's code comes back with *exec NULL and the stream
 * usable; kj_gpu_time_ms and kj_gpu_graph_work run the graph; kj_gpu_l2_flush keeps one buffer;
 * kj_gpu_fill's two distributions in range, never zero, the same values for the same seed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include "kj_error.h"
#include "kj_gpu_fill.h"
#include "kj_gpu_harness.h"
#include "kj_gpu_harness_cu.h"

static int fails;
#define CHECK(c, ...)                                          \
	do {                                                   \
		if (!(c)) {                                    \
			fails++;                               \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                   \
			printf("\n");                          \
		}                                              \
	} while (0)

#define N_STEPS 8

/* Step i writes byte i+1 into slot i; fail_at >= 0 makes that step fail. */
struct steps {
	unsigned char *d;
	int calls, last_i, fail_at, in_order;
};

static int rt_step(void *ctx, int i, cudaStream_t s)
{
	struct steps *t = ctx;
	t->in_order &= i == t->last_i + 1;
	t->last_i = i;
	t->calls++;
	if (i == t->fail_at)
		return KJ_EINVAL;
	return cudaMemsetAsync(t->d + i, i + 1, 1, s) == cudaSuccess ? 0 : KJ_EGPU;
}

static int cu_step(void *ctx, int i, CUstream s)
{
	struct steps *t = ctx;
	t->in_order &= i == t->last_i + 1;
	t->last_i = i;
	t->calls++;
	if (i == t->fail_at)
		return KJ_EINVAL;
	return cuMemsetD8Async((CUdeviceptr)(t->d + i), (unsigned char)(i + 1), 1, s) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

static void check_slots(const unsigned char *d, const char *who)
{
	unsigned char h[N_STEPS];
	cudaMemcpy(h, d, N_STEPS, cudaMemcpyDeviceToHost);
	for (int i = 0; i < N_STEPS; i++)
		CHECK(h[i] == i + 1, "%s: slot %d holds %d after the graph ran", who, i, h[i]);
}

static void test_runtime(cudaStream_t s, unsigned char *d)
{
	struct steps t = {d, 0, -1, -1, 1};
	struct kj_gpu_fail f;
	cudaGraphExec_t exec = NULL;
	cudaMemset(d, 0, N_STEPS);
	int rc = kj_gpu_graph_capture(s, N_STEPS, rt_step, &t, &exec, &f);
	CHECK(rc == 0 && exec, "capture: rc %d (%s)", rc, f.what ? f.what : "");
	CHECK(t.calls == N_STEPS && t.in_order, "capture: %d calls, in order %d", t.calls, t.in_order);
	if (!exec)
		return;
	cudaStreamSynchronize(s);
	unsigned char h0 = 1;
	cudaMemcpy(&h0, d, 1, cudaMemcpyDeviceToHost);
	CHECK(h0 == 0, "capture ran the steps instead of recording them");
	struct kj_gpu_graph g = {exec, s};
	struct kj_amortize_work w = kj_gpu_graph_work(&g, N_STEPS);
	CHECK(w.ctx == &g && w.launches_per_unit == N_STEPS && w.enqueue && w.sync, "graph work");
	cudaEvent_t ev[2];
	cudaEventCreate(&ev[0]);
	cudaEventCreate(&ev[1]);
	float ms = -1;
	rc = kj_gpu_time_ms(&w, s, ev, 3, &ms, &f);
	CHECK(rc == 0 && ms >= 0 && isfinite(ms), "time: rc %d, %g ms", rc, ms);
	check_slots(d, "runtime graph");
	cudaMemset(d, 0, N_STEPS);
	CHECK(w.enqueue(w.ctx) == 0 && w.sync(w.ctx) == 0, "graph work enqueue/sync");
	check_slots(d, "runtime graph work");
	cudaEventDestroy(ev[0]);
	cudaEventDestroy(ev[1]);
	cudaGraphExecDestroy(exec);

	/* a failing step: its code, no graph, the stream out of capture mode */
	struct steps bad = {d, 0, -1, 3, 1};
	rc = kj_gpu_graph_capture(s, N_STEPS, rt_step, &bad, &exec, &f);
	CHECK(rc == KJ_EINVAL && exec == NULL && f.err == cudaSuccess, "failing step: rc %d, exec %p", rc, (void *)exec);
	CHECK(bad.calls == 4, "failing step: %d calls after it failed (want 4)", bad.calls);
	enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
	CHECK(cudaStreamIsCapturing(s, &st) == cudaSuccess && st == cudaStreamCaptureStatusNone,
	      "stream left capturing after a failed step");

	void *b1 = NULL, *b2 = NULL;
	size_t n1 = 0, n2 = 0;
	CHECK(kj_gpu_l2_flush(&b1, &n1, &f) == 0 && b1 && n1 >= ((size_t)1 << 20), "l2 flush: %zu bytes", n1);
	CHECK(kj_gpu_l2_flush(&b2, &n2, &f) == 0 && b2 == b1 && n2 == n1, "l2 flush: not kept");
}

static void test_driver(unsigned char *d)
{
	CUstream s = NULL;
	CUgraphExec exec = NULL;
	struct kj_gpu_cu_fail f;
	struct steps t = {d, 0, -1, -1, 1};
	cudaMemset(d, 0, N_STEPS);
	if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
		CHECK(0, "cuStreamCreate");
		return;
	}
	int rc = kj_gpu_cu_graph_capture(s, N_STEPS, cu_step, &t, &exec, &f);
	CHECK(rc == 0 && exec, "driver capture: rc %d (%s)", rc, f.what ? f.what : "");
	CHECK(t.calls == N_STEPS && t.in_order, "driver capture: %d calls, in order %d", t.calls, t.in_order);
	if (exec) {
		struct kj_gpu_cu_graph g = {exec, s};
		struct kj_amortize_work w = kj_gpu_cu_graph_work(&g, N_STEPS);
		CHECK(w.launches_per_unit == N_STEPS && w.enqueue(w.ctx) == 0 && w.sync(w.ctx) == 0, "driver graph work");
		check_slots(d, "driver graph");
		cuGraphExecDestroy(exec);
	}
	struct steps bad = {d, 0, -1, 0, 1};
	rc = kj_gpu_cu_graph_capture(s, N_STEPS, cu_step, &bad, &exec, &f);
	CHECK(rc == KJ_EINVAL && exec == NULL && f.err == CUDA_SUCCESS && bad.calls == 1, "driver failing step: rc %d",
	      rc);
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CHECK(cuStreamIsCapturing(s, &st) == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_NONE,
	      "driver stream left capturing after a failed step");
	cuStreamDestroy(s);
}

static void test_fill(cudaStream_t s)
{
	enum { N = 1 << 16 };
	float *d = NULL, *h = malloc(N * sizeof(float)), *h2 = malloc(N * sizeof(float));
	int *ids = malloc(N * sizeof(int));
	cudaMalloc((void **)&d, N * sizeof(float));
	for (int dist = 0; dist < 2; dist++) {
		float lo = 1e30f, hi = -1e30f, amin = 1e30f;
		int neg = 0;
		CHECK(kj_gpu_fill(d, N, KJ_GPU_F32, dist, 2.f, 7, s) == 0, "fill launch");
		cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost);
		kj_gpu_fill(d, N, KJ_GPU_F32, dist, 2.f, 7, s);
		cudaMemcpy(h2, d, N * sizeof(float), cudaMemcpyDeviceToHost);
		CHECK(!memcmp(h, h2, N * sizeof(float)), "dist %d: another fill of the same seed differs", dist);
		for (int i = 0; i < N; i++) {
			lo = h[i] < lo ? h[i] : lo;
			hi = h[i] > hi ? h[i] : hi;
			amin = fabsf(h[i]) < amin ? fabsf(h[i]) : amin;
			neg += h[i] < 0;
		}
		CHECK(amin > 0, "dist %d: a zero", dist);
		CHECK(lo >= -2.f && hi <= 2.f && neg > N / 3 && neg < 2 * N / 3, "dist %d: [%g, %g], %d negative", dist, lo,
		      hi, neg);
		if (dist == KJ_GPU_FILL_MAGNITUDE)
			CHECK(amin >= 2.f / 16 * 0.999f, "magnitude fill: |v| %g under scale/16", amin);
		else
			CHECK(amin < 0.01f, "uniform fill: smallest |v| %g (not uniform around 0?)", amin);
	}
	kj_gpu_fill(d, N, KJ_GPU_F32, KJ_GPU_FILL_UNIFORM, -3.f, 9, s);
	cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += !(h[i] > 0 && h[i] <= 3.f);
	CHECK(!bad, "uniform fill, scale < 0: %d values outside (0, 3]", bad);
	kj_gpu_fill(d, N, KJ_GPU_I32, KJ_GPU_FILL_UNIFORM, 50.f, 3, s);
	cudaMemcpy(ids, d, N * sizeof(int), cudaMemcpyDeviceToHost);
	bad = 0;
	for (int i = 0; i < N; i++)
		bad += ids[i] < 0 || ids[i] >= 50;
	CHECK(!bad, "ids: %d outside [0, 50)", bad);
	cudaFree(d);
	free(h);
	free(h2);
	free(ids);
}

int main(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		printf("no GPU: skipped\n");
		return 77;
	}
	cudaStream_t s = NULL;
	unsigned char *d = NULL;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess || cudaMalloc((void **)&d, N_STEPS)) {
		printf("FAIL: stream or memory\n");
		return 1;
	}
	test_runtime(s, d);
	test_driver(d);
	test_fill(s);
	cudaFree(d);
	cudaStreamDestroy(s);
	printf("%s\n", fails ? "FAILED" : "ok");
	return fails ? 1 : 0;
}
