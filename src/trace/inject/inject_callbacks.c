#define _GNU_SOURCE
/* Driver-API and resource callbacks: launch parameters and unique-kernel keys, allocation
 * ranges, module images, device facts, graph nodes. These run on the program's own threads,
 * so each does a few hash lookups and a buffered append, nothing more. */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"
#include "kj_map.h"
#include "inject_fncache.h"
#include "inject_cost_self.h"
#include "inject_param_diff.h"

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
static __thread struct group *tl_group[TL_CACHE];

/* The group of id, created (with ref as its reference block) when new: *created tells which. */
static struct group *group_get(uint64_t id, const unsigned char *ref, uint32_t len, int *created)
{
	struct group *g = tl_group[id & (TL_CACHE - 1)];
	uint64_t v;
	*created = 0;
	if (g && g->id == id)
		return g;
	g = NULL;
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
	if (g)
		tl_group[id & (TL_CACHE - 1)] = g;
	return g;
}

/* ---- launches ---- */

static __thread uint32_t tl_corr;
static __thread uint32_t tl_tid;

uint32_t kj_thread_id(void)
{
	if (!tl_tid)
		tl_tid = (uint32_t)gettid();
	return tl_tid;
}
static __thread uint64_t tl_node;
static __thread int tl_in_launch;

/* Copy the parameter block into blob (fi->total bytes). 0 ok, -1 unknown layout. */
static int gather_params(const struct fninfo *fi, const struct kj_launch *l, unsigned char *blob)
{
	if (l->params) {
		for (uint32_t i = 0; i < fi->nparams; i++)
			if (l->params[i])
				memcpy(blob + fi->layout[2 * i], l->params[i], fi->layout[2 * i + 1]);
		return 0;
	}
	if (l->extra) {
		void *buf = NULL;
		size_t size = 0;
		for (void **e = l->extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
			if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = e[1];
			else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = *(size_t *)e[1];
		}
		if (buf && size >= fi->total) {
			memcpy(blob, buf, fi->total);
			return 0;
		}
	}
	return -1;
}

static uint64_t group_id(const struct fninfo *fi, const struct kj_launch *l)
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
	memset(blob, 0, fi->total);
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
 * record with the parameter words that differ from the group's first launch. The unique-kernel
 * split (which words are sizes, which are pointers or junk) is decided later, at ingest. */
