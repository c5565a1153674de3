/* The GPU harness of the workers that use the CUDA runtime (sweep, pipeline): n calls captured
 * into one CUDA graph, launches timed between two events, a graph handed to kj_amortize_measure as
 * its work, and the L2 flush buffer. The driver-API twin (the replay worker's) is
 * kj_gpu_harness_cu.h. Nothing here prints; each failure says which CUDA call failed and why
 * through a struct kj_gpu_fail. docs/architecture.md places the folder. */
#ifndef KJ_GPU_HARNESS_H
#define KJ_GPU_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "kj_energy.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Where a harness call failed: the CUDA error (cudaSuccess where the caller's own callback
 *  failed) and what the harness was doing ("begin capture", "graph launch", ...). */
struct kj_gpu_fail {
	cudaError_t err;
	const char *what;
};

/** One call of the work, the i-th of the graph, enqueued on stream s with no allocation and no
 *  synchronisation (it is captured). Returns 0 or a negative code. */
typedef int (*kj_gpu_step_fn)(void *ctx, int i, cudaStream_t s);

/**
 * @brief Capture step(ctx, 0..n-1, s) on stream s (thread-local capture mode) into a CUDA graph
 *        and instantiate it into *exec; the graph itself is freed. n >= 1.
 * @return 0 (*exec the caller's, for cudaGraphExecDestroy); the step's own code where a step
 *         failed (f->err cudaSuccess); KJ_EGPU where CUDA refused (f says which call). *exec is
 *         NULL on any failure and the stream has left capture mode.
 */
int kj_gpu_graph_capture(cudaStream_t s, int n, kj_gpu_step_fn step, void *ctx, cudaGraphExec_t *exec,
			 struct kj_gpu_fail *f);

/** A captured graph and the stream it is launched on: the ctx of kj_gpu_graph_work(). */
struct kj_gpu_graph {
	cudaGraphExec_t exec;
	cudaStream_t stream;
};

/** @brief Launch g->exec on g->stream (a kj_amortize_work enqueue). 0 or KJ_EGPU. */
int kj_gpu_graph_enqueue(void *g);
/** @brief Wait for g->stream (a kj_amortize_work sync). 0 or KJ_EGPU. */
int kj_gpu_graph_sync(void *g);
/** @brief The kj_amortize_measure work of graph g, each launch being `calls` calls: g stays the
 *  caller's and must outlive the work. */
struct kj_amortize_work kj_gpu_graph_work(struct kj_gpu_graph *g, int calls);

/**
 * @brief n enqueues of w (n >= 1) between two events recorded on stream s (ev: two created
 *        events), then the stream synchronised: *ms the events' elapsed time (all n).
 * @return 0, the enqueue's own code (f->err the CUDA error left behind, if any), or KJ_EGPU
 *         (f says which call). The stream is synchronised on every path that enqueued work.
 */
int kj_gpu_time_ms(const struct kj_amortize_work *w, cudaStream_t s, cudaEvent_t ev[2], int64_t n, float *ms,
		   struct kj_gpu_fail *f);

/**
 * @brief The L2 flush buffer of the current device: kj_l2_flush_bytes() of its L2, allocated on
 *        the first call and kept for the process's life (a memset of it evicts L2).
 * @return 0 with *buf and *bytes set, or KJ_ENOMEM (f->err the CUDA error) with *bytes the size
 *         that could not be had; the next call tries again.
 */
int kj_gpu_l2_flush(void **buf, size_t *bytes, struct kj_gpu_fail *f);

#ifdef __cplusplus
}
#endif
#endif
