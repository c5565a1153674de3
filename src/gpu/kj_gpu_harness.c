/* The GPU harness, CUDA runtime side: graph capture of n calls, event timing, the graph as
 * kj_amortize_measure's work, the L2 flush buffer (kj_gpu_harness.h). */
#include <cuda_runtime.h>

#include "kj_error.h"
#include "kj_gpu_harness.h"

static int set_fail(struct kj_gpu_fail *f, cudaError_t e, const char *what)
{
	if (f) {
		f->err = e;
		f->what = what;
	}
	return KJ_EGPU;
}

int kj_gpu_graph_capture(cudaStream_t s, int n, kj_gpu_step_fn step, void *ctx, cudaGraphExec_t *exec,
			 struct kj_gpu_fail *f)
{
	cudaGraph_t graph = NULL;
	cudaError_t e;
	int rc = 0;
	*exec = NULL;
	if (f)
		*f = (struct kj_gpu_fail){cudaSuccess, NULL};
	if ((e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)))
		return set_fail(f, e, "begin capture");
	for (int i = 0; i < n && !rc; i++)
		rc = step(ctx, i, s);
	e = cudaStreamEndCapture(s, &graph);
	if (rc) {
		if (f)
			f->what = "a captured call";
	} else if (e) {
		rc = set_fail(f, e, "end capture (a call that cannot be captured?)");
	} else if ((e = cudaGraphInstantiate(exec, graph, 0))) {
		*exec = NULL;
		rc = set_fail(f, e, "graph instantiate");
	}
	if (graph)
		cudaGraphDestroy(graph);
	return rc;
}

int kj_gpu_graph_enqueue(void *g)
{
	struct kj_gpu_graph *x = g;
	return cudaGraphLaunch(x->exec, x->stream) == cudaSuccess ? 0 : KJ_EGPU;
}

int kj_gpu_graph_sync(void *g)
{
	struct kj_gpu_graph *x = g;
	return cudaStreamSynchronize(x->stream) == cudaSuccess ? 0 : KJ_EGPU;
}

struct kj_amortize_work kj_gpu_graph_work(struct kj_gpu_graph *g, int calls)
{
	struct kj_amortize_work w = {g, kj_gpu_graph_enqueue, kj_gpu_graph_sync, calls};
	return w;
}

int kj_gpu_time_ms(const struct kj_amortize_work *w, cudaStream_t s, cudaEvent_t ev[2], int64_t n, float *ms,
		   struct kj_gpu_fail *f)
{
	cudaError_t e;
	int rc = 0;
	if (f)
		*f = (struct kj_gpu_fail){cudaSuccess, NULL};
	if ((e = cudaEventRecord(ev[0], s)))
		return set_fail(f, e, "event record");
	for (int64_t i = 0; i < n && !rc; i++)
		rc = w->enqueue(w->ctx);
	if (rc) {
		if (f) {
			f->err = cudaGetLastError();
			f->what = "timed launch";
		}
		cudaStreamSynchronize(s);
		return rc;
	}
	if ((e = cudaEventRecord(ev[1], s))) {
		cudaStreamSynchronize(s);
		return set_fail(f, e, "event record");
	}
	if ((e = cudaStreamSynchronize(s)))
		return set_fail(f, e, "timed launches");
	if ((e = cudaEventElapsedTime(ms, ev[0], ev[1])))
		return set_fail(f, e, "elapsed time");
	return 0;
}

int kj_gpu_l2_flush(void **buf, size_t *bytes, struct kj_gpu_fail *f)
{
	static void *flush; /* kept for the process's life */
	static size_t flush_bytes;
	cudaError_t e;
	if (!flush) {
		int dev = 0, l2 = 0;
		if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess)
			l2 = 0;
		flush_bytes = kj_l2_flush_bytes(l2);
		if ((e = cudaMalloc(&flush, flush_bytes))) {
			flush = NULL;
			cudaGetLastError();
			*bytes = flush_bytes;
			set_fail(f, e, "the L2 flush's memory");
			return KJ_ENOMEM;
		}
	}
	*buf = flush;
	*bytes = flush_bytes;
	return 0;
}
