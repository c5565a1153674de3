/* The parameter words of a launch that differ from its launch group's first launch. */
#ifndef KJ_INJECT_PARAM_DIFF_H
#define KJ_INJECT_PARAM_DIFF_H

#include <stdint.h>

#include "kj_spool.h"

#define KJ_PARAM_MAX_BYTES 32768 /* CUDA's limit on a kernel's parameter block */

/** The 8-byte words of blob that differ from ref (both len bytes, len <= KJ_PARAM_MAX_BYTES; a
 *  last partial word is zero-extended), in word order, into *diffs: stack (room for cap) when they
 *  fit, else a malloc'd array the caller frees (*diffs != stack). Whole words are compared as
 *  such, without a branch per word: the word-by-word loop this replaced (a copy of variable length
 *  and a branch per word) took 611 ns a launch of BLOOM-560M where this takes 355, on one host
 *  (bench/results/trace_handler_cost.json). Returns the count; on running out of
 *  memory, the first cap words that differ. */
uint32_t kj_param_diff(const unsigned char *blob, const unsigned char *ref, uint32_t len,
		       struct kj_word_diff *stack, uint32_t cap, struct kj_word_diff **diffs);

#endif
