#define _GNU_SOURCE
/* Graphs as the program instantiates them: every node with its kind and dependencies, child
 * graphs followed. Kernel nodes that no stream-capture launch made (graphs built node by node, as
 * XLA's command buffers are) get their parameters recorded here, from the node itself, as if they
 * had been launched: so they replay alone like any eager kernel. Runs in cuGraphInstantiate*,
 * which programs call once per graph, never per iteration. */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "kj_map.h"

/* ---- node ids already tied to a launch (stream capture) ---- */
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kj_map *known; /* node id -> 1 */

/* Out of memory, the node is simply not remembered: instantiation then records it from the node
 * as well, which costs a duplicate launch record, never a lost one. */
void kj_graph_node_known(uint64_t id)
{
	if (!id)
		return;
	pthread_mutex_lock(&known_lock);
	if (!known)
		known = kj_map_new();
	if (known)
		kj_map_put(known, id, 1);
	pthread_mutex_unlock(&known_lock);
}

static int is_known(uint64_t id)
{
	pthread_mutex_lock(&known_lock);
	int k = known && kj_map_get(known, id, NULL);
	pthread_mutex_unlock(&known_lock);
	return k;
}

/* ---- conditional nodes' body graphs ----
 * CUDA 13.0 has no call that reads a conditional node's bodies back from the node: they are
 * remembered when cuGraphAddNode* makes it (node id -> its body graphs), and instantiation walks
 * them like child graphs, so kernel nodes added to a body node by node get parameters too. */
struct cond_bodies {
	uint32_t n;
	CUgraph body[];
};
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kj_map *conds; /* node id -> struct cond_bodies * */

void kj_graph_on_add_node(uint32_t cbid, const CUpti_CallbackData *cb)
{
	CUgraphNode *out = NULL;
	const CUgraphNodeParams *np = NULL;
	if (cb->callbackSite != CUPTI_API_EXIT || !cb->functionParams ||
	    (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS))
		return;
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode) {
		const cuGraphAddNode_params *p = cb->functionParams;
		out = p->phGraphNode, np = p->nodeParams;
	} else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2) {
		const cuGraphAddNode_v2_params *p = cb->functionParams;
		out = p->phGraphNode, np = p->nodeParams;
	}
	if (!out || !*out || !np || np->type != CU_GRAPH_NODE_TYPE_CONDITIONAL ||
	    !np->conditional.phGraph_out || !np->conditional.size)
		return;
	uint64_t nid = 0;
	if (cuptiGetGraphNodeId(*out, &nid) != CUPTI_SUCCESS)
		return;
	uint32_t n = np->conditional.size > 256 ? 256 : np->conditional.size;
	struct cond_bodies *c = malloc(sizeof(*c) + n * sizeof(CUgraph));
	if (!c)
		return;
	c->n = n;
	memcpy(c->body, np->conditional.phGraph_out, n * sizeof(CUgraph));
	pthread_mutex_lock(&cond_lock);
	uint64_t old = 0;
	if (!conds)
		conds = kj_map_new();
	if (conds && kj_map_get(conds, nid, &old))
		free((void *)(uintptr_t)old);
	if (!conds || kj_map_put(conds, nid, (uint64_t)(uintptr_t)c))
		free(c);
	pthread_mutex_unlock(&cond_lock);
	if (kj_cfg.debug_graph)
		fprintf(stderr, "kjoule graph: conditional node %llu (type %d) with %u body graph(s)\n",
			(unsigned long long)nid, (int)np->conditional.type, n);
}

void kj_graph_on_cond_handle(const CUpti_CallbackData *cb)
{
	const cuGraphConditionalHandleCreate_params *p = cb->functionParams;
	struct kj_rec_cond_handle r;
	if (cb->callbackSite != CUPTI_API_EXIT || !p || !p->pHandle_out ||
	    (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS))
		return;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_COND_HANDLE;
	r.h.size = sizeof(r);
	r.handle = (uint64_t)*p->pHandle_out;
	r.default_value = p->defaultLaunchValue;
	if (p->hGraph)
		cuptiGetGraphId(p->hGraph, &r.graph_id);
	kj_spool_write(&r, sizeof(r));
	if (kj_cfg.debug_graph)
		fprintf(stderr, "kjoule graph: conditional handle 0x%llx for graph %u\n",
			(unsigned long long)r.handle, r.graph_id);
}

/* The body graphs of conditional node nid, copied into body (at most cap); their count. */
static uint32_t cond_bodies_of(uint64_t nid, CUgraph *body, uint32_t cap)
{
	uint64_t v = 0;
	uint32_t n = 0;
	pthread_mutex_lock(&cond_lock);
	if (conds && kj_map_get(conds, nid, &v) && v) {
		const struct cond_bodies *c = (const struct cond_bodies *)(uintptr_t)v;
		n = c->n < cap ? c->n : cap;
		memcpy(body, c->body, n * sizeof(CUgraph));
	}
	pthread_mutex_unlock(&cond_lock);
	return n;
}

static uint32_t next_corr = KJ_NODE_CORRELATION_BASE;

