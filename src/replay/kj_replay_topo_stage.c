/* The kept iteration's graph launches and eager operations added to the graph being rebuilt, one
 * stage at a time: a launch's recorded nodes and edges, its records tied to them. See kj_replay_topo.h. */
#include "kj_replay_topo_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"
#include "kj_store_r_topo.h"

/* A recorded node of the launch's graph (child graphs' too). */
struct gnode {
	int64_t id, parent, gid;
	char type[24];
	size_t in, out;     /* its topo nodes (the same but for a child graph: entry and exit) */
	int tied, has_pred, has_succ, has_child;
};

/* One clone record into the loader's map. */
static int add_clone(void *ctx, int64_t node, int64_t original)
{
	struct loader *L = ctx;
	return kj_map_put(L->clones, (uint64_t)node, (uint64_t)original) ? KJ_ENOMEM : 0;
}

/* graph_node_clone rows of one process, once per process. */
static int load_clones(struct loader *L, int64_t pid)
{
	if (!L->have_clones || (L->clones && L->clones_pid == pid))
		return 0;
	kj_map_free(L->clones);
	L->clones = kj_map_new();
	L->clones_pid = pid;
	if (!L->clones)
		return KJ_ENOMEM;
	return kj_store_r_graph_clones_each(L->db, pid, add_clone, L);
}

/* The recorded nodes being listed: the array, its capacity, the id map, the parent being expanded. */
struct nodes_ctx {
	struct gnode **out;
	size_t *n, cap;
	struct kj_map *at;
	int64_t parent;
};

/* One recorded node appended, unless listed already. */
static int add_gnode(void *ctx, const struct kj_store_r_graph_node_rec *r)
{
	struct nodes_ctx *c = ctx;
	uint64_t id = (uint64_t)r->node_id;
	if (kj_map_get(c->at, id, NULL))
		return 0; /* a node listed twice (a child graph reached twice): once */
	struct gnode *ng = kj_grow(*c->out, &c->cap, *c->n, sizeof(*ng), 64);
	if (!ng)
		return KJ_ENOMEM;
	*c->out = ng;
	struct gnode *g = &ng[*c->n];
	memset(g, 0, sizeof(*g));
	g->id = (int64_t)id;
	g->parent = c->parent;
	g->gid = r->graph_id;
	snprintf(g->type, sizeof(g->type), "%s", r->type ? r->type : "unknown");
	int rc = kj_map_put(c->at, id, *c->n);
	(*c->n)++;
	return rc;
}

/* The launch's recorded graph: top-level nodes, then each child graph's, breadth first. */
static int load_nodes(struct loader *L, int64_t pid, int64_t gid, struct gnode **out, size_t *n,
		      struct kj_map *at)
{
	struct nodes_ctx c = {out, n, 0, at, 0};
	*out = NULL;
	*n = 0;
	int rc = kj_store_r_graph_top_nodes_each(L->db, pid, gid, add_gnode, &c);
	for (size_t next = 0; !rc;) {
		/* the next child graph node not yet expanded */
		while (next < *n && strcmp((*out)[next].type, "graph"))
			next++;
		if (next >= *n)
			break;
		c.parent = (*out)[next++].id;
		rc = kj_store_r_graph_child_nodes_each(L->db, pid, c.parent, add_gnode, &c);
	}
	return rc;
}

/* How an executed node's id can lead to its recorded node without a clone record. */
struct tie_ctx {
	struct kj_map *at;
	const struct gnode *g;
	size_t ng, ntop; /* recorded nodes (child graphs' included, as load_nodes lists them), top-level ones */
	int index_ok;    /* every node's id is its graph's id << 32 | its index (no child graphs) */
	int64_t gid, exec_id; /* the recorded graph, the launch's exec */
};

/* The recorded node an executed node ran from: through the clone records where the run has
 * them, else by CUPTI's numbering (a node's id is its graph's id << 32 | its index, kept by the
 * clone into the exec) when every node of the graph follows it, else by the exec's flattening of
 * child graphs: their nodes take the exec's indices after the top-level ones, in the order
 * load_nodes lists them (seen on XLA's command buffers: exec nodes 16..19 of 16 top-level nodes
 * ran the two child graphs' memset and kernel). -1 when none leads to one. */
