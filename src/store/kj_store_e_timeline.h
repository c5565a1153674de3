/* The rows a run's timelines and event listings show, typed and streamed: CUDA API calls, graph
 * host calls, NVTX ranges, GPU work, the tracks they sit on, kernel tiers, and every event for
 * kjoule api --jsonl. Each reader calls fn once per row in the query's order and stops at fn's
 * first non-zero result, which it returns; text fields are NULL where the column is, and valid
 * only during the call. The report floor formats what these hand it. */
#ifndef KJ_STORE_E_TIMELINE_H
#define KJ_STORE_E_TIMELINE_H

#include <sqlite3.h>
#include <stdint.h>

/** One api_call row; has_x says the column x is not NULL (a NULL integer reads 0). */
struct kj_store_api_call {
	int64_t pid, tid;
	const char *name;
	int64_t start_ns, end_ns;
	int64_t correlation_id, bytes, stream_id;
	int has_end, has_correlation, has_bytes, has_stream;
};

/** @brief The API calls with a start that overlap [lo_ns, hi_ns] (an open call by its start), by
 *  start. @return 0, fn's result, or KJ_EDB. */
int kj_store_e_api_calls_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			    int (*fn)(void *ctx, const struct kj_store_api_call *r), void *ctx);

/** @brief The API calls overlapping [lo_ns, hi_ns] that started at most 60 s before lo_ns, by
 *  start; only tid, name, start_ns and end_ns (coalesce(end_ns, start_ns)) are set.
 *  @return 0, fn's result, or KJ_EDB when the query cannot be prepared (a row that cannot be
 *  read ends the walk quietly). */
int kj_store_e_api_spans_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			    int (*fn)(void *ctx, const struct kj_store_api_call *r), void *ctx);

/** One graph launch, instantiation or upload a run recorded in host_call. */
struct kj_store_graph_call {
	int64_t pid, tid;
	const char *op; /* graph_launch, graph_upload, graph_instantiate... */
	int64_t start_ns, end_ns, correlation_id, graph_exec_id;
	int has_graph_exec;
};

/** @brief The graph host calls overlapping [lo_ns, hi_ns] that api_call does not hold already, by
 *  start; none for a run without the host_call table. @return 0, fn's result, or KJ_EDB. */
int kj_store_e_graph_calls_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			      int (*fn)(void *ctx, const struct kj_store_graph_call *r), void *ctx);

/** One nvtx_range row (has_end: the range was closed). */
struct kj_store_nvtx_range {
	int64_t pid, tid;
	const char *name;
	int64_t start_ns, end_ns, depth;
	int has_end;
};

/** @brief The NVTX ranges with a start that overlap [lo_ns, hi_ns] (an unclosed one counted open
 *  to hi_ns), by start. @return 0, fn's result, or KJ_EDB. */
int kj_store_e_nvtx_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
		       int (*fn)(void *ctx, const struct kj_store_nvtx_range *r), void *ctx);

/** @brief The closed, named NVTX ranges lying inside [lo_ns, hi_ns], by start; only name,
 *  start_ns, end_ns and depth are set. @return 0, fn's result, or KJ_EDB when the query cannot be
 *  prepared (a row that cannot be read ends the walk quietly). */
int kj_store_e_nvtx_inside(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			   int (*fn)(void *ctx, const struct kj_store_nvtx_range *r), void *ctx);

/** What a piece of GPU work is. */
enum kj_store_gpu_type { KJ_STORE_GPU_KERNEL = 0, KJ_STORE_GPU_MEMCPY = 1, KJ_STORE_GPU_MEMSET = 2 };

/** One kernel, copy or memset: device 0 and stream -1 where NULL; has_x says x is not NULL. */
struct kj_store_gpu_work {
	int type; /* enum kj_store_gpu_type */
	int64_t pid, device_id, stream_id, correlation_id, start_ns, end_ns;
	int64_t name_id, unique_id, grid[3], block[3]; /* kernels */
	int64_t bytes;                                 /* copies and memsets */
	const char *kind;                              /* copies */
	int has_correlation, has_name_id, has_unique_id, has_grid, has_bytes;
};

/** @brief The kernels, then copies, then memsets with a start that overlap [lo_ns, hi_ns].
 *  @return 0, fn's result, or KJ_EDB. */
int kj_store_e_gpu_work_in(sqlite3 *db, int64_t lo_ns, int64_t hi_ns,
			   int (*fn)(void *ctx, const struct kj_store_gpu_work *r), void *ctx);

/* The tracks a trace names. These walks read what they can: a row that cannot be read ends the
 * walk quietly; each returns 0, fn's result, or KJ_EDB when its query cannot be prepared. */

/** @brief Every pid of the process, api_call, kernel, memcpy and nvtx_range tables with its
 *  executable (empty when the process table has none). */
int kj_store_e_trace_processes(sqlite3 *db, int (*fn)(void *ctx, int64_t pid, const char *exe),
			       void *ctx);
/** @brief Every distinct (pid, tid) of API calls and graph host calls (nvtx 0) and of NVTX ranges
 *  (nvtx 1). */
int kj_store_e_trace_threads(sqlite3 *db, int (*fn)(void *ctx, int64_t pid, int64_t tid, int nvtx),
			     void *ctx);
/** @brief Every distinct (pid, device, stream) of kernels, copies and memsets (device 0 and stream
 *  -1 where NULL). */
int kj_store_e_gpu_lanes(sqlite3 *db,
			 int (*fn)(void *ctx, int64_t pid, int64_t device_id, int64_t stream_id),
			 void *ctx);
/** @brief The tier stored for each unique kernel that has one. */
int kj_store_e_unique_tiers(sqlite3 *db, int (*fn)(void *ctx, int64_t unique_id, const char *tier),
			    void *ctx);

/** One event of kjoule api --jsonl; has_x says x is not NULL. */
struct kj_store_event {
	const char *type; /* api, kernel, memcpy, memset, nvtx, alloc */
	const char *name;
	int64_t start_ns, end_ns, bytes, stream_id;
	int has_start, has_end, has_bytes, has_stream;
};

/** @brief Every API call, kernel, copy, memset, NVTX range and allocation, table by table.
 *  @return 0, fn's result, or KJ_EDB (with "database: <SQLite's message>" when a row cannot be
 *  read). */
int kj_store_e_events(sqlite3 *db, int (*fn)(void *ctx, const struct kj_store_event *e), void *ctx);

#endif
