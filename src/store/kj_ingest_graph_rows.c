/* Spool ingest of a program's CUDA graphs: which launch a graph's kernel came from and which
 * memset node a graph memset ran from (following clone records, else by shape or order), and the
 * rows of the graph records themselves (host calls that issued work, nodes and edges, clones). */
#include "kj_ingest_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "kj_error.h"
#include "kj_grow.h"

/* The launch a kernel activity came from: its own launch, or the launch that created the graph
 * node it ran from (or the node that node was cloned from). NULL when unknown. */
const struct launch_info *ing_node_launch(const struct ingest *in, uint64_t node)
{
	uint64_t v, corr = 0;
	for (int hops = 0; hops < 8 && !corr; hops++) {
		if (kj_map_get(in->nodes, node, &v) && v)
			corr = v;
		else if (!kj_map_get(in->clones, node, &node))
			break;
	}
	return corr && kj_map_get(in->corr, corr, &v) ? &in->launches[v] : NULL;
}

int ing_note_graph_memset_run(struct ingest *in, const struct kj_rec_memcpy *m)
{
	uint64_t v;
	if (!m->is_memset || !m->graph_node_id)
		return 0;
	if (!in->gmset_run_index && !(in->gmset_run_index = kj_map_new()))
		return KJ_ENOMEM;
	if (kj_map_get(in->gmset_run_index, m->graph_node_id, &v))
		return 0;
	struct kj_rec_memcpy *n = kj_grow(in->gmset_runs, &in->cap_gmset_runs, in->ngmset_runs, sizeof(*n), 64);
	if (!n)
		return KJ_ENOMEM;
	in->gmset_runs = n;
	in->gmset_runs[in->ngmset_runs++] = *m;
	return kj_map_put(in->gmset_run_index, m->graph_node_id, 1) ? KJ_ENOMEM : 0;
}

/* The memset node recorded under node id or one it was cloned from: index into gmsets, or -1. */
static ssize_t graph_memset_by_id(const struct ingest *in, uint64_t node)
{
	uint64_t at;
	for (int hops = 0; in->gmset_index && hops < 8; hops++) {
		if (kj_map_get(in->gmset_index, node, &at))
			return (ssize_t)at;
		if (!kj_map_get(in->clones, node, &node))
			break;
	}
	return -1;
}

static int same_shape(const struct kj_rec_graph_memset *g, const struct kj_rec_memcpy *m)
{
	uint64_t rows = g->height > 1 ? g->height : 1;
	return g->value == m->value && g->width * g->element_bytes * rows == m->bytes;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* gid (sorted node ids) with every node whose destination an earlier one has dropped; the new count */
static size_t distinct_destinations(const struct ingest *in, uint64_t *gid, size_t n)
{
	size_t kept = 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t at, addr = 0;
		if (kj_map_get(in->gmset_index, gid[k], &at))
			addr = in->gmsets[at].address;
		int seen = 0;
		for (size_t j = 0; j < kept && !seen; j++) {
			uint64_t aj;
			seen = kj_map_get(in->gmset_index, gid[j], &aj) && in->gmsets[aj].address == addr;
		}
		if (!seen)
			gid[kept++] = gid[k];
	}
	return kept;
}

/* Memset nodes inside child graphs: the driver clones them twice and no clone record leads the
 * exec's node back to the node read at instantiation. Runs and nodes left unmatched are paired by
 * shape (bytes, value), in node-id order (clones are numbered in the order of their originals),
 * and only where a shape has as many nodes as runs; any other memset keeps no destination. */
