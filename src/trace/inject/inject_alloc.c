/* Live device allocations seen by the allocation callbacks: a sorted array searched on every
 * launch to tell pointer words from sizes and scalars in parameter blocks. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

struct range {
	uint64_t base, end;
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct range *ranges;
static size_t n, cap;

/* index of the first range with base > addr */
static size_t upper(uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ranges[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void kj_alloc_add(uint64_t base, uint64_t bytes)
{
	if (!bytes)
		return;
	pthread_rwlock_wrlock(&lock);
	if (n == cap) {
		size_t ncap = cap ? cap * 2 : 256;
		struct range *r = realloc(ranges, ncap * sizeof(*r));
		if (!r)
			goto out;
		ranges = r;
		cap = ncap;
	}
	size_t i = upper(base);
	if (i > 0 && ranges[i - 1].base == base) {
		ranges[i - 1].end = base + bytes;
		goto out;
	}
	memmove(ranges + i + 1, ranges + i, (n - i) * sizeof(*ranges));
	ranges[i].base = base;
	ranges[i].end = base + bytes;
	n++;
out:
	pthread_rwlock_unlock(&lock);
}

void kj_alloc_remove(uint64_t base)
{
	pthread_rwlock_wrlock(&lock);
	size_t i = upper(base);
	if (i > 0 && ranges[i - 1].base == base) {
		memmove(ranges + i - 1, ranges + i, (n - i) * sizeof(*ranges));
		n--;
	}
	pthread_rwlock_unlock(&lock);
}

int kj_alloc_contains(uint64_t addr)
{
	int in = 0;
	pthread_rwlock_rdlock(&lock);
	size_t i = upper(addr);
	if (i > 0 && addr < ranges[i - 1].end)
		in = 1;
	pthread_rwlock_unlock(&lock);
	return in;
}
