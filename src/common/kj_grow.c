#include "kj_grow.h"

#include <stdlib.h>

void *kj_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap && v)
		return v;
	size_t c = *cap ? *cap * 2 : first;
	void *nv = realloc(v, c * elem);
	if (nv)
		*cap = c;
	return nv;
}