static ssize_t tie(struct loader *L, const struct tie_ctx *c, int64_t exec_node, int64_t exec_graph)
{
	uint64_t v = (uint64_t)exec_node, idx;
	for (int hops = 0; hops < 8; hops++) {
		if (kj_map_get(c->at, v, &idx)) {
			L->used_clones |= hops > 0;
			return (ssize_t)idx;
		}
		if (!L->clones || !kj_map_get(L->clones, v, &v))
			break;
	}
	int64_t eg = exec_graph >= 0 ? exec_graph : c->exec_id; /* memsets and copies name no graph */
	int in_exec = eg >= 0 && ((uint64_t)exec_node >> 32) == (uint64_t)eg;
	idx = (uint64_t)exec_node & 0xffffffffu;
	if (c->index_ok && (exec_graph < 0 || in_exec) &&
	    kj_map_get(c->at, ((uint64_t)c->gid << 32) | idx, &idx)) {
		L->used_index = 1;
		return (ssize_t)idx;
	}
	/* top-level nodes keep their index in the exec only where their ids say so */
	if (!c->index_ok && in_exec && idx < c->ng &&
	    (idx >= c->ntop || (uint64_t)c->g[idx].id == (((uint64_t)c->gid << 32) | idx))) {
		L->used_flat = 1;
		return (ssize_t)idx;
	}
	return -1;
}

/* Tie one executed record to its node: the node must be of the record's kind and run once.
 * exec_graph: the exec's graph id when the record names it (-1 not). */
static ssize_t tie_record(struct loader *L, const struct tie_ctx *c, struct gnode *g, int64_t exec_node,
			  int64_t exec_graph, const char *want)
{
	ssize_t i = exec_node ? tie(L, c, exec_node, exec_graph) : -1;
	if (i < 0 || g[i].tied || strcmp(g[i].type, want))
		return -1;
	g[i].tied = 1;
	return i;
}

/* The build kind of a recorded node that is a dependency only, else -1 (decided by its record). */
static int node_kind(const char *type)
{
	if (!strcmp(type, "empty") || !strcmp(type, "event_record") || !strcmp(type, "event_wait") ||
	    !strcmp(type, "graph"))
		return KJ_TOPO_EMPTY;
	return -1;
}

/* memcpy.kind as the worker's copy direction: 0 HtoD, 1 DtoH, 2 DtoD (and the rest), 3 HtoH. */
static int copy_kind(const char *kind)
{
	return !strcmp(kind, "HtoD") ? 0 : !strcmp(kind, "DtoH") ? 1 : !strcmp(kind, "HtoH") ? 3 : 2;
}

/* The launch's records being tied: the loader, the tie, the recorded nodes, which pass. */
struct copies_ctx {
	struct loader *L;
	const struct tie_ctx *c;
	struct gnode *g;
	int64_t *untied;
	int pass; /* 0 memsets, 1 copies */
};

/* One memset or copy tied to its node, its figures into the node. */
static void tie_copy(void *ctx, const struct kj_store_r_launch_op *r)
{
	struct copies_ctx *x = ctx;
	ssize_t i = tie_record(x->L, x->c, x->g, r->graph_node_id, -1, x->pass ? "memcpy" : "memset");
	if (i < 0) {
		(*x->untied)++;
		return;
	}
	struct kj_topo_node *n = &x->L->b.t->nodes[x->g[i].in];
	n->kind = x->pass ? KJ_TOPO_MEMCPY : KJ_TOPO_MEMSET;
	n->bytes = r->bytes;
	n->traced_ns = r->traced_ns;
	if (x->pass) {
		n->copy = copy_kind(r->kind ? r->kind : "");
	} else {
		n->value = (uint32_t)r->value;
		n->address = (uint64_t)r->address;
		n->element_bytes = (int)r->element_bytes;
	}
}

/* The launch's memsets and copies tied to their nodes (NULL columns of older runs read as 0). */
static int tie_copies(struct loader *L, const struct ilaunch *la, struct gnode *g, const struct tie_ctx *c,
		      int64_t *untied)
{
	struct copies_ctx x = {L, c, g, untied, 0};
	if (kj_store_r_launch_memsets_each(L->db, la->pid, la->corr, tie_copy, &x))
		return KJ_EDB;
	x.pass = 1;
	if (kj_store_r_launch_copies_each(L->db, la->pid, la->corr, tie_copy, &x))
		return KJ_EDB;
	return 0;
}

