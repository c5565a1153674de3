/* Typed readers for the analyses' iteration model, compare's regions and energy, and diff: NVTX
 * ranges as iteration candidates and regions, GPU work keyed by its call, the sampled GPUs and
 * their clocked power, kernel geometry and device names. Each reader runs one query of the
 * analysis it serves, in that query's order; readers that take a callback call it once per row
 * and stop at (and return) its first non-zero return. */
#ifndef KJ_STORE_A_ITER_H
#define KJ_STORE_A_ITER_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** One kernel, copy or memset as GPU work issued by a call. */
struct kj_store_a_item {
	int has_times;             /* 0: start_ns or end_ns NULL (the rest unset) */
	int has_launch;            /* 0: launch_ns NULL or not recorded */
	int64_t launch_ns, start_ns, end_ns;
};

/**
 * @brief The kernels, copies and memsets of process pid (every process when pid < 0).
 * @return 0, the callback's return, or KJ_EDB (a row that cannot be read is not reported).
 */
int kj_store_a_items_each(sqlite3 *db, int64_t pid, int (*fn)(void *ud, const struct kj_store_a_item *it),
			  void *ud);

/** One closed top-level NVTX range instance. */
struct kj_store_a_top_range {
	const char *domain;        /* '' where NULL; valid during the callback */
	const char *name;          /* never NULL or empty */
	int64_t start_ns, end_ns;
};

/**
 * @brief The closed, named NVTX range instances of process pid (every process when pid < 0) at
 *        the top of their thread's stack (depth 0, or every range above never closed), by start.
 * @return 0, the callback's return, or KJ_EDB ("database: reading NVTX ranges" printed).
 */
int kj_store_a_top_ranges_each(sqlite3 *db, int64_t pid,
			       int (*fn)(void *ud, const struct kj_store_a_top_range *r), void *ud);

/** @brief 1 when process pid (any when pid < 0) has an NVTX range named name, else 0. */
int kj_store_a_range_present(sqlite3 *db, const char *name, int64_t pid);

/** One closed, named NVTX range instance (for compare's regions). */
struct kj_store_a_region_range {
	const char *name;          /* valid during the callback */
	int64_t start_ns, end_ns, pid;
	int64_t depth;             /* 0 where NULL */
};

/**
 * @brief The closed, named NVTX range instances, by start.
 * @return 0, the callback's return, or KJ_EDB ("database: reading NVTX ranges" printed).
 */
int kj_store_a_region_ranges_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_region_range *r),
				  void *ud);

/** A kernel captured into a graph inside an NVTX range, once per range around it. */
struct kj_store_a_captured {
	const char *name;          /* the range's name; valid during the callback */
	int64_t depth;             /* the range's depth, 0 where NULL */
	int64_t pid;
	int64_t key_ns;            /* the kernel's launch, else its start */
	int64_t start_ns, end_ns;
	int64_t range_id;
};

/**
 * @brief Every kernel with a capture range, paired with that range and each range around it
 *        (named ranges only), by range name then kernel start. Needs kernel.capture_range_id.
 * @return 0, the callback's return, or KJ_EDB (not reported).
 */
int kj_store_a_captured_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_captured *k), void *ud);

/**
 * @brief The GPUs with power samples that the run's work ran on (every sampled GPU when none of
 *        the work names a sampled one), by id, at most max of them, into devs[] and *n.
 * @return 0 or KJ_EDB.
 */
int kj_store_a_power_devices(sqlite3 *db, int64_t *devs, size_t max, size_t *n);

/** @brief The device_id of every idle_power row. @return 0, the callback's return, KJ_EDB. */
int kj_store_a_idle_devices_each(sqlite3 *db, int (*fn)(void *ud, int64_t device_id), void *ud);

/**
 * @brief Start and end of every GPU activity of device dev that has a start, by start.
 * @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a_device_activity_each(sqlite3 *db, int64_t dev, int (*fn)(void *ud, int64_t start_ns, int64_t end_ns),
				    void *ud);

/**
 * @brief The power samples of device dev with a positive power and an SM clock, by time: time,
 *        power (power_mw, else power_avg_mw) and clock.
 * @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a_clocked_power_each(sqlite3 *db, int64_t dev,
				  int (*fn)(void *ud, int64_t t_ns, int64_t power_mw, int64_t sm_clock_mhz),
				  void *ud);

/**
 * @brief Every unique kernel's id with its geometry as "grid X,Y,Z block X,Y,Z" (valid during
 *        the callback). @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a_geometry_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, const char *geometry), void *ud);

/** @brief The run's device names by id, joined by " + ", into buf (empty when none). */
void kj_store_a_device_names(sqlite3 *db, char *buf, size_t len);

#endif
