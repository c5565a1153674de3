/* Typed readers for what `kjoule info` and the report show of a run (src/analyze/kj_run_info.c):
 * the process, device and problem rows as they are stored, single figures (module bytes, the GPU
 * work's extent, graph launches, whether kernels recorded their L1/shared split), graph node
 * kinds, the kept iteration's host-to-device copies and which module each launch came from.
 * Readers that take a callback call it once per row and stop at (and return) its first non-zero
 * return. */
#ifndef KJ_STORE_A2_INFO_H
#define KJ_STORE_A2_INFO_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** What a cell holds, as SQLite stored it. */
enum kj_store_a2_cell_type { KJ_CELL_NULL, KJ_CELL_INT, KJ_CELL_REAL, KJ_CELL_TEXT };

/** One column of a row: its name and value (strings valid during the callback). */
struct kj_store_a2_cell {
	const char *name;
	enum kj_store_a2_cell_type type;
	int64_t i;                 /* KJ_CELL_INT */
	double real;               /* KJ_CELL_REAL */
	const char *text;          /* KJ_CELL_TEXT (a blob is read as its text) */
};

/** The tables `kjoule info` lists row by row. */
enum kj_store_a2_rows {
	KJ_INFO_PROCESSES,         /* pid, ppid, exe, args, start_ns, end_ns, ended_cleanly, cupti_status; by pid */
	KJ_INFO_DEVICES,           /* id, name, uuid, sm_count, power_limit_mw, memory_bytes, cc_major,
				      cc_minor, driver_version, cuda_version, pci_bus_id; by id */
	KJ_INFO_PROBLEMS,          /* pid, t_ns, severity, what; as recorded */
};

/**
 * @brief Every row of one of the tables (enum kj_store_a2_rows) as its columns, in the order named.
 * @return 0, the callback's return, or KJ_EDB (message printed).
 */
int kj_store_a2_info_rows_each(sqlite3 *db, enum kj_store_a2_rows which,
			       int (*fn)(void *ud, const struct kj_store_a2_cell *cells, int n), void *ud);

/** The single figures `kjoule info` shows. */
enum kj_store_a2_scalar {
	KJ_INFO_MODULE_BYTES,      /* the stored modules' bytes, 0 when none */
	KJ_INFO_GPU_FIRST_START,   /* the first GPU activity's start (NULL when none) */
	KJ_INFO_GPU_LAST_END,      /* the last GPU activity's end (NULL when none) */
	KJ_INFO_GRAPH_LAUNCHES,    /* recorded graph launches */
	KJ_INFO_SHMEM_SPLIT,       /* 1 when a kernel recorded its L1/shared split (kernel.shmem_executed),
				      else 0; NULL when the run has no such column */
};

/** @brief Call fn once with one figure (type KJ_CELL_NULL when it cannot be read: quiet; a text
 *  valid during the call). */
void kj_store_a2_info_scalar(sqlite3 *db, enum kj_store_a2_scalar which,
			     void (*fn)(void *ud, const struct kj_store_a2_cell *c), void *ud);

/**
 * @brief How many graph nodes of each type, most first then by type: type (valid during the
 *        callback; rows with a NULL type skipped) and count. Calls nothing in runs without graph
 *        nodes' table.
 * @return 0, the callback's return, or KJ_EDB (message printed).
 */
int kj_store_a2_graph_node_kinds_each(sqlite3 *db, int (*fn)(void *ud, const char *type, int64_t count), void *ud);

/**
 * @brief The kept iteration's host-to-device copies (*n) and how many of them kept their bytes
 *        (*with_bytes; 0 in runs without the copy_data table).
 * @return 0, or KJ_EDB (quiet) when they cannot be read.
 */
int kj_store_a2_kept_htod_copies(sqlite3 *db, int64_t *n, int64_t *with_bytes);

/** Captured launches by how their function is known. */
struct kj_store_a2_launch_modules {
	int has_module_id;         /* 0: launch_params has no module_id column (the counts below but
				      all_launches are 0) */
	int64_t function_launches; /* launches of a function handle */
	int64_t with_module;       /* of those, with the module it came from */
	int64_t kernel_launches;   /* launches of a kernel handle */
	int64_t all_launches;      /* every captured launch (read only without module_id) */
};

/** @brief Fill *m (each count 0 when it cannot be read: quiet). */
void kj_store_a2_launch_modules(sqlite3 *db, struct kj_store_a2_launch_modules *m);

#endif
