/* Internals of the injection library (libkjoule_inject.so), loaded into the traced program by
 * CUDA_INJECTION64_PATH. It copies what CUPTI reports into a per-process spool file and does
 * nothing else on the program's threads: no SQLite, no compression, no hashing of big data. */
#ifndef KJ_INJECT_H
#define KJ_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "kj_spool.h"
#include "inject_hot.h"

/* kj_inject_config.api bits. KJOULE_API_DOMAINS (cost studies) sets all but KJ_API_QUERIES. */
enum {
	KJ_API_DRIVER = 1,            /* driver API calls */
	KJ_API_RUNTIME = 2,           /* runtime API calls */
	KJ_API_NO_RECORDS = 4,        /* callbacks on, nothing recorded: CUPTI's cost alone */
	KJ_API_QUERIES = 8,           /* the query functions too (--api=all) */
	KJ_API_NO_RUNTIME_LAUNCH = 16 /* no cudaLaunch* callbacks: the driver-level record remains */
};

/* kjoule_cost_study_set_api bits beside the KJ_API_* ones (bench/api_cost/api_toggle.py) */
enum {
	KJ_COST_NO_PARAMS = 256, /* as --no-params: no parameter capture */
	KJ_COST_OFF = 512,       /* no callbacks, no activity: untraced but for CUPTI being loaded */
	KJ_COST_ACTIVITY_ONLY = 1024, /* CUPTI's activity records, none of kjoule's callbacks: CUPTI's floor */
	KJ_COST_EMPTY_HANDLER = 2048  /* the callbacks enabled but returning at once: CUPTI's dispatch alone */
};

struct kj_inject_config {
	int params_k;        /* capture parameters of the first K launches of each unique kernel */
	int64_t snapshot_bytes; /* --snapshot: byte budget for buffer contents; 0: off */
	int snapshot_graphs_only; /* --snapshot-graphs: eager launches saved no buffers */
	int api;             /* KJ_API_* bits: which API calls are recorded */
	int debug_graph;     /* KJOULE_DEBUG_GRAPH=1: every graph node walked or cloned on stderr */
	int64_t copy_data_bytes; /* keep the bytes of host-to-device copies up to this size; 0: none */
	int64_t copy_data_total; /* ... and no more than this over the run */
};

extern struct kj_inject_config kj_cfg;

/* ---- spool writer (inject_spool.c) ---- */
#define KJ_SPOOL_BUF_BYTES (4u << 20) /* each of the two buffers */
/** Open <dir>/p<pid>.spool exclusively (no symlinks followed); start the flush thread. */
int kj_spool_open(const char *dir);
/** Append one record (hdr.size already set, padded to 8). Thread-safe. */
void kj_spool_write(const void *rec, size_t size);
/** Append a record given as header part + payload part (payload padded to 8 here). */
void kj_spool_write2(void *head, size_t head_size, const void *payload, size_t payload_size);
/** Asks for the lines the next record will be written to (and the spool's lock) in this core's
 *  cache, without the lock: a launch calls it first, so their fetch overlaps its other work. */
void kj_spool_warm_tail(void);
/** Write what is buffered to the file now. */
void kj_spool_flush(void);
/** How often a recording thread found the buffer full and wrote it out itself (the flush thread
 *  fell a buffer behind, or a record was larger than a buffer). */
uint64_t kj_spool_caller_writes(void);
/** In a child forked without exec: forget the parent's spool without writing to it. */
void kj_spool_abandon(void);
/** Final flush, END record, close. Idempotent. */
void kj_spool_close(int clean);
/** Id of an interned string (by content), writing a STRING record the first time. */
uint32_t kj_spool_string(const char *s);
/** Report a problem once per distinct text (also printed to stderr once). */
void kj_spool_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** CLOCK_MONOTONIC now, in ns (the trace clock). */
int64_t kj_now_ns(void);

/* ---- activity buffers (inject_activity.c) ---- */
/** Enable the activity kinds (with capture set, only those kept outside the window) and start
 * the thread that asks CUPTI for its buffers every KJOULE_FLUSH_MS (200 ms by default). */
int kj_activity_start(int capture);
/** The final flush (at exit): every buffer, incomplete records included; the thread stops. */
void kj_activity_flush(void);
/** Cost studies only: stop (1) or resume (0) every activity kind kj_activity_start enabled. */
void kj_activity_pause(int paused);

/** --capture: enable (1) or disable (0) the window's activity kinds (all but allocations, which
 *  every later launch's pointers are classified by). */
void kj_activity_window(int open);
/** Ask the flush thread to hand CUPTI's completed buffers over now (not on this thread). */
void kj_activity_flush_soon(void);

/** --capture, outside the window: CUPTI's buffers handed over for the last time before CUPTI is
 *  detached; the flush thread leaves CUPTI alone until kj_activity_reattached. */
void kj_activity_detach(void);
void kj_activity_reattached(void);

