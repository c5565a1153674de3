/* Between the topology loader (kj_replay_topo.c) and its graph builder (kj_replay_topo_dag.c). */
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

#endif