void kj_launch_record(uint32_t correlation, CUcontext ctx, const struct kj_launch *l)
{
	uint64_t t = kj_self_add(KJ_SELF_PROBE, kj_self_tick());
	struct fninfo *fi = lookup_fn(l->f);
	unsigned char stackblob[4096];
	unsigned char *blob = NULL;
	struct kj_word_diff stackdiff[64], *diffs = stackdiff;
	struct kj_rec_launch rec;
	struct group *g;
	int created;
	uint32_t ndiff = 0;

	if (!fi)
		return;
	t = kj_self_add(KJ_SELF_LOOKUP, t);
	if (kj_cfg.params_k > 0 && fi->total && fi->total <= KJ_PARAM_MAX_BYTES) {
		blob = fi->total <= sizeof(stackblob) ? stackblob : malloc(fi->total);
		if (blob) {
			memset(blob, 0, fi->total);
			if (gather_params(fi, l, blob) != 0) {
				if (blob != stackblob)
					free(blob);
				blob = NULL;
			}
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
	g = group_get(group_id(fi, l), blob, blob ? fi->total : 0, &created);
	if (!g)
		goto out;
	rec.group = g->id;
	t = kj_self_add(KJ_SELF_GROUP, t);
	if (created) {
		put_group(fi, l, g, correlation, ctx, rec.launch_ns);
		if (kj_cfg.snapshot_bytes > 0 && blob && !l->graph_node && !kj_cfg.snapshot_graphs_only)
			kj_snapshot_before(l->stream, correlation, blob, fi->total);
	}
	else if (blob && g->ref && g->blob_len == fi->total) {
		ndiff = kj_param_diff(blob, g->ref, fi->total, stackdiff,
				      sizeof(stackdiff) / sizeof(stackdiff[0]), &diffs);
	}
	rec.ndiff = ndiff;
	t = kj_self_add(KJ_SELF_DIFF, t);
	kj_spool_write2(&rec, sizeof(rec), diffs, ndiff * sizeof(*diffs));
	kj_self_add(KJ_SELF_WRITE, t);
out:
	if (diffs != stackdiff)
		free(diffs);
	if (blob && blob != stackblob)
		free(blob);
}

static void handle_launch(CUpti_CallbackId id, const CUpti_CallbackData *cb)
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

void kj_put_allocation(uint64_t ptr, uint64_t bytes, int op, uint32_t corr, int via)
{
	struct kj_rec_memory r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_MEMORY;
	r.h.size = sizeof(r);
	r.t_ns = kj_now_ns();
	r.address = ptr;
	r.bytes = bytes;
	r.correlation = corr;
	r.op = (uint8_t)op;
	r.via = (uint8_t)via;
	kj_spool_write(&r, sizeof(r));
}

static int succeeded(const CUpti_CallbackData *cb)
{
	return cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
}

/* VMM mappings (cuMemMap) are not allocations CUPTI reports: record them ourselves. The other
 * allocation kinds arrive as CUPTI MEMORY2 activity. */
static void handle_memory(CUpti_CallbackId id, const CUpti_CallbackData *cb)
{
	if (id == CUPTI_DRIVER_TRACE_CBID_cuMemMap && cb->callbackSite == CUPTI_API_EXIT && succeeded(cb)) {
		const cuMemMap_params *p = cb->functionParams;
		kj_put_allocation(p->ptr, p->size, 1, cb->correlationId, KJ_MEM_VIA_VMM);
	} else if (id == CUPTI_DRIVER_TRACE_CBID_cuMemUnmap && cb->callbackSite == CUPTI_API_ENTER) {
		const cuMemUnmap_params *p = cb->functionParams;
		kj_put_allocation(p->ptr, p->size, 2, cb->correlationId, KJ_MEM_VIA_VMM);
	}
}

/* Event records and waits order work across streams: --params-iteration sequences keep them. */
static void handle_event(CUpti_CallbackId id, const CUpti_CallbackData *cb)
{
	struct kj_rec_seqop r;
	CUstream stream = NULL;
	uint8_t ptsz = 0;
	uint32_t sid = 0;
	if (cb->callbackSite != CUPTI_API_EXIT || !succeeded(cb))
		return;
	memset(&r, 0, sizeof(r));
	switch (id) {
	/* the plain and WithFlags forms share their first two parameters (event, stream) */
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz:
		ptsz = 1;
		/* fall through */
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
	case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags: {
		const cuEventRecord_params *p = cb->functionParams;
		r.event = (uint64_t)(uintptr_t)p->hEvent;
		stream = p->hStream;
		r.op = 1;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz:
		ptsz = 1;
		/* fall through */
	case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent: {
		const cuStreamWaitEvent_params *p = cb->functionParams;
		r.event = (uint64_t)(uintptr_t)p->hEvent;
		stream = p->hStream;
		r.op = 2;
		break;
	}
	default:
		return;
	}
	r.h.type = KJ_REC_SEQOP;
	r.h.size = sizeof(r);
	r.t_ns = kj_now_ns();
	r.correlation = cb->correlationId;
	if (cuptiGetStreamIdEx(cb->context, stream, ptsz, &sid) == CUPTI_SUCCESS)
		r.stream = sid;
	r.tid = kj_thread_id();
	kj_spool_write(&r, sizeof(r));
}

/* Where a memset writes (CUPTI's memset activity has bytes and value, no address): replay can
 * then zero a kernel's semaphores where the program did. */
static void handle_memset(CUpti_CallbackId id, const CUpti_CallbackData *cb)
{
	struct kj_rec_memset_dst r;
	if (cb->callbackSite != CUPTI_API_ENTER)
		return;
	memset(&r, 0, sizeof(r));
	/* the sync, async, ptds and ptsz forms of one width share their first two parameters */
	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: {
		const cuMemsetD8_v2_params *p = cb->functionParams;
		r.address = p->dstDevice, r.value = p->uc, r.element_bytes = 1;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz: {
		const cuMemsetD16_v2_params *p = cb->functionParams;
		r.address = p->dstDevice, r.value = p->us, r.element_bytes = 2;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
		const cuMemsetD32_v2_params *p = cb->functionParams;
		r.address = p->dstDevice, r.value = p->ui, r.element_bytes = 4;
		break;
	}
	default:
		return;
	}
	r.h.type = KJ_REC_MEMSET_DST;
	r.h.size = sizeof(r);
	r.correlation = cb->correlationId;
	kj_spool_write(&r, sizeof(r));
}

static void put_device(CUcontext ctx)
{
	struct kj_rec_device d;
	uint32_t ordinal = 0;
	CUdevice dev;
	CUuuid uuid;
	int v = 0;
	if (cuptiGetDeviceId(ctx, &ordinal) != CUPTI_SUCCESS || cuDeviceGet(&dev, (int)ordinal) != CUDA_SUCCESS)
		return;
	memset(&d, 0, sizeof(d));
	d.h.type = KJ_REC_DEVICE;
	d.h.size = sizeof(d);
	d.ordinal = ordinal;
	cuDeviceGetName(d.name, sizeof(d.name) - 1, dev);
	if (cuDeviceGetUuid_v2(&uuid, dev) == CUDA_SUCCESS)
		memcpy(d.uuid, uuid.bytes, 16);
	cuDeviceGetPCIBusId(d.pci_bus_id, sizeof(d.pci_bus_id) - 1, dev);
#define ATTR(field, a) if (cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS) d.field = (uint32_t)v
	ATTR(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
	ATTR(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
	ATTR(sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	ATTR(l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
	ATTR(clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
	ATTR(mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
#undef ATTR
	{
		size_t mem = 0;
		if (cuDeviceTotalMem(&mem, dev) == CUDA_SUCCESS)
			d.memory_bytes = mem;
	}
	if (cuDriverGetVersion(&v) == CUDA_SUCCESS)
		d.driver_version = (uint32_t)v;
	kj_spool_write(&d, sizeof(d));
}

static void put_module(const CUpti_ModuleResourceData *m)
{
	struct kj_rec_module r;
	if (!m || !m->pCubin || !m->cubinSize)
		return;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_MODULE;
	r.t_ns = kj_now_ns();
	r.bytes = m->cubinSize;
	r.module_id = m->moduleId;
	kj_module_loaded(m->moduleId, m->pCubin, m->cubinSize);
	kj_spool_write2(&r, sizeof(r), m->pCubin, m->cubinSize);
}

static void put_graphnode(uint64_t node, uint64_t correlation, uint64_t original);

void kj_put_graphnode(uint64_t node_id, uint64_t correlation)
{
	put_graphnode(node_id, correlation, 0);
}

static void put_graphnode(uint64_t node, uint64_t correlation, uint64_t original)
{
	if (correlation)
		kj_graph_node_known(node);
	struct kj_rec_graphnode g;
	memset(&g, 0, sizeof(g));
	g.h.type = KJ_REC_GRAPHNODE;
	g.h.size = sizeof(g);
	g.node_id = node;
	g.correlation = correlation;
	g.original_node_id = original;
	kj_spool_write(&g, sizeof(g));
}

static void handle_resource(CUpti_CallbackId id, const CUpti_ResourceData *rd)
{
	switch (id) {
	case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
		put_device(rd->context);
		break;
	case CUPTI_CBID_RESOURCE_MODULE_LOADED:
		put_module(rd->resourceDescriptor);
		break;
	case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
		kj_fncache_invalidate();
		break;
	case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
		const CUpti_GraphData *g = rd->resourceDescriptor;
		uint64_t nid = 0;
		if (g && tl_in_launch && cuptiGetGraphNodeId(g->node, &nid) == CUPTI_SUCCESS)
			tl_node = nid;
		break;
	}
	case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
		const CUpti_GraphData *g = rd->resourceDescriptor;
		uint64_t nid = 0, orig = 0;
		CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
		if (g && cuptiGetGraphNodeId(g->node, &nid) == CUPTI_SUCCESS &&
		    cuptiGetGraphNodeId(g->originalNode, &orig) == CUPTI_SUCCESS)
			put_graphnode(nid, 0, orig);
		if (!nid || cuGraphNodeGetType(g->node, &type) != CUDA_SUCCESS)
			break;
		if (kj_cfg.debug_graph)
			fprintf(stderr, "kjoule graph: clone node %llu of %llu type %d\n",
				(unsigned long long)nid, (unsigned long long)orig, (int)type);
		/* a memset node's clone holds its destination too: read from the clone itself, its
		 * runs find it whatever chain of clones (child graphs are cloned twice) led there */
		if (type == CU_GRAPH_NODE_TYPE_MEMSET)
			kj_graph_record_memset(g->node, nid);
		break;
	}
	default:
		break;
	}
}

/* ---- every API call, with --api: our own callbacks cost less than CUPTI's API activity ---- */

/* The query functions --api leaves out (--api=all keeps them): device, context, attribute,
 * error-state and capture-state getters that frameworks and the runtime call around every
 * operation. docs/tracing.md lists them. */
int kj_api_is_query(int runtime, uint32_t id)
{
	static const uint32_t driver[] = {
		CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2,
		CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
		CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, CUPTI_DRIVER_TRACE_CBID_cuFuncGetName,
		CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
		CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute,
		CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuDeviceGet,
		CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
		CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel, CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
		CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
		CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_ptsz,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2_ptsz,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3_ptsz, CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion,
		CUPTI_DRIVER_TRACE_CBID_cuGetErrorString, CUPTI_DRIVER_TRACE_CBID_cuGetErrorName,
	};
	static const uint32_t rt[] = {
		CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
		CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v10010,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_ptsz_v11030,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v12030,
		CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050,
	};
	const uint32_t *v = runtime ? rt : driver;
	size_t n = runtime ? sizeof(rt) / sizeof(rt[0]) : sizeof(driver) / sizeof(driver[0]);
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return 1;
	return 0;
}
#define API_DEPTH 16
static __thread int64_t tl_api_start[API_DEPTH];
static __thread int tl_api_depth;

static uint32_t api_name_id(int runtime, uint32_t cbid)
{
	static uint32_t ids[2][2048];
	const char *name = NULL;
	if (cbid >= 2048)
		return kj_spool_string("?");
	if (!ids[runtime][cbid]) {
		cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
				     cbid, &name);
		ids[runtime][cbid] = kj_spool_string(name ? name : "?");
	}
	return ids[runtime][cbid];
}

/* The main argument of the calls the API story asks about: bytes of copies, sets and
 * allocations, and the stream of synchronisations and asynchronous copies. */
static void api_args(CUpti_CallbackId id, const CUpti_CallbackData *cb, struct kj_rec_api *r)
{
	CUstream stream = NULL;
	int have_stream = 0;
	switch (id) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
		r->bytes = (int64_t)((const cudaMemcpy_v3020_params *)cb->functionParams)->count;
		break;
	case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: {
		const cudaMemcpyAsync_v3020_params *p = cb->functionParams;
		r->bytes = (int64_t)p->count;
		stream = (CUstream)p->stream;
		have_stream = 1;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: {
		const cudaMemsetAsync_v3020_params *p = cb->functionParams;
		r->bytes = (int64_t)p->count;
		stream = (CUstream)p->stream;
		have_stream = 1;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
		r->bytes = (int64_t)((const cudaMalloc_v3020_params *)cb->functionParams)->size;
		break;
	case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
		r->bytes = (int64_t)((const cudaMallocHost_v3020_params *)cb->functionParams)->size;
		break;
	case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020: {
		const cudaMallocAsync_v11020_params *p = cb->functionParams;
		r->bytes = (int64_t)p->size;
		stream = (CUstream)p->hStream;
		have_stream = 1;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
		stream = (CUstream)((const cudaStreamSynchronize_v3020_params *)cb->functionParams)->stream;
		have_stream = 1;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
		r->bytes = (int64_t)((const cuMemAlloc_v2_params *)cb->functionParams)->bytesize;
		break;
	default:
		break;
	}
	if (have_stream) {
		uint32_t sid = 0;
		if (cuptiGetStreamIdEx(cb->context, stream, 0, &sid) == CUPTI_SUCCESS)
			r->stream = sid;
	}
}

static void api_call(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData *cb)
{
	if (kj_cfg.api & KJ_API_NO_RECORDS)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (tl_api_depth < API_DEPTH)
			tl_api_start[tl_api_depth] = kj_now_ns();
		tl_api_depth++;
		return;
	}
	if (tl_api_depth <= 0)
		return;
	tl_api_depth--;
	if (tl_api_depth >= API_DEPTH)
		return;
	struct kj_rec_api r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_API;
	r.h.size = sizeof(r);
	r.start_ns = tl_api_start[tl_api_depth];
	r.end_ns = kj_now_ns();
	r.domain = domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 2;
	r.cbid = id;
	r.tid = kj_thread_id();
	r.correlation = cb->correlationId;
	if (cb->functionReturnValue)
		r.status = r.domain == 1 ? (uint32_t)*(const CUresult *)cb->functionReturnValue
					 : (uint32_t)*(const cudaError_t *)cb->functionReturnValue;
	r.name_id = api_name_id(r.domain == 2, id);
	r.bytes = -1;
	r.stream = -1;
	api_args(id, cb, &r);
	kj_spool_write(&r, sizeof(r));
}

static int is_launch(CUpti_CallbackId id)
{
	return id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
}

static __thread int tl_busy; /* inside our own handling: driver calls we make are not the program's */
static __thread uint32_t tl_own_corr;

uint32_t kj_last_own_correlation(void)
{
	return tl_own_corr;
}

static void dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data);
static int cost_empty_handler; /* cost studies: KJ_COST_EMPTY_HANDLER */

static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
			      const void *data)
{
	(void)userdata;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) { /* module loads may happen inside our own calls */
		handle_resource(id, data);
		return;
	}
	if (cost_empty_handler)
		return;
	if (tl_busy) { /* our own call; --snapshot wants its copies' correlation */
		if (kj_cfg.snapshot_bytes > 0 && domain == CUPTI_CB_DOMAIN_DRIVER_API &&
		    ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER)
			tl_own_corr = ((const CUpti_CallbackData *)data)->correlationId;
		return;
	}
	tl_busy = 1;
	uint64_t t = kj_self_tick();
	dispatch(domain, id, data);
	if (t)
		kj_self_add(domain != CUPTI_CB_DOMAIN_DRIVER_API || !is_launch(id) ? KJ_SELF_OTHER
			    : ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER
				? KJ_SELF_ENTER
				: KJ_SELF_EXIT,
			    t);
	tl_busy = 0;
}

static void dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data)
{
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		handle_resource(id, data);
		return;
	}
	const CUpti_CallbackData *cb = data;
	if ((domain == CUPTI_CB_DOMAIN_DRIVER_API && (kj_cfg.api & KJ_API_DRIVER)) ||
	    (domain == CUPTI_CB_DOMAIN_RUNTIME_API && (kj_cfg.api & KJ_API_RUNTIME)))
		api_call(domain, id, cb);
	if (domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (is_launch(id)) {
		if (cb->callbackSite == CUPTI_API_ENTER) {
			tl_in_launch = 1;
			tl_node = 0;
			handle_launch(id, cb);
		} else {
			/* a launch into a capturing stream created a graph node: remember its key */
			if (tl_node)
				put_graphnode(tl_node, tl_corr, 0);
			kj_snapshot_after();
			tl_in_launch = 0;
			tl_node = 0;
		}
		return;
	}
	if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode || id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2) {
		kj_graph_on_add_node(id, cb);
		return;
	}
	if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphConditionalHandleCreate) {
		kj_graph_on_cond_handle(cb);
		return;
	}
	if (kj_module_load_call(id, cb))
		return;
	kj_issue_handle(id, cb);
	kj_copy_handle(id, cb);
	handle_memory(id, cb);
	handle_event(id, cb);
	handle_memset(id, cb);
}

static CUpti_SubscriberHandle subscriber;

/* The driver calls kjoule always follows: launches, mappings, events, memsets, the generic
 * node maker (conditional nodes' bodies) and module loads (which module a function came from). */
static const CUpti_CallbackId driver_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemMap,
	CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
	CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
	CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags,
	CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
	CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode,
	CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphConditionalHandleCreate,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoad,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary,
};

