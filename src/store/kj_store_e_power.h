/* The run database's power side, typed: the device row a power sampler fills, its power_sample
 * rows written and read back, the idle_power row, the meter_sample rows an external meter's log
 * adds. The energy floor computes; this module only moves rows. */
#ifndef KJ_STORE_E_POWER_H
#define KJ_STORE_E_POWER_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** What the sampler knows of one GPU (strings empty and numbers -1 when the driver does not say). */
struct kj_store_device_info {
	const char *uuid, *name, *pci_bus_id, *driver_version;
	int nvml_index;
	int energy_counter;
	int64_t power_limit_mw, memory_bytes;
	int sm_clock_max_mhz, mem_clock_max_mhz;
};

/**
 * @brief The device row of a GPU: found by UUID and completed where it lacks a column (NULL
 *        columns filled, what the tracer recorded kept), or created with what d says.
 * @return 0 with *id set, or KJ_EDB.
 */
int kj_store_e_device_id(sqlite3 *db, const struct kj_store_device_info *d, int64_t *id);

/** One power_sample row to write; every field below realtime_ns that is -1 is stored as NULL,
 *  and energy_updated is NULL when energy_mj is. */
struct kj_store_power_row {
	int64_t device_id, t_ns, realtime_ns;
	int64_t power_mw, power_avg_mw, energy_mj;
	int energy_updated;
	int64_t sm_clock_mhz, mem_clock_mhz, temp_c, util_gpu_pct, util_mem_pct, throttle_reasons;
};

/** A prepared writer of power_sample rows (opaque). */
struct kj_store_power_writer;

/** @brief Prepare a power_sample writer on db. @return 0 or KJ_EDB (SQLite's message printed). */
int kj_store_e_power_writer_open(sqlite3 *db, struct kj_store_power_writer **out);
/** @brief Insert one row. @return 0, or KJ_EDB with "power_sample insert: <SQLite's message>". */
int kj_store_e_power_write(struct kj_store_power_writer *w, const struct kj_store_power_row *r);
/** @brief Free a writer; accepts NULL. */
void kj_store_e_power_writer_close(struct kj_store_power_writer *w);

/** One power_sample row read back for energy: NULL columns are -1 (energy_updated: 0). */
struct kj_store_power_sample {
	int64_t t_ns, power_mw, power_avg_mw, energy_mj;
	int energy_updated;
};

/**
 * @brief Call fn for each power_sample row of device_id, ordered by t_ns then id; stops at the
 *        first non-zero fn result and returns it.
 * @return 0, fn's result, or KJ_EDB (quiet when a row cannot be read).
 */
int kj_store_e_power_samples(sqlite3 *db, int64_t device_id,
			     int (*fn)(void *ctx, const struct kj_store_power_sample *r), void *ctx);

/** @brief The idle_power median of device_id in mW, or -1 when the run has none (or it is NULL). */
double kj_store_e_idle_median_mw(sqlite3 *db, int64_t device_id);

/** The idle_power row of one GPU. */
struct kj_store_idle_power {
	int64_t median_mw, p10_mw, p90_mw;
	int64_t samples;
	int64_t measured_ns; /* CLOCK_REALTIME */
	const char *source;
};

/** @brief Insert (or replace) the idle_power row of device_id.
 *  @return 0, KJ_EDB when it cannot be prepared, KJ_EIO with "<db_path>: idle_power: <message>". */
int kj_store_e_idle_power_put(sqlite3 *db, const char *db_path, int64_t device_id,
			      const struct kj_store_idle_power *m);

/** One meter_sample row: t_ns (CLOCK_MONOTONIC) stored only when has_t_ns. */
struct kj_store_meter_sample {
	int64_t t_ns, realtime_ns;
	int has_t_ns;
	double watts;
};

/**
 * @brief Insert n meter_sample rows of meter in one transaction (committed only when every row
 *        went in; on failure it stays open, and closing the handle rolls it back).
 * @return 0, or KJ_EDB with a message naming db_path.
 */
int kj_store_e_meter_put(sqlite3 *db, const char *db_path, const char *meter,
			 const struct kj_store_meter_sample *v, size_t n);

/** @brief The GPU utilisation readings of device_id (util_gpu_pct not NULL) by time, into two
 *  arrays the caller frees (NULL when none). @return 0, KJ_EDB or KJ_ENOMEM (nothing kept). */
int kj_store_e_util_readings(sqlite3 *db, int64_t device_id, int64_t **t_ns, int **util_pct,
			     size_t *n);

/** One power_sample row as the timeline's counters show it: has_x says the column is not NULL. */
struct kj_store_power_counter {
	int64_t device_id, t_ns;
	int64_t power_mw; /* coalesce(power_mw, power_avg_mw) */
	int64_t energy_mj, sm_clock_mhz, mem_clock_mhz;
	int has_power, has_energy, has_sm_clock, has_mem_clock;
};

/** @brief Call fn for each power_sample row with t_ns in [lo_ns, hi_ns], by device then time;
 *  stops at fn's first non-zero result and returns it. @return 0, fn's result or KJ_EDB. */
int kj_store_e_power_counters(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			      int (*fn)(void *ctx, const struct kj_store_power_counter *r), void *ctx);

/** @brief Call fn(ctx, device_id) for each distinct device of power_sample; stops at fn's first
 *  non-zero result and returns it. @return 0, fn's result or KJ_EDB. */
int kj_store_e_power_devices(sqlite3 *db, int (*fn)(void *ctx, int64_t device_id), void *ctx);

/** One power reading for a chart: coalesce(power_mw, power_avg_mw) of a row with a time. */
struct kj_store_power_point {
	int64_t device_id, t_ns;
	double power_mw;
};

/** @brief Call fn for each power_sample row with a time and a power, by device then time; stops at
 *  fn's first non-zero result and returns it. @return 0, fn's result, or KJ_EDB when the query
 *  cannot be prepared (rows that cannot be read end the walk quietly). */
int kj_store_e_power_points(sqlite3 *db, int (*fn)(void *ctx, const struct kj_store_power_point *p),
			    void *ctx);

#endif