static void build_order_fallback(struct ingest *in)
{
	size_t nr = in->ngmset_runs, ng = in->ngmsets;
	char *used = calloc(ng ? ng : 1, 1), *done = calloc(nr ? nr : 1, 1);
	uint64_t *rid = calloc(nr ? nr : 1, sizeof(*rid)), *gid = calloc(ng ? ng : 1, sizeof(*gid));
	in->gmset_by_order = kj_map_new();
	if (!used || !done || !rid || !gid || !in->gmset_by_order)
		goto out;
	for (size_t i = 0; i < nr; i++) {
		ssize_t at = graph_memset_by_id(in, in->gmset_runs[i].graph_node_id);
		if (at >= 0)
			used[at] = 1, done[i] = 1;
	}
	for (size_t i = 0; i < nr; i++) {
		if (done[i])
			continue;
		size_t a = 0, b = 0;
		for (size_t j = i; j < nr; j++)
			if (!done[j] && in->gmset_runs[j].bytes == in->gmset_runs[i].bytes &&
			    in->gmset_runs[j].value == in->gmset_runs[i].value)
				rid[a++] = in->gmset_runs[j].graph_node_id, done[j] = 1;
		for (size_t g = 0; g < ng; g++)
			if (!used[g] && same_shape(&in->gmsets[g], &in->gmset_runs[i]))
				gid[b++] = in->gmsets[g].node_id;
		qsort(rid, a, sizeof(*rid), cmp_u64);
		qsort(gid, b, sizeof(*gid), cmp_u64);
		/* a node read at instantiation and again from each of its clones is one destination:
		 * keep the first node (lowest id) of each destination */
		b = distinct_destinations(in, gid, b);
		if (a != b)
			continue;
		for (size_t k = 0; k < a; k++) {
			uint64_t at;
			if (kj_map_get(in->gmset_index, gid[k], &at))
				kj_map_put(in->gmset_by_order, rid[k], at + 1);
		}
	}
out:
	free(used);
	free(done);
	free(rid);
	free(gid);
}

/* The memset node a graph memset ran from, as instantiated (following clones back to the node the
 * program made, else the order fallback); NULL when unknown, or when it is 2D (a pitched memset is
 * not one contiguous range, and replay repeats memsets as one). */
const struct kj_rec_graph_memset *ing_graph_memset_of(struct ingest *in, uint64_t node)
{
	uint64_t at;
	ssize_t i = graph_memset_by_id(in, node);
	if (i < 0 && in->ngmsets) {
		if (!in->gmset_by_order)
			build_order_fallback(in);
		if (in->gmset_by_order && kj_map_get(in->gmset_by_order, node, &at))
			i = (ssize_t)at - 1;
	}
	if (i < 0)
		return NULL;
	return in->gmsets[i].height <= 1 ? &in->gmsets[i] : NULL;
}

static uint64_t shape_key(uint32_t name_id, const uint32_t grid[3], const uint32_t block[3],
			  uint32_t shmem)
{
	uint64_t h = 1469598103934665603ULL ^ name_id;
	for (int i = 0; i < 3; i++)
		h = ((h ^ grid[i]) * 1099511628211ULL ^ block[i]) * 1099511628211ULL;
	return (h ^ shmem) * 1099511628211ULL;
}

/* A graph kernel whose node the clone records do not lead back to (kernel nodes inside child
 * graphs: the driver clones them twice, once into the parent graph and once into the exec): the
 * node-made launch of the same function, grid, block and shared memory, if there is one. */
const struct launch_info *ing_launch_by_shape(struct ingest *in, const struct kj_rec_kernel *k)
{
	uint64_t v;
	if (!in->node_shapes) {
		in->node_shapes = kj_map_new();
		if (!in->node_shapes)
			return NULL;
		for (size_t i = 0; i < in->nlaunches; i++) {
			const struct launch_info *l = &in->launches[i];
			const struct kj_rec_group *g = in->groups[l->group].rec;
			if (!kj_map_get(in->node_corrs, l->correlation, &v))
				continue;
			uint64_t key = shape_key(g->name_id, g->grid, g->block, g->shmem_dynamic);
			if (!kj_map_get(in->node_shapes, key, &v))
				kj_map_put(in->node_shapes, key, i + 1);
		}
	}
	uint32_t grid[3], block[3];
	for (int i = 0; i < 3; i++) {
		grid[i] = (uint32_t)k->grid[i];
		block[i] = (uint32_t)k->block[i];
	}
	if (!kj_map_get(in->node_shapes, shape_key(k->name_id, grid, block, (uint32_t)k->shmem_dynamic), &v))
		return NULL;
	return &in->launches[v - 1];
}

