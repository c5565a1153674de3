/* Files written whole or not at all: a temporary file beside the target, renamed over it. */
#ifndef KJ_ATOMIC_H
#define KJ_ATOMIC_H

#include <stdio.h>

/**
 * @brief Write path whole or not at all: write(f, ctx) fills a temporary file beside it (mode
 *        0644), renamed over path when write returns 0 and every byte reached the disk
 *        (fsync).
 * @return 0 or the error (write's, or KJ_EIO/KJ_ENOMEM with a message naming path); no
 *         temporary file is left behind.
 */
int kj_write_atomic(const char *path, int (*write)(FILE *f, void *ctx), void *ctx);

#endif
