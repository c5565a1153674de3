/* Typed readers of the run database for `kjoule pipeline --from RUN`: the kept iteration's
 * operations, and the NVTX ranges that group them (around their launch, or open at capture). */
#ifndef KJ_STORE_W_PIPELINE_H
#define KJ_STORE_W_PIPELINE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** One sequence_op row of an iteration, with its host time. */
struct kj_store_iter_op {
	int64_t ordinal;
	int64_t t_ns;       /* its kernel's launch_ns (a graph kernel's: the graph launch's), else its
			     * launch_params' launch_ns; -1 when neither is known */
	int64_t corr;       /* correlation_id; -1 NULL */
	int is_kernel;      /* op = 'kernel' */
	int has_kernel_id;  /* sequence_op.kernel_id set (a kernel that ran inside a graph launch);
			     * 0 in runs without the column */
	int64_t capture_range_id; /* its kernel's capture_range_id; -1 NULL or no column */
};

/** @brief The operations of iteration it, by ordinal (then id), into *out[0..*n) (caller frees;
 *  NULL when none). Columns an older run lacks read as unknown (kj_db_caps).
 *  @return 0, KJ_EDB (SQLite's message printed) or KJ_ENOMEM (*out freed, NULL). */
int kj_store_iter_ops(sqlite3 *db, int64_t it, struct kj_store_iter_op **out, size_t *n);

/** @brief The latest-starting NVTX range named name (of process pid; pid < 0: any) that starts at
 *  or before first_ns and ends (open: never) at or after last_ns: out = {start_ns, end_ns
 *  (INT64_MAX when open), depth, tid}, NULL columns as 0.
 *  @return 1 found, 0 none, KJ_EDB (SQLite's message printed). */
int kj_store_nvtx_holding(sqlite3 *db, const char *name, int64_t pid, int64_t first_ns, int64_t last_ns,
			  int64_t out[4]);

/** An NVTX range as the pipeline groups by it. */
struct kj_store_nvtx_row {
	int64_t id, start_ns, end_ns; /* NULL as 0 (end_ns: the enclosing range's end when open) */
	int64_t parent;               /* capture ranges: parent_id, -1 top level */
	int64_t depth;                /* capture ranges: depth, NULL as 0 */
	const char *name;             /* NULL when NULL; valid during the callback only */
};

/** Called per row; a non-zero return stops the walk and is returned. */
typedef int (*kj_store_nvtx_fn)(const struct kj_store_nvtx_row *r, void *ud);

/** @brief The ranges on thread k[3] (of process pid; < 0: any) that start inside the range k =
 *  {start_ns, end_ns, depth, tid}, by start: those named region, or (region NULL) those at depth
 *  k[2] + depth. end_ns of one still open: k[1]. parent and depth are not read (0).
 *  @return 0, fn's non-zero return, or KJ_EDB (SQLite's message printed). */
int kj_store_nvtx_inside(sqlite3 *db, int64_t pid, const int64_t k[4], int depth, const char *region,
			 kj_store_nvtx_fn fn, void *ud);

/** @brief The NVTX ranges open when iteration's graph kernels were captured
 *  (kernel.capture_range_id) and all their ancestors (parent_id), in no set order; start_ns and
 *  end_ns are not read (0). @return 0, fn's non-zero return, or KJ_EDB (message printed). */
int kj_store_capture_ranges(sqlite3 *db, int64_t iteration, kj_store_nvtx_fn fn, void *ud);

/** @brief The deepest NVTX range's depth, or dflt when the run has none (quiet). */
int64_t kj_store_nvtx_max_depth(sqlite3 *db, int64_t dflt);

#endif
