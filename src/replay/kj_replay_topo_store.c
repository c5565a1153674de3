/* The topology replay's results: the worker's per-node lines and their storage. See kj_replay_topo.h. */
#include "kj_replay_topo.h"

#include <inttypes.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_replay.h"

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

/* Text, or NULL when s is NULL or empty. */
static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s && *s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

int kj_replay_topo_store(sqlite3 *db, const struct kj_replay_topo *t, const char *status,
			 const char *reason, const struct kj_topo_node_time *nt, size_t nnt)
{
	sqlite3_stmt *st = NULL, *del = NULL;
	char when[32], ub[512];
	int rc = KJ_EDB;
	kj_replay_now(when);
	kj_replay_topo_unbuilt_text(t, ub, sizeof(ub));
	if (kj_db_exec(db, "BEGIN IMMEDIATE", "begin replay_topology"))
		return KJ_EDB;
	if (kj_db_exec(db, KJ_REPLAY_TOPO_TABLES, "create replay_topology") ||
	    kj_db_prepare(db, "INSERT OR REPLACE INTO replay_topology(iteration, status, graph_launches,"
			      " nodes, edges, kernel_nodes, kernels_matched, not_rebuilt, reason, tie, replayed_at)"
			      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", &st))
		goto out;
	sqlite3_bind_int64(st, 1, t->iteration);
	sqlite3_bind_text(st, 2, status, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, t->graph_launches);
	sqlite3_bind_int64(st, 4, t->graph_nodes);
	sqlite3_bind_int64(st, 5, t->graph_edges);
	sqlite3_bind_int64(st, 6, t->kernel_nodes);
	sqlite3_bind_int64(st, 7, t->kernels_matched);
	bind_text_or_null(st, 8, ub);
	bind_text_or_null(st, 9, reason);
	bind_text_or_null(st, 10, t->tie);
	sqlite3_bind_text(st, 11, when, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		kj_errorf("database: storing replay_topology: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (kj_db_prepare(db, "DELETE FROM replay_graph_node WHERE iteration = ?1", &del))
		goto out;
	sqlite3_bind_int64(del, 1, t->iteration);
	if (sqlite3_step(del) != SQLITE_DONE)
		goto out;
	if (kj_db_prepare(db, "INSERT OR REPLACE INTO replay_graph_node(iteration, node_index, node_id, type,"
			      " unique_id, runs, min_ns, median_ns, max_ns, mean_ns, traced_ns, replayed_at)"
			      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", &st))
		goto out;
	for (size_t i = 0; i < nnt; i++) {
		const struct kj_topo_node_time *n = &nt[i];
		if (n->node < 0 || (size_t)n->node >= t->nnodes || n->runs <= 0)
			continue; /* a line for a node this topology lacks: the worker read another run */
		const struct kj_topo_node *tn = &t->nodes[n->node];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, t->iteration);
		sqlite3_bind_int64(st, 2, n->node);
		if (tn->node_id)
			sqlite3_bind_int64(st, 3, tn->node_id);
		else
			sqlite3_bind_null(st, 3);
		sqlite3_bind_text(st, 4, tn->type, -1, SQLITE_TRANSIENT);
		if (tn->unique_id >= 0)
			sqlite3_bind_int64(st, 5, tn->unique_id);
		else
			sqlite3_bind_null(st, 5);
		sqlite3_bind_int(st, 6, n->runs);
		sqlite3_bind_int64(st, 7, n->min_ns);
		sqlite3_bind_int64(st, 8, n->median_ns);
		sqlite3_bind_int64(st, 9, n->max_ns);
		sqlite3_bind_double(st, 10, n->mean_ns);
		if (tn->traced_ns >= 0)
			sqlite3_bind_int64(st, 11, tn->traced_ns);
		else
			sqlite3_bind_null(st, 11);
		sqlite3_bind_text(st, 12, when, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			kj_errorf("database: storing replay_graph_node: %s", sqlite3_errmsg(db));
			goto out;
		}
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(del);
	if (rc) {
		kj_db_exec(db, "ROLLBACK", "rollback replay_topology");
		return rc;
	}
	return kj_db_exec(db, "COMMIT", "commit replay_topology");
}
