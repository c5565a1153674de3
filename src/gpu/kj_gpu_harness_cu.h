/* The GPU harness for a worker on the CUDA driver API (the replay worker, which loads the traced
 * cubins with cuModuleLoad and keeps no runtime context of its own): the twin of
 * kj_gpu_harness.h's graph capture and graph work, in CUstream/CUgraphExec terms. Kept apart so
 * that a driver-API program links no CUDA runtime (library kj_gpu_cu). */
#ifndef KJ_GPU_HARNESS_CU_H
#define KJ_GPU_HARNESS_CU_H

#include <cuda.h>

#include "kj_energy.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Where a harness call failed: the driver's error (CUDA_SUCCESS where the caller's own callback
 *  failed) and what the harness was doing. */
struct kj_gpu_cu_fail {
	CUresult err;
	const char *what;
};

/** One call of the work, the i-th of the graph, enqueued on stream s (captured: no allocation,
 *  no synchronisation). Returns 0 or a negative code. */
typedef int (*kj_gpu_cu_step_fn)(void *ctx, int i, CUstream s);

/**
 * @brief Capture step(ctx, 0..n-1, s) on s (thread-local capture mode) into a graph and
 *        instantiate it into *exec; the graph itself is freed. n >= 1.
 * @return 0 (*exec the caller's, for cuGraphExecDestroy); the step's own code where a step failed
 *         (f->err CUDA_SUCCESS); KJ_EGPU where the driver refused (f says which call). *exec is
 *         NULL on any failure and the stream has left capture mode.
 */
int kj_gpu_cu_graph_capture(CUstream s, int n, kj_gpu_cu_step_fn step, void *ctx, CUgraphExec *exec,
			    struct kj_gpu_cu_fail *f);

/** A captured graph and its stream: the ctx of kj_gpu_cu_graph_work(). */
struct kj_gpu_cu_graph {
	CUgraphExec exec;
	CUstream stream;
};

/** @brief cuGraphLaunch of g->exec on g->stream (a kj_amortize_work enqueue). 0 or KJ_EGPU. */
int kj_gpu_cu_graph_enqueue(void *g);
/** @brief cuStreamSynchronize of g->stream (a kj_amortize_work sync). 0 or KJ_EGPU. */
int kj_gpu_cu_graph_sync(void *g);
/** @brief The kj_amortize_measure work of graph g, each launch being `calls` calls; g stays the
 *  caller's and must outlive the work. */
struct kj_amortize_work kj_gpu_cu_graph_work(struct kj_gpu_cu_graph *g, int calls);

/** The idle spacer (kj_gpu_spin_ptx.h) loaded into one context. */
struct kj_gpu_cu_spin {
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
};

/** @brief Load the spacer into the current context (once: a second call in the same context
 *  keeps what the first loaded). 0, or KJ_EGPU with f saying which call the driver refused. */
int kj_gpu_cu_spin_load(struct kj_gpu_cu_spin *sp, struct kj_gpu_cu_fail *f);
/** @brief Enqueue one spacer of ns nanoseconds on s (one block of one thread; may be captured). */
CUresult kj_gpu_cu_spin_launch(const struct kj_gpu_cu_spin *sp, CUstream s, unsigned long long ns);

#ifdef __cplusplus
}
#endif
#endif
