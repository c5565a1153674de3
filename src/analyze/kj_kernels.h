/* Per-unique-kernel statistics of a run database: launches grouped by unique kernel (or, where
 * the tracer left unique_id NULL, by name + grid + block + dynamic shared memory), memcpy and
 * memset grouped by kind and size, durations, tiers and share of GPU busy time. */
#ifndef KJ_KERNELS_H
#define KJ_KERNELS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** @brief What a row of the report groups. */
enum kj_activity_kind {
	KJ_ACT_KERNEL = 0,
	KJ_ACT_MEMCPY = 1,
	KJ_ACT_MEMSET = 2,
};

/** @brief One group of launches (a unique kernel) or of copies. Integers are -1 where the run
 * holds NULL. Strings are owned by the report. */
struct kj_kernel_stat {
	enum kj_activity_kind kind;
	int64_t unique_id;   /* unique_kernel.id; -1 for fallback groups and copies */
	char *key;           /* unique_kernel.key, or NULL */
	char *keyed_by;      /* 'params' or 'geometry', or NULL */
	char *name;          /* mangled name; "memcpy HtoD" / "memset" for copies */
	char *demangled;     /* demangled name (never NULL) */
	const char *tier;    /* static tier string (kj_kernel_class.h) */
	int64_t count;       /* launches */
	int64_t timed;       /* launches with a valid start and end */
	int64_t total_ns, min_ns, max_ns; /* over timed launches; 0 when timed == 0 */
	double mean_ns;      /* total_ns / timed, 0 when timed == 0 */
	double share_of_busy;/* total_ns / busy time of the run (0 when busy is 0); can sum past 1
			      * when work overlaps */
	int64_t grid[3], block[3], cluster[3];
	int64_t shmem_dynamic, shmem_static, registers;
	int64_t shmem_executed, carveout; /* the L1/shared split it ran with, the carveout asked; -1 unknown */
	int cooperative;      /* 1: a launch was cooperative; 0: none was; -1 unknown (no kernel.launch_type) */
	int64_t bytes;       /* copies: bytes per copy; kernels: -1 */
	char *copy_kind;     /* memcpy kind (HtoD, DtoH, ...), or NULL */
};

/** @brief The whole report. */
struct kj_kernel_report {
	struct kj_kernel_stat *rows;
	size_t n;
	int64_t kernel_launches, memcpys, memsets;
	size_t unique_kernels;  /* kernel groups (rows of kind KJ_ACT_KERNEL) */
	int64_t busy_ns;        /* sum over devices of the union of kernel+memcpy+memset intervals */
	int64_t kernel_ns;      /* sum of kernel durations */
	int64_t span_ns;        /* first start to last end over all devices (0 when none) */
	int devices;            /* devices with timed activity */
	int64_t untimed;        /* rows with NULL or reversed timestamps (counted, not timed) */
};

/** @brief Sort orders for kj_kernel_report_sort. */
enum kj_kernel_sort {
	KJ_SORT_TOTAL = 0,
	KJ_SORT_COUNT = 1,
	KJ_SORT_MEAN = 2,
};

/**
 * @brief Read kernel, memcpy and memset tables of db (one scan each) and build the report.
 * Rows come sorted by total time, descending. A run with no activity gives n = 0 and zeros.
 * @return 0, KJ_ENOMEM, KJ_EDB (message printed).
 */
int kj_kernels_analyze(sqlite3 *db, struct kj_kernel_report **out);

/** @brief As kj_kernels_analyze over the work of process pid alone (a rank of a multi-GPU run);
 *  pid < 0: every process. */
int kj_kernels_analyze_pid(sqlite3 *db, int64_t pid, struct kj_kernel_report **out);

/** @brief Sort rows: descending by the key, ties by name then unique id (deterministic). */
void kj_kernel_report_sort(struct kj_kernel_report *r, enum kj_kernel_sort by);

/** @brief Free a report; accepts NULL. */
void kj_kernel_report_free(struct kj_kernel_report *r);

#endif
