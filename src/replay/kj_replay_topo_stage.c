/* The kept iteration's graph launches and eager operations added to the graph being rebuilt, one
 * stage at a time: a launch's recorded nodes and edges, its records tied to them. See kj_replay_topo.h. */
#include "kj_replay_topo_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"

/* A recorded node of the launch's graph (child graphs' too). */
struct gnode {
	int64_t id, parent, gid;
	char type[24];
	size_t in, out;     /* its topo nodes (the same but for a child graph: entry and exit) */
	int tied, has_pred, has_succ, has_child;
};

/* graph_node_clone rows of one process, once per process. */
static int load_clones(struct loader *L, int64_t pid)
{
	sqlite3_stmt *st = NULL;
	if (!L->have_clones || (L->clones && L->clones_pid == pid))
		return 0;
	kj_map_free(L->clones);
	L->clones = kj_map_new();
	L->clones_pid = pid;
	if (!L->clones)
		return KJ_ENOMEM;
	if (kj_db_prepare(L->db, "SELECT node_id, original_node_id FROM graph_node_clone WHERE pid = ?1", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while (sqlite3_step(st) == SQLITE_ROW)
		if (kj_map_put(L->clones, (uint64_t)sqlite3_column_int64(st, 0),
			       (uint64_t)sqlite3_column_int64(st, 1))) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
	sqlite3_finalize(st);
	return 0;
}

/* The launch's recorded graph: top-level nodes, then each child graph's, breadth first. */
static int load_nodes(struct loader *L, int64_t pid, int64_t gid, struct gnode **out, size_t *n,
		      struct kj_map *at)
{
	sqlite3_stmt *top = NULL, *child = NULL;
	size_t cap = 0;
	int rc = 0;
	*out = NULL;
	*n = 0;
	if (kj_db_prepare(L->db, "SELECT node_id, type, graph_id FROM graph_node WHERE pid = ?1 AND"
				 " graph_id = ?2 AND parent_node_id IS NULL ORDER BY node_id", &top) ||
	    kj_db_prepare(L->db, "SELECT node_id, type, graph_id FROM graph_node WHERE pid = ?1 AND"
				 " parent_node_id = ?2 ORDER BY node_id", &child)) {
		sqlite3_finalize(top);
		return KJ_EDB;
	}
	sqlite3_bind_int64(top, 1, pid);
	sqlite3_bind_int64(top, 2, gid);
	sqlite3_stmt *st = top;
	int64_t parent = 0;
	for (size_t next = 0;;) {
		while (!rc && sqlite3_step(st) == SQLITE_ROW) {
			uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
			if (kj_map_get(at, id, NULL))
				continue; /* a node listed twice (a child graph reached twice): once */
			struct gnode *ng = kj_grow(*out, &cap, *n, sizeof(*ng), 64);
			if (!ng) {
				rc = KJ_ENOMEM;
				break;
			}
			*out = ng;
			struct gnode *g = &ng[*n];
			memset(g, 0, sizeof(*g));
			g->id = (int64_t)id;
			g->parent = parent;
			g->gid = sqlite3_column_int64(st, 2);
			const char *type = (const char *)sqlite3_column_text(st, 1);
			snprintf(g->type, sizeof(g->type), "%s", type ? type : "unknown");
			rc = kj_map_put(at, id, *n);
			(*n)++;
		}
		/* the next child graph node not yet expanded */
		while (next < *n && strcmp((*out)[next].type, "graph"))
			next++;
		if (rc || next >= *n)
			break;
		parent = (*out)[next++].id;
		sqlite3_reset(child);
		sqlite3_bind_int64(child, 1, pid);
		sqlite3_bind_int64(child, 2, parent);
		st = child;
	}
	sqlite3_finalize(top);
	sqlite3_finalize(child);
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

/* The launch's memsets and copies tied to their nodes (NULL columns of older runs read as 0). */
static int tie_copies(struct loader *L, const struct ilaunch *la, struct gnode *g, const struct tie_ctx *c,
		      int64_t *untied)
{
	sqlite3_stmt *st = NULL;
	char sql[400];
	struct kj_replay_topo *t = L->b.t;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0)
			snprintf(sql, sizeof(sql), "SELECT graph_node_id, bytes, end_ns - start_ns, value, %s, %s"
						   " FROM memset WHERE pid = ?1 AND correlation_id = ?2 ORDER BY start_ns",
				 L->have_mdst ? "address" : "NULL", L->have_mdst ? "element_bytes" : "NULL");
		else
			snprintf(sql, sizeof(sql), "SELECT graph_node_id, bytes, end_ns - start_ns, kind"
						   " FROM memcpy WHERE pid = ?1 AND correlation_id = ?2 ORDER BY start_ns");
		if (kj_db_prepare(L->db, sql, &st))
			return KJ_EDB;
		sqlite3_bind_int64(st, 1, la->pid);
		sqlite3_bind_int64(st, 2, la->corr);
		while (sqlite3_step(st) == SQLITE_ROW) {
			ssize_t i = tie_record(L, c, g, kj_db_col_i64(st, 0, 0), -1, pass ? "memcpy" : "memset");
			if (i < 0) {
				(*untied)++;
				continue;
			}
			struct kj_topo_node *n = &t->nodes[g[i].in];
			n->kind = pass ? KJ_TOPO_MEMCPY : KJ_TOPO_MEMSET;
			n->bytes = kj_db_col_i64(st, 1, 0);
			n->traced_ns = kj_db_col_i64(st, 2, -1);
			if (pass) {
				const char *k = (const char *)sqlite3_column_text(st, 3);
				n->copy = copy_kind(k ? k : "");
			} else {
				n->value = (uint32_t)kj_db_col_i64(st, 3, 0);
				n->address = (uint64_t)kj_db_col_i64(st, 4, 0);
				n->element_bytes = (int)kj_db_col_i64(st, 5, 1);
			}
		}
		sqlite3_finalize(st);
	}
	return 0;
}

/* The graph id a launch's exec was instantiated from (the latest instantiation before it), -1. */
static int64_t launch_graph(struct loader *L, const struct ilaunch *la)
{
	sqlite3_stmt *st = NULL;
	int64_t gid = -1;
	if (kj_db_prepare(L->db, "SELECT graph_id FROM host_call WHERE pid = ?1 AND op = 'graph_instantiate'"
				 " AND graph_exec_id = ?2 AND graph_id IS NOT NULL"
				 " ORDER BY start_ns <= ?3 DESC, start_ns DESC LIMIT 1", &st))
		return -1;
	sqlite3_bind_int64(st, 1, la->pid);
	sqlite3_bind_int64(st, 2, la->exec_id);
	sqlite3_bind_int64(st, 3, la->start_ns);
	if (sqlite3_step(st) == SQLITE_ROW)
		gid = kj_db_col_i64(st, 0, -1);
	sqlite3_finalize(st);
	return gid;
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
	sqlite3_stmt *st = NULL;
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
	if (!rc && kj_db_prepare(L->db, L->have_etype ? "SELECT from_node_id, to_node_id, type = 'programmatic',"
							" from_port FROM graph_edge WHERE pid = ?1 AND graph_id = ?2"
						      : "SELECT from_node_id, to_node_id, 0, 0 FROM graph_edge"
							" WHERE pid = ?1 AND graph_id = ?2", &st))
		rc = KJ_EDB;
	int64_t dangling = 0;
	for (size_t i = 0; i < ng && !rc; i++) {
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = g[j].gid == g[i].gid;
		if (seen)
			continue;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, la->pid);
		sqlite3_bind_int64(st, 2, g[i].gid);
		while (!rc && sqlite3_step(st) == SQLITE_ROW) {
			uint64_t a, z;
			t->graph_edges++;
			if (!kj_map_get(at, (uint64_t)sqlite3_column_int64(st, 0), &a) ||
			    !kj_map_get(at, (uint64_t)sqlite3_column_int64(st, 1), &z)) {
				dangling++;
				continue;
			}
			g[a].has_succ = g[z].has_pred = 1;
			unsigned kind = sqlite3_column_int(st, 2) ? KJ_TOPO_EDGE_PROGRAMMATIC |
									  (unsigned)(sqlite3_column_int(st, 3) & 3) << 2
								: KJ_TOPO_EDGE_FULL;
			rc = kj_topo_add_edge_kind(b, g[a].out, g[z].in, kind);
		}
	}
	sqlite3_finalize(st);
	if (!rc)
		rc = kj_topo_unbuilt(b, "edges to unrecorded nodes", dangling);
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
	if (kind == KJ_TOPO_MEMSET && L->have_mdst) {
		sqlite3_stmt *st = NULL;
		if (kj_db_prepare(L->db, "SELECT address, value, element_bytes FROM memset WHERE pid = ?1"
					 " AND correlation_id = ?2 LIMIT 1", &st))
			return KJ_EDB;
		sqlite3_bind_int64(st, 1, o->pid);
		sqlite3_bind_int64(st, 2, o->corr);
		if (sqlite3_step(st) == SQLITE_ROW) {
			n = &b->t->nodes[i];
			n->address = (uint64_t)kj_db_col_i64(st, 0, 0);
			n->value = (uint32_t)kj_db_col_i64(st, 1, 0);
			n->element_bytes = (int)kj_db_col_i64(st, 2, 1);
		}
		sqlite3_finalize(st);
	}
	b->t->eager_ops++;
	if (b->join != SIZE_MAX && (rc = kj_topo_add_edge(b, b->join, i)))
		return rc;
	b->join = i;
	return 0;
}