/* A kernel node's launch, recorded from its parameters. @return its correlation, 0 if unread. */
static uint32_t record_kernel_node(CUgraphNode node, uint64_t nid)
{
	CUDA_KERNEL_NODE_PARAMS p;
	struct kj_launch l;
	memset(&p, 0, sizeof(p));
	if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
		return 0;
	memset(&l, 0, sizeof(l));
	l.f = p.func ? (uintptr_t)p.func : (uintptr_t)p.kern;
	if (!l.f)
		return 0;
	l.grid[0] = p.gridDimX, l.grid[1] = p.gridDimY, l.grid[2] = p.gridDimZ;
	l.block[0] = p.blockDimX, l.block[1] = p.blockDimY, l.block[2] = p.blockDimZ;
	l.shmem = p.sharedMemBytes;
	l.params = p.kernelParams;
	l.extra = p.extra;
	l.graph_node = 1;
	{
		CUlaunchAttributeValue v;
		memset(&v, 0, sizeof(v));
		if (cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v) ==
		    CUDA_SUCCESS) {
			l.cluster[0] = v.clusterDim.x;
			l.cluster[1] = v.clusterDim.y;
			l.cluster[2] = v.clusterDim.z;
		}
		memset(&v, 0, sizeof(v));
		if (cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) == CUDA_SUCCESS)
			l.cooperative = v.cooperative != 0;
	}
	uint32_t corr = __atomic_fetch_add(&next_corr, 1, __ATOMIC_RELAXED);
	CUcontext ctx = p.ctx;
	if (!ctx)
		cuCtxGetCurrent(&ctx);
	kj_launch_record(corr, ctx, &l);
	kj_put_graphnode(nid, corr);
	return corr;
}

/* --snapshot: what the node's parameters point to is saved before the graph's first launch */
static void node_param_words(CUgraphNode node)
{
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof(p));
	if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
		return;
	uintptr_t f = p.func ? (uintptr_t)p.func : (uintptr_t)p.kern;
	if (f)
		kj_graph_node_param_words(f, p.kernelParams, p.extra);
}

static void put_node(uint64_t nid, uint64_t parent, uint32_t gid, uint32_t type, uint32_t corr,
		     const uint64_t *deps, uint32_t ndeps)
{
	struct kj_rec_graph_node r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_GRAPH_NODE;
	r.node_id = nid;
	r.parent_node = parent;
	r.graph_id = gid;
	r.type = type;
	r.correlation = corr;
	r.ndeps = ndeps;
	kj_spool_write2(&r, sizeof(r), deps, ndeps * sizeof(*deps));
}

/* A memset node's destination, so its runs can be repeated where the program made them. A node
 * whose parameters cannot be read is named in the run's problems (the first few of them). */
void kj_graph_record_memset(CUgraphNode node, uint64_t nid)
{
	static int unread;
	CUDA_MEMSET_NODE_PARAMS p;
	struct kj_rec_graph_memset r;
	memset(&p, 0, sizeof(p));
	CUresult rc = cuGraphMemsetNodeGetParams(node, &p);
	if (kj_cfg.debug_graph)
		fprintf(stderr, "kjoule graph: memset node %llu: params rc %d dst 0x%llx bytes %zu value %u\n",
			(unsigned long long)nid, (int)rc, (unsigned long long)p.dst,
			p.width * p.elementSize * (p.height ? p.height : 1), p.value);
	if (rc != CUDA_SUCCESS || !p.dst) {
		if (__atomic_fetch_add(&unread, 1, __ATOMIC_RELAXED) < 4)
			kj_spool_problem("graph memset node %llu: its destination could not be read "
					 "(cuGraphMemsetNodeGetParams returned %d, dst 0x%llx); replay "
					 "writes it to scratch memory", (unsigned long long)nid, (int)rc,
					 (unsigned long long)p.dst);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_GRAPH_MEMSET;
	r.h.size = sizeof(r);
	r.node_id = nid;
	r.address = (uint64_t)p.dst;
	r.width = p.width;
	r.height = p.height;
	r.pitch = p.pitch;
	r.value = p.value;
	r.element_bytes = p.elementSize;
	kj_spool_write(&r, sizeof(r));
}

/* A memory node's allocation (cudaMallocAsync captured, cuGraphAddMemAllocNode): its address is
 * fixed for the graph's life, and the graph's kernels take it as a parameter, so replay must know
 * it as an allocation like any other (kind 'graph', never freed). A graph reuses an address once
 * its memory is freed: each address is recorded once, again only when a node asks more bytes of
 * it. */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kj_map *alloc_addrs; /* address -> largest bytes recorded there */

static void record_mem_alloc(CUgraphNode node, uint64_t nid)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p;
	uint64_t had = 0;
	memset(&p, 0, sizeof(p));
	CUresult rc = cuGraphMemAllocNodeGetParams(node, &p);
	if (kj_cfg.debug_graph)
		fprintf(stderr, "kjoule graph: mem_alloc node %llu: rc %d dptr 0x%llx bytes %zu\n",
			(unsigned long long)nid, (int)rc, (unsigned long long)p.dptr, p.bytesize);
	if (rc != CUDA_SUCCESS || !p.dptr || !p.bytesize) {
		kj_spool_problem("graph memory node %llu: its allocation could not be read "
				 "(cuGraphMemAllocNodeGetParams returned %d); replay cannot relocate "
				 "pointers into it", (unsigned long long)nid, (int)rc);
		return;
	}
	pthread_mutex_lock(&alloc_lock);
	if (!alloc_addrs)
		alloc_addrs = kj_map_new();
	int known_here = alloc_addrs && kj_map_get(alloc_addrs, (uint64_t)p.dptr, &had) && had >= p.bytesize;
	if (alloc_addrs && !known_here)
		kj_map_put(alloc_addrs, (uint64_t)p.dptr, p.bytesize);
	pthread_mutex_unlock(&alloc_lock);
	if (!known_here)
		kj_put_allocation((uint64_t)p.dptr, p.bytesize, 1, 0, KJ_MEM_VIA_GRAPH);
}

