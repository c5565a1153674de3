/* The kept iteration's graph launches as the program built them: every node of each launched
 * graph (child graphs flattened) with its recorded dependencies, kernel nodes tied to the
 * iteration's captured launches, and the node kinds that cannot be rebuilt named with their
 * counts. CPU only: `kjoule replay` prints and stores it, the replay worker builds the CUDA graph
 * from it (the same function reads the same database in both). docs/replay.md, "Topology". */
#ifndef KJ_REPLAY_TOPO_H
#define KJ_REPLAY_TOPO_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum kj_topo_kind {
	KJ_TOPO_KERNEL, /* a captured launch: seq_kernel names it */
	KJ_TOPO_MEMSET, /* bytes, value, element_bytes, address (0: not recorded: scratch memory) */
	KJ_TOPO_MEMCPY, /* bytes and copy kind, between scratch buffers as the sequence replay does */
	KJ_TOPO_EMPTY   /* a dependency only: empty, event record/wait, a child graph's entry/exit,
			   the join between launches; and placeholders of nodes not rebuilt */
};

/* An edge's kind: a full dependency, or programmatic (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC, the
 * next kernel may start before this one ends: PDL) with its source port in bits 2..3. */
#define KJ_TOPO_EDGE_FULL 0u
#define KJ_TOPO_EDGE_PROGRAMMATIC 1u
#define KJ_TOPO_EDGE_PORT(k) (((unsigned)(k) >> 2) & 3u)

/** One node of the graph to build, in an order where every dependency comes first. */
struct kj_topo_node {
	int kind;             /* enum kj_topo_kind */
	char type[24];        /* graph_node.type as recorded ("join", "graph_end", "eager_*": added by kjoule) */
	int64_t node_id;      /* graph_node.node_id; 0 for nodes kjoule adds */
	int64_t launch;       /* index of its graph launch in kj_replay_topo; -1 eager op or join */
	int64_t seq_kernel;   /* KERNEL: index among the iteration's kernel ops (ordinal, id order) */
	int64_t unique_id;    /* KERNEL: its unique kernel (-1 unknown) */
	int64_t traced_ns;    /* KERNEL/MEMSET/MEMCPY of a graph launch: its traced duration (-1 unknown) */
	int64_t bytes;
	uint64_t address;
	uint32_t value;
	int element_bytes;
	int copy;             /* MEMCPY: 0 HtoD, 1 DtoH, 2 DtoD, 3 HtoH */
	size_t dep0, ndeps;   /* its dependencies: deps[dep0 .. dep0 + ndeps), indices of earlier nodes */
};

/** A node kind that cannot be rebuilt, and how many nodes of it the launches hold. */
struct kj_topo_unbuilt {
	char type[40];
	int64_t count;
};

struct kj_replay_topo {
	int64_t iteration;
	int64_t graph_launches;   /* graph launches in the kept iteration */
	int64_t graph_nodes;      /* nodes recorded for their graphs (child graphs' included), per launch summed */
	int64_t graph_edges;      /* recorded edges of those graphs, summed likewise */
	int64_t kernel_nodes;     /* kernel nodes of those graphs */
	int64_t kernels_matched;  /* kernel nodes tied to one of the iteration's kernel ops */
	int64_t launch_kernels;   /* the iteration's kernel ops that ran inside its graph launches */
	int64_t eager_ops;        /* kernels, copies, memsets issued outside graph launches (chained in order) */
	int64_t seq_kernels;      /* all kernel ops of the iteration */
	struct kj_topo_node *nodes;
	size_t nnodes;
	size_t *deps;
	uint8_t *dep_kind;        /* per deps[] entry: KJ_TOPO_EDGE_FULL, or programmatic | port << 2 */
	size_t ndeps;
	int64_t programmatic_edges; /* edges rebuilt programmatic (PDL): the next kernel may start early */
	struct kj_topo_unbuilt *unbuilt;
	size_t nunbuilt;
	int rebuildable;          /* 1: every node can be rebuilt; 0: reason says why not */
	char reason[512];
	char tie[32];             /* how executed nodes were tied to recorded ones: "clones" or "node-index" */
};

/**
 * @brief The topology of the kept iteration's graph launches (see the file comment): for each
 *        graph launch, host_call's exec id -> the instantiation's graph id -> graph_node rows
 *        (child graphs through parent_node_id, flattened between an entry and an exit node) and
 *        graph_edge rows; the launch's kernel, memset and memcpy records tied to their nodes
 *        (graph_node_clone where the run has it, else CUPTI's node-index numbering, checked by
 *        node kind); launches chained in order, operations outside them chained between them.
 *        A node that cannot be rebuilt (host, conditional, memory, semaphore, unknown kinds; a
 *        kernel node without a captured launch; a node its edges name but the run lacks) is
 *        counted in unbuilt and makes rebuildable 0, with the reason; never dropped silently.
 * @return 0 (t filled, rebuildable or not); KJ_ENOTFOUND when the iteration holds no graph
 *         launch (or the run lacks the tables to say: then t->reason says which); KJ_EDB; KJ_ENOMEM.
 */
int kj_replay_topo_load(sqlite3 *db, int64_t iteration, struct kj_replay_topo *t);

/** @brief Free what kj_replay_topo_load allocated; accepts a zeroed struct. */
void kj_replay_topo_free(struct kj_replay_topo *t);

/** @brief "host 1, conditional 2" (the unbuilt kinds with counts) into buf; "" when none. */
void kj_replay_topo_unbuilt_text(const struct kj_replay_topo *t, char *buf, size_t len);

/** @brief Count of nodes of one kind (enum kj_topo_kind) in the graph to build. */
size_t kj_replay_topo_count(const struct kj_replay_topo *t, int kind);

/** @brief Text summary: launches, nodes, edges, kernels tied, what cannot be rebuilt and why. */
void kj_replay_topo_print(FILE *f, const struct kj_replay_topo *t);

/** @brief The same as JSON text (malloc'ed, caller frees), NULL on allocation failure; with_nodes:
 *         also every node to build (index, build kind, recorded type and id, seq_kernel,
 *         unique_id, traced_ns, bytes, deps) in build order. */
char *kj_replay_topo_json(const struct kj_replay_topo *t, int with_nodes);

/* ---- results: the topology replay's per-node times and its stored summary ---- */

/** One node's time inside the replayed topology graph (worker line KJ_NODE). */
struct kj_topo_node_time {
	int64_t node;         /* index into kj_replay_topo.nodes */
	int64_t unique_id;
	int runs;
	int64_t min_ns, median_ns, max_ns;
	double mean_ns;
};

/** @brief Worker side: one "KJ_NODE" line. */
void kj_replay_topo_emit_node(FILE *f, const struct kj_topo_node_time *n);
/** @brief Parse a "KJ_NODE" line. @return 1 parsed, 0 another line, KJ_EINVAL malformed. */
int kj_replay_parse_topo_node(const char *line, struct kj_topo_node_time *n);

/**
 * @brief Store the topology's summary in replay_topology (status: "rebuilt" when the worker
 *        replayed it, "fallback" when a node could not be rebuilt and the linear chain stands,
 *        "failed" when the worker could not build or run it: why in reason) and the per-node
 *        times in replay_graph_node; one transaction, INSERT OR REPLACE (older rows of the
 *        iteration's nodes are removed first).
 */
int kj_replay_topo_store(sqlite3 *db, const struct kj_replay_topo *t, const char *status,
			 const char *reason, const struct kj_topo_node_time *nt, size_t nnt);

#endif
