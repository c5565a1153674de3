/* The injection library's facts about each launched function, cached per handle (querying them on
 * every launch tripled wall time) and read again after a module unload (inject_fncache.c). */
#ifndef KJ_INJECT_FNCACHE_H
#define KJ_INJECT_FNCACHE_H

#include <stdint.h>

struct fninfo {
	uintptr_t handle;
	uint32_t kind;     /* 1 CUfunction, 2 CUkernel, 0 unknown */
	uint32_t name_id;
	uint64_t name_hash;
	uint64_t sig_hash; /* name, parameter layout, registers and module image: what tells two
			      functions of one name apart */
	uint32_t module_id; /* CUPTI's id of the module it came from; 0 unknown */
	uint32_t nparams, total;
	uint32_t *layout;  /* nparams pairs (offset, size) */
	uint32_t gen;      /* the cache's generation when queried (set by the cache) */
};

/* Reads one handle's facts from the driver: a new allocation, or NULL. */
typedef struct fninfo *(*kj_fn_query)(uintptr_t handle);

/** The facts of handle: from this thread's cache, else the shared table, else query (once per
 *  handle and generation). Entries are never freed: other threads' caches may point at them. */
struct fninfo *kj_fncache_lookup(uintptr_t handle, kj_fn_query query);

/** A module was unloaded: the driver may give its functions' handles to functions loaded later,
 *  so every handle's facts are read again at its next lookup. Safe inside a CUPTI callback. */
void kj_fncache_invalidate(void);

#endif
