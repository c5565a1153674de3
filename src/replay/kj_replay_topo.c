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


/* One key for a (process, correlation id) pair (correlations are 32-bit). */
static uint64_t pc_key(int64_t pid, int64_t corr)
{
	return ((uint64_t)pid << 32) ^ (uint64_t)(uint32_t)corr;
}

/* The iteration's operations in the worker's order (ordinal, id), kernel ops numbered. */
static int load_ops(struct loader *L, int64_t iteration)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int64_t nk = 0;
	if (kj_db_prepare(L->db,
			  "SELECT s.op, coalesce(s.pid, k.pid), s.correlation_id, k.graph_node_id, k.graph_id,"
			  " k.end_ns - k.start_ns, p.unique_id, s.bytes, s.kind FROM sequence_op s"
			  " LEFT JOIN kernel k ON k.id = s.kernel_id LEFT JOIN launch_params p ON p.id = s.launch_params_id"
			  " WHERE s.iteration = ?1 ORDER BY s.ordinal, s.id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, iteration);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *op = (const char *)sqlite3_column_text(st, 0);
		if (!op)
			continue; /* the worker skips these too */
		struct iop *no = kj_grow(L->ops, &cap, L->nops, sizeof(*no), 256);
		if (!no) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
		L->ops = no;
		struct iop *o = &L->ops[L->nops++];
		memset(o, 0, sizeof(*o));
		snprintf(o->op, sizeof(o->op), "%s", op);
		o->pid = kj_db_col_i64(st, 1, -1);
		o->corr = kj_db_col_i64(st, 2, -1);
		o->graph_node = kj_db_col_i64(st, 3, 0);
		o->exec_graph = kj_db_col_i64(st, 4, -1);
		o->traced_ns = kj_db_col_i64(st, 5, -1);
		o->unique_id = kj_db_col_i64(st, 6, -1);
		o->bytes = kj_db_col_i64(st, 7, 0);
		const char *kind = (const char *)sqlite3_column_text(st, 8);
		snprintf(o->kind, sizeof(o->kind), "%s", kind ? kind : "");
		o->seq_kernel = !strcmp(op, "kernel") ? nk++ : -1;
		o->launch = -1;
	}
	sqlite3_finalize(st);
	return 0;
}

/* The iteration's graph launches (host_call rows of its operations' correlations), in order. */
static int find_launches(struct loader *L)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	uint64_t v;
	if (kj_db_prepare(L->db, "SELECT graph_exec_id, start_ns FROM host_call WHERE pid = ?1 AND"
				 " correlation_id = ?2 AND op = 'graph_launch' LIMIT 1", &st))
		return KJ_EDB;
	for (size_t i = 0; i < L->nops; i++) {
		struct iop *o = &L->ops[i];
		if (kj_map_get(L->launch_of, pc_key(o->pid, o->corr), &v)) {
			o->launch = v ? (int)v - 1 : -1;
			continue;
		}
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, o->pid);
		sqlite3_bind_int64(st, 2, o->corr);
		int found = sqlite3_step(st) == SQLITE_ROW;
		if (found) {
			struct ilaunch *nl = kj_grow(L->l, &cap, L->nl, sizeof(*nl), 8);
			if (!nl) {
				sqlite3_finalize(st);
				return KJ_ENOMEM;
			}
			L->l = nl;
			L->l[L->nl] = (struct ilaunch){o->pid, o->corr, kj_db_col_i64(st, 0, -1),
						       kj_db_col_i64(st, 1, 0), 0};
			o->launch = (int)L->nl++;
		}
		if (kj_map_put(L->launch_of, pc_key(o->pid, o->corr), found ? (uint64_t)o->launch + 1 : 0)) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
	}
	sqlite3_finalize(st);
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
	L.have_etype = caps->graph_edge_type;
	L.have_mdst = caps->memset_address;
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