static const char *issue_op_name(uint32_t op)
{
	static const char *const names[] = {"?", "graph_launch", "graph_instantiate", "graph_upload",
					    "memcpy", "memset"};
	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

int ing_put_issue(struct ingest *in, const struct kj_rec_issue *r)
{
	sqlite3_stmt *st = in->st[S_HOSTCALL];
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, r->tid);
	sqlite3_bind_text(st, 3, issue_op_name(r->op), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, r->correlation);
	sqlite3_bind_int64(st, 5, r->start_ns);
	sqlite3_bind_int64(st, 6, r->end_ns);
	sqlite3_bind_int64(st, 7, r->status);
	ing_bind_opt_i64(st, 8, r->graph_id != 0, r->graph_id);
	ing_bind_opt_i64(st, 9, r->exec_id != 0, r->exec_id);
	return ing_step_done(in, st);
}

static const char *node_type_name(uint32_t t)
{
	static const char *const names[] = {"kernel", "memcpy", "memset", "host", "graph", "empty",
					    "event_wait", "event_record", "ext_semaphore_signal",
					    "ext_semaphore_wait", "mem_alloc", "mem_free", "batch_mem_op",
					    "conditional"};
	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

int ing_put_graph_node(struct ingest *in, const struct kj_rec_graph_node *r)
{
	sqlite3_stmt *st = in->st[S_GNODE];
	const uint64_t *deps = (const uint64_t *)(r + 1);
	uint32_t nd = r->ndeps;
	int rc;
	if (sizeof(*r) + (size_t)nd * sizeof(*deps) > r->h.size)
		nd = (uint32_t)((r->h.size - sizeof(*r)) / sizeof(*deps)); /* a cut record: keep what is whole */
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, r->graph_id);
	sqlite3_bind_int64(st, 3, (int64_t)r->node_id);
	ing_bind_opt_i64(st, 4, r->parent_node != 0, (int64_t)r->parent_node);
	sqlite3_bind_text(st, 5, node_type_name(r->type), -1, SQLITE_STATIC);
	ing_bind_opt_i64(st, 6, r->correlation != 0, r->correlation);
	if ((rc = ing_step_done(in, st)) != 0)
		return rc;
	st = in->st[S_GEDGE];
	for (uint32_t d = 0; d < nd && !rc; d++) {
		uint64_t w = deps[d];
		int typed = (w & KJ_EDGE_DATA_FLAG) != 0;
		sqlite3_bind_int64(st, 1, in->pid);
		sqlite3_bind_int64(st, 2, r->graph_id);
		sqlite3_bind_int64(st, 3, (int64_t)(typed ? w & KJ_EDGE_ID_MASK : w));
		sqlite3_bind_int64(st, 4, (int64_t)r->node_id);
		sqlite3_bind_text(st, 5, !typed || !KJ_EDGE_TYPE(w) ? "default"
					 : KJ_EDGE_TYPE(w) == 1 ? "programmatic" : "other", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, typed ? KJ_EDGE_FROM_PORT(w) : 0);
		sqlite3_bind_int64(st, 7, typed ? KJ_EDGE_TO_PORT(w) : 0);
		rc = ing_step_done(in, st);
	}
	return rc;
}

int ing_put_clone(struct ingest *in, const struct kj_rec_graphnode *g)
{
	sqlite3_stmt *st = in->st[S_GCLONE];
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, (int64_t)g->node_id);
	sqlite3_bind_int64(st, 3, (int64_t)g->original_node_id);
	return ing_step_done(in, st);
}
