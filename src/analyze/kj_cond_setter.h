/* Kernels that set the condition of a CUDA graph conditional node (cudaGraphSetConditional): they
 * take the node's handle as a parameter, and the handle means something only inside the graph
 * that holds the node. Launched alone, or in a chain rebuilt without that node, such a kernel
 * writes through a stale handle (CUDA_ERROR_ILLEGAL_ADDRESS on an H200). The run records every
 * handle the program made and the graph it was made for (graph_conditional_handle); handles are
 * small numbers (1, 2, ... on CUDA 13.0), so a kernel counts as a setter only when it ran in an
 * exec of that graph and one of its 8-byte parameters holds the handle. */
#ifndef KJ_COND_SETTER_H
#define KJ_COND_SETTER_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** @brief The index (layout order) of the parameter of a launch of unique kernel unique_id (layout
 *  text "off:size,...", params len bytes) that holds a conditional handle made for a graph that
 *  kernel ran in, or -1 when none does or the run recorded no handle. pid < 0: any process. */
int kj_cond_setter_param(sqlite3 *db, int64_t pid, int64_t unique_id, const char *layout,
			 const unsigned char *params, size_t len);

#endif
