/* Writes laid over one memory in order: which of them leave any byte of their own in the end.
 * A replay overlays a run's saved buffers (kjoule run --snapshot) in order, the kernel's own
 * launch last; a saved buffer every byte of which a later one overwrites changes nothing, and
 * copying it (decompressing it first) only costs time. */
#ifndef KJ_OVERLAY_H
#define KJ_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

/**
 * @brief For n writes applied in index order, write i covering [addr[i], addr[i] + bytes[i]):
 *        keep[i] = 1 when some byte of it is written by no later write (it shows in the final
 *        memory), else 0. Applying only the writes kept, in the same order, leaves the same memory.
 *        Writes of 0 bytes are never kept. O(n log n).
 * @return the number of writes kept, or (size_t)-1 when memory ran out (keep then all 1).
 */
size_t kj_overlay_visible(const uint64_t *addr, const size_t *bytes, size_t n, unsigned char *keep);

#endif
