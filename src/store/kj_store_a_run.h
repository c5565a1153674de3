/* Typed readers of a run's recorded activity for the analyses (src/analyze): GPU activity, the
 * run's extent, kernel names, NVTX iteration instances, iteration marks, the watch for other
 * processes, captured cubins and launch parameters. Each reader runs one query of the analysis
 * it serves, in that query's order, and hands rows over without interpreting them. Readers that
 * take a callback call it once per row; a non-zero return stops the read and is returned. */
#ifndef KJ_STORE_A_RUN_H
#define KJ_STORE_A_RUN_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** One row of kernel, memcpy or memset, as kj_acts_load reads them. */
struct kj_store_a_activity {
	int type;                  /* 0 kernel, 1 memcpy, 2 memset */
	int has_times;             /* 0: start_ns or end_ns is NULL (the rest is unset) */
	int64_t start_ns, end_ns;
	int64_t launch_ns;         /* -1: NULL or not recorded (copies of older runs) */
	int64_t pid, device_id, stream_id; /* 0 where NULL */
	int64_t correlation_id;    /* -1 where NULL */
	int64_t bytes;             /* 0 where NULL (kernels) */
	int64_t unique_id, name_id; /* -1 where NULL (copies, memsets) */
	const char *kind;          /* memcpy.kind, or NULL; valid during the callback */
};

/**
 * @brief Every kernel, memcpy and memset row (in that order, each table in its stored order).
 * @return 0, the callback's non-zero return, or KJ_EDB (the message, "database: reading GPU
 *         activity", printed).
 */
int kj_store_a_activity_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_activity *a), void *ud);

/**
 * @brief First start and last end over kernels, copies, memsets, API calls, NVTX ranges and
 *        allocations; *t1_ns is never before *t0_ns.
 * @return 0, KJ_ENOTFOUND when the run holds none, KJ_EDB.
 */
int kj_store_a_run_extent(sqlite3 *db, int64_t *t0_ns, int64_t *t1_ns);

/** @brief The largest kernel_name id into *max_id (-1 when none or NULL). @return 0 or KJ_EDB. */
int kj_store_a_kernel_name_max_id(sqlite3 *db, int64_t *max_id);

/**
 * @brief Every kernel_name row: its id, demangled and mangled name (each NULL where the column is;
 *        valid during the callback). @return 0, the callback's non-zero return, or KJ_EDB.
 */
int kj_store_a_kernel_names_each(sqlite3 *db,
				 int (*fn)(void *ud, int64_t id, const char *demangled, const char *mangled),
				 void *ud);

/** One instance of an NVTX range read as an iteration. */
struct kj_store_a_range {
	int64_t start_ns;
	int has_end;               /* 0: end_ns NULL (never closed) */
	int64_t end_ns;
	int64_t pid, tid;          /* 0 where NULL */
};

/**
 * @brief The instances of NVTX range `name` with a start, by start.
 * @return 0, the callback's non-zero return, or KJ_EDB (the message, "database: reading NVTX
 *         ranges", printed when a row cannot be read).
 */
int kj_store_a_ranges_named_each(sqlite3 *db, const char *name,
				 int (*fn)(void *ud, const struct kj_store_a_range *r), void *ud);

/**
 * @brief The start_ns and pid (each 0 where NULL) of every recorded cuGraphLaunch call.
 * @return 0, KJ_ENOTFOUND when the run has no host_call table, the callback's return, KJ_EDB.
 */
int kj_store_a_graph_launches_each(sqlite3 *db, int (*fn)(void *ud, int64_t start_ns, int64_t pid), void *ud);

/** One interval of the watch for other processes (foreign_activity). */
struct kj_store_a_foreign {
	int64_t device_id;         /* 0 where NULL */
	int64_t pid;               /* -1 where NULL */
	int64_t start_ns, end_ns;
	const char *source;        /* or NULL; valid during the callback */
};

/**
 * @brief The foreign_activity intervals with both times, on the GPUs the run's work ran on (or on
 *        any GPU where no activity names one, or with no GPU named), by start.
 * @return 0, KJ_ENOTFOUND when the run has no foreign_activity table, the callback's return, or
 *         KJ_EDB (message printed).
 */
int kj_store_a_foreign_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_foreign *f), void *ud);

/**
 * @brief Every captured cubin image (module rows of format 'cubin' with data): its codec (or
 *        NULL), stored data, data length and uncompressed size; valid during the callback.
 * @return 0, the callback's non-zero return, or KJ_EDB (message printed).
 */
int kj_store_a_cubins_each(sqlite3 *db,
			   int (*fn)(void *ud, const char *codec, const void *data, size_t len, size_t bytes),
			   void *ud);

/** A unique kernel with what its parameter check needs. */
struct kj_store_a_kernel_params {
	const char *mangled;       /* or NULL; valid during the callback */
	int registers;             /* -1 where NULL */
	int64_t params_bytes;      /* length of its first recorded parameter block; 0 where none */
	int64_t unique_id;
};

/** @brief Every unique kernel (kj_store_a_kernel_params). @return 0, the callback's return, KJ_EDB. */
int kj_store_a_kernel_params_each(sqlite3 *db, int (*fn)(void *ud, const struct kj_store_a_kernel_params *k),
				  void *ud);

/** @brief Number of kernel launches (0 when the table cannot be read). */
int64_t kj_store_a_kernel_count(sqlite3 *db);

/** @brief 1 when meta has a capture_status (the run captured a window), else 0. */
int kj_store_a_has_capture_status(sqlite3 *db);

/** @brief First start and last end of the capture windows (-1 each where none). */
void kj_store_a_capture_window(sqlite3 *db, int64_t *start_ns, int64_t *end_ns);

/** @brief The GPU whose power samples measure the iterations: the traced process's (of an
 *  iteration mark) with samples, else the only one with samples; -1 when neither. */
int64_t kj_store_a_iteration_device(sqlite3 *db);

/**
 * @brief Every closed iteration mark by start: its process, start_ns, end_ns and whether it was
 *        captured; only those of the processes that used device_id where the run names any
 *        (device_id < 0: all).
 * @return 0, the callback's non-zero return, or KJ_EDB (message printed).
 */
int kj_store_a_iteration_marks_each(sqlite3 *db, int64_t device_id,
				    int (*fn)(void *ud, int64_t pid, int64_t start_ns, int64_t end_ns, int captured),
				    void *ud);

#endif
