/* Per-handle function facts for the launch callbacks: a shared map behind a per-thread
 * direct-mapped cache, with a generation that module unloads bump. */
#include "inject_fncache.h"

#include <pthread.h>
#include <stdlib.h>

#include "kj_map.h"
#include "inject_cost_self.h"
#include "inject_hot.h"
#include "inject_thread.h"

static uint32_t fn_gen;
static pthread_mutex_t fn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kj_map *fns; /* handle -> struct fninfo * */

#define TL_CACHE 256
struct fn_slot {
	uintptr_t handle;
	struct fninfo *fi;
};
static __thread struct fn_slot *tl_fn; /* TL_CACHE slots, on the heap (inject_thread.h) */

void kj_fncache_invalidate(void)
{
	__atomic_add_fetch(&fn_gen, 1, __ATOMIC_RELEASE);
}

static struct fninfo *lookup_shared(uintptr_t handle, kj_fn_query query, uint32_t gen, uint64_t t)
{
	struct fninfo *fi = NULL;
	uint64_t v;
	pthread_mutex_lock(&fn_lock);
	if (!fns && !(fns = kj_map_new()))
		goto out;
	if (kj_map_get(fns, handle, &v) && ((struct fninfo *)(uintptr_t)v)->gen == gen) {
		fi = (struct fninfo *)(uintptr_t)v;
		kj_self_add(KJ_SELF_FN_SHARED, t);
		goto out;
	}
	/* new, or asked again after a module unload: the old facts stay allocated, as other
	 * threads' caches may still point at them */
	fi = query(handle);
	if (fi) {
		fi->gen = gen;
		if (kj_map_put(fns, handle, (uint64_t)(uintptr_t)fi))
			fi = NULL;
	}
	kj_self_add(KJ_SELF_FN_QUERY, t);
out:
	pthread_mutex_unlock(&fn_lock);
	return fi;
}

KJ_HOT struct fninfo *kj_fncache_lookup(uintptr_t handle, kj_fn_query query)
{
	uint64_t t = kj_self_tick();
	uint32_t gen = __atomic_load_n(&fn_gen, __ATOMIC_ACQUIRE);
	struct fn_slot *cache = kj_thread_array((void **)&tl_fn, TL_CACHE * sizeof(*cache)), *slot = NULL;
	if (cache) {
		slot = &cache[(handle >> 4) & (TL_CACHE - 1)];
		if (slot->handle == handle && slot->fi && slot->fi->gen == gen) {
			kj_self_add(KJ_SELF_FN_TL, t);
			return slot->fi;
		}
	}
	struct fninfo *fi = lookup_shared(handle, query, gen, t);
	if (fi && slot) {
		slot->handle = handle;
		slot->fi = fi;
	}
	return fi;
}
