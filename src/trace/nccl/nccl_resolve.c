/* Finding the real NCCL functions behind libkjoule_nccl.so's wrappers (nccl_shim.h). It must never
 * break a program: the next definition in the global scope first (a program or library linked to
 * libnccl), else the libnccl object already loaded (PyTorch's case: libtorch_cuda.so dlopen'ed with
 * its libnccl RTLD_LOCAL, out of RTLD_NEXT's reach), else any loaded object that defines it (NCCL
 * linked statically into a library that exports its functions), each reopened RTLD_NOLOAD, never
 * loaded anew. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "nccl_shim.h"

static const char *const fn_names[KJ_FN_COUNT] = {
	[KJ_FN_ALL_REDUCE] = "ncclAllReduce", [KJ_FN_ALL_GATHER] = "ncclAllGather",
	[KJ_FN_REDUCE_SCATTER] = "ncclReduceScatter", [KJ_FN_BROADCAST] = "ncclBroadcast",
	[KJ_FN_REDUCE] = "ncclReduce", [KJ_FN_SEND] = "ncclSend", [KJ_FN_RECV] = "ncclRecv",
	[KJ_FN_GROUP_START] = "ncclGroupStart", [KJ_FN_GROUP_END] = "ncclGroupEnd",
	[KJ_FN_COMM_COUNT] = "ncclCommCount",
};

static _Atomic(void *) found[KJ_FN_COUNT];
static atomic_int complained[KJ_FN_COUNT];

/* The search of the loaded objects for name: those whose path holds "libnccl" first, then any
 * other (NCCL linked statically into a library that exports its functions), never this library. */
struct nccl_search {
	const char *name, *self; /* self: this library's path */
	int any;                 /* 0: libnccl objects only; 1: every object */
	void *found;
};

static int search_object(struct dl_phdr_info *info, size_t size, void *ud)
{
	struct nccl_search *q = ud;
	void *h, *p;
	(void)size;
	if (!info->dlpi_name || !info->dlpi_name[0] || (q->self && !strcmp(info->dlpi_name, q->self)))
		return 0;
	if (!q->any && !strstr(info->dlpi_name, "libnccl"))
		return 0;
	h = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)
		return 0;
	p = dlsym(h, q->name);
	dlclose(h); /* RTLD_NOLOAD took a reference: give it back; the object stays loaded */
	if (!p)
		return 0;
	Dl_info where;
	if (q->self && dladdr(p, &where) && where.dli_fname && !strcmp(where.dli_fname, q->self))
		return 0; /* our own wrapper, reached through the object's scope */
	q->found = p;
	return 1;
}

/* name from the objects already loaded (never loading one), or NULL. */
static void *from_loaded_objects(const char *name)
{
	Dl_info me;
	struct nccl_search q = {name, NULL, 0, NULL};
	if (dladdr((void *)from_loaded_objects, &me) && me.dli_fname)
		q.self = me.dli_fname;
	dl_iterate_phdr(search_object, &q);
	if (!q.found) {
		q.any = 1;
		dl_iterate_phdr(search_object, &q);
	}
	return q.found;
}

void *kj_nccl_real(enum kj_nccl_fn fn, int complain)
{
	void *p = atomic_load_explicit(&found[fn], memory_order_acquire);
	if (p)
		return p;
	/* two threads may both look: they find the same address */
	p = dlsym(RTLD_NEXT, fn_names[fn]);
	if (!p)
		p = from_loaded_objects(fn_names[fn]);
	if (p) {
		atomic_store_explicit(&found[fn], p, memory_order_release);
		return p;
	}
	if (complain && !atomic_exchange(&complained[fn], 1))
		fprintf(stderr, "kjoule: %s: the real NCCL function was not found (no libnccl loaded in this"
			" process); returning ncclInternalError\n", fn_names[fn]);
	return NULL;
}
