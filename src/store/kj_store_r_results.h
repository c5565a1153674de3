/* Replay results written into the run: per-kernel outcomes, timings, energy and verification
 * (replay_kernel, replay_energy, replay_energy_cold, replay_verify), whole-iteration modes
 * (replay_sequence) and the rebuilt topology (replay_topology, replay_graph_node). Plain rows:
 * the replay floor converts its own structs; nothing here decides what is measured. */
#ifndef KJ_STORE_R_RESULTS_H
#define KJ_STORE_R_RESULTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** replay_verify: created by the first `replay --verify` (older runs lack it). */
#define KJ_REPLAY_VERIFY_TABLE                                                                     \
	"CREATE TABLE IF NOT EXISTS replay_verify(unique_id INTEGER PRIMARY KEY, result TEXT,"   \
	" buffers INTEGER, bytes INTEGER, differing_bytes INTEGER, replayed_at TEXT)"

/** replay_energy_cold: created by the first `replay --energy` with the cold cache (older runs
 *  lack it); energy_mj_per_launch is the kernel's with its data out of L2, flush_mj the flush's. */
#define KJ_REPLAY_ENERGY_COLD_TABLE                                                                \
	"CREATE TABLE IF NOT EXISTS replay_energy_cold(unique_id INTEGER PRIMARY KEY, launches INTEGER," \
	" seconds REAL, energy_mj_per_launch REAL, energy_unc_mj REAL, ns_per_launch REAL,"       \
	" flush_mj REAL, flush_unc_mj REAL, replayed_at TEXT)"

/** replay_energy_b2b: created by the first `replay --energy` (older runs lack it); a kernel whose
 *  energy was measured spaced out because back to back it drew the GPU into its power cap keeps
 *  its back-to-back window here: time and energy per launch at the SM clock the cap left it. */
#define KJ_REPLAY_ENERGY_B2B_TABLE                                                                 \
	"CREATE TABLE IF NOT EXISTS replay_energy_b2b(unique_id INTEGER PRIMARY KEY,"              \
	" ns_per_launch REAL, energy_mj_per_launch REAL, sm_clock_mean_mhz REAL, replayed_at TEXT)"

/** replay_topology and replay_graph_node: created by the first topology replay (older runs lack them). */
#define KJ_REPLAY_TOPO_TABLES                                                                       \
	"CREATE TABLE IF NOT EXISTS replay_topology(iteration INTEGER PRIMARY KEY, status TEXT,"   \
	" graph_launches INTEGER, nodes INTEGER, edges INTEGER, kernel_nodes INTEGER,"              \
	" kernels_matched INTEGER, not_rebuilt TEXT, reason TEXT, tie TEXT, replayed_at TEXT);"     \
	"CREATE TABLE IF NOT EXISTS replay_graph_node(iteration INTEGER, node_index INTEGER,"       \
	" node_id INTEGER, type TEXT, unique_id INTEGER, runs INTEGER, min_ns INTEGER,"             \
	" median_ns INTEGER, max_ns INTEGER, mean_ns REAL, traced_ns INTEGER, replayed_at TEXT,"    \
	" PRIMARY KEY(iteration, node_index))"

/** A window's clock state: the SM clock's mean/min/max and NVML's clocks-event reason bits. Each
 *  is stored NULL where not read (mean not above 0 or not finite, min/max not above 0, reasons < 0). */
struct kj_store_r_clocks {
	double sm_mean_mhz;
	int sm_min_mhz, sm_max_mhz;
	int64_t throttle_reasons;
};

/** Timing statistics of one cache mode; runs <= 0: not measured, the six columns stored NULL. */
struct kj_store_r_timing {
	int runs;
	int64_t min_ns, median_ns, max_ns;
	double mean_ns, stdev_ns;
};

/** One replay_kernel row. error and reason: NULL or "" stored NULL. */
struct kj_store_r_kernel {
	int64_t unique_id;
	const char *cache; /* "warm" | "cold" */
	struct kj_store_r_timing t;
	const char *status, *error, *reason;
};

/** One replay_verify row. */
struct kj_store_r_verify {
	int64_t unique_id;
	const char *result; /* identical | differs | no-snapshot */
	int64_t buffers, bytes, differing_bytes;
};

/** One replay_energy row. idle_mw stored NULL when < 0 or NaN, dynamic_mj_per_launch when NaN;
 *  data NULL or "" stored NULL. */
struct kj_store_r_energy {
	int64_t unique_id;
	int unroll;
	int64_t launches;
	double seconds, energy_mj_per_launch, energy_unc_mj, power_mw, idle_mw, dynamic_mj_per_launch;
	const char *method;
	struct kj_store_r_clocks clocks;
	const char *data;
};

/** One replay_energy_cold row. */
struct kj_store_r_energy_cold {
	int64_t unique_id;
	int64_t launches;
	double seconds, energy_mj_per_launch, energy_unc_mj, ns_per_launch, flush_mj, flush_unc_mj;
};

/** One replay_energy_b2b row. */
struct kj_store_r_energy_b2b {
	int64_t unique_id;
	double ns_per_launch, energy_mj_per_launch, sm_clock_mean_mhz;
};

