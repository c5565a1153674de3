/* The topology replay's results: the worker's per-node lines and their storage. See kj_replay_topo.h. */
#include "kj_replay_topo.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_replay.h"
#include "kj_store_r_results.h"

void kj_replay_topo_emit_node(FILE *f, const struct kj_topo_node_time *n)
{
	fprintf(f, "KJ_NODE\tnode=%" PRId64 "\tunique=%" PRId64 "\truns=%d\tmin=%" PRId64 "\tmedian=%" PRId64
		   "\tmax=%" PRId64 "\tmean=%.9g\n",
		n->node, n->unique_id, n->runs, n->min_ns, n->median_ns, n->max_ns, n->mean_ns);
}

int kj_replay_parse_topo_node(const char *line, struct kj_topo_node_time *n)
{
	if (strncmp(line, "KJ_NODE\t", 8))
		return 0;
	memset(n, 0, sizeof(*n));
	if (sscanf(line, "KJ_NODE\tnode=%" SCNd64 "\tunique=%" SCNd64 "\truns=%d\tmin=%" SCNd64
			 "\tmedian=%" SCNd64 "\tmax=%" SCNd64 "\tmean=%lf",
		   &n->node, &n->unique_id, &n->runs, &n->min_ns, &n->median_ns, &n->max_ns, &n->mean_ns) != 7 ||
	    n->node < 0 || n->runs < 0)
		return KJ_EINVAL;
	return 1;
}

int kj_replay_topo_store(sqlite3 *db, const struct kj_replay_topo *t, const char *status,
			 const char *reason, const struct kj_topo_node_time *nt, size_t nnt)
{
	struct kj_store_r_graph_node *rows = calloc(nnt ? nnt : 1, sizeof(*rows));
	char when[32], ub[512];
	size_t n = 0;
	int rc;
	if (!rows)
		return KJ_ENOMEM;
	kj_replay_now(when);
	kj_replay_topo_unbuilt_text(t, ub, sizeof(ub));
	for (size_t i = 0; i < nnt; i++) {
		const struct kj_topo_node_time *nd = &nt[i];
		if (nd->node < 0 || (size_t)nd->node >= t->nnodes || nd->runs <= 0)
			continue; /* a line for a node this topology lacks: the worker read another run */
		const struct kj_topo_node *tn = &t->nodes[nd->node];
		rows[n++] = (struct kj_store_r_graph_node){nd->node, tn->node_id, tn->type, tn->unique_id, nd->runs,
							   nd->min_ns, nd->median_ns, nd->max_ns, nd->mean_ns,
							   tn->traced_ns};
	}
	struct kj_store_r_topology top = {t->iteration, status, t->graph_launches, t->graph_nodes, t->graph_edges,
					  t->kernel_nodes, t->kernels_matched, ub, reason, t->tie};
	rc = kj_store_r_topo_put(db, when, &top, rows, n);
	free(rows);
	return rc;
}
