/* Internals of kjoule-nccl-worker, the GPU side of `kjoule sweep` for NCCL collectives: one
 * process a GPU, every rank answering the same requests (protocol: src/sweep/kj_sweep_op.h). */
#ifndef KJ_NCCL_WORKER_H
#define KJ_NCCL_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "kj_gpu.h"

#define NW_MAX_RANKS 16

/* One rank. nvml[] (rank 0 only): NVML's index of every GPU of the communicator, -1 unknown. */
struct nw_ctx {
	int rank, nranks, device;
	ncclComm_t comm;
	cudaStream_t stream;
	int64_t *d_agree;          /* 2 int64 of device memory for agreeing on counts and times */
	struct kj_gpu_backend nvml; /* rank 0: opened when every GPU has an NVML index */
	int nvml_ok;
	int nvml_index[NW_MAX_RANKS];
	char nvml_why[200];
	int warmup, active;        /* KJ_SWEEP_WARMUP, KJ_SWEEP_ACTIVE */
	double energy_s;           /* the energy window, KJ_NCCL_ENERGY_S (default 2) */
};

/* One request's result (rank 0's answer). uj < 0: not measured, why in why. */
struct nw_result {
	double us, uj, uj_unc;
	double err;                /* relative error of the check; < 0 none */
	int64_t calls;             /* calls in the energy window */
	char why[200];
};

/** Measure op (a collective's name) at precision p (enum kj_precision) with bytes as nccl-tests
 *  counts them; every rank must call it with the same arguments. Time: median over `active`
 *  timed batches of back-to-back calls, per call, the mean over the ranks; energy (energy != 0):
 *  rank 0 reads the NVML energy counter of every GPU of the communicator around a window of at
 *  least energy_s seconds of calls, summed, per call. check != 0: the result is also compared
 *  with the expected values of small-integer data (r->err). Returns 0, 1 (out of memory on some
 *  rank: every rank returns 1) or < 0 with msg set (every rank returns the same). */
int nw_measure(struct nw_ctx *c, const char *op, int p, int64_t bytes, int energy, int check,
	       struct nw_result *r, char *msg, size_t msglen);

/** The max over the ranks of x (an NCCL all-reduce on the worker's stream); -1 on failure. */
int nw_agree_max(struct nw_ctx *c, int64_t *x);

#endif
