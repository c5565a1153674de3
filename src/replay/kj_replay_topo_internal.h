/* Between the topology loader (kj_replay_topo.c), its stages (kj_replay_topo_stage.c: each graph
 * launch or eager operation added) and its graph builder (kj_replay_topo_dag.c). */
#ifndef KJ_REPLAY_TOPO_INTERNAL_H
#define KJ_REPLAY_TOPO_INTERNAL_H

#include "kj_replay_topo.h"

struct kj_topo_edge {
	size_t from, to;
	uint8_t kind; /* KJ_TOPO_EDGE_FULL or programmatic | port << 2 */
};

/** The graph being assembled: nodes in creation order, edges as pairs until kj_topo_finish. */
struct kj_topo_builder {
	struct kj_replay_topo *t;
	size_t capn, capu, cape;
	struct kj_topo_edge *e;
	size_t ne;
	size_t join; /* the node everything after the last stage depends on; SIZE_MAX: none yet */
};

/** @brief Append a node (fields other than kind/type/node_id zero, launch and ids -1); its index in *idx. */
int kj_topo_add_node(struct kj_topo_builder *b, int kind, const char *type, int64_t node_id, size_t *idx);
/** @brief Append the full dependency from -> to. */
int kj_topo_add_edge(struct kj_topo_builder *b, size_t from, size_t to);
/** @brief Append from -> to of a kind (KJ_TOPO_EDGE_*); programmatic only between two kernel
 *         nodes, a full dependency otherwise. */
int kj_topo_add_edge_kind(struct kj_topo_builder *b, size_t from, size_t to, unsigned kind);
/** @brief Count n nodes (or problems) of a kind that cannot be rebuilt. */
int kj_topo_unbuilt(struct kj_topo_builder *b, const char *type, int64_t n);
/** @brief Put the nodes in dependency order, duplicate edges merged, deps filled; a cycle is
 *         counted as unbuilt. Frees the edge pairs. */
int kj_topo_finish(struct kj_topo_builder *b);

/* ---- the loader's state (kj_replay_topo.c, kj_replay_topo_stage.c) ---- */
/* One operation of the kept iteration, in order. */
struct iop {
	char op[16];
	int64_t pid, corr, graph_node, exec_graph, traced_ns, unique_id, bytes;
	int64_t seq_kernel; /* kernel ops: their index among the iteration's kernels */
	char kind[16];
	int launch;         /* index into launches, -1 outside graph launches */
};

/* One graph launch of the iteration. */
struct ilaunch {
	int64_t pid, corr, exec_id, start_ns;
	int built;
};

struct loader {
	sqlite3 *db;
	struct kj_topo_builder b;
	struct iop *ops;
	size_t nops;
	struct ilaunch *l;
	size_t nl;
	struct kj_map *launch_of; /* (pid, correlation) -> launch index + 1 */
	int have_clones, used_clones, used_index, used_flat;
	struct kj_map *clones;    /* node -> the node it was cloned from (clones_pid's) */
	int64_t clones_pid;
};

/** @brief One graph launch (L->l[li]) as a stage of the graph: its recorded nodes and edges after the
 *         current join, its records tied to them; 0 or a negative KJ_E* code. */
int kj_topo_add_launch(struct loader *L, int li);
/** @brief An operation outside graph launches, chained after the current join. */
int kj_topo_add_eager(struct loader *L, const struct iop *o);

#endif