/* --snapshot follows its own copies, to know their correlation */
static int snapshot_copy_id(CUpti_CallbackId id)
{
	return kj_cfg.snapshot_bytes > 0 && id == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2;
}

static int is_base_driver_id(CUpti_CallbackId id)
{
	if (kj_issue_op(id))
		return 1;
	for (size_t i = 0; i < sizeof(driver_ids) / sizeof(driver_ids[0]); i++)
		if (driver_ids[i] == id)
			return 1;
	return snapshot_copy_id(id);
}

/* Switches the API-record callbacks of `bits` (KJ_API_*) on or off; the driver calls kjoule
 * follows anyway stay on. --api leaves the queries out: CUPTI costs ~0.2 us per enabled call,
 * and they are ~90 % of a framework's calls (23,500 cudaGetDevice per 4 BLOOM forwards). */
static void set_api_callbacks(int bits, int on)
{
	for (uint32_t id = 1; (bits & KJ_API_DRIVER) && id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
		if (!is_base_driver_id(id) && ((bits & KJ_API_QUERIES) || !kj_api_is_query(0, id)))
			cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
	for (uint32_t id = 1; (bits & KJ_API_RUNTIME) && id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++) {
		const char *name = NULL;
		if (!(bits & KJ_API_QUERIES) && kj_api_is_query(1, id))
			continue;
		/* cost study: runtime launches left to their driver-level record */
		if ((bits & KJ_API_NO_RUNTIME_LAUNCH) &&
		    cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &name) == CUPTI_SUCCESS && name &&
		    !strncmp(name, "cudaLaunch", 10))
			continue;
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
	}
}

