/* kjoule-replay-worker: the kept iteration's graph launches rebuilt as the program built them
 * (kj_replay_topo.h): one CUDA graph with a node per recorded node and the recorded edges, timed
 * like the linear graph, its energy measured the same way, and each kernel node timed where it
 * runs in it (CUPTI kernel records tied to nodes by their graph node ids). */
#include "replay_worker.h"

#include "kj_map.h"
#include "kj_replay_topo.h"

struct topo {
	struct kj_replay_topo t;
	struct klaunch *k;
	size_t nk;
	CUgraph g;
	CUgraphExec exec;
	CUgraphNode *h;        /* per topology node */
	CUdeviceptr d1, d2;    /* scratch for copies and memsets without a recorded destination */
	void *h1, *h2;         /* pinned host scratch */
	struct kj_map *clone_of; /* exec node id -> template node id (CUPTI clone callbacks) */
};

#ifdef KJ_WITH_CUPTI
static struct kj_map *g_clones; /* filled while the topology graph is instantiated */

/* CUPTI resource callback: each node cloned into the exec, with the node it came from. */
static void CUPTIAPI on_resource(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
	(void)ud;
	if (dom != CUPTI_CB_DOMAIN_RESOURCE || cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED || !g_clones)
		return;
	const CUpti_GraphData *gd = ((const CUpti_ResourceData *)data)->resourceDescriptor;
	uint64_t nid = 0, orig = 0;
	if (gd && cuptiGetGraphNodeId(gd->node, &nid) == CUPTI_SUCCESS &&
	    cuptiGetGraphNodeId(gd->originalNode, &orig) == CUPTI_SUCCESS)
		kj_map_put(g_clones, nid, orig);
}
#endif

/* Diagnosis only: KJ_REPLAY_TOPO_SKIP names node kinds built as empty nodes instead (htod, dtoh,
 * dtod, memset, programmatic, and the kernel forms below: comma-separated), to find which nodes
 * a driver fault comes from. */
static int topo_skip(const char *what)
{
	const char *e = getenv("KJ_REPLAY_TOPO_SKIP");
	return e && strstr(e, what) != NULL;
}

/* ... and kernel nodes: all (kernel), those whose name holds text (name:text), or the iteration's
 * launches from index N on (from:N); k is the kernel, index its place in the iteration. */
static int topo_skip_kernel(const struct klaunch *k, int64_t index)
{
	const char *e = getenv("KJ_REPLAY_TOPO_SKIP"), *at;
	if (!e)
		return 0;
	if ((at = strstr(e, "from:")) != NULL)
		return index >= atol(at + 5);
	if ((at = strstr(e, "name:")) != NULL) {
		char want[128];
		size_t n = strcspn(at + 5, ",");
		snprintf(want, sizeof(want), "%.*s", (int)(n < sizeof(want) - 1 ? n : sizeof(want) - 1), at + 5);
		return k->mangled && strstr(k->mangled, want) != NULL;
	}
	return strstr(e, "kernel") != NULL;
}

