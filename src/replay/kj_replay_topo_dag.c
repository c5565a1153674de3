/* The topology's graph assembly (nodes, edges, unbuilt kinds, dependency order) and its text,
 * JSON and counts. See kj_replay_topo.h. */
#include "kj_replay_topo_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_grow.h"

int kj_topo_add_node(struct kj_topo_builder *b, int kind, const char *type, int64_t node_id, size_t *idx)
{
	struct kj_replay_topo *t = b->t;
	struct kj_topo_node *nn = kj_grow(t->nodes, &b->capn, t->nnodes, sizeof(*nn), 64);
	if (!nn)
		return KJ_ENOMEM;
	t->nodes = nn;
	struct kj_topo_node *n = &t->nodes[t->nnodes];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	snprintf(n->type, sizeof(n->type), "%s", type ? type : "?");
	n->node_id = node_id;
	n->launch = -1;
	n->seq_kernel = -1;
	n->unique_id = -1;
	n->traced_ns = -1;
	*idx = t->nnodes++;
	return 0;
}

int kj_topo_add_edge_kind(struct kj_topo_builder *b, size_t from, size_t to, unsigned kind)
{
	struct kj_topo_edge *ne = kj_grow(b->e, &b->cape, b->ne, sizeof(*ne), 64);
	if (!ne)
		return KJ_ENOMEM;
	b->e = ne;
	if ((kind & 3u) != KJ_TOPO_EDGE_PROGRAMMATIC || b->t->nodes[from].kind != KJ_TOPO_KERNEL ||
	    b->t->nodes[to].kind != KJ_TOPO_KERNEL)
		kind = KJ_TOPO_EDGE_FULL;
	b->e[b->ne++] = (struct kj_topo_edge){from, to, (uint8_t)kind};
	return 0;
}

int kj_topo_add_edge(struct kj_topo_builder *b, size_t from, size_t to)
{
	return kj_topo_add_edge_kind(b, from, to, KJ_TOPO_EDGE_FULL);
}

int kj_topo_unbuilt(struct kj_topo_builder *b, const char *type, int64_t n)
{
	struct kj_replay_topo *t = b->t;
	if (n <= 0)
		return 0;
	for (size_t i = 0; i < t->nunbuilt; i++)
		if (!strcmp(t->unbuilt[i].type, type)) {
			t->unbuilt[i].count += n;
			return 0;
		}
	struct kj_topo_unbuilt *nu = kj_grow(t->unbuilt, &b->capu, t->nunbuilt, sizeof(*nu), 8);
	if (!nu)
		return KJ_ENOMEM;
	t->unbuilt = nu;
	snprintf(nu[t->nunbuilt].type, sizeof(nu[0].type), "%s", type);
	nu[t->nunbuilt++].count = n;
	return 0;
}

