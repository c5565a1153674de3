/* Kernels that set the condition of a CUDA graph conditional node (cudaGraphSetConditional): they
 * take the node's handle as a parameter word, and the handle means something only inside the
 * graph that holds the node. Launched alone, or in a chain rebuilt without that node, such a kernel
 * writes through a stale handle (CUDA_ERROR_ILLEGAL_ADDRESS on an H200). The run records every
 * handle the program made (graph_conditional_handle), so replay can tell them apart before it
 * launches them. */
#ifndef KJ_COND_SETTER_H
#define KJ_COND_SETTER_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** Handles smaller than this are not matched: a size or a flag would look like them. */
#define KJ_COND_HANDLE_MIN 0x10000ULL

/** @brief The index of the 8-byte word of params (len bytes) that holds a conditional handle the
 *  process pid made (any process when pid < 0), or -1 when none does or the run recorded none.
 *  The handles are read once per database handle. */
int kj_cond_setter_word(sqlite3 *db, int64_t pid, const unsigned char *params, size_t len);

#endif