static void walk_graph(CUgraph g, uint64_t parent, int depth)
{
	size_t n = 0;
	uint32_t gid = 0;
	CUgraphNode *nodes = NULL;
	if (depth > 8 || cuGraphGetNodes(g, NULL, &n) != CUDA_SUCCESS || !n)
		return;
	cuptiGetGraphId(g, &gid);
	nodes = calloc(n, sizeof(*nodes));
	if (!nodes || cuGraphGetNodes(g, nodes, &n) != CUDA_SUCCESS) {
		free(nodes);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
		uint64_t nid = 0, stackdeps[16], *deps = stackdeps;
		size_t nd = 0;
		uint32_t corr = 0;
		CUgraphNode dn[16];
		CUgraphEdgeData de[16], *ev = de;
		if (cuptiGetGraphNodeId(nodes[i], &nid) != CUPTI_SUCCESS ||
		    cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS)
			continue;
		if (kj_cfg.debug_graph)
			fprintf(stderr, "kjoule graph: walk graph %u depth %d node %llu type %d parent %llu\n",
				gid, depth, (unsigned long long)nid, (int)type, (unsigned long long)parent);
		if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
			if (!is_known(nid))
				corr = record_kernel_node(nodes[i], nid);
			if (kj_cfg.snapshot_bytes > 0)
				node_param_words(nodes[i]);
		} else if (type == CU_GRAPH_NODE_TYPE_MEMSET) {
			kj_graph_record_memset(nodes[i], nid);
		} else if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
			record_mem_alloc(nodes[i], nid);
		}
		if (cuGraphNodeGetDependencies(nodes[i], NULL, NULL, &nd) == CUDA_SUCCESS && nd) {
			CUgraphNode *dv = nd <= 16 ? dn : calloc(nd, sizeof(*dv));
			if (nd > 16) {
				deps = calloc(nd, sizeof(*deps));
				ev = calloc(nd, sizeof(*ev));
			}
			if (dv && deps && ev) {
				memset(ev, 0, nd * sizeof(*ev));
				if (cuGraphNodeGetDependencies(nodes[i], dv, ev, &nd) != CUDA_SUCCESS)
					nd = 0;
				for (size_t d = 0; d < nd; d++) {
					if (cuptiGetGraphNodeId(dv[d], &deps[d]) != CUPTI_SUCCESS)
						deps[d] = 0;
					else if (ev[d].type || ev[d].from_port || ev[d].to_port)
						deps[d] = (deps[d] & KJ_EDGE_ID_MASK) |
							  KJ_EDGE_PACK(ev[d].type, ev[d].from_port, ev[d].to_port);
				}
			} else {
				nd = 0;
			}
			if (dv != dn)
				free(dv);
			if (ev != de)
				free(ev);
		}
		put_node(nid, parent, gid, (uint32_t)type, corr, deps, deps ? (uint32_t)nd : 0);
		if (deps != stackdeps)
			free(deps);
		if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
			CUgraph child = NULL;
			if (cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS && child)
				walk_graph(child, nid, depth + 1);
		} else if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
			CUgraph body[256];
			uint32_t nb = cond_bodies_of(nid, body, 256);
			static int unread;
			if (!nb && __atomic_fetch_add(&unread, 1, __ATOMIC_RELAXED) < 4)
				kj_spool_problem("graph conditional node %llu: its body graphs were not seen "
						 "when it was made; kernel nodes added to them by hand have no "
						 "parameters", (unsigned long long)nid);
			for (uint32_t b = 0; b < nb; b++)
				if (body[b])
					walk_graph(body[b], nid, depth + 1);
		}
	}
	free(nodes);
}

void kj_graph_on_instantiate(const CUpti_CallbackData *cb)
{
	/* every cuGraphInstantiate* form starts with (CUgraphExec *phGraphExec, CUgraph hGraph) */
	const cuGraphInstantiateWithFlags_params *p = cb->functionParams;
	if (cb->callbackSite != CUPTI_API_ENTER || !p || !p->hGraph)
		return;
	walk_graph(p->hGraph, 0, 0);
}
