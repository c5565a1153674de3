#define _GNU_SOURCE
/* Launches: each function's facts (name, parameter layout), launch groups (function + geometry)
 * and each launch's parameter block. Runs on the program's own threads: a few hash lookups, the
 * block's copy and a buffered append, nothing more (the ingest compares the block with its
 * group's first launch's). */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"
#include "kj_map.h"
#include "inject_fncache.h"
#include "inject_thread.h"
#include "inject_cost_self.h"
#include "inject_param_block.h"

/* ---- per-handle function facts (inject_fncache.c caches them) ---- */
static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static struct fninfo *query_fn(uintptr_t handle)
{
	struct fninfo *fi = calloc(1, sizeof(*fi));
	const char *name = NULL;
	size_t off, sz;
	uint32_t cap = 0;
	if (!fi)
		return NULL;
	fi->handle = handle;
	/* Runtime launches under CUDA 13 usually pass a CUkernel where a CUfunction is expected:
	 * the CUfunction queries refuse it (invalid handle) and the CUkernel ones answer. */
	if (cuFuncGetParamInfo((CUfunction)handle, 0, &off, &sz) != CUDA_ERROR_INVALID_HANDLE &&
	    cuFuncGetName(&name, (CUfunction)handle) == CUDA_SUCCESS)
		fi->kind = 1;
	else if (cuKernelGetName(&name, (CUkernel)handle) == CUDA_SUCCESS)
		fi->kind = 2;
	fi->name_id = kj_spool_string(name ? name : "?");
	fi->name_hash = kj_hash_str(name);
	for (uint32_t i = 0; fi->kind; i++) {
		CUresult r = fi->kind == 1 ? cuFuncGetParamInfo((CUfunction)handle, i, &off, &sz)
					   : cuKernelGetParamInfo((CUkernel)handle, i, &off, &sz);
		if (r != CUDA_SUCCESS)
			break;
		if (fi->nparams == cap) {
			cap = cap ? cap * 2 : 8;
			uint32_t *l = realloc(fi->layout, cap * 2 * sizeof(uint32_t));
			if (!l)
				break;
			fi->layout = l;
		}
		fi->layout[2 * fi->nparams] = (uint32_t)off;
		fi->layout[2 * fi->nparams + 1] = (uint32_t)sz;
		fi->nparams++;
		if (off + sz > fi->total)
			fi->total = (uint32_t)(off + sz);
	}
	int regs = -1;
	uint64_t content = 0;
	if (fi->kind == 1) {
		cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)handle);
		kj_module_of_function((CUfunction)handle, &fi->module_id, &content);
	}
	fi->sig_hash = mix(fi->name_hash, ((uint64_t)fi->nparams << 32) | (uint32_t)regs);
	for (uint32_t i = 0; i < 2 * fi->nparams; i++)
		fi->sig_hash = mix(fi->sig_hash, fi->layout[i]);
	if (content) /* the same name from another image is another function (autotuning candidates) */
		fi->sig_hash = mix(fi->sig_hash, content);
	return fi;
}

static struct fninfo *lookup_fn(uintptr_t handle)
{
	return kj_fncache_lookup(handle, query_fn);
}

/* ---- launch groups: one function with one geometry, and its first parameter block ---- */
struct group {
	uint64_t id;
	uint32_t blob_len;
	unsigned char *ref; /* reference parameter block (NULL without capture) */
};

static pthread_mutex_t group_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kj_map *groups; /* group id -> struct group * */

#define TL_CACHE 256 /* per-thread direct-mapped cache in front of the shared map */
/* A slot holds what a launch needs of its group, so a hit reads this thread's slot alone. */
struct group_slot {
	uint64_t id;
	struct group *g;
	uint32_t ref_len; /* the group's reference block's length, 0 without one */
};
static __thread struct group_slot *tl_group; /* TL_CACHE slots, on the heap (inject_thread.h) */
static __thread struct group_slot tl_group_spare; /* the one slot when those cannot be had */

/* The slot of group id, the group created (with ref as its reference block) when new: *created
 * tells which. NULL when it cannot be made. */