/* Edges by source, then target. */
static int edge_cmp(const void *a, const void *b)
{
	const struct kj_topo_edge *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

int kj_topo_finish(struct kj_topo_builder *b)
{
	struct kj_replay_topo *t = b->t;
	size_t n = t->nnodes, ne = 0, done = 0;
	size_t *indeg = calloc(n + 1, sizeof(*indeg)), *first = calloc(n + 2, sizeof(*first));
	size_t *order = malloc((n + 1) * sizeof(*order)), *pos = malloc((n + 1) * sizeof(*pos));
	struct kj_topo_node *nodes = malloc((n + 1) * sizeof(*nodes));
	int rc = KJ_ENOMEM;
	if (!indeg || !first || !order || !pos || !nodes)
		goto out;
	/* edges sorted by source, duplicates merged: first[v] .. first[v + 1] are v's successors */
	qsort(b->e, b->ne, sizeof(*b->e), edge_cmp);
	for (size_t i = 0; i < b->ne; i++)
		if (!ne || edge_cmp(&b->e[i], &b->e[ne - 1]))
			b->e[ne++] = b->e[i];
		else if (b->e[i].kind == KJ_TOPO_EDGE_FULL)
			b->e[ne - 1].kind = KJ_TOPO_EDGE_FULL; /* a full dependency holds the other */
	b->ne = ne;
	for (size_t i = 0; i < ne; i++) {
		indeg[b->e[i].to]++;
		first[b->e[i].from + 1]++;
	}
	for (size_t v = 0; v < n; v++)
		first[v + 1] += first[v];
	/* Kahn's order; among ready nodes the earliest created first, so a chain keeps its order */
	size_t head = 0;
	for (size_t v = 0; v < n; v++)
		if (!indeg[v])
			order[done++] = v;
	while (head < done) {
		size_t v = order[head++];
		for (size_t i = first[v]; i < first[v + 1]; i++)
			if (--indeg[b->e[i].to] == 0)
				order[done++] = b->e[i].to;
	}
	if (done < n) {
		/* a cycle: nothing can be built in order; the nodes on it are named */
		if ((rc = kj_topo_unbuilt(b, "nodes on a dependency cycle", (int64_t)(n - done))))
			goto out;
		for (size_t v = 0; v < n; v++)
			if (indeg[v])
				order[done++] = v;
	}
	for (size_t i = 0; i < n; i++) {
		pos[order[i]] = i;
		nodes[i] = t->nodes[order[i]];
	}
	/* deps grouped by target in the new order */
	free(t->deps);
	free(t->dep_kind);
	t->deps = malloc((ne + 1) * sizeof(*t->deps));
	t->dep_kind = malloc(ne + 1);
	if (!t->deps || !t->dep_kind)
		goto out;
	for (size_t i = 0; i < n; i++)
		nodes[i].ndeps = 0;
	for (size_t i = 0; i < ne; i++)
		nodes[pos[b->e[i].to]].ndeps++;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		nodes[i].dep0 = at;
		at += nodes[i].ndeps;
		nodes[i].ndeps = 0;
	}
	t->programmatic_edges = 0;
	for (size_t i = 0; i < ne; i++) {
		struct kj_topo_node *d = &nodes[pos[b->e[i].to]];
		t->dep_kind[d->dep0 + d->ndeps] = b->e[i].kind;
		t->programmatic_edges += (b->e[i].kind & 3u) == KJ_TOPO_EDGE_PROGRAMMATIC;
		t->deps[d->dep0 + d->ndeps++] = pos[b->e[i].from];
	}
	t->ndeps = ne;
	free(t->nodes);
	t->nodes = nodes;
	nodes = NULL;
	rc = 0;
out:
	free(indeg);
	free(first);
	free(order);
	free(pos);
	free(nodes);
	free(b->e);
	b->e = NULL;
	b->ne = b->cape = 0;
	return rc;
}

void kj_replay_topo_free(struct kj_replay_topo *t)
{
	free(t->nodes);
	free(t->deps);
	free(t->dep_kind);
	free(t->unbuilt);
	t->nodes = NULL;
	t->deps = NULL;
	t->dep_kind = NULL;
	t->unbuilt = NULL;
	t->nnodes = t->ndeps = t->nunbuilt = 0;
}

void kj_replay_topo_unbuilt_text(const struct kj_replay_topo *t, char *buf, size_t len)
{
	size_t at = 0;
	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < t->nunbuilt && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s %" PRId64, i ? ", " : "", t->unbuilt[i].type,
				 t->unbuilt[i].count);
		if (w < 0)
			break;
		at += (size_t)w;
	}
}

size_t kj_replay_topo_count(const struct kj_replay_topo *t, int kind)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		n += t->nodes[i].kind == kind;
	return n;
}

void kj_replay_topo_print(FILE *f, const struct kj_replay_topo *t)
{
	fprintf(f, "graph topology: %" PRId64 " graph launch(es), %" PRId64 " recorded nodes, %" PRId64
		   " edges; %" PRId64 "/%" PRId64 " kernel nodes tied to the iteration's launches%s%s%s\n",
		t->graph_launches, t->graph_nodes, t->graph_edges, t->kernels_matched, t->kernel_nodes,
		t->tie[0] ? " (by " : "", t->tie, t->tie[0] ? ")" : "");
	fprintf(f, "  to build: %zu kernel, %zu memset, %zu memcpy, %zu dependency-only nodes, %zu edges",
		kj_replay_topo_count(t, KJ_TOPO_KERNEL), kj_replay_topo_count(t, KJ_TOPO_MEMSET),
		kj_replay_topo_count(t, KJ_TOPO_MEMCPY), kj_replay_topo_count(t, KJ_TOPO_EMPTY), t->ndeps);
	if (t->programmatic_edges)
		fprintf(f, " (%" PRId64 " programmatic: the next kernel starts early, PDL, as recorded)",
			t->programmatic_edges);
	if (t->eager_ops)
		fprintf(f, "; %" PRId64 " operations outside graph launches, chained in order", t->eager_ops);
	fputc('\n', f);
	size_t scratch = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		scratch += t->nodes[i].kind == KJ_TOPO_MEMSET && !t->nodes[i].address;
	if (scratch)
		fprintf(f, "  %zu memset node(s) write scratch memory: their destination was not recorded\n", scratch);
	if (!t->rebuildable)
		fprintf(f, "  %s\n", t->reason);
}

