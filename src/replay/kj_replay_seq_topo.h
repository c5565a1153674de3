/* The topology side of replay --sequence --graph (kj_replay_seq_run.c): whether the kept
 * iteration's graph launches can be rebuilt, and the outcome stored and reported. */
#ifndef KJ_REPLAY_SEQ_TOPO_H
#define KJ_REPLAY_SEQ_TOPO_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "kj_replay.h"
#include "kj_replay_topo.h"

/**
 * @brief Load the iteration's topology into t; *use = 1 when it can be rebuilt. asked > 0: the
 *        user said --topology, so an iteration without graph launches is said on stderr; a
 *        topology that cannot be rebuilt is always said (kinds, counts, the linear chain stands).
 * @return 0 (t loaded); KJ_ENOTFOUND (no graph launch: nothing to store); other KJ_E* (said).
 */
int kj_replay_seq_topo_plan(sqlite3 *db, const char *run, int64_t iteration, int asked,
			    struct kj_replay_topo *t, int *use);

/** @brief Store the outcome in replay_topology/replay_graph_node: rebuilt, failed (with the
 *         worker's error) or fallback (t's reason). */
int kj_replay_seq_topo_finish(sqlite3 *db, const struct kj_replay_topo *t, int use,
			      const struct kj_replay_seq *s, size_t n,
			      const struct kj_topo_node_time *nt, size_t nnt);

/** @brief The topology's lines of the text report: what was rebuilt or why not, per-node sums. */
void kj_replay_seq_topo_print(FILE *f, const struct kj_replay_topo *t, int use,
			      const struct kj_replay_seq *s, size_t n,
			      const struct kj_topo_node_time *nt, size_t nnt);

/** @brief seq_json (taken, freed; NULL: start empty) with a "topology" object added (null when
 *         have is 0; with_nodes: with its node list). @return malloc'ed text, NULL on failure. */
char *kj_replay_seq_topo_json(char *seq_json, const struct kj_replay_topo *t, int have, int use,
			      const struct kj_topo_node_time *nt, size_t nnt, int with_nodes);

#endif