/* The graph id a launch's exec was instantiated from (the latest instantiation before it), -1. */
static int64_t launch_graph(struct loader *L, const struct ilaunch *la)
{
	return kj_store_r_exec_graph(L->db, la->pid, la->exec_id, la->start_ns);
}

/* The recorded edges being added: the builder, the id map, the recorded nodes, edges lost. */
struct edges_ctx {
	struct kj_topo_builder *b;
	struct kj_map *at;
	struct gnode *g;
	int64_t dangling;
};

/* One recorded edge between the topo nodes of its ends; counted dangling when an end is missing. */
static int add_gedge(void *ctx, const struct kj_store_r_graph_edge *e)
{
	struct edges_ctx *x = ctx;
	uint64_t a, z;
	x->b->t->graph_edges++;
	if (!kj_map_get(x->at, (uint64_t)e->from, &a) || !kj_map_get(x->at, (uint64_t)e->to, &z)) {
		x->dangling++;
		return 0;
	}
	x->g[a].has_succ = x->g[z].has_pred = 1;
	unsigned kind = e->programmatic ? KJ_TOPO_EDGE_PROGRAMMATIC | (unsigned)(e->from_port & 3) << 2
					: KJ_TOPO_EDGE_FULL;
	return kj_topo_add_edge_kind(x->b, x->g[a].out, x->g[z].in, kind);
}

/* One graph launch as a stage of the graph: its nodes and edges after the current join, then a
 * new join after its last nodes. */
int kj_topo_add_launch(struct loader *L, int li)
{
	struct kj_topo_builder *b = &L->b;
	struct kj_replay_topo *t = b->t;
	struct ilaunch *la = &L->l[li];
	struct gnode *g = NULL;
	size_t ng = 0;
	struct kj_map *at = kj_map_new();
	int rc = 0;
	int64_t untied = 0, gid = la->exec_id >= 0 ? launch_graph(L, la) : -1;
	if (!at)
		return KJ_ENOMEM;
	t->graph_launches++;
	if (gid < 0) {
		rc = kj_topo_unbuilt(b, "launch without a recorded instantiation", 1);
		goto out;
	}
	if ((rc = load_clones(L, la->pid)) || (rc = load_nodes(L, la->pid, gid, &g, &ng, at)))
		goto out;
	if (!ng) {
		rc = kj_topo_unbuilt(b, "launch of a graph without recorded nodes", 1);
		goto out;
	}
	t->graph_nodes += (int64_t)ng;
	/* CUPTI's numbering holds when every node's id carries its graph's id (no child graphs) */
	int index_ok = 1;
	size_t ntop = 0;
	for (size_t i = 0; i < ng; i++) {
		index_ok &= g[i].parent == 0 && ((uint64_t)g[i].id >> 32) == (uint64_t)gid;
		ntop += g[i].parent == 0;
	}
	struct tie_ctx tc = {at, g, ng, ntop, index_ok, gid, la->exec_id};
	/* the topo nodes: one per recorded node, two (entry, exit) per child graph */
	for (size_t i = 0; i < ng && !rc; i++) {
		int kind = node_kind(g[i].type);
		rc = kj_topo_add_node(b, kind < 0 ? KJ_TOPO_EMPTY : kind, g[i].type, g[i].id, &g[i].in);
		g[i].out = g[i].in;
		if (!rc && !strcmp(g[i].type, "graph"))
			rc = kj_topo_add_node(b, KJ_TOPO_EMPTY, "graph_end", g[i].id, &g[i].out);
		if (!rc)
			t->nodes[g[i].in].launch = t->nodes[g[i].out].launch = li;
		t->kernel_nodes += !strcmp(g[i].type, "kernel");
	}
	/* the launch's kernels, memsets and copies tied to their nodes */
	for (size_t i = 0; i < L->nops && !rc; i++) {
		struct iop *o = &L->ops[i];
		if (o->launch != li || strcmp(o->op, "kernel"))
			continue;
		t->launch_kernels++;
		ssize_t k = tie_record(L, &tc, g, o->graph_node, o->exec_graph, "kernel");
		if (k < 0) {
			untied++;
			continue;
		}
		struct kj_topo_node *n = &t->nodes[g[k].in];
		n->kind = KJ_TOPO_KERNEL;
		n->seq_kernel = o->seq_kernel;
		n->unique_id = o->unique_id;
		n->traced_ns = o->traced_ns;
		t->kernels_matched++;
	}
	if (!rc)
		rc = tie_copies(L, la, g, &tc, &untied);
	if (!rc)
		rc = kj_topo_unbuilt(b, "records of no recorded node", untied);
	/* what cannot be rebuilt, by kind */
	for (size_t i = 0; i < ng && !rc; i++) {
		char what[48]; /* a graph_node.type (up to 23) and " without a record" */
		if (g[i].tied || node_kind(g[i].type) >= 0)
			continue;
		if (!strcmp(g[i].type, "kernel") || !strcmp(g[i].type, "memset") || !strcmp(g[i].type, "memcpy"))
			snprintf(what, sizeof(what), "%s without a record", g[i].type);
		else
			snprintf(what, sizeof(what), "%s", g[i].type);
		rc = kj_topo_unbuilt(b, what, 1);
	}
	/* the recorded edges of the graph and of each child graph */
	struct edges_ctx ec = {b, at, g, 0};
	for (size_t i = 0; i < ng && !rc; i++) {
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = g[j].gid == g[i].gid;
		if (!seen)
			rc = kj_store_r_graph_edges_each(L->db, la->pid, g[i].gid, add_gedge, &ec);
	}
	if (!rc)
		rc = kj_topo_unbuilt(b, "edges to unrecorded nodes", ec.dangling);
	/* child graphs between their entry and exit; the graph after the previous stage */
	uint64_t p;
	size_t join;
	if (!rc)
		rc = kj_topo_add_node(b, KJ_TOPO_EMPTY, "join", 0, &join);
	for (size_t i = 0; i < ng && !rc; i++) {
		if (g[i].parent && kj_map_get(at, (uint64_t)g[i].parent, &p)) {
			if (!g[i].has_pred)
				rc = kj_topo_add_edge(b, g[p].in, g[i].in);
			if (!rc && !g[i].has_succ)
				rc = kj_topo_add_edge(b, g[i].out, g[p].out);
			g[p].has_child = 1;
		} else if (!g[i].parent) {
			if (!g[i].has_pred && b->join != SIZE_MAX)
				rc = kj_topo_add_edge(b, b->join, g[i].in);
			if (!rc && !g[i].has_succ)
				rc = kj_topo_add_edge(b, g[i].out, join);
		}
	}
	for (size_t i = 0; i < ng && !rc; i++)
		if (!strcmp(g[i].type, "graph") && !g[i].has_child)
			rc = kj_topo_add_edge(b, g[i].in, g[i].out); /* an empty child graph */
	if (!rc)
		b->join = join;
out:
	free(g);
	kj_map_free(at);
	return rc;
}

