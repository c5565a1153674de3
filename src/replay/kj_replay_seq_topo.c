/* kjoule replay --sequence --graph, the topology side: whether the kept iteration's graph
 * launches can be rebuilt as recorded, what the worker made of it, storage and report.
 * docs/replay.md, "Topology". */
#include "kj_replay_seq_topo.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"

int kj_replay_seq_topo_plan(sqlite3 *db, const char *run, int64_t iteration, int asked,
			    struct kj_replay_topo *t, int *use)
{
	*use = 0;
	int rc = kj_replay_topo_load(db, iteration, t);
	if (rc == KJ_ENOTFOUND) {
		if (asked > 0)
			kj_warnf("%s: --topology: iteration %" PRId64 " cannot be replayed with its graph "
				 "topology: %s; the linear chain is replayed", run, iteration, t->reason);
		return rc;
	}
	if (rc) {
		kj_errorf("%s: reading the graph topology of iteration %" PRId64 ": %s", run, iteration,
			  kj_strerror(rc));
		return rc;
	}
	*use = t->rebuildable;
	if (!t->rebuildable)
		kj_warnf("%s: iteration %" PRId64 ": %s", run, iteration, t->reason);
	return 0;
}

/* The topology mode among the worker's results, or NULL. */
static const struct kj_replay_seq *topo_mode(const struct kj_replay_seq *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].mode, "topology"))
			return &s[i];
	return NULL;
}

/* Why there is no topology result: the worker stops an iteration that failed in an earlier
 * mode (a fault on the replay's data) before it builds the topology graph. */
static const char *no_topo_reason(const struct kj_replay_seq *s, size_t n, char *buf, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].status, "failed") && s[i].error[0]) {
			snprintf(buf, len, "not attempted: the iteration failed first as %s (%s)", s[i].mode, s[i].error);
			return buf;
		}
	return "the worker gave no topology result";
}

int kj_replay_seq_topo_finish(sqlite3 *db, const struct kj_replay_topo *t, int use,
			      const struct kj_replay_seq *s, size_t n,
			      const struct kj_topo_node_time *nt, size_t nnt)
{
	const struct kj_replay_seq *m = topo_mode(s, n);
	const char *status = "fallback", *reason = t->reason;
	char why[600];
	if (use) {
		int ok = m && strcmp(m->status, "failed") && m->runs > 0;
		status = ok ? "rebuilt" : "failed";
		reason = ok ? NULL : m && m->error[0] ? m->error : no_topo_reason(s, n, why, sizeof(why));
	}
	return kj_replay_topo_store(db, t, status, reason, use ? nt : NULL, use ? nnt : 0);
}

/* Σ of the per-node medians and of the same nodes' traced durations; the count of nodes timed. */
static size_t node_sums(const struct kj_replay_topo *t, const struct kj_topo_node_time *nt, size_t nnt,
			double *replayed, double *traced)
{
	size_t k = 0;
	*replayed = *traced = 0;
	for (size_t i = 0; i < nnt; i++) {
		if (nt[i].node < 0 || (size_t)nt[i].node >= t->nnodes || nt[i].runs <= 0)
			continue;
		const struct kj_topo_node *tn = &t->nodes[nt[i].node];
		if (tn->traced_ns < 0)
			continue;
		*replayed += (double)nt[i].median_ns;
		*traced += (double)tn->traced_ns;
		k++;
	}
	return k;
}

void kj_replay_seq_topo_print(FILE *f, const struct kj_replay_topo *t, int use,
			      const struct kj_replay_seq *s, size_t n,
			      const struct kj_topo_node_time *nt, size_t nnt)
{
	const struct kj_replay_seq *m = topo_mode(s, n);
	char why[600];
	kj_replay_topo_print(f, t);
	if (use && (!m || !strcmp(m->status, "failed")))
		fprintf(f, "  topology replay failed: %s\n",
			m && m->error[0] ? m->error : no_topo_reason(s, n, why, sizeof(why)));
	double rep, tr;
	size_t k = node_sums(t, nt, nnt, &rep, &tr);
	if (use && k)
		fprintf(f, "  per node (CUPTI, each kernel node where the topology graph runs it): %zu of %zu "
			   "kernel nodes; Σ medians %.4f ms vs traced %.4f ms (%+.1f%%); replay_graph_node\n",
			k, kj_replay_topo_count(t, KJ_TOPO_KERNEL), rep / 1e6, tr / 1e6,
			tr > 0 ? 100.0 * (rep - tr) / tr : 0.0);
	else if (use && m && strcmp(m->status, "failed"))
		fprintf(f, "  per node: no figures (no CUPTI in this worker, or its records could not all be "
			   "tied to nodes)\n");
}

char *kj_replay_seq_topo_json(char *seq_json, const struct kj_replay_topo *t, int have, int use,
			      const struct kj_topo_node_time *nt, size_t nnt, int with_nodes)
{
	json_t *root = seq_json ? json_loads(seq_json, 0, NULL) : json_object();
	char *text = NULL, *tj = have ? kj_replay_topo_json(t, with_nodes) : NULL;
	free(seq_json);
	if (!root || (have && !tj)) {
		json_decref(root);
		free(tj);
		return NULL;
	}
	json_t *o = tj ? json_loads(tj, 0, NULL) : json_null();
	free(tj);
	if (have && o) {
		double rep, tr;
		size_t k = node_sums(t, nt, nnt, &rep, &tr);
		json_object_set_new(o, "replayed", json_boolean(use));
		json_object_set_new(o, "nodes_timed", json_integer((json_int_t)k));
		json_object_set_new(o, "nodes_median_sum_ns", k ? json_real(rep) : json_null());
		json_object_set_new(o, "nodes_traced_sum_ns", k ? json_real(tr) : json_null());
	}
	json_object_set_new(root, "topology", o ? o : json_null());
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return text;
}
