/* Which ordered writes leave bytes of their own (kj_overlay.h): a sweep over the writes' ends in
 * address order, with the latest write covering each stretch on top of a max-heap of indices
 * (writes that ended are dropped from the top lazily). */
#include "kj_overlay.h"

#include <stdlib.h>

struct edge {
	uint64_t at;
	size_t write;
	int opens; /* 1 at a write's start, 0 at its end */
};

static int by_place(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->opens - y->opens; /* the edges at one place are all taken before the stretch after it */
}

static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;
	for (; i > 0 && h[(i - 1) / 2] < v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void heap_pop(size_t *h, size_t *n)
{
	size_t v = h[--(*n)], i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

size_t kj_overlay_visible(const uint64_t *addr, const size_t *bytes, size_t n, unsigned char *keep)
{
	struct edge *e = malloc((n ? 2 * n : 1) * sizeof(*e));
	size_t *heap = malloc((n ? n : 1) * sizeof(*heap));
	unsigned char *ended = calloc(n ? n : 1, 1);
	size_t ne = 0, nh = 0, kept = 0;
	if (!e || !heap || !ended) {
		for (size_t i = 0; i < n; i++)
			keep[i] = 1;
		free(e);
		free(heap);
		free(ended);
		return (size_t)-1;
	}
	for (size_t i = 0; i < n; i++) {
		keep[i] = 0;
		if (!bytes[i])
			continue;
		uint64_t end = addr[i] + bytes[i] < addr[i] ? UINT64_MAX : addr[i] + bytes[i];
		e[ne++] = (struct edge){addr[i], i, 1};
		e[ne++] = (struct edge){end, i, 0};
	}
	qsort(e, ne, sizeof(*e), by_place);
	for (size_t k = 0; k < ne;) {
		uint64_t at = e[k].at;
		for (; k < ne && e[k].at == at; k++) {
			if (e[k].opens)
				heap_push(heap, &nh, e[k].write);
			else
				ended[e[k].write] = 1;
		}
		while (nh && ended[heap[0]])
			heap_pop(heap, &nh);
		/* the stretch from here to the next edge shows the latest write still open */
		if (nh && k < ne && e[k].at > at && !keep[heap[0]]) {
			keep[heap[0]] = 1;
			kept++;
		}
	}
	free(e);
	free(heap);
	free(ended);
	return kept;
}
