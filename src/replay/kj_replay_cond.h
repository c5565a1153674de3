/* Kernels that set the condition of a CUDA graph conditional node (cudaGraphSetConditional): they
 * take the node's handle as a parameter, and the handle means something only inside the graph
 * that holds the node. Launched alone, or in a chain rebuilt without that node, such a kernel
 * writes through a stale handle (CUDA_ERROR_ILLEGAL_ADDRESS on an H200). The run records every
 * handle the program made and the graph it was made for (graph_conditional_handle); handles are
 * small numbers (1, 2, ... on CUDA 13.0), so a kernel counts as a setter only when it ran in an
 * exec of that graph and one of its 8-byte parameters holds the handle. */
#ifndef KJ_REPLAY_COND_H
#define KJ_REPLAY_COND_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_replay.h"

/* What replay says of a setter it does not launch, KJ_COND_SETTER_WHY, is analyze's
 * (kj_kernel_waits.h): compare finds its rows by it. */

struct kj_cond_handles;

/** @brief The run's conditional handles, each with the execs instantiated from its graph, read
 *  once; NULL when the run recorded none (or predates the table): then nothing is a setter. */
struct kj_cond_handles *kj_cond_handles_load(sqlite3 *db);
void kj_cond_handles_free(struct kj_cond_handles *h);

/** @brief The index (layout order) of the parameter of a launch of unique kernel unique_id
 *  (params, len bytes, laid out as layout[0..n)) that holds a handle of h made for a graph that
 *  kernel ran in, or -1. pid < 0: any process. h NULL: -1. */
int kj_cond_setter_param(const struct kj_cond_handles *h, int64_t pid, int64_t unique_id,
			 const struct kj_replay_param *layout, size_t n, const unsigned char *params,
			 size_t len);

#endif