static const CUpti_CallbackId resource_ids[] = {
	CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
	CUPTI_CBID_RESOURCE_MODULE_LOADED,
	CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
	CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
	CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
};

/* The callbacks every trace has: launches, mappings, events, memsets, modules, graph nodes. */
static void set_base_callbacks(int on)
{
	for (size_t i = 0; i < sizeof(driver_ids) / sizeof(driver_ids[0]); i++)
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_ids[i]);
	for (size_t i = 0; i < sizeof(resource_ids) / sizeof(resource_ids[0]); i++)
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RESOURCE, resource_ids[i]);
	kj_issue_enable(subscriber, on);
	if (snapshot_copy_id(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2))
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2);
}

/* Cost studies only (bench/api_cost/api_toggle.py, bench/trace_overhead/turn_worker.py, through
 * ctypes in the traced program): switch the tracing while the program runs. `bits`: KJ_API_* (the
 * API records, as KJOULE_API_DOMAINS), plus KJ_COST_NO_PARAMS (no parameter capture, as
 * --no-params), KJ_COST_ACTIVITY_ONLY (CUPTI's activity records without any kjoule callback: the
 * floor a CUPTI tracer stands on), KJ_COST_EMPTY_HANDLER (the callbacks stay enabled but return at
 * once: what CUPTI's dispatch costs without kjoule's handlers; records then go missing, so a cost
 * study's database is not a trace) or KJ_COST_OFF (no callbacks and no activity: the program as if
 * untraced, but for CUPTI being loaded). Call it between iterations, from the thread that makes
 * the CUDA calls. Returns the previous bits. */
