/* Finding the real NCCL functions behind libkjoule_nccl.so's wrappers (nccl_shim.h). It must never
 * break a program: the next definition in the global scope first (a program or library linked to
 * libnccl), else the libnccl object already loaded (PyTorch's case: libtorch_cuda.so dlopen'ed with
 * its libnccl RTLD_LOCAL, out of RTLD_NEXT's reach), reopened RTLD_NOLOAD, never loaded anew. */
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

/* The first loaded object whose path holds "libnccl" and is not this library. */
struct nccl_obj {
	char path[4096];
};

static int find_libnccl(struct dl_phdr_info *info, size_t size, void *ud)
{
	struct nccl_obj *o = ud;
	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libnccl") || strstr(info->dlpi_name, "libkjoule_nccl"))
		return 0;
	snprintf(o->path, sizeof(o->path), "%s", info->dlpi_name);
	return 1;
}

/* fn from the libnccl object already loaded, or NULL. */
static void *from_loaded_libnccl(const char *name)
{
	struct nccl_obj o = {""};
	void *h, *p;
	if (!dl_iterate_phdr(find_libnccl, &o) || !o.path[0])
		return NULL;
	h = dlopen(o.path, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)
		return NULL;
	p = dlsym(h, name);
	dlclose(h); /* RTLD_NOLOAD took a reference: give it back; the object stays loaded */
	return p;
}

void *kj_nccl_real(enum kj_nccl_fn fn, int complain)
{
	void *p = atomic_load_explicit(&found[fn], memory_order_acquire);
	if (p)
		return p;
	/* two threads may both look: they find the same address */
	p = dlsym(RTLD_NEXT, fn_names[fn]);
	if (!p)
		p = from_loaded_libnccl(fn_names[fn]);
	if (p) {
		atomic_store_explicit(&found[fn], p, memory_order_release);
		return p;
	}
	if (complain && !atomic_exchange(&complained[fn], 1))
		fprintf(stderr, "kjoule: %s: the real NCCL function was not found (no libnccl loaded in this"
			" process); returning ncclInternalError\n", fn_names[fn]);
	return NULL;
}
