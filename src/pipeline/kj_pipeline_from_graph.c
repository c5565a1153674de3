/* `kjoule pipeline --from` on a kept iteration that ran as CUDA graph launches: a graph's kernels
 * were launched when it was captured, so they are grouped by the NVTX ranges open at capture
 * (kernel.capture_range_id and its parent_id ancestors), not by the ranges around the launch. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"
#include "kj_pipeline_from.h"
#include "kj_store_w_pipeline.h"

#define MAX_LEVELS 64

struct crange {
	int64_t id, parent, depth; /* parent -1: top level */
	char name[96];
};

struct cranges {
	struct crange *v;
	size_t n, cap;
	struct kj_map *by_id; /* nvtx_range.id -> index in v */
};

static void cranges_free(struct cranges *c)
{
	free(c->v);
	kj_map_free(c->by_id);
}

/* One capture range appended to c and indexed by its id. */
static int crange_add(const struct kj_store_nvtx_row *row, void *ud)
{
	struct cranges *c = ud;
	struct crange *nv = kj_grow(c->v, &c->cap, c->n, sizeof(*nv), 64);
	if (!nv)
		return KJ_ENOMEM;
	c->v = nv;
	struct crange *r = &nv[c->n];
	r->id = row->id;
	r->parent = row->parent;
	r->depth = row->depth;
	snprintf(r->name, sizeof(r->name), "%s", row->name ? row->name : "?");
	return kj_map_put(c->by_id, (uint64_t)r->id, (uint64_t)c->n++);
}

/* The capture ranges of the iteration's graph kernels and all their ancestors, indexed by id. */
static int cranges_load(sqlite3 *db, int64_t iteration, struct cranges *c)
{
	memset(c, 0, sizeof(*c));
	if (!(c->by_id = kj_map_new()))
		return KJ_ENOMEM;
	return kj_store_capture_ranges(db, iteration, crange_add, c);
}

/* The indices of range id and its ancestors, outermost first, in chain[0..return). On a dangling
 * id or parent_id, or a chain over MAX_LEVELS (a cycle), -1 with err naming the run and field. */
static int chain_of(const struct cranges *c, int64_t id, size_t *chain, const char *run, int64_t ordinal,
		    char *err, size_t errlen)
{
	size_t tmp[MAX_LEVELS];
	int n = 0;
	int64_t cur = id, child = -1;
	while (cur >= 0) {
		uint64_t i;
		if (!kj_map_get(c->by_id, (uint64_t)cur, &i)) {
			if (child < 0)
				snprintf(err, errlen, "%s: kernel.capture_range_id %" PRId64 " (sequence_op ordinal %"
					 PRId64 ") names no nvtx_range row", run, cur, ordinal);
			else
				snprintf(err, errlen, "%s: nvtx_range %" PRId64 ": parent_id %" PRId64
					 " names no nvtx_range row", run, child, cur);
			return -1;
		}
		if (n == MAX_LEVELS) {
			snprintf(err, errlen, "%s: nvtx_range %" PRId64 ": parent_id chain deeper than %d levels"
				 " (a cycle?)", run, id, MAX_LEVELS);
			return -1;
		}
		tmp[n++] = (size_t)i;
		child = cur;
		cur = c->v[i].parent;
	}
	for (int k = 0; k < n; k++)
		chain[k] = tmp[n - 1 - k];
	return n;
}

/* The capture root: of the ranges (by name, level by level from the top) that every captured
 * kernel of the iteration was captured inside, the one named as the iteration range if any, else
 * the outermost; none in common: depth -1 (the capture itself). Sets g->root, g->root_depth and
 * g->deepest. Returns 0, or -1 with err set on bad data. */
