/* kjoule-sweep-worker --ceilings: the two rates a roofline fraction divides by, measured on this GPU
 * now: a large device-to-device copy (bytes read plus bytes written per second) and a large bf16
 * GEMM through cuBLASLt (FLOP/s). Median of repeated event-timed runs after warm-up. */
#include <stdio.h>
#include <stdlib.h>

#include "kj_error.h"
#include "sweep_worker.h"

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

/* Median milliseconds of reps runs of one enqueue step (copy when plan < 0, else the GEMM). */
static int time_median(struct sw_ctx *c, int plan, void *a, void *b, void *d, size_t bytes, int reps, float *ms)
{
	cudaEvent_t e0 = NULL, e1 = NULL;
	float t[64];
	int rc;
	reps = reps > 64 ? 64 : reps;
	if ((rc = sw_cuda(c, cudaEventCreate(&e0), "event")) || (rc = sw_cuda(c, cudaEventCreate(&e1), "event")))
		goto out;
	for (int i = -3; i < reps; i++) {
		if ((rc = sw_cuda(c, cudaEventRecord(e0, c->stream), "event record")))
			goto out;
		rc = plan < 0 ? sw_cuda(c, cudaMemcpyAsync(d, a, bytes, cudaMemcpyDeviceToDevice, c->stream), "copy")
			      : sw_gemm_run(c, plan, a, b, d);
		if (rc || (rc = sw_cuda(c, cudaEventRecord(e1, c->stream), "event record")) ||
		    (rc = sw_sync(c, "ceiling run")))
			goto out;
		if (i >= 0 && (rc = sw_cuda(c, cudaEventElapsedTime(&t[i], e0, e1), "elapsed")))
			goto out;
	}
	qsort(t, (size_t)reps, sizeof(t[0]), cmp_float);
	*ms = t[reps / 2];
out:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	return rc;
}

int sw_ceilings(struct sw_ctx *c)
{
	size_t half = (size_t)1 << 30; /* 1 GiB copied: 2 GiB moved */
	const int64_t n = 8192;
	float ms_copy = 0, ms_gemm = 0;
	int rc;
	void *src, *dst, *a, *b, *o;
	c->op = "ceilings";
	if (!(src = sw_alloc(c, half / 4, SW_F32, 1.f)) || !(dst = sw_alloc(c, half / 4, SW_F32, 1.f)) ||
	    (rc = time_median(c, -1, src, NULL, dst, half, 20, &ms_copy)))
		goto out;
	sw_bufs_free(c);
	int plan;
	if (!(a = sw_alloc(c, (size_t)(n * n), SW_BF16, 1.f)) || !(b = sw_alloc(c, (size_t)(n * n), SW_BF16, 1.f)) ||
	    !(o = sw_alloc(c, (size_t)(n * n), SW_BF16, 1.f)) ||
	    (plan = sw_gemm_plan(c, KJ_BF16, 0, 1, n, n, n, n, n, n, 1, 0, 0, 0, 1.f, 0.f)) < 0 ||
	    (rc = time_median(c, plan, a, b, o, 0, 20, &ms_gemm)))
		goto out;
	printf("KJ_CEIL copy_bytes=%zu copy_us=%.3f copy_gbs=%.1f gemm_m=%lld gemm_us=%.3f gemm_bf16_tflops=%.1f\n",
	       2 * half, ms_copy * 1e3, 2.0 * (double)half / (ms_copy * 1e-3) / 1e9, (long long)n, ms_gemm * 1e3,
	       2.0 * (double)n * n * n / (ms_gemm * 1e-3) / 1e12);
	sw_bufs_free(c);
	return 0;
out:
	sw_bufs_free(c);
	printf("KJ_CEIL status=error msg=\"%s\"\n", c->err[0] ? c->err : "failed");
	return KJ_EGPU;
}