/* ---- callbacks (inject_callbacks.c) ---- */
/** Subscribe and enable what a trace follows; again after a detach (inject_detach.c). */
int kj_callbacks_start(void);
/** inject_detach.c, outside the window only: on (1), every driver call reaches the subscriber, and
 *  the next one's exit, on any thread, detaches CUPTI; off (0), the driver callbacks are a closed
 *  window's again, as at the start. */
void kj_callbacks_detach_trigger(int on);
/** After cuptiFinalize: the subscriber is gone; the next kj_callbacks_start makes a new one. */
void kj_callbacks_forget(void);

/* ---- --capture: CUPTI out of the process outside the window (inject_detach.c) ---- */
/** A module, context, graph node, graph instantiation, stream capture or allocation was seen:
 *  the program has not settled yet. Any thread. */
void kj_detach_setup_event(void);
/** A graph was launched, uploaded or instantiated inside the window: CUPTI instrumented it, and a
 *  detach after the window would leave it writing to CUPTI's freed buffers. */
void kj_detach_graph_in_window(void);
/** An instance of the capture range ended (under the capture lock). may_detach: outside the
 *  window and not about to open it; after_window: the window has closed. Asks for the detach once
 *  the program has settled (after the window, only where no graph ran inside it). */
void kj_detach_instance_ended(int64_t instance, int may_detach, int after_window);
/** Inside the subscriber, at a driver call's exit (the first thread to get there does it): detach
 *  now; a no-op where it is no longer asked for. */
void kj_detach_now(void);
/** At the start of `instance` (under the capture lock): CUPTI attached again if it was out. */
void kj_detach_reattach(int64_t instance);
/** 1 while CUPTI is out of the process; 1 while the detach is asked for and not yet done. */
int kj_cupti_detached(void);
int kj_detach_pending(void);
/** inject_capture.c: a KJ_REC_WINDOW record of `event` at t. */
void kj_put_window(int64_t t, int event, int64_t instance);
/** --capture: the API-record callbacks (--api) on while the window is open, off outside it. */
void kj_callbacks_window(int open);
/** Correlation id of the last driver call the injection itself made on this thread. */
uint32_t kj_last_own_correlation(void);
/** Inside a launch call: the launch made graph node nid (a capturing stream). */
void kj_launch_node_created(uint64_t nid);

/* ---- API records, --api (inject_api.c) ---- */
#include <cupti.h>
/** 1 when (runtime ? runtime : driver) callback id is a query function --api leaves out. */
int kj_api_is_query(int runtime, uint32_t id);
/** At an API call's entry, note the time; at its exit, write a KJ_REC_API record. */
void kj_api_record(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData *cb);

/* ---- other driver and resource callbacks (inject_resource.c) ---- */
/** VMM mappings (cuMemMap/cuMemUnmap) as allocations. */
void kj_handle_memory(CUpti_CallbackId id, const CUpti_CallbackData *cb);
/** Event records and stream waits (KJ_REC_SEQOP). */
void kj_handle_event(CUpti_CallbackId id, const CUpti_CallbackData *cb);
/** cuMemsetD* destinations (KJ_REC_MEMSET_DST). */
void kj_handle_memset(CUpti_CallbackId id, const CUpti_CallbackData *cb);
/** Resource callbacks: devices, module loads and unloads, graph nodes created and cloned. */
void kj_handle_resource(CUpti_CallbackId id, const CUpti_ResourceData *rd);

/* ---- --capture: the recording window (inject_capture.c) ---- */
/** 1 while records are kept: always without --capture, inside the window with it. Read on every
 *  callback: one relaxed load. */
extern int kj_recording;
static inline int kj_recording_now(void)
{
	return __atomic_load_n(&kj_recording, __ATOMIC_RELAXED);
}
/** Read KJOULE_CAPTURE (before the activity kinds and callbacks start): a bad value is a problem
 *  of the run and everything is traced. @return 1 when a capture range is set. */
int kj_capture_init(void);
/** Enable the callbacks a cuda-profiler-api range needs (cu/cudaProfilerStart/Stop); an NVTX range
 *  is followed by kjoule's NVTX hooks (inject_nvtx.h). */
void kj_capture_subscribe(CUpti_SubscriberHandle sub);
/** A cu/cudaProfilerStart or Stop call (cuda-profiler-api): @return 1 when it was one. */
int kj_capture_profiler_call(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData *cb);
/** At exit: instances still open written with end 0; an open window closed (KJ_WINDOW_AT_EXIT). */
void kj_capture_at_exit(void);

#include <cuda.h>
/** One kernel launch as the driver was asked for it: by a launch call, or as a graph's kernel node. */
struct kj_launch {
	uintptr_t f;          /* CUfunction or CUkernel */
	uint32_t grid[3], block[3], cluster[3], shmem;
	CUstream stream;
	int ptsz;
	int graph_node;       /* 1: a kernel node read from a graph (no stream, no snapshot) */
	int cooperative;      /* a cooperative launch (cuLaunchCooperativeKernel, the launch or node attribute) */
	void **params;
	void **extra;
};
/** The launch callback: the launch's geometry and parameters, recorded by kj_launch_record. */
void kj_handle_launch(CUpti_CallbackId id, const CUpti_CallbackData *cb);
/** Correlation of the last launch recorded on this thread (not a graph node's). */
uint32_t kj_launch_correlation(void);
/** Record a launch: its group (function + geometry) the first time, then a launch record with its
 *  whole parameter block (the ingest finds the words that differ from the group's). Runs on the
 *  program's thread: lookups, the block's copy and a buffered append only. */