__attribute__((visibility("default"))) int kjoule_cost_study_set_api(int bits)
{
	static int saved_params_k = -1, current, base_on = 1, activity_on = 1;
	if (!subscriber)
		return -1;
	if (saved_params_k < 0) {
		saved_params_k = kj_cfg.params_k;
		current = kj_cfg.api;
	}
	int old = current;
	int want_base = !(bits & (KJ_COST_OFF | KJ_COST_ACTIVITY_ONLY));
	int want_activity = !(bits & KJ_COST_OFF);
	if (base_on)
		set_api_callbacks(kj_cfg.api, 0);
	if (want_base != base_on)
		set_base_callbacks(want_base);
	if (want_activity != activity_on)
		kj_activity_pause(!want_activity);
	base_on = want_base;
	activity_on = want_activity;
	kj_cfg.params_k = (bits & KJ_COST_NO_PARAMS) ? 0 : saved_params_k;
	cost_empty_handler = !!(bits & KJ_COST_EMPTY_HANDLER);
	kj_cfg.api = bits & (KJ_API_DRIVER | KJ_API_RUNTIME | KJ_API_NO_RECORDS | KJ_API_QUERIES |
			     KJ_API_NO_RUNTIME_LAUNCH);
	if (base_on)
		set_api_callbacks(kj_cfg.api, 1);
	current = bits;
	return old;
}

int kj_callbacks_start(void)
{
	CUptiResult r = cuptiSubscribe(&subscriber, callback, NULL);
	if (r != CUPTI_SUCCESS) {
		const char *msg = NULL;
		cuptiGetResultString(r, &msg);
		kj_spool_problem("launch parameters, unique-kernel keys, modules and devices not recorded: "
				 "cuptiSubscribe: %s (another CUPTI client, such as a profiler, holds it)",
				 msg ? msg : "?");
		return -1;
	}
	if (kj_copy_init() != 0)
		kj_spool_problem("copy addresses and data not recorded: out of memory");
	set_base_callbacks(1);
	set_api_callbacks(kj_cfg.api, 1);
	return 0;
}
