/* What the topology replay reads of a run: the kept iteration's operations, its graph launches,
 * their graphs' recorded nodes, edges and clones, and the memsets and copies those launches ran.
 * Plain rows (NULL columns read as the defaults each field names); the replay floor ties them. */
#ifndef KJ_STORE_R_TOPO_H
#define KJ_STORE_R_TOPO_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_store_r_plan.h"

/** One operation of a captured iteration with its kernel row and launch (texts valid during the
 *  callback; op NULL where NULL). */
struct kj_store_r_seq_op {
	const char *op;
	int64_t pid;        /* sequence_op.pid, else its kernel's; -1 */
	int64_t corr;       /* -1 */
	int64_t graph_node; /* its kernel's graph_node_id; 0 */
	int64_t exec_graph; /* its kernel's graph_id; -1 */
	int64_t traced_ns;  /* its kernel's duration; -1 */
	int64_t unique_id;  /* its launch's unique kernel; -1 */
	int64_t bytes;      /* 0 */
	const char *kind;   /* NULL where NULL */
};
/** @brief Call fn per operation of iteration in order (ordinal, id); fn returning non-zero stops.
 *  The run must have sequence_op.kernel_id. @return 0, fn's value, KJ_EDB (message printed). */
int kj_store_r_seq_ops_each(sqlite3 *db, int64_t iteration,
			    int (*fn)(void *ctx, const struct kj_store_r_seq_op *o), void *ctx);

/** @brief A lookup for kj_store_r_graph_launch_find. @return 0 or KJ_EDB (message printed). */
int kj_store_r_graph_launch_open(sqlite3 *db, struct kj_store_r_lookup **out);
/** @brief The graph launch of process pid with correlation corr: its exec (-1 where NULL) and host
 *  start (0). @return 1 found, 0 none. */
int kj_store_r_graph_launch_find(struct kj_store_r_lookup *q, int64_t pid, int64_t corr, int64_t *exec_id,
				 int64_t *start_ns);

/** @brief The graph exec_id of process pid was instantiated from: the latest instantiation at or
 *  before start_ns, else the latest after it; -1 when none (or on error: message printed). */
int64_t kj_store_r_exec_graph(sqlite3 *db, int64_t pid, int64_t exec_id, int64_t start_ns);

/** @brief Call fn(ctx, node, original) per graph_node_clone row of process pid; fn returning
 *  non-zero stops. @return 0, fn's value, KJ_EDB (message printed). */
int kj_store_r_graph_clones_each(sqlite3 *db, int64_t pid, int (*fn)(void *ctx, int64_t node, int64_t original),
				 void *ctx);

/** A recorded graph node (type valid during the callback; NULL where NULL; graph_id 0). */
struct kj_store_r_graph_node_rec {
	int64_t node_id;
	const char *type;
	int64_t graph_id;
};
/** @brief Call fn per top-level node of graph gid of process pid, by node id; fn returning
 *  non-zero stops. @return 0, fn's value, KJ_EDB (message printed). */
int kj_store_r_graph_top_nodes_each(sqlite3 *db, int64_t pid, int64_t gid,
				    int (*fn)(void *ctx, const struct kj_store_r_graph_node_rec *g), void *ctx);
/** @brief The same for the nodes of the child graph of node parent. */
int kj_store_r_graph_child_nodes_each(sqlite3 *db, int64_t pid, int64_t parent,
				      int (*fn)(void *ctx, const struct kj_store_r_graph_node_rec *g), void *ctx);

/** A recorded edge: programmatic (PDL) with its source port where the run records edge types. */
struct kj_store_r_graph_edge {
	int64_t from, to;
	int programmatic, from_port;
};
/** @brief Call fn per edge of graph gid of process pid; fn returning non-zero stops. Runs without
 *  edge types give full dependencies. @return 0, fn's value, KJ_EDB (message printed). */
int kj_store_r_graph_edges_each(sqlite3 *db, int64_t pid, int64_t gid,
				int (*fn)(void *ctx, const struct kj_store_r_graph_edge *e), void *ctx);

/** A memset or copy a graph launch ran (texts valid during the callback). */
struct kj_store_r_launch_op {
	int64_t graph_node_id; /* 0 where NULL */
	int64_t bytes;         /* 0 */
	int64_t traced_ns;     /* -1 */
	/* memsets: value 0, address 0 and element_bytes 1 where NULL or not recorded (older runs) */
	int64_t value, address, element_bytes;
	const char *kind;      /* copies: memcpy.kind; NULL where NULL */
};
/** @brief Call fn per memset of process pid with correlation corr, by start; then
 *  kj_store_r_launch_copies_each the same for its copies. @return 0 or KJ_EDB (message printed). */
int kj_store_r_launch_memsets_each(sqlite3 *db, int64_t pid, int64_t corr,
				   void (*fn)(void *ctx, const struct kj_store_r_launch_op *o), void *ctx);
int kj_store_r_launch_copies_each(sqlite3 *db, int64_t pid, int64_t corr,
				  void (*fn)(void *ctx, const struct kj_store_r_launch_op *o), void *ctx);

/** @brief The first memset of process pid with correlation corr, into *out (address 0, value 0,
 *  element_bytes 1 where NULL). @return 1 found, 0 none or the run records no memset addresses,
 *  KJ_EDB (message printed). */
int kj_store_r_memset_find(sqlite3 *db, int64_t pid, int64_t corr, struct kj_store_r_launch_op *out);

#endif
