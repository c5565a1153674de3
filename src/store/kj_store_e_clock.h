/* The clock states a run recorded, typed: the throttle reasons and SM clocks of the program's
 * slow power samples, and each replay's measurement window. The energy floor summarises them
 * (kj_clock_state.h); whether a run has the columns is asked of kj_db_caps first. */
#ifndef KJ_STORE_E_CLOCK_H
#define KJ_STORE_E_CLOCK_H

#include <sqlite3.h>
#include <stdint.h>

/** One power_sample reading of clock state: -1 where the column is NULL. */
struct kj_store_clock_sample {
	int64_t throttle_reasons;
	int64_t sm_clock_mhz;
};

/**
 * @brief Call fn for each power_sample row of device_id (any device when device_id < 0) with
 *        t_ns in [t0_ns, t1_ns] that holds throttle reasons or a positive SM clock; stops at fn's
 *        first non-zero result and returns it. The run must have the columns (caps
 *        power_sample_clocks).
 * @return 0, fn's result, or KJ_EDB (with "database: reading power_sample clock state: ...").
 */
int kj_store_e_clock_samples(sqlite3 *db, int64_t device_id, int64_t t0_ns, int64_t t1_ns,
			     int (*fn)(void *ctx, const struct kj_store_clock_sample *r), void *ctx);

/** One replay's measurement window: -1 where a column is NULL. */
struct kj_store_clock_window {
	int64_t id;               /* replay_energy: unique_id; replay_sequence: its row id */
	double sm_clock_mean_mhz;
	int sm_clock_min_mhz, sm_clock_max_mhz;
	int64_t throttle_reasons;
};

/**
 * @brief Call fn for each measured replay window, by id: of replay_sequence (energy_mj not NULL)
 *        when sequence is 1, else of replay_energy (energy_mj_per_launch not NULL). The run must
 *        have the clock columns (caps replay_sequence_clocks / replay_energy_clocks). Stops at
 *        fn's first non-zero result and returns it.
 * @return 0, fn's result, or KJ_EDB (with "database: reading <table> clock state: ...").
 */
int kj_store_e_clock_windows(sqlite3 *db, int sequence,
			     int (*fn)(void *ctx, const struct kj_store_clock_window *w), void *ctx);

#endif