static int capture_root(const struct cranges *c, const struct kj_from_op *ops, size_t nops, const char *kept,
			struct kj_from_graph *g, const char *run, char *err, size_t errlen)
{
	size_t first[MAX_LEVELS], chain[MAX_LEVELS];
	int common = -1, max_len = 0;
	for (size_t i = 0; i < nops; i++) {
		if (!ops[i].graph || ops[i].capture < 0)
			continue;
		int n = chain_of(c, ops[i].capture, chain, run, ops[i].ordinal, err, errlen);
		if (n < 0)
			return -1;
		if (common < 0) {
			memcpy(first, chain, (size_t)n * sizeof(*chain));
			common = n;
		}
		int k = 0;
		while (k < common && k < n && !strcmp(c->v[first[k]].name, c->v[chain[k]].name))
			k++;
		common = k;
		if (n > max_len)
			max_len = n;
	}
	int root = common > 0 ? 0 : -1;
	for (int k = 0; k < common; k++)
		if (!strcmp(c->v[first[k]].name, kept)) {
			root = k;
			break;
		}
	g->root_depth = root >= 0 ? c->v[first[root]].depth : -1;
	snprintf(g->root, sizeof(g->root), "%s", root >= 0 ? c->v[first[root]].name : "");
	g->deepest = max_len > 0 ? (int64_t)max_len - 1 - root : 0;
	return 0;
}

/* The group of one captured kernel: its capture range's ancestor at depth `target` (region NULL),
 * or its outermost ancestor named region; KJ_FROM_GAP / KJ_FROM_OUT when there is none. */
static void assign_one(const struct cranges *c, const size_t *chain, int n, int64_t target, const char *region,
		       struct kj_from_op *op)
{
	op->key = region ? KJ_FROM_OUT : KJ_FROM_GAP;
	for (int k = 0; k < n; k++) {
		const struct crange *r = &c->v[chain[k]];
		if (region ? !strcmp(r->name, region) : r->depth == target) {
			op->key = r->id;
			snprintf(op->name, sizeof(op->name), "%s", r->name);
			return;
		}
	}
}

/* Copies, memsets and events of a graph launch take the group of the graph kernel before them
 * of the same launch, or after them at its start. */
static void spread_to_graph_ops(struct kj_from_op *ops, size_t nops)
{
	for (int pass = 0; pass < 2; pass++) {
		const struct kj_from_op *near = NULL;
		for (size_t j = 0; j < nops; j++) {
			size_t i = pass ? nops - 1 - j : j;
			struct kj_from_op *o = &ops[i];
			if (o->graph)
				near = o;
			else if (o->in_graph && near && near->corr == o->corr && o->key == KJ_FROM_PENDING) {
				o->key = near->key;
				snprintf(o->name, sizeof(o->name), "%s", near->name);
			}
		}
	}
}

int kj_from_graph_assign(sqlite3 *db, const char *run, int64_t iteration, const char *kept, int depth,
			 const char *region, struct kj_from_op *ops, size_t nops, struct kj_from_graph *g,
			 char *err, size_t errlen)
{
	struct cranges c;
	size_t chain[MAX_LEVELS];
	int rc;
	memset(g, 0, sizeof(*g));
	g->root_depth = -1;
	for (size_t i = 0; i < nops; i++) {
		g->graph_ops += ops[i].graph != 0;
		g->captured += ops[i].graph && ops[i].capture >= 0;
	}
	if (!g->captured)
		return 0;
	if ((rc = cranges_load(db, iteration, &c)))
		goto out;
	if (capture_root(&c, ops, nops, kept, g, run, err, errlen)) {
		rc = KJ_EINVAL;
		goto out;
	}
	for (size_t i = 0; i < nops; i++) {
		struct kj_from_op *o = &ops[i];
		if (!o->in_graph)
			continue;
		if (!o->graph) {
			o->key = KJ_FROM_PENDING; /* takes its kernel neighbour's group below */
			continue;
		}
		o->key = region ? KJ_FROM_OUT : KJ_FROM_GAP;
		if (o->capture < 0)
			continue;
		int n = chain_of(&c, o->capture, chain, run, o->ordinal, err, errlen);
		if (n < 0) {
			rc = KJ_EINVAL;
			goto out;
		}
		assign_one(&c, chain, n, g->root_depth + depth, region, o);
		g->assigned += o->key > 0;
	}
	spread_to_graph_ops(ops, nops);
	for (size_t i = 0; i < nops; i++) /* a launch with no kernel at all: a gap */
		if (ops[i].key == KJ_FROM_PENDING)
			ops[i].key = region ? KJ_FROM_OUT : KJ_FROM_GAP;
out:
	cranges_free(&c);
	return rc;
}
