#define _GNU_SOURCE
/* Driver-API and resource callbacks besides launches: allocation ranges (VMM mappings), event
 * records and waits, memset destinations, device facts, module images, graph nodes. */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"
#include "inject_fncache.h"
#include "inject_signal.h"

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
void kj_handle_memory(CUpti_CallbackId id, const CUpti_CallbackData *cb)
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
void kj_handle_event(CUpti_CallbackId id, const CUpti_CallbackData *cb)
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
void kj_handle_memset(CUpti_CallbackId id, const CUpti_CallbackData *cb)
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

void kj_handle_resource(CUpti_CallbackId id, const CUpti_ResourceData *rd)
{
	switch (id) {
	case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
		put_device(rd->context);
		/* the driver may have put its own signal handlers in front of ours by now */
		kj_signal_reassert();
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
		if (g && cuptiGetGraphNodeId(g->node, &nid) == CUPTI_SUCCESS)
			kj_launch_node_created(nid);
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
