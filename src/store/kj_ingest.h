/* Ingest: turns the spool files the injection library wrote (one per traced process) into rows
 * of a run database. Runs in the `kjoule run` parent, never inside the traced program. */
#ifndef KJ_INGEST_H
#define KJ_INGEST_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** How to ingest: parameter capture and the whole-iteration capture. */
/* params_iteration: the middle instance of the iteration range, when it repeats */
#define KJ_ITERATION_AUTO (-1)

/**
 * @brief Names the iteration range of process pid (pid >= 0) into name (empty when none); *why
 *        (may be NULL) says how it was chosen. The CLI passes the iteration model's
 *        kj_iter_default_range() (src/analyze/kj_iterations.h): ingest sits on a lower floor than
 *        the analysis and is handed the rule rather than including it.
 * @return 0 or a negative KJ_E* code, which ingest returns.
 */
typedef int (*kj_ingest_range_fn)(sqlite3 *db, int64_t pid, char *name, size_t len, const char **why);

struct kj_ingest_opts {
	int params_k;               /* keep the parameter blocks of the first K launches per unique kernel */
	int params_iteration;       /* > 0: keep every launch's parameters in that instance (1-based);
				       KJ_ITERATION_AUTO: the middle instance of a range seen >= 2 times;
				       0: none */
	const char *iteration_range;/* NVTX range name of iterations; NULL: choose_range's answer */
	kj_ingest_range_fn choose_range; /* names the range when iteration_range is NULL; NULL: no
					    range, so no iteration is kept unless one is named */
};

struct kj_ingest_stats {
	int64_t processes, kernels, memcpys, memsets, api_calls, allocations, nvtx_ranges;
	int64_t modules, module_bytes, params, unique_kernels, truncated_files, dropped_records;
	int64_t snapshots;
};

/**
 * Unique kernels: launches of one function with one geometry form a group; the tracer sends each
 * launch's parameter words that differ from the group's first launch. A parameter word is then
 * - a pointer, when all its values fall inside recorded device allocations,
 * - volatile, when it takes more than 64 values, or 9-64 values that do not recur (fewer than
 *   two launches per value: counters, junk new in every iteration), or one of its values looks
 *   like a host address
 *   (uninitialised padding and unused array slots of by-value structs carry stack and heap junk,
 *   often only in the first launch of a process, whose stack is still cold),
 * - else a parameter that tells different work apart (sizes, strides, scalars).
 * A unique kernel is a group split by the values of its parameter words.
 */

/**
 * @brief Ingest one spool file into db (the caller holds the transaction).
 * Every complete record is kept; a file cut short inside a record (the process was killed) is
 * counted in stats->truncated_files and noted in the problem table.
 * @return 0, KJ_EIO (unreadable file), KJ_EINVAL (not a spool file), KJ_EDB.
 */
int kj_ingest_file(sqlite3 *db, const char *path, const struct kj_ingest_opts *opts,
		   struct kj_ingest_stats *stats);

/**
 * @brief Ingest every p<pid>.spool file of a directory, then fill unique_kernel.launches and
 * check each process's clock (kj_ingest_clock_check).
 * @return 0 or the first error; files that fail are named on stderr and the rest still ingested.
 */
int kj_ingest_dir(sqlite3 *db, const char *dir, const struct kj_ingest_opts *opts,
		  struct kj_ingest_stats *stats);

/**
 * @brief Every process whose kernels start before the calls that launched them (beyond a few
 * microseconds of slack) gets a warning row in `problem`: its GPU timestamps are off the host
 * clock. kj_ingest_dir runs it last.
 * @return 0 or KJ_EDB.
 */
int kj_ingest_clock_check(sqlite3 *db);

/** What a --capture run captured, over all its processes (kj_ingest_capture_finish). */
struct kj_capture_summary {
	int active;              /* 0: not a --capture run (nothing below is set) */
	char spec[300];          /* canonical --capture text ("step@100:20"); "" when not known */
	char status[32];         /* captured, never_opened, unclosed_at_exit, start_without_stop */
	int64_t instances;       /* instances of the capture range over the whole run */
	int64_t captured;        /* of them, inside the window */
	int64_t processes_opened;/* processes whose window opened */
	int64_t window_start_ns, window_end_ns; /* earliest open, latest close; -1: none */
	int64_t detaches;        /* periods CUPTI was out of a process, outside the window */
	int64_t detached_ns;     /* their length, summed over the processes */
};

/**
 * @brief After every spool file of a --capture run is in: windows never closed are marked
 * unclosed_at_exit (start_without_stop for cuda-profiler-api), and meta gets capture_range,
 * capture_status, capture_instances, capture_marks, the window's bounds and how long CUPTI was
 * out of the processes (capture_detaches, capture_detached_ns); a problem row says
 * when the window never opened or never closed.
 * @param spec the --capture text, or NULL: meta.capture_range, if any
 * @return 0 (out->active 0 when the run is not a --capture run), or KJ_EDB.
 */
int kj_ingest_capture_finish(sqlite3 *db, const char *spec, struct kj_capture_summary *out);

/** @brief Format a 16-byte CUDA/NVML UUID as NVML does: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
void kj_uuid_format(const unsigned char uuid[16], char out[41]);

#endif
