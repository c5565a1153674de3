/* A rank's NCCL bytes and bus bandwidth from its recorded NCCL calls (kj_ranks_nccl.c; the
 * figures live in struct kj_rank, kj_ranks.h; docs/multi-gpu.md). Used by kj_ranks.c alone. */
#ifndef KJ_RANKS_NCCL_H
#define KJ_RANKS_NCCL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_ranks.h"

/** One NCCL kernel of a rank, in launch order. */
struct kj_nccl_kernel {
	int64_t launch_ns;   /* its launch time (its start where the launch is not recorded) */
	int64_t dur_ns;      /* end - start */
	int kept;            /* it belongs to a measured (kept) iteration */
};

/** Why a run has no NCCL calls of a rank, from meta nccl_calls (NULL: the run has some). */
const char *kj_nccl_calls_absent_why(sqlite3 *db);

/**
 * @brief r's NCCL figures (nccl_* of struct kj_rank) from its process's recorded calls: each call
 *        matched to the first of the kernels k[0..n) (sorted by launch) launched at or after it;
 *        bytes per iteration over the calls matched to kept kernels (n_kept iterations), bus bytes
 *        with nccl-tests' factors, bandwidth over the matched kept kernels' time. absent_why: the
 *        reason to give when the process has no call (kj_nccl_calls_absent_why).
 * @return 0, KJ_EDB or KJ_ENOMEM.
 */
int kj_rank_nccl_bytes(sqlite3 *db, struct kj_rank *r, const struct kj_nccl_kernel *k, size_t n,
		       const char *absent_why);

/** @brief Algorithm and bus bytes of one call as nccl-tests defines them: *alg = bytes (x nranks
 *  for all_gather and reduce_scatter, whose bytes are per rank), *bus = *alg x 2(n-1)/n for
 *  all_reduce, (n-1)/n for all_gather and reduce_scatter, 1 for broadcast, reduce, send, recv.
 *  @return 0, or -1 when the size is not known (bytes -1, or nranks needed and < 1) or op unknown. */
int kj_nccl_call_bytes(const char *op, int64_t bytes, int64_t nranks, double *alg, double *bus);

#endif
