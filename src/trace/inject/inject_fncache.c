/* Per-handle function facts for the launch callbacks: a shared open-addressing table behind a
 * per-thread direct-mapped cache, with a generation that module unloads bump. */
#include "inject_fncache.h"

#include <pthread.h>
#include <stdlib.h>

static uint32_t fn_gen;
static pthread_mutex_t fn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fninfo **fns;
static size_t fn_cap, fn_n;

#define TL_CACHE 256
static __thread struct {
	uintptr_t handle;
	struct fninfo *fi;
} tl_fn[TL_CACHE];

void kj_fncache_invalidate(void)
{
	__atomic_add_fetch(&fn_gen, 1, __ATOMIC_RELEASE);
}

static struct fninfo *query_now(uintptr_t handle, kj_fn_query query, uint32_t gen)
{
	struct fninfo *fi = query(handle);
	if (fi)
		fi->gen = gen;
	return fi;
}

static struct fninfo *lookup_shared(uintptr_t handle, kj_fn_query query, uint32_t gen)
{
	struct fninfo *fi = NULL;
	size_t i;
	pthread_mutex_lock(&fn_lock);
	if ((fn_n + 1) * 2 > fn_cap) {
		size_t ncap = fn_cap ? fn_cap * 2 : 4096;
		struct fninfo **n = calloc(ncap, sizeof(*n));
		if (!n)
			goto out;
		for (size_t j = 0; j < fn_cap; j++)
			if (fns[j]) {
				size_t k = (fns[j]->handle >> 4) & (ncap - 1);
				while (n[k])
					k = (k + 1) & (ncap - 1);
				n[k] = fns[j];
			}
		free(fns);
		fns = n;
		fn_cap = ncap;
	}
	for (i = (handle >> 4) & (fn_cap - 1); fns[i]; i = (i + 1) & (fn_cap - 1))
		if (fns[i]->handle == handle) {
			fi = fns[i];
			if (fi->gen != gen) { /* the old facts stay allocated: other threads may hold them */
				struct fninfo *nf = query_now(handle, query, gen);
				if (nf)
					fns[i] = fi = nf;
			}
			goto out;
		}
	fi = query_now(handle, query, gen);
	if (fi) {
		fns[i] = fi;
		fn_n++;
	}
out:
	pthread_mutex_unlock(&fn_lock);
	return fi;
}

struct fninfo *kj_fncache_lookup(uintptr_t handle, kj_fn_query query)
{
	uint32_t gen = __atomic_load_n(&fn_gen, __ATOMIC_ACQUIRE);
	size_t slot = (handle >> 4) & (TL_CACHE - 1);
	if (tl_fn[slot].handle == handle && tl_fn[slot].fi && tl_fn[slot].fi->gen == gen)
		return tl_fn[slot].fi;
	struct fninfo *fi = lookup_shared(handle, query, gen);
	if (fi) {
		tl_fn[slot].handle = handle;
		tl_fn[slot].fi = fi;
	}
	return fi;
}