/* An operation outside graph launches, chained after the current join. */
int kj_topo_add_eager(struct loader *L, const struct iop *o)
{
	struct kj_topo_builder *b = &L->b;
	struct kj_topo_node *n;
	size_t i;
	int rc, kind = !strcmp(o->op, "kernel") ? KJ_TOPO_KERNEL : !strcmp(o->op, "memset") ? KJ_TOPO_MEMSET
		      : !strcmp(o->op, "memcpy") ? KJ_TOPO_MEMCPY : -1;
	char type[24];
	if (kind < 0)
		return 0; /* events: the chain orders everything already */
	snprintf(type, sizeof(type), "eager_%s", o->op);
	if ((rc = kj_topo_add_node(b, kind, type, 0, &i)))
		return rc;
	n = &b->t->nodes[i];
	n->seq_kernel = o->seq_kernel;
	n->unique_id = o->unique_id;
	n->bytes = o->bytes;
	if (kind == KJ_TOPO_MEMCPY)
		n->copy = copy_kind(o->kind);
	if (kind == KJ_TOPO_MEMSET) {
		struct kj_store_r_launch_op m;
		int found = kj_store_r_memset_find(L->db, o->pid, o->corr, &m);
		if (found < 0)
			return KJ_EDB;
		if (found) {
			n = &b->t->nodes[i];
			n->address = (uint64_t)m.address;
			n->value = (uint32_t)m.value;
			n->element_bytes = (int)m.element_bytes;
		}
	}
	b->t->eager_ops++;
	if (b->join != SIZE_MAX && (rc = kj_topo_add_edge(b, b->join, i)))
		return rc;
	b->join = i;
	return 0;
}
