/* Growing arrays: the doubling that every append-only vector in kjoule needs, written once. */
#ifndef KJ_GROW_H
#define KJ_GROW_H

#include <stddef.h>

/**
 * @brief Room for one more element in v (cap elements allocated, n used, each elem bytes): the
 *        capacity doubles, starting at first. *cap is updated only on success.
 * @return the array to use from now on (v itself when there was room), or NULL when out of memory
 *         (v is then still valid and unchanged).
 */
void *kj_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first);

#endif