/* Add topology node i to the graph after its dependencies. */
static CUresult add_node(struct replay *R, struct topo *T, size_t i, size_t scratch)
{
	const struct kj_topo_node *full = &T->t.nodes[i];
	struct kj_topo_node nf = *full, *n = &nf;
	CUgraphNode deps[64], *dv = deps;
	CUresult e;
	if (n->ndeps > 64 && !(dv = calloc(n->ndeps, sizeof(*dv))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* full dependencies now; programmatic ones (PDL) added below with their edge data */
	size_t nfull = 0;
	for (size_t d = 0; d < full->ndeps; d++)
		if (!T->t.dep_kind || (T->t.dep_kind[full->dep0 + d] & 3u) != KJ_TOPO_EDGE_PROGRAMMATIC)
			dv[nfull++] = T->h[T->t.deps[full->dep0 + d]];
	nf.ndeps = nfull;
	size_t bytes = n->bytes > 0 ? (size_t)n->bytes : 0;
	if ((n->kind == KJ_TOPO_KERNEL && topo_skip_kernel(&T->k[n->seq_kernel], n->seq_kernel)) || (n->kind == KJ_TOPO_MEMSET && topo_skip("memset")) ||
	    (n->kind == KJ_TOPO_MEMCPY && topo_skip(n->copy == 0 ? "htod" : n->copy == 1 ? "dtoh" : "dtod")))
		bytes = 0, n->kind = KJ_TOPO_EMPTY;
	if (n->kind == KJ_TOPO_KERNEL) {
		const struct klaunch *k = &T->k[n->seq_kernel];
		size_t blob_len = k->blob_len;
		void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, k->blob, CU_LAUNCH_PARAM_BUFFER_SIZE,
				 &blob_len, CU_LAUNCH_PARAM_END};
		CUDA_KERNEL_NODE_PARAMS p;
		memset(&p, 0, sizeof(p));
		p.func = k->fn;
		p.gridDimX = k->grid[0], p.gridDimY = k->grid[1], p.gridDimZ = k->grid[2];
		p.blockDimX = k->block[0], p.blockDimY = k->block[1], p.blockDimZ = k->block[2];
		p.sharedMemBytes = k->shmem;
		if (k->nlayout || !k->blob_len)
			p.kernelParams = k->nlayout ? k->kparams : NULL;
		else
			p.extra = extra;
		e = cuGraphAddKernelNode(&T->h[i], T->g, dv, n->ndeps, &p);
		if (!e && k->use_cluster_attr) {
			CUlaunchAttributeValue v;
			memset(&v, 0, sizeof(v));
			v.clusterDim.x = k->cluster[0] ? k->cluster[0] : 1;
			v.clusterDim.y = k->cluster[1] ? k->cluster[1] : 1;
			v.clusterDim.z = k->cluster[2] ? k->cluster[2] : 1;
			e = cuGraphKernelNodeSetAttribute(T->h[i], CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v);
		}
		if (!e && k->cooperative) {
			CUlaunchAttributeValue v;
			memset(&v, 0, sizeof(v));
			v.cooperative = 1;
			e = cuGraphKernelNodeSetAttribute(T->h[i], CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v);
		}
	} else if (n->kind == KJ_TOPO_MEMSET && bytes) {
		/* at the recorded destination where it lies in a re-created region, else on scratch */
		CUDA_MEMSET_NODE_PARAMS m;
		unsigned es = n->element_bytes == 4 || n->element_bytes == 2 ? (unsigned)n->element_bytes : 1;
		CUdeviceptr dst = n->address ? region_address(R, n->address, bytes) : 0;
		memset(&m, 0, sizeof(m));
		m.dst = dst ? dst : T->d1;
		m.value = !dst ? 0x3c : es == 1 ? n->value & 0xffu : es == 2 ? n->value & 0xffffu : n->value;
		m.elementSize = dst ? es : 1;
		m.width = dst ? bytes / es : (bytes < scratch ? bytes : scratch);
		m.height = 1;
		e = m.width ? cuGraphAddMemsetNode(&T->h[i], T->g, dv, n->ndeps, &m, R->ctx)
			    : cuGraphAddEmptyNode(&T->h[i], T->g, dv, n->ndeps);
	} else if (n->kind == KJ_TOPO_MEMCPY && bytes) {
		/* between scratch buffers, as the sequence replay makes its copies */
		CUDA_MEMCPY3D c;
		memset(&c, 0, sizeof(c));
		c.WidthInBytes = bytes < scratch ? bytes : scratch;
		c.Height = 1;
		c.Depth = 1;
		c.srcMemoryType = n->copy == 0 || n->copy == 3 ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		c.dstMemoryType = n->copy == 1 || n->copy == 3 ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		c.srcHost = T->h1;
		c.srcDevice = T->d1;
		c.dstHost = T->h2;
		c.dstDevice = T->d2;
		e = cuGraphAddMemcpyNode(&T->h[i], T->g, dv, n->ndeps, &c, R->ctx);
	} else {
		e = cuGraphAddEmptyNode(&T->h[i], T->g, dv, n->ndeps);
	}
	for (size_t d = 0; !e && T->t.dep_kind && d < full->ndeps; d++) {
		unsigned k = T->t.dep_kind[full->dep0 + d];
		if ((k & 3u) != KJ_TOPO_EDGE_PROGRAMMATIC)
			continue;
		if (topo_skip("programmatic")) {
			e = cuGraphAddDependencies(T->g, &T->h[T->t.deps[full->dep0 + d]], &T->h[i], NULL, 1);
			continue;
		}
		CUgraphEdgeData ed;
		memset(&ed, 0, sizeof(ed));
		ed.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
		ed.from_port = (unsigned char)KJ_TOPO_EDGE_PORT(k);
		CUgraphNode from = T->h[T->t.deps[full->dep0 + d]];
		e = cuGraphAddDependencies(T->g, &from, &T->h[i], &ed, 1);
		if (e) /* the driver refuses this edge: a full dependency keeps the order */
			e = cuGraphAddDependencies(T->g, &from, &T->h[i], NULL, 1);
	}
	if (dv != deps)
		free(dv);
	return e;
}

/* The mode failed at what, with CUDA's error name. @return KJ_EGPU. */
static int fail(struct kj_replay_seq *out, const char *what, CUresult e)
{
	const char *name = NULL;
	cuGetErrorName(e, &name);
	snprintf(out->status, sizeof(out->status), "failed");
	snprintf(out->error, sizeof(out->error), "%s: %s", what, name ? name : "?");
	return KJ_EGPU;
}

int topology_run(struct replay *R, int64_t iteration, struct klaunch *k, size_t nk, CUstream s,
		 struct kj_replay_seq *out, struct topo **tp)
{
	struct topo *T = calloc(1, sizeof(*T));
	CUresult e;
	*tp = T;
	snprintf(out->mode, sizeof(out->mode), "topology");
	snprintf(out->status, sizeof(out->status), "ok");
	out->iteration = iteration;
	if (!T)
		return KJ_ENOMEM;
	T->k = k;
	T->nk = nk;
	int rc = kj_replay_topo_load(R->db, iteration, &T->t);
	if (rc || !T->t.rebuildable) {
		snprintf(out->status, sizeof(out->status), "failed");
		snprintf(out->error, sizeof(out->error), "%.250s", rc ? (T->t.reason[0] ? T->t.reason : kj_strerror(rc))
								     : T->t.reason);
		return rc ? rc : KJ_EUNSUP;
	}
	size_t scratch = 16;
	for (size_t i = 0; i < T->t.nnodes; i++) {
		const struct kj_topo_node *n = &T->t.nodes[i];
		if (n->kind == KJ_TOPO_KERNEL && (n->seq_kernel < 0 || (size_t)n->seq_kernel >= nk)) {
			snprintf(out->status, sizeof(out->status), "failed");
			snprintf(out->error, sizeof(out->error), "topology node %zu names kernel op %" PRId64
				 " of %zu loaded", i, n->seq_kernel, nk);
			return KJ_EINVAL;
		}
		if ((n->kind == KJ_TOPO_MEMSET || n->kind == KJ_TOPO_MEMCPY) && (size_t)n->bytes > scratch)
			scratch = (size_t)n->bytes;
		out->launches += n->kind == KJ_TOPO_KERNEL;
		out->ops += n->kind != KJ_TOPO_EMPTY;
	}
	T->h = calloc(T->t.nnodes + 1, sizeof(*T->h));
	if (!T->h)
		return KJ_ENOMEM;
	if ((e = cuMemAlloc(&T->d1, scratch)) || (e = cuMemAlloc(&T->d2, scratch)) ||
	    (e = cuMemHostAlloc(&T->h1, scratch, 0)) || (e = cuMemHostAlloc(&T->h2, scratch, 0)))
		return fail(out, "topology scratch memory", e);
	fill_pattern(T->h1, scratch, 9);
	if ((e = cuGraphCreate(&T->g, 0)))
		return fail(out, "topology graph", e);
	for (size_t i = 0; i < T->t.nnodes; i++)
		if ((e = add_node(R, T, i, scratch))) {
			char what[96];
			snprintf(what, sizeof(what), "topology node %zu (%s)", i, T->t.nodes[i].type);
			return fail(out, what, e);
		}
#ifdef KJ_WITH_CUPTI
	/* the exec's node ids, to tie CUPTI's kernel records to nodes (topology_per_node) */
	CUpti_SubscriberHandle sub = NULL;
	T->clone_of = kj_map_new();
	g_clones = T->clone_of;
	if (R->o.use_cupti && T->clone_of && cuptiSubscribe(&sub, on_resource, NULL) == CUPTI_SUCCESS)
		cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
	else
		sub = NULL;
#endif
	e = cuGraphInstantiate(&T->exec, T->g, 0);
#ifdef KJ_WITH_CUPTI
	if (sub)
		cuptiUnsubscribe(sub);
	g_clones = NULL;
#endif
	if (e)
		return fail(out, "topology graph instantiation", e);
	/* one checked launch: a fault fails this mode here, with its error */
	if ((e = cuGraphLaunch(T->exec, s)) || (e = cuStreamSynchronize(s)))
		return fail(out, "topology graph, first launch", e);
	if ((rc = graph_time(R, T->exec, s, out)))
		return rc;
	if (R->o.energy)
		graph_energy(R, T->exec, s, out); /* paced at out->pace_ns, set by the caller */
	return 0;
}

#ifdef KJ_WITH_CUPTI
void topology_per_node(struct replay *R, struct topo *T, CUstream s)
{
	int runs = R->o.runs < 20 ? R->o.runs : 20;
	size_t nkn = 0;
	struct kj_map *node_of = kj_map_new(); /* template node id -> topology node index */
	int64_t *per = NULL;
	size_t *cnt = NULL;
	if (!T || !T->exec || !T->clone_of || !node_of || runs < 1)
		goto out;
	for (size_t i = 0; i < T->t.nnodes; i++) {
		uint64_t id = 0;
		if (T->t.nodes[i].kind != KJ_TOPO_KERNEL)
			continue;
		nkn++;
		if (cuptiGetGraphNodeId(T->h[i], &id) != CUPTI_SUCCESS || kj_map_put(node_of, id, i))
			goto out;
	}
	if (!nkn || cupti_start())
		goto out;
	CUresult e = CUDA_SUCCESS;
	for (int r = 0; r < runs && !e; r++)
		if (!(e = cuGraphLaunch(T->exec, s)))
			e = cuStreamSynchronize(s);
	cupti_stop();
	if (e || g_ndur != (size_t)runs * nkn)
		goto out; /* records missing or extra: no per-node figures rather than wrong ones */
	/* each record's node: exec node -> the template node it was cloned from -> its index */
	size_t *node = malloc(g_ndur * sizeof(*node));
	cnt = calloc(T->t.nnodes + 1, sizeof(*cnt));
	per = malloc(((size_t)runs + 1) * sizeof(*per));
	if (!node || !cnt || !per) {
		free(node);
		goto out;
	}
	for (size_t j = 0; j < g_ndur; j++) {
		uint64_t tid = 0, idx;
		if (!kj_map_get(T->clone_of, g_node[j], &tid))
			tid = g_node[j]; /* a record naming the template node itself */
		if (!kj_map_get(node_of, tid, &idx) ||
		    ++cnt[idx] > (size_t)runs) {
			free(node);
			goto out;
		}
		node[j] = (size_t)idx;
	}
	for (size_t i = 0; i < T->t.nnodes; i++) {
		if (T->t.nodes[i].kind != KJ_TOPO_KERNEL || cnt[i] != (size_t)runs)
			continue;
		size_t n = 0;
		for (size_t j = 0; j < g_ndur; j++)
			if (node[j] == i)
				per[n++] = g_dur[j];
		struct kj_replay_timing t;
		kj_replay_stats(per, n, &t);
		struct kj_topo_node_time nt = {(int64_t)i, T->t.nodes[i].unique_id, t.runs, t.min_ns,
					       t.median_ns, t.max_ns, t.mean_ns};
		kj_replay_topo_emit_node(stdout, &nt);
	}
	fflush(stdout);
	free(node);
out:
	if (R->o.debug && T && T->exec)
		fprintf(stderr, "kjoule-replay-worker: topology per node: %zu kernel nodes, %zu records\n", nkn,
			g_ndur);
	kj_map_free(node_of);
	free(per);
	free(cnt);
}
#else
void topology_per_node(struct replay *R, struct topo *T, CUstream s)
{
	(void)R;
	(void)T;
	(void)s;
}
#endif

void topology_free(struct topo *T)
{
	if (!T)
		return;
	if (T->exec)
		cuGraphExecDestroy(T->exec);
	if (T->g)
		cuGraphDestroy(T->g);
	if (T->d1)
		cuMemFree(T->d1);
	if (T->d2)
		cuMemFree(T->d2);
	if (T->h1)
		cuMemFreeHost(T->h1);
	if (T->h2)
		cuMemFreeHost(T->h2);
	kj_map_free(T->clone_of);
	kj_replay_topo_free(&T->t);
	free(T->h);
	free(T);
}
