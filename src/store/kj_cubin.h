/* Reading the function names a module image defines (cubin ELF, or the ELF entries inside a
 * fatbin), so replay can find which stored module holds a kernel. */
#ifndef KJ_CUBIN_H
#define KJ_CUBIN_H

#include <stddef.h>

/**
 * @brief Call fn(name, ud) for every function symbol of a module image.
 * @return number of functions found (>= 0), or KJ_EINVAL when the image is not an ELF or fatbin
 *         this reader understands (compressed fatbin entries are skipped and not counted).
 */
int kj_cubin_functions(const void *image, size_t bytes, void (*fn)(const char *name, void *ud),
		       void *ud);

/** @brief "cubin", "fatbin", "ptx" or "unknown" by the image's magic. */
const char *kj_cubin_format(const void *image, size_t bytes);

#endif
