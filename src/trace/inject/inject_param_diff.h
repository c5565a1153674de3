/* The words of a launch's parameter block that differ from its launch group's first block
 * (inject_param_diff.c). Runs on the program's thread at every launch. */
#ifndef KJ_INJECT_PARAM_DIFF_H
#define KJ_INJECT_PARAM_DIFF_H

#include <stdint.h>

#include "kj_spool.h"

/* Blocks this small are sent whole: comparing them costs about what their bytes do. */
#define KJ_PARAM_DIFF_MIN_BYTES 128

/** The 8-byte words of blob that differ from ref (both len bytes; word i covers bytes 8i..8i+7, a
 *  last partial word zero-extended), in word order, into diffs (room for cap). Blocks are compared
 *  a 64-byte stretch at a time, and only a stretch that differs is compared word by word, so a
 *  block that mostly repeats its group's costs little more than reading it. Returns the count, or
 *  UINT32_MAX as soon as more than cap words differ (the caller then sends the block whole). */
uint32_t kj_param_words_changed(const unsigned char *blob, const unsigned char *ref, uint32_t len,
				struct kj_word_diff *diffs, uint32_t cap);

#endif