KJ_HOT static const struct group_slot *group_get(uint64_t id, const unsigned char *ref,
						 uint32_t len, int *created)
{
	struct group_slot *cache = kj_thread_array((void **)&tl_group, TL_CACHE * sizeof(*cache));
	struct group_slot *slot = cache ? &cache[id & (TL_CACHE - 1)] : &tl_group_spare;
	struct group *g = NULL;
	uint64_t v;
	*created = 0;
	if (slot->g && slot->id == id)
		return slot;
	pthread_mutex_lock(&group_lock);
	if (!groups && !(groups = kj_map_new()))
		goto out;
	if (kj_map_get(groups, id, &v)) {
		g = (struct group *)(uintptr_t)v;
		goto out;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		goto out;
	g->id = id;
	if (ref && len) {
		g->ref = malloc(len);
		if (g->ref) {
			memcpy(g->ref, ref, len);
			g->blob_len = len;
		}
	}
	if (kj_map_put(groups, id, (uint64_t)(uintptr_t)g)) {
		free(g->ref);
		free(g);
		g = NULL;
		goto out;
	}
	*created = 1;
out:
	pthread_mutex_unlock(&group_lock);
	if (!g)
		return NULL;
	slot->id = id;
	slot->g = g;
	slot->ref_len = g->ref ? g->blob_len : 0;
	return slot;
}

/* ---- launches ---- */

static __thread uint32_t tl_corr;
static __thread uint32_t tl_tid;

KJ_HOT uint32_t kj_thread_id(void)
{
	if (!tl_tid)
		tl_tid = (uint32_t)gettid();
	return tl_tid;
}

static int gather_params(const struct fninfo *fi, const struct kj_launch *l, unsigned char *blob)
{
	return kj_param_block_gather(fi->layout, fi->nparams, fi->total, l->params, l->extra, blob);
}

KJ_HOT static uint64_t group_id(const struct fninfo *fi, const struct kj_launch *l)
{
	uint64_t h = fi->sig_hash;
	for (int i = 0; i < 3; i++) {
		h = mix(h, l->grid[i]);
		h = mix(h, l->block[i]);
		h = mix(h, l->cluster[i]);
	}
	h = mix(h, l->shmem);
	return l->cooperative ? mix(h, KJ_GROUP_COOPERATIVE) : h;
}

static void put_group(const struct fninfo *fi, const struct kj_launch *l, const struct group *g,
		      uint32_t correlation, CUcontext ctx, int64_t t)
{
	size_t head = sizeof(struct kj_rec_group) + fi->nparams * 2 * sizeof(uint32_t);
	struct kj_rec_group *r = calloc(1, head);
	uint32_t sid = 0;
	if (!r)
		return;
	r->h.type = KJ_REC_GROUP;
	r->group = g->id;
	r->launch_ns = t;
	r->correlation = correlation;
	r->name_id = fi->name_id;
	memcpy(r->grid, l->grid, sizeof(r->grid));
	memcpy(r->block, l->block, sizeof(r->block));
	memcpy(r->cluster, l->cluster, sizeof(r->cluster));
	r->shmem_dynamic = l->shmem;
	if (cuptiGetStreamIdEx(ctx, l->stream, (uint8_t)l->ptsz, &sid) == CUPTI_SUCCESS)
		r->stream = sid;
	r->handle_kind = fi->kind;
	r->module_id = fi->module_id;
	r->flags = l->cooperative ? KJ_GROUP_COOPERATIVE : 0;
	r->nparams = fi->nparams;
	r->blob_len = g->blob_len;
	memcpy(r + 1, fi->layout, fi->nparams * 2 * sizeof(uint32_t));
	kj_spool_write2(r, head, g->ref, g->blob_len);
	free(r);
}

/* --snapshot: a graph kernel node's parameter words, for the buffers saved before the graph's
 * first launch (inject_snapshot.c). Read from the node at instantiation, never in the launch path. */
void kj_graph_node_param_words(uintptr_t f, void **params, void **extra)
{
	struct fninfo *fi = lookup_fn(f);
	struct kj_launch l;
	unsigned char stackblob[4096], *blob;
	if (!fi || !fi->total)
		return;
	blob = fi->total <= sizeof(stackblob) ? stackblob : malloc(fi->total);
	if (!blob)
		return;
	memset(&l, 0, sizeof(l));
	l.f = f;
	l.params = params;
	l.extra = extra;
	l.graph_node = 1;
	if (gather_params(fi, &l, blob) == 0)
		kj_snapshot_graph_words(blob, fi->total);
	if (blob != stackblob)
		free(blob);
}

/* Every launch: a group record the first time its function and geometry are seen, then a launch
 * record with its whole parameter block. Which words differ from the group's first launch, and
 * the unique-kernel split (which words are sizes, which are pointers or junk), are decided later,
 * at ingest: comparing here cost the program's thread about 0.35 us a launch. */
KJ_HOT void kj_launch_record(uint32_t correlation, CUcontext ctx, const struct kj_launch *l)
{
	kj_spool_warm_tail(); /* its lines come in while the rest is found */
	uint64_t t = kj_self_add(KJ_SELF_PROBE, kj_self_tick());
	struct fninfo *fi = lookup_fn(l->f);
	unsigned char stackblob[4096];
	unsigned char *blob = NULL;
	struct kj_rec_launch rec;
	const struct group_slot *slot;
	int created;

	if (!fi)
		return;
	t = kj_self_add(KJ_SELF_LOOKUP, t);
	if (kj_cfg.params_k > 0 && fi->total && fi->total <= KJ_PARAM_MAX_BYTES) {
		blob = fi->total <= sizeof(stackblob) ? stackblob : malloc(fi->total);
		if (blob && gather_params(fi, l, blob) != 0) {
			if (blob != stackblob)
				free(blob);
			blob = NULL;
		}
	}
	t = kj_self_add(KJ_SELF_GATHER, t);
	memset(&rec, 0, sizeof(rec));
	rec.h.type = KJ_REC_LAUNCH;
	rec.launch_ns = kj_now_ns();
	rec.correlation = correlation;
	rec.tid = kj_thread_id();
	if (!l->graph_node)
		tl_corr = correlation;
	slot = group_get(group_id(fi, l), blob, blob ? fi->total : 0, &created);
	if (!slot)
		goto out;
	rec.group = slot->id;
	t = kj_self_add(KJ_SELF_GROUP, t);
	if (created) {
		put_group(fi, l, slot->g, correlation, ctx, rec.launch_ns);
		if (kj_cfg.snapshot_bytes > 0 && blob && !l->graph_node && !kj_cfg.snapshot_graphs_only)
			kj_snapshot_before(l->stream, correlation, blob, fi->total);
	}
	else if (blob && slot->ref_len == fi->total) {
		rec.block_len = fi->total;
	}
	kj_spool_write2(&rec, sizeof(rec), blob, rec.block_len);
	kj_self_add(KJ_SELF_WRITE, t);
out:
	if (blob && blob != stackblob)
		free(blob);
}

uint32_t kj_launch_correlation(void)
{
	return tl_corr;
}

KJ_HOT void kj_handle_launch(CUpti_CallbackId id, const CUpti_CallbackData *cb)
{
	struct kj_launch l;
	memset(&l, 0, sizeof(l));
	l.cluster[0] = l.cluster[1] = l.cluster[2] = 0;
	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
		const cuLaunchKernel_params *p = cb->functionParams;
		l.f = (uintptr_t)p->f;
		l.grid[0] = p->gridDimX, l.grid[1] = p->gridDimY, l.grid[2] = p->gridDimZ;
		l.block[0] = p->blockDimX, l.block[1] = p->blockDimY, l.block[2] = p->blockDimZ;
		l.shmem = p->sharedMemBytes;
		l.stream = p->hStream;
		l.params = p->kernelParams;
		l.extra = p->extra;
		l.ptsz = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
		const cuLaunchCooperativeKernel_params *p = cb->functionParams;
		l.f = (uintptr_t)p->f;
		l.grid[0] = p->gridDimX, l.grid[1] = p->gridDimY, l.grid[2] = p->gridDimZ;
		l.block[0] = p->blockDimX, l.block[1] = p->blockDimY, l.block[2] = p->blockDimZ;
		l.shmem = p->sharedMemBytes;
		l.stream = p->hStream;
		l.params = p->kernelParams;
		l.ptsz = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
		l.cooperative = 1; /* captured into a graph, CUPTI's kernel records will not say so */
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
		const cuLaunchKernelEx_params *p = cb->functionParams;
		const CUlaunchConfig *c = p->config;
		if (!c)
			return;
		l.f = (uintptr_t)p->f;
		l.grid[0] = c->gridDimX, l.grid[1] = c->gridDimY, l.grid[2] = c->gridDimZ;
		l.block[0] = c->blockDimX, l.block[1] = c->blockDimY, l.block[2] = c->blockDimZ;
		l.shmem = c->sharedMemBytes;
		l.stream = c->hStream;
		for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
			if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
				l.cluster[0] = c->attrs[i].value.clusterDim.x;
				l.cluster[1] = c->attrs[i].value.clusterDim.y;
				l.cluster[2] = c->attrs[i].value.clusterDim.z;
			} else if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
				l.cooperative = c->attrs[i].value.cooperative != 0;
			}
		l.params = p->kernelParams;
		l.extra = p->extra;
		l.ptsz = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
		break;
	}
	default:
		return;
	}
	kj_launch_record(cb->correlationId, cb->context, &l);
}