void kj_launch_record(uint32_t correlation, CUcontext ctx, const struct kj_launch *l);
/** --snapshot: a graph kernel node's parameter words kept for the buffers saved before the
 *  graph's first launch. */
void kj_graph_node_param_words(uintptr_t f, void **params, void **extra);

/** An allocation (op 1) or its release (op 2) that CUPTI's activity does not report: VMM mappings,
 *  a graph's memory nodes (via: KJ_MEM_VIA_*). */
void kj_put_allocation(uint64_t ptr, uint64_t bytes, int op, uint32_t corr, int via);

/** This thread's id (gettid), cached per thread. */
uint32_t kj_thread_id(void);

/* ---- host calls that issue GPU work without a launch of their own (inject_issue.c) ---- */
#include <cupti.h>
/** Turn the callbacks of graph launch/instantiate/upload, copies and memsets on or off. */
int kj_issue_enable(CUpti_SubscriberHandle sub, int on);
/** The same but for graph instantiations, which outside a --capture window are still followed. */
int kj_issue_enable_window(CUpti_SubscriberHandle sub, int on);
/** A table over the driver's callback ids: of_name(the id's CUPTI name) for each (calloc'd; NULL
 *  when out of memory). */
uint8_t *kj_driver_cbid_table(int (*of_name)(const char *name));
/** enum kj_issue_op of a driver callback id; 0 when it is not one of them. */
int kj_issue_op(uint32_t cbid);
/** At the call's entry, note the time; at its exit, write a KJ_REC_ISSUE record. */
void kj_issue_handle(uint32_t cbid, const CUpti_CallbackData *cb);

/* ---- copy calls: device addresses, small host-to-device copies' bytes (inject_copy.c) ---- */
/** Build the table of copy forms followed (once, before the callbacks are on). */
int kj_copy_init(void);
/** At a copy call's successful exit: a KJ_REC_COPY_ARGS record (with data when small enough). */
void kj_copy_handle(uint32_t cbid, const CUpti_CallbackData *cb);

/* ---- graphs as instantiated (inject_graph.c) ---- */
/** A node id that a launch (stream capture) already describes: instantiation leaves it alone. */
void kj_graph_node_known(uint64_t node_id);
/** In cuGraphInstantiate* (entry): every node of the graph, kernel nodes' parameters recorded. */
void kj_graph_on_instantiate(const CUpti_CallbackData *cb);
/** At cuGraphAddNode*'s exit: a conditional node's body graphs, walked at instantiation. */
void kj_graph_on_add_node(uint32_t cbid, const CUpti_CallbackData *cb);
/** At cuGraphConditionalHandleCreate's exit: a KJ_REC_COND_HANDLE record. */
void kj_graph_on_cond_handle(const CUpti_CallbackData *cb);
/** A memset node's destination, value and size (KJ_REC_GRAPH_MEMSET), under node id nid. */
void kj_graph_record_memset(CUgraphNode node, uint64_t nid);
/** A KJ_REC_GRAPHNODE record: node -> the launch (correlation) that describes it. */
void kj_put_graphnode(uint64_t node_id, uint64_t correlation);

/* ---- which module a function came from (inject_modules.c) ---- */
/** In the module-loaded resource callback: the module CUPTI names (id and image). */
void kj_module_loaded(uint32_t module_id, const void *image, size_t bytes);
/** At cuModuleLoad*'s entry and exit: pairs the CUmodule the call made with the module CUPTI
 *  named inside it. @return 1 when cbid is such a call. */
int kj_module_load_call(uint32_t cbid, const CUpti_CallbackData *cb);
/** The CUPTI module id and image digest of f's module: 1 when known, else 0 (both set to 0). */
int kj_module_of_function(CUfunction f, uint32_t *module_id, uint64_t *content);

/* ---- buffer snapshots (inject_snapshot.c) ---- */
#include <cuda.h>
/** Before a launch (its parameter block blob): if the budget allows and stream is not capturing,
 * synchronise and save every device buffer a parameter word points to. @return buffers saved. */
int kj_snapshot_before(CUstream stream, uint32_t corr, const unsigned char *blob, uint32_t len);
/** After that launch returned: synchronise and save the same buffers again. */
void kj_snapshot_after(void);
/** A graph kernel's parameter block (captured or read from its node): its pointer words are kept
 * until the next graph launch. */
void kj_snapshot_graph_words(const unsigned char *blob, uint32_t len);
/** Before a graph launch on stream (not capturing): synchronise and save, once each, the buffers
 * kept words point to, as phase 'before' rows under the launch's correlation. @return saved. */
int kj_snapshot_graph(CUstream stream, uint32_t corr);

#endif