/* The build kind's name in JSON. */
static const char *kind_name(int kind)
{
	static const char *const names[] = {"kernel", "memset", "memcpy", "dependency"};
	return kind >= 0 && kind <= KJ_TOPO_EMPTY ? names[kind] : "?";
}

/* Each node of the graph to build, in build order, with its dependencies. */
static json_t *nodes_json(const struct kj_replay_topo *t)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < t->nnodes; i++) {
		const struct kj_topo_node *n = &t->nodes[i];
		json_t *deps = json_array();
		for (size_t d = 0; deps && d < n->ndeps; d++)
			json_array_append_new(deps, json_integer((json_int_t)t->deps[n->dep0 + d]));
		json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:o, s:o, s:o, s:o, s:I, s:o}", "index",
			(json_int_t)i, "build", kind_name(n->kind), "type", n->type,
			"node_id", n->node_id ? json_integer(n->node_id) : json_null(),
			"seq_kernel", n->seq_kernel >= 0 ? json_integer(n->seq_kernel) : json_null(),
			"unique_id", n->unique_id >= 0 ? json_integer(n->unique_id) : json_null(),
			"traced_ns", n->traced_ns >= 0 ? json_integer(n->traced_ns) : json_null(),
			"bytes", (json_int_t)n->bytes, "deps", deps ? deps : json_null()));
	}
	return arr;
}

char *kj_replay_topo_json(const struct kj_replay_topo *t, int with_nodes)
{
	json_t *root = json_object(), *ub = json_object();
	char *text = NULL;
	if (!root || !ub) {
		json_decref(root);
		json_decref(ub);
		return NULL;
	}
	for (size_t i = 0; i < t->nunbuilt; i++)
		json_object_set_new(ub, t->unbuilt[i].type, json_integer(t->unbuilt[i].count));
	json_object_set_new(root, "iteration", json_integer(t->iteration));
	json_object_set_new(root, "graph_launches", json_integer(t->graph_launches));
	json_object_set_new(root, "graph_nodes", json_integer(t->graph_nodes));
	json_object_set_new(root, "graph_edges", json_integer(t->graph_edges));
	json_object_set_new(root, "programmatic_edges", json_integer(t->programmatic_edges));
	json_object_set_new(root, "kernel_nodes", json_integer(t->kernel_nodes));
	json_object_set_new(root, "kernels_matched", json_integer(t->kernels_matched));
	json_object_set_new(root, "launch_kernels", json_integer(t->launch_kernels));
	json_object_set_new(root, "sequence_kernels", json_integer(t->seq_kernels));
	json_object_set_new(root, "eager_ops", json_integer(t->eager_ops));
	json_object_set_new(root, "tie", t->tie[0] ? json_string(t->tie) : json_null());
	json_object_set_new(root, "build",
			    json_pack("{s:I, s:I, s:I, s:I, s:I}", "kernel",
				      (json_int_t)kj_replay_topo_count(t, KJ_TOPO_KERNEL), "memset",
				      (json_int_t)kj_replay_topo_count(t, KJ_TOPO_MEMSET), "memcpy",
				      (json_int_t)kj_replay_topo_count(t, KJ_TOPO_MEMCPY), "dependency_only",
				      (json_int_t)kj_replay_topo_count(t, KJ_TOPO_EMPTY), "edges", (json_int_t)t->ndeps));
	json_object_set_new(root, "rebuildable", json_boolean(t->rebuildable));
	json_object_set_new(root, "not_rebuilt", ub);
	json_object_set_new(root, "reason", t->reason[0] ? json_string(t->reason) : json_null());
	if (with_nodes)
		json_object_set_new(root, "nodes", nodes_json(t));
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return text;
}
