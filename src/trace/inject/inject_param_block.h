/* A launch's parameter block, copied out of its arguments by the function's layout
 * (inject_param_block.c). Runs on the program's thread at every launch. */
#ifndef KJ_INJECT_PARAM_BLOCK_H
#define KJ_INJECT_PARAM_BLOCK_H

#include <stdint.h>

/** Copies a launch's parameter block of total bytes into blob, as the kernel receives it: from
 *  params (one pointer per parameter of layout, nparams pairs (offset, size) in offset order; a
 *  NULL pointer's parameter reads as zeros) or, without params, from extra's
 *  CU_LAUNCH_PARAM_BUFFER_POINTER when its CU_LAUNCH_PARAM_BUFFER_SIZE holds the block. Bytes no
 *  parameter covers (alignment padding, the tail) are zero, so equal arguments give equal
 *  blocks; blob need not be cleared first. 0, or -1 when neither gives the block. */
int kj_param_block_gather(const uint32_t *layout, uint32_t nparams, uint32_t total, void **params,
			  void **extra, unsigned char *blob);

#endif