/** One transaction of per-kernel results (opaque). */
struct kj_store_r_batch;

/**
 * @brief Begin one transaction of per-kernel results (BEGIN IMMEDIATE), creating replay_verify,
 *        replay_energy_cold and replay_energy_b2b where the run lacks them. Every row written carries replayed_at = when.
 *        The run must have been opened for writing (so migrated).
 * @return 0 (*out to pass to kj_store_r_batch_end), or KJ_EDB (message printed; nothing written,
 *         the transaction rolled back).
 */
int kj_store_r_batch_begin(sqlite3 *db, const char *when, struct kj_store_r_batch **out);
/** @brief INSERT OR REPLACE one replay_kernel row. @return 0 or KJ_EDB (message printed). */
int kj_store_r_batch_kernel(struct kj_store_r_batch *b, const struct kj_store_r_kernel *k);
/** @brief INSERT OR REPLACE one replay_verify row. @return 0 or KJ_EDB (message printed). */
int kj_store_r_batch_verify(struct kj_store_r_batch *b, const struct kj_store_r_verify *v);
/** @brief INSERT OR REPLACE one replay_energy row. @return 0 or KJ_EDB (message printed). */
int kj_store_r_batch_energy(struct kj_store_r_batch *b, const struct kj_store_r_energy *e);
/** @brief INSERT OR REPLACE one replay_energy_cold row. @return 0 or KJ_EDB (message printed). */
int kj_store_r_batch_energy_cold(struct kj_store_r_batch *b, const struct kj_store_r_energy_cold *c);
/** @brief Delete unique kernel unique_id's replay_energy_cold row (an earlier replay's cold figure
 *  that no longer stands beside a new energy). @return 0 or KJ_EDB (message printed). */
int kj_store_r_batch_drop_energy_cold(struct kj_store_r_batch *b, int64_t unique_id);
/** @brief INSERT OR REPLACE one replay_energy_b2b row. @return 0 or KJ_EDB (message printed). */
int kj_store_r_batch_energy_b2b(struct kj_store_r_batch *b, const struct kj_store_r_energy_b2b *r);
/** @brief Delete unique kernel unique_id's replay_energy_b2b row (an earlier replay's, when the new
 *  energy was measured back to back). @return 0 or KJ_EDB (message printed). */
int kj_store_r_batch_drop_energy_b2b(struct kj_store_r_batch *b, int64_t unique_id);
/** @brief Commit (commit != 0) or roll back the batch and free it; accepts NULL (returns 0).
 *  @return 0, or KJ_EDB when the commit failed (message printed). */
int kj_store_r_batch_end(struct kj_store_r_batch *b, int commit);

/** One replay_sequence row: a mode of a replayed iteration. has_times 0: median/min/max stored
 *  NULL; has_energy 0: energy_mj/energy_unc_mj NULL; pace_ns <= 0 NULL; data NULL or "" NULL. */
struct kj_store_r_seq {
	int64_t iteration;
	const char *mode;
	int runs;
	int64_t launches;
	int has_times;
	int64_t median_ns, min_ns, max_ns;
	int has_energy;
	double energy_mj, energy_unc_mj;
	const char *data;
	int64_t pace_ns;
	struct kj_store_r_clocks clocks;
};

/** One unique kernel's time inside the replayed iteration: every column stored as given. */
struct kj_store_r_seq_kernel {
	int64_t unique_id;
	struct kj_store_r_timing t;
};

/**
 * @brief Store the modes in replay_sequence and the in-sequence kernel times k[0..nk) as
 *        replay_kernel rows with cache 'sequence' and status 'ok', one transaction, INSERT OR
 *        REPLACE; every row's replayed_at = when. The run must have been opened for writing.
 * @return 0 or KJ_EDB (message printed; nothing written).
 */
int kj_store_r_seq_put(sqlite3 *db, const char *when, const struct kj_store_r_seq *s, size_t n,
		       const struct kj_store_r_seq_kernel *k, size_t nk);

/** One replay_topology row. not_rebuilt, reason, tie: NULL or "" stored NULL. */
struct kj_store_r_topology {
	int64_t iteration;
	const char *status;
	int64_t graph_launches, nodes, edges, kernel_nodes, kernels_matched;
	const char *not_rebuilt, *reason, *tie;
};

/** One replay_graph_node row: node_id 0 and unique_id, traced_ns < 0 stored NULL. */
struct kj_store_r_graph_node {
	int64_t node_index, node_id;
	const char *type;
	int64_t unique_id;
	int runs;
	int64_t min_ns, median_ns, max_ns;
	double mean_ns;
	int64_t traced_ns;
};

/**
 * @brief Store a topology replay: its replay_topology row (tables created where the run lacks
 *        them), the iteration's older replay_graph_node rows removed, then nodes[0..n) as its
 *        rows; one transaction, INSERT OR REPLACE, replayed_at = when.
 * @return 0 or KJ_EDB (message printed; nothing written).
 */
int kj_store_r_topo_put(sqlite3 *db, const char *when, const struct kj_store_r_topology *t,
			const struct kj_store_r_graph_node *nodes, size_t n);

#endif
