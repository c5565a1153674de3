/* Typed readers of a run's replay results for compare (src/analyze/kj_compare_load.c): unique
 * kernels, isolated replays' medians and energies, the kernels a replay timed out on or refused,
 * the sequence replays per mode and the latest topology replay. Each reader runs one query of
 * compare, in that query's order; readers that take a callback call it once per row and stop
 * at (and return) its first non-zero return. */
#ifndef KJ_STORE_A_REPLAY_H
#define KJ_STORE_A_REPLAY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/**
 * @brief Every unique kernel: id, name_id (-1 where NULL) and stored tier (NULL where none;
 *        valid during the callback). @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a_unique_kernels_each(sqlite3 *db, int (*fn)(void *ud, int64_t id, int64_t name_id, const char *tier),
				   void *ud);

/**
 * @brief The isolated replays that succeeded with a positive median (status ok or relocated, or
 *        no status and no error): unique_id, lower-case cache mode (or NULL) and median_ns.
 * @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a_replay_medians_each(sqlite3 *db,
				   int (*fn)(void *ud, int64_t unique_id, const char *cache, double median_ns),
				   void *ud);

/** One replay_energy row with a non-negative energy per launch. */
struct kj_store_a_replay_energy {
	int64_t unique_id;
	double energy_mj;          /* energy_mj_per_launch */
	int has_power;             /* 0: power_mw NULL and not derivable from seconds */
	double power_mw;           /* power_mw, else energy x launches / seconds */
	const char *data;          /* the data it ran on, or NULL (older runs); valid during the callback */
	const char *method;        /* how it was measured ("counter-edges", "paced 1:3", ...), or NULL
				    * (older runs); valid during the callback */
	double unc_mj;             /* energy_unc_mj, its uncertainty per launch; < 0 unknown */
};

/** @brief Every replay_energy row with an energy per launch >= 0. @return 0, the callback's return, KJ_EDB. */
int kj_store_a_replay_energy_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_replay_energy *e),
				  void *ud);

/** @brief 1 when some kernel was replayed with energy (a replay_energy row that
 *  kj_store_a_replay_energy_each gives), 0 otherwise (runs never replayed included). */
int kj_store_a_has_replay_energy(sqlite3 *db);

/**
 * @brief Every replay_energy_b2b row with a positive time and clock: unique_id, time per launch
 *        (ns) and mean SM clock (MHz) of the back-to-back window a paced one replaced. The table
 *        must exist (kj_db_caps()->replay_energy_b2b). @return 0, the callback's return, KJ_EDB.
 */
int kj_store_a_replay_energy_b2b_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, double ns, double mhz),
				      void *ud);
/**
 * @brief Every replay_energy_cold row with a positive energy per launch: unique_id, energy
 *        (mJ per launch), its uncertainty (mJ per launch; < 0 where NULL) and time (ns per
 *        launch; 0 where NULL). Needs the table
 *        (kj_db_caps()->replay_energy_cold). @return 0, the callback's return, KJ_EDB.
 */
int kj_store_a_replay_energy_cold_each(sqlite3 *db,
				       int (*fn)(void *ud, int64_t unique_id, double energy_mj, double unc_mj,
						 double ns_per_launch),
				       void *ud);

/** @brief Each unique kernel's mean traced time (ns) over its launches with end >= start. Quiet
 *  when the query cannot run. @return 0, the callback's return, or KJ_EDB. */
int kj_store_a_traced_means_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, double mean_ns), void *ud);

/**
 * @brief The unique kernels of isolated replays that ended with reason code `reason` (runs with
 *        replay_kernel.reason) or, in runs without it, with status `status` (compared lower-case)
 *        and an error containing `error_part`. Distinct ids.
 * @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a_replay_flagged_each(sqlite3 *db, const char *reason, const char *status, const char *error_part,
				   int (*fn)(void *ud, int64_t unique_id), void *ud);

/** @brief The warm replays' "data: ..." notes (the fill a replay fell back to): unique_id and
 *  the note (or NULL; valid during the callback). @return 0, the callback's return, KJ_EDB. */
int kj_store_a_replay_fill_notes_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, const char *note),
				      void *ud);

/** @brief The longest kernel's end - start in ns (0 when none or unreadable). */
int64_t kj_store_a_longest_kernel_ns(sqlite3 *db);

/**
 * @brief Over the first `sample` launches of unique kernel unique_id: the share that ran while a
 *        kernel of another stream of the same process and device ran (one that started at most
 *        lookback_ns before it). 0 where none did, it has no launches, or the query fails.
 */
double kj_store_a_overlap_share(sqlite3 *db, int64_t unique_id, int64_t lookback_ns, int sample);

/** @brief Sequence replay rows stored without a time (a faulted replay); 0 when unreadable. */
int64_t kj_store_a_sequence_failed_rows(sqlite3 *db);

/** @brief The latest timed graph sequence replay's launches left out of the iteration's kernels
 *  (the iteration's kernel ops less the replay's launches); -1 where there is none. */
int64_t kj_store_a_sequence_left_out(sqlite3 *db);

/** One mode of the timed sequence replays. */
struct kj_store_a_sequence_mode {
	const char *mode;          /* lower case, or NULL; valid during the callback */
	double median_ns;          /* mean of the medians */
	int64_t rows;
	int has_energy;            /* 0: no row has energy_mj */
	double energy_mj;          /* mean energy (when has_energy) */
	const char *data;          /* the largest data note, or NULL (or an older run) */
	int has_pace;              /* 0: no pace_ns (or an older run) */
	double pace_ns;            /* mean pace */
};

/** @brief Each mode of the sequence replays with a positive median. @return 0, the callback's
 *  return, or KJ_EDB. */
int kj_store_a_sequence_modes_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_sequence_mode *m),
				   void *ud);

/**
 * @brief The latest topology replay's status, not-rebuilt list and reason (each "" where NULL)
 *        into the three buffers (set to "" first).
 * @return 1 when there is one, 0 when none (or the run has no replay_topology table), KJ_EDB.
 */
int kj_store_a_topology_latest(sqlite3 *db, char *status, size_t status_len, char *unbuilt, size_t unbuilt_len,
			       char *reason, size_t reason_len);

#endif
