/* The kept iteration's graph launches read back into a graph to rebuild: launches, their
 * graphs' nodes and edges, and the launch's records tied to the nodes. See kj_replay_topo.h. */
#include "kj_replay_topo_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"
#include "kj_store_r_topo.h"


/* One key for a (process, correlation id) pair (correlations are 32-bit). */
static uint64_t pc_key(int64_t pid, int64_t corr)
{
	return ((uint64_t)pid << 32) ^ (uint64_t)(uint32_t)corr;
}

/* The walk over the iteration's operations: the loader, its array's capacity, kernels so far. */
struct ops_ctx {
	struct loader *L;
	size_t cap;
	int64_t nk;
};

static int add_op(void *ctx, const struct kj_store_r_seq_op *r)
{
	struct ops_ctx *c = ctx;
	struct loader *L = c->L;
	if (!r->op)
		return 0; /* the worker skips these too */
	struct iop *no = kj_grow(L->ops, &c->cap, L->nops, sizeof(*no), 256);
	if (!no)
		return KJ_ENOMEM;
	L->ops = no;
	struct iop *o = &L->ops[L->nops++];
	memset(o, 0, sizeof(*o));
	snprintf(o->op, sizeof(o->op), "%s", r->op);
	o->pid = r->pid;
	o->corr = r->corr;
	o->graph_node = r->graph_node;
	o->exec_graph = r->exec_graph;
	o->traced_ns = r->traced_ns;
	o->unique_id = r->unique_id;
	o->bytes = r->bytes;
	snprintf(o->kind, sizeof(o->kind), "%s", r->kind ? r->kind : "");
	o->seq_kernel = !strcmp(r->op, "kernel") ? c->nk++ : -1;
	o->launch = -1;
	return 0;
}

/* The iteration's operations in the worker's order (ordinal, id), kernel ops numbered. */
static int load_ops(struct loader *L, int64_t iteration)
{
	struct ops_ctx c = {L, 0, 0};
	return kj_store_r_seq_ops_each(L->db, iteration, add_op, &c);
}

/* The iteration's graph launches (host_call rows of its operations' correlations), in order. */
static int find_launches(struct loader *L)
{
	struct kj_store_r_lookup *q = NULL;
	size_t cap = 0;
	uint64_t v;
	int64_t exec_id, start_ns;
	if (kj_store_r_graph_launch_open(L->db, &q))
		return KJ_EDB;
	for (size_t i = 0; i < L->nops; i++) {
		struct iop *o = &L->ops[i];
		if (kj_map_get(L->launch_of, pc_key(o->pid, o->corr), &v)) {
			o->launch = v ? (int)v - 1 : -1;
			continue;
		}
		int found = kj_store_r_graph_launch_find(q, o->pid, o->corr, &exec_id, &start_ns);
		if (found) {
			struct ilaunch *nl = kj_grow(L->l, &cap, L->nl, sizeof(*nl), 8);
			if (!nl) {
				kj_store_r_lookup_close(q);
				return KJ_ENOMEM;
			}
			L->l = nl;
			L->l[L->nl] = (struct ilaunch){o->pid, o->corr, exec_id, start_ns, 0};
			o->launch = (int)L->nl++;
		}
		if (kj_map_put(L->launch_of, pc_key(o->pid, o->corr), found ? (uint64_t)o->launch + 1 : 0)) {
			kj_store_r_lookup_close(q);
			return KJ_ENOMEM;
		}
	}
	kj_store_r_lookup_close(q);
	return 0;
}

int kj_replay_topo_load(sqlite3 *db, int64_t iteration, struct kj_replay_topo *t)
{
	struct loader L;
	int rc = 0;
	memset(t, 0, sizeof(*t));
	memset(&L, 0, sizeof(L));
	t->iteration = iteration;
	L.db = db;
	L.b.t = t;
	L.b.join = SIZE_MAX;
	const struct kj_db_caps *caps = kj_db_caps(db);
	if (!caps->sequence_op_kernel_id || !caps->host_call || !caps->graph_node || !caps->graph_edge) {
		snprintf(t->reason, sizeof(t->reason), "the run was recorded before graph launches and their "
			 "nodes were (no host_call/graph_node/graph_edge tables or sequence_op.kernel_id)");
		return KJ_ENOTFOUND;
	}
	L.have_clones = caps->graph_node_clone;
	L.launch_of = kj_map_new();
	if (!L.launch_of)
		return KJ_ENOMEM;
	if ((rc = load_ops(&L, iteration)) || (rc = find_launches(&L)))
		goto out;
	for (size_t i = 0; i < L.nops; i++)
		t->seq_kernels += !strcmp(L.ops[i].op, "kernel");
	if (!L.nl) {
		int64_t orphans = 0;
		for (size_t i = 0; i < L.nops; i++)
			orphans += L.ops[i].graph_node != 0;
		snprintf(t->reason, sizeof(t->reason), orphans ?
			 "its graph kernels' launches were not recorded (a run from before cuGraphLaunch was)" :
			 "the iteration holds no graph launch");
		rc = KJ_ENOTFOUND;
		goto out;
	}
	for (size_t i = 0; i < L.nops && !rc; i++) {
		struct iop *o = &L.ops[i];
		if (o->launch >= 0 && !L.l[o->launch].built) {
			L.l[o->launch].built = 1;
			rc = kj_topo_add_launch(&L, o->launch);
		} else if (o->launch < 0 && o->graph_node) {
			rc = kj_topo_unbuilt(&L.b, "graph kernels without a recorded launch", 1);
		} else if (o->launch < 0) {
			rc = kj_topo_add_eager(&L, o);
		}
	}
	if (!rc)
		rc = kj_topo_finish(&L.b);
	if (rc)
		goto out;
	snprintf(t->tie, sizeof(t->tie), "%s%s%s%s%s", L.used_clones ? "clones" : "",
		 L.used_clones && L.used_index ? "+" : "", L.used_index ? "node-index" : "",
		 (L.used_clones || L.used_index) && L.used_flat ? "+" : "", L.used_flat ? "child-order" : "");
	t->rebuildable = t->nunbuilt == 0;
	if (!t->rebuildable) {
		char ub[400];
		kj_replay_topo_unbuilt_text(t, ub, sizeof(ub));
		snprintf(t->reason, sizeof(t->reason), "not rebuilt as recorded (%s): the iteration is "
			 "replayed as one linear chain instead", ub);
	}
out:
	free(L.b.e);
	free(L.ops);
	free(L.l);
	kj_map_free(L.launch_of);
	kj_map_free(L.clones);
	if (rc && rc != KJ_ENOTFOUND)
		kj_replay_topo_free(t);
	return rc;
}
