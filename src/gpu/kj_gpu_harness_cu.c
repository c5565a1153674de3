/* The GPU harness, CUDA driver side: graph capture of n calls and the graph as
 * kj_amortize_measure's work (kj_gpu_harness_cu.h). */
#include "kj_error.h"
#include "kj_gpu_harness_cu.h"
#include "kj_gpu_spin_ptx.h"

static int set_fail(struct kj_gpu_cu_fail *f, CUresult e, const char *what)
{
	if (f) {
		f->err = e;
		f->what = what;
	}
	return KJ_EGPU;
}

int kj_gpu_cu_graph_capture(CUstream s, int n, kj_gpu_cu_step_fn step, void *ctx, CUgraphExec *exec,
			    struct kj_gpu_cu_fail *f)
{
	CUgraph graph = NULL;
	CUresult e;
	int rc = 0;
	*exec = NULL;
	if (f)
		*f = (struct kj_gpu_cu_fail){CUDA_SUCCESS, NULL};
	if ((e = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)))
		return set_fail(f, e, "cuStreamBeginCapture");
	for (int i = 0; i < n && !rc; i++)
		rc = step(ctx, i, s);
	e = cuStreamEndCapture(s, &graph);
	if (rc) {
		if (f)
			f->what = "launch in graph capture";
	} else if (e) {
		rc = set_fail(f, e, "cuStreamEndCapture");
	} else if ((e = cuGraphInstantiate(exec, graph, 0))) {
		*exec = NULL;
		rc = set_fail(f, e, "cuGraphInstantiate");
	}
	if (graph)
		cuGraphDestroy(graph);
	return rc;
}

int kj_gpu_cu_graph_enqueue(void *g)
{
	struct kj_gpu_cu_graph *x = g;
	return cuGraphLaunch(x->exec, x->stream) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

int kj_gpu_cu_graph_sync(void *g)
{
	struct kj_gpu_cu_graph *x = g;
	return cuStreamSynchronize(x->stream) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

struct kj_amortize_work kj_gpu_cu_graph_work(struct kj_gpu_cu_graph *g, int calls)
{
	struct kj_amortize_work w = {g, kj_gpu_cu_graph_enqueue, kj_gpu_cu_graph_sync, calls};
	return w;
}

int kj_gpu_cu_spin_load(struct kj_gpu_cu_spin *sp, struct kj_gpu_cu_fail *f)
{
	CUcontext cur = NULL;
	CUresult e;
	if ((e = cuCtxGetCurrent(&cur)) || !cur)
		return set_fail(f, e ? e : CUDA_ERROR_INVALID_CONTEXT, "cuCtxGetCurrent");
	if (sp->fn && sp->ctx == cur)
		return 0;
	sp->fn = NULL;
	if ((e = cuModuleLoadData(&sp->mod, kj_gpu_spin_ptx())))
		return set_fail(f, e, "cuModuleLoadData (the idle spacer's PTX)");
	if ((e = cuModuleGetFunction(&sp->fn, sp->mod, kj_gpu_spin_entry()))) {
		cuModuleUnload(sp->mod);
		sp->fn = NULL;
		return set_fail(f, e, "cuModuleGetFunction (the idle spacer)");
	}
	sp->ctx = cur;
	return 0;
}

CUresult kj_gpu_cu_spin_launch(const struct kj_gpu_cu_spin *sp, CUstream s, unsigned long long ns)
{
	void *args[] = {&ns};
	return cuLaunchKernel(sp->fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}
