/* The spool: binary records the injection library appends, one file per traced process, and
 * that `kjoule run` ingests into the run database. Every record starts with kj_rec_hdr; size
 * covers the header and is a multiple of 8. A file that ends inside a record was cut short
 * (the process died): the reader keeps every complete record before it.
 * Strings (kernel names, NVTX names and domains) are interned per file: a KJ_REC_STRING
 * record gives the text of an id before any record that uses the id. */
#ifndef KJ_SPOOL_H
#define KJ_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define KJ_SPOOL_MAGIC 0x6C6F6F70736A6BULL /* "kjspool" */
#define KJ_SPOOL_VERSION 3 /* 3: a launch may carry its whole parameter block */

enum kj_rec_type {
	KJ_REC_FILE = 1,      /* first record: magic, version */
	KJ_REC_PROCESS,       /* pid, ppid, start clocks; text = exe then args, NUL separated */
	KJ_REC_STRING,        /* id; text */
	KJ_REC_KERNEL,
	KJ_REC_MEMCPY,
	KJ_REC_MEMSET,
	KJ_REC_MEMORY,        /* allocation or free */
	KJ_REC_MARKER,        /* NVTX range start/end */
	KJ_REC_API,           /* driver/runtime API call (with --api) */
	KJ_REC_LAUNCH,        /* every launch: its group and how its parameters differ from the group's */
	KJ_REC_GROUP,         /* a launch group (function + geometry) and its reference parameter block */
	KJ_REC_MODULE,        /* a loaded module's image */
	KJ_REC_DEVICE,        /* device facts, per ordinal */
	KJ_REC_CLOCK,         /* clock sync triple */
	KJ_REC_PROBLEM,       /* text: something not recorded, and why */
	KJ_REC_GRAPHNODE,     /* graph node -> the launch (correlation) that created it */
	KJ_REC_END,           /* clean end of the process's trace */
	KJ_REC_DROPPED,       /* CUPTI dropped records */
	KJ_REC_SEQOP,         /* an event record or a stream wait on an event (stream order) */
	KJ_REC_SNAPSHOT,      /* device buffer contents around a launch (--snapshot) */
	KJ_REC_MEMSET_DST,    /* where a memset wrote: CUPTI's memset activity has no address */
	KJ_REC_ISSUE,         /* a host call that issued GPU work: graph launch, copy, memset */
	KJ_REC_GRAPH_NODE,    /* one node of a graph being instantiated, with its dependencies */
	KJ_REC_GRAPH_MEMSET,  /* a memset node's destination, value and size, read at instantiation */
	KJ_REC_COPY_ARGS,     /* a copy call's device addresses, and a host-to-device copy's bytes */
	KJ_REC_COND_HANDLE,   /* a graph conditional handle the program made (cuGraphConditionalHandleCreate) */
	KJ_REC_WINDOW,        /* --capture: the recording window opened or closed */
	KJ_REC_ITER_MARK,     /* --capture: one instance of the capture range, inside the window or not */
};

struct kj_rec_hdr {
	uint32_t type;
	uint32_t size;
};

struct kj_rec_file {
	struct kj_rec_hdr h;
	uint64_t magic;
	uint32_t version;
	uint32_t pad;
};

struct kj_rec_process {
	struct kj_rec_hdr h;
	int64_t pid, ppid;
	int64_t start_ns, start_realtime_ns;
	uint32_t text_len, pad; /* followed by text */
};

struct kj_rec_string {
	struct kj_rec_hdr h;
	uint32_t id, len; /* followed by len bytes (no NUL) */
};

struct kj_rec_kernel {
	struct kj_rec_hdr h;
	int64_t start_ns, end_ns;
	uint64_t graph_node_id;
	uint32_t device, context, stream, correlation;
	uint32_t name_id, graph_id;
	int32_t grid[3], block[3];
	uint32_t cluster[3];
	int32_t shmem_static, shmem_dynamic;
	uint32_t registers;
	/* added to the record (older spools' records end at registers: KJ_REC_KERNEL_MIN_SIZE): the shared
	 * memory the driver set aside per SM for the launch (its L1/shared split), the carveout the
	 * program asked of the function in percent (KJ_CARVEOUT_NONE when it asked none) */
	uint32_t shmem_executed;
	/* in what was padding (0 in older spools' records: a regular launch): CUPTI's
	 * launch type (CUPTI_ACTIVITY_LAUNCH_TYPE_*; 1 and 2 cooperative, which replay must repeat) */
	uint8_t carveout, launch_type, pad8[2];
};
#define KJ_REC_KERNEL_MIN_SIZE offsetof(struct kj_rec_kernel, shmem_executed)
#define KJ_CARVEOUT_NONE 255

struct kj_rec_memcpy {
	struct kj_rec_hdr h;
	int64_t start_ns, end_ns;
	uint64_t bytes, graph_node_id;
	uint32_t device, context, stream, correlation;
	uint8_t copy_kind, src_kind, dst_kind, is_memset;
	uint32_t value; /* memset value */
};

struct kj_rec_memory {
	struct kj_rec_hdr h;
	int64_t t_ns;
	uint64_t address, bytes;
	uint32_t device, stream, correlation;
	uint8_t op;   /* 1 allocation, 2 release */
	uint8_t kind; /* CUPTI memory kind */
	uint8_t pool; /* CUPTI pool type (0 none) */
	uint8_t via;  /* KJ_MEM_VIA_*: who reported it */
};
#define KJ_MEM_VIA_ACTIVITY 0 /* CUPTI's MEMORY2 activity */
#define KJ_MEM_VIA_VMM 1      /* kjoule's callback on cuMemMap/cuMemUnmap */
#define KJ_MEM_VIA_GRAPH 2    /* a graph's memory node, read at instantiation (none in older spools) */

struct kj_rec_marker {
	struct kj_rec_hdr h;
	int64_t t_ns;
	uint32_t id, flags; /* CUPTI marker flags: start/end/instant */
	uint32_t name_id, domain_id;
	uint32_t tid, pad;
};

struct kj_rec_api {
	struct kj_rec_hdr h;
	int64_t start_ns, end_ns;
	uint32_t domain; /* 1 driver, 2 runtime */
	uint32_t cbid, tid, correlation, status, name_id;
	int64_t bytes;   /* -1 unknown */
	int64_t stream;  /* -1 unknown */
};

/* One launch. Its parameter block is either written whole (block_len bytes, its group's
 * length: the tracer copies it and leaves the comparison with the group's to the ingest, off the
 * program's thread), or given as the group's reference block with ndiff 8-byte words replaced
 * (word i covers bytes 8i..8i+7; a last partial word is zero-padded; block_len 0; spool version 2
 * wrote only this form, with 0 in block_len's place). The group's first launch carries neither:
 * its block is the group's. Without parameter capture (--no-params) both are 0 and the group has
 * no block. */
#define KJ_PARAM_MAX_BYTES 32768 /* CUDA's limit on a kernel's parameter block */

struct kj_rec_launch {
	struct kj_rec_hdr h;
	uint64_t group;
	int64_t launch_ns;
	uint32_t correlation, tid;
	uint32_t block_len, ndiff;
	/* followed by ndiff struct kj_word_diff, then block_len bytes */
};

struct kj_word_diff {
	uint32_t word, pad;
	uint64_t value;
};

/* A launch group: one function with one launch geometry, and the parameter block of its first
 * launch. Unique kernels are groups split further by the parameter words that matter. */
struct kj_rec_group {
	struct kj_rec_hdr h;
	uint64_t group;
	int64_t launch_ns;
	uint32_t correlation, name_id;
	uint32_t grid[3], block[3], cluster[3];
	uint32_t shmem_dynamic, stream;
	uint32_t handle_kind; /* 1 CUfunction, 2 CUkernel, 0 unknown */
	uint32_t nparams;
	uint32_t blob_len;    /* 0 when parameters are not captured or not readable */
	uint32_t module_id;   /* CUPTI's id of the function's module (KJ_REC_MODULE); 0 unknown */
	uint32_t flags;       /* KJ_GROUP_* (0 in older spools) */
	/* followed by nparams pairs of uint32 (offset, size), then blob_len bytes, padded to 8 */
};

/* kj_rec_group.flags: the launch asked to be cooperative (cuLaunchCooperativeKernel, or the
 * cooperative launch or kernel-node attribute): CUPTI's records of a graph's kernels do not say so */
#define KJ_GROUP_COOPERATIVE 1u

/* The bytes of one device buffer (or a chunk of it, at address) that a launch's parameters point
 * to, copied with the context idle: phase 0 just before the launch, 1 just after it finished. */
struct kj_rec_snapshot {
	struct kj_rec_hdr h;
	int64_t t_ns;
	uint64_t address, bytes;
	uint32_t correlation, phase;
	uint32_t copy_correlation, pad; /* kjoule's own copy, to leave out of the run's copies */
	/* followed by the bytes */
};

struct kj_rec_module {
	struct kj_rec_hdr h;
	int64_t t_ns;
	uint64_t bytes;
	uint32_t module_id, pad; /* followed by the image */
};

struct kj_rec_device {
	struct kj_rec_hdr h;
	uint32_t ordinal, cc_major, cc_minor, sm_count;
	uint64_t memory_bytes;
	uint32_t l2_bytes, clock_khz, mem_clock_khz, driver_version;
	uint8_t uuid[16];
	char name[128];
	char pci_bus_id[32];
};

struct kj_rec_clock {
	struct kj_rec_hdr h;
	int64_t trace_ns, monotonic_ns, realtime_ns;
};

struct kj_rec_text {
	struct kj_rec_hdr h;
	int64_t t_ns;
	uint32_t len, pad; /* followed by text */
};

/* cuEventRecord* (op 1) or cuStreamWaitEvent (op 2), as the call returned successfully. */
struct kj_rec_seqop {
	struct kj_rec_hdr h;
	int64_t t_ns;
	uint64_t event;            /* the CUevent handle: an id within the process */
	uint32_t stream, correlation;
	uint32_t op, tid;
};

/* A cuMemsetD8/D16/D32 (sync or async) call: destination, value and element size; its
 * correlation joins it to the memset activity record. */
struct kj_rec_memset_dst {
	struct kj_rec_hdr h;
	uint64_t address;
	uint32_t correlation, value;
	uint32_t element_bytes, pad;
};

/* kj_rec_copy_args.direction */
enum kj_copy_direction { KJ_COPY_HTOD = 1, KJ_COPY_DTOH = 2, KJ_COPY_DTOD = 3 };

/* A cuMemcpy* call (HtoD, DtoH, DtoD, or the unified forms whose sides the driver knows): the
 * device address of each device side (0 for a host side) and the copy's size, joined to its
 * memcpy activity record by correlation. A host-to-device copy small enough (KJOULE_COPY_DATA_KB)
 * carries the bytes the host buffer held when the call was made: what the GPU received. */
struct kj_rec_copy_args {
	struct kj_rec_hdr h;
	uint64_t dst, src;       /* device addresses; 0: that side is host memory */
	uint64_t bytes;          /* the copy's size */
	uint32_t correlation, direction;
	uint32_t data_bytes, pad; /* followed by data_bytes (== bytes, or 0: not captured) */
};

struct kj_rec_graphnode {
	struct kj_rec_hdr h;
	uint64_t node_id;
	uint64_t correlation;      /* the launch into a capturing stream that made the node */
	uint64_t original_node_id; /* clones: the node it was cloned from (correlation 0) */
};

/* kj_rec_issue.op */
enum kj_issue_op {
	KJ_ISSUE_GRAPH_LAUNCH = 1, /* cuGraphLaunch: exec_id; its kernels share the correlation */
	KJ_ISSUE_GRAPH_INSTANTIATE = 2, /* graph_id -> exec_id */
	KJ_ISSUE_GRAPH_UPLOAD = 3,
	KJ_ISSUE_MEMCPY = 4,
	KJ_ISSUE_MEMSET = 5,
};

/* A host call that issued GPU work, recorded whether or not --api is on: when and on which
 * thread it ran. The work it issued (kernels of a graph launch, a copy, a memset) carries the
 * same correlation id, so each piece of GPU work is attributed to the call that issued it, not to
 * the time window in which it happened to run. */
struct kj_rec_issue {
	struct kj_rec_hdr h;
	int64_t start_ns, end_ns;
	uint32_t correlation, tid;
	uint32_t op, status;        /* enum kj_issue_op; the call's CUresult */
	uint32_t graph_id, exec_id; /* CUPTI's ids of the CUgraph and CUgraphExec (0: unknown) */
	uint32_t cbid, pad;
};

/* One node of a graph as it was instantiated (read from the CUgraph in cuGraphInstantiate*):
 * graph_id is CUPTI's id of the graph (child graphs: their own id, parent_node their node in the
 * parent). Kernel nodes that no stream-capture launch created also get a KJ_REC_LAUNCH record with
 * correlation `correlation` (from kjoule's own range, KJ_NODE_CORRELATION_BASE up) and a
 * KJ_REC_GRAPHNODE tying the node to it, so their parameters are captured like eager launches'. */
#define KJ_NODE_CORRELATION_BASE 0xC0000000u
/* A dependency that is not a plain full one (a programmatic edge: the next kernel may start while
 * this one runs, PDL) carries its CUgraphEdgeData in the top byte of the node id: bit 63 set,
 * bits 56..57 the type, 58..59 the source port, 60..61 the target port. CUPTI's node ids are
 * small counters, so the low 56 bits hold them whole. */
#define KJ_EDGE_DATA_FLAG (1ull << 63)
#define KJ_EDGE_ID_MASK ((1ull << 56) - 1)
#define KJ_EDGE_TYPE(w) ((unsigned)((w) >> 56) & 3u)
#define KJ_EDGE_FROM_PORT(w) ((unsigned)((w) >> 58) & 3u)
#define KJ_EDGE_TO_PORT(w) ((unsigned)((w) >> 60) & 3u)
#define KJ_EDGE_PACK(type, from, to)                                                               \
	(KJ_EDGE_DATA_FLAG | ((uint64_t)((type) & 3u) << 56) | ((uint64_t)((from) & 3u) << 58) |      \
	 ((uint64_t)((to) & 3u) << 60))
struct kj_rec_graph_node {
	struct kj_rec_hdr h;
	uint64_t node_id, parent_node;
	uint32_t graph_id, type;   /* CUgraphNodeType */
	uint32_t correlation, ndeps; /* launch record of a kernel node (0: none); dependencies */
	/* followed by ndeps uint64 node ids this node depends on */
};

/* A memset node of a graph being instantiated, as the node holds it (cuGraphMemsetNodeGetParams):
 * the graph's memset activity records carry only the node id (or a clone's), never the address,
 * so replay could not otherwise reset what the program reset before each kernel (a tile
 * scheduler's counter, a split-K semaphore). */
struct kj_rec_graph_memset {
	struct kj_rec_hdr h;
	uint64_t node_id, address;
	uint64_t width, height, pitch; /* width in elements; pitch in bytes (rows of a 2D memset) */
	uint32_t value, element_bytes;
};

/* A conditional node's handle: a kernel that sets the node's condition (cudaGraphSetConditional)
 * takes it as a parameter word, and runs only inside its graph. */
struct kj_rec_cond_handle {
	struct kj_rec_hdr h;
	uint64_t handle;
	uint32_t graph_id, default_value; /* CUPTI's id of the graph it was made for; its launch value */
};

/* kj_rec_window.event */
enum kj_window_event {
	KJ_WINDOW_OPEN = 1,      /* activity recording on: the first captured instance started */
	KJ_WINDOW_CLOSE = 2,     /* off again: the last captured instance ended (or cudaProfilerStop) */
	KJ_WINDOW_AT_EXIT = 3,   /* the process ended with the window still open: closed here */
	KJ_WINDOW_DETACH = 4,    /* outside the window, CUPTI taken out of the process (cuptiFinalize)
				  * after instance `instance` ended: nothing is followed until ... */
	KJ_WINDOW_ATTACH = 5,    /* ... CUPTI is put back, at the start of instance `instance` */
};

/* --capture (KJOULE_CAPTURE): activity and per-launch records are kept only inside the window;
 * this record says when it opened and closed. `instance` is the capture range's instance (from 0)
 * that opened or closed it. */
struct kj_rec_window {
	struct kj_rec_hdr h;
	int64_t t_ns;
	uint32_t event, instance;
	uint32_t tid, pad;
};

/* --capture: one instance of the capture range (the NVTX range, or a cudaProfilerStart..Stop
 * window), written when it ends, or at exit with end_ns 0 while it was still open. All instances
 * are written, inside the window or outside it: the whole run's iterations. */
struct kj_rec_iter_mark {
	struct kj_rec_hdr h;
	int64_t start_ns, end_ns;
	uint32_t instance, tid;
	uint32_t name_id, captured; /* captured: 1 when the window was open for the whole instance */
};

struct kj_rec_dropped {
	struct kj_rec_hdr h;
	uint64_t count;
};

/* The signal record: a small text file, p<pid>.signal beside the process's p<pid>.spool, that the
 * injection library's handler writes when a signal whose action is the default (the process is
 * certain to die: SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL) reaches a
 * traced process. It is written with async-signal-safe calls only, into p<pid>.signal.tmp and
 * renamed into place, so a reader sees it whole or not at all. One "key value" line each, numbers
 * in decimal:
 *   kjoule-signal 1        (first line: the format and its version)
 *   signal 15              the signal number
 *   code 0                 siginfo's si_code (<= 0: sent by a process, > 0: by the kernel)
 *   pid 1234               the sender's pid (si_pid) when a process sent it, else 0
 *   t_ns 123               CLOCK_MONOTONIC when it arrived
 *   info 1                 1: the handler got the signal's siginfo; 0: it was called without it (a
 *                          handler installed later relayed the signal as a plain handler): code
 *                          and pid are then 0 and say nothing (absent in older records)
 *   arg0 /usr/bin/python3  the sender's first three command-line words as /proc/PID/cmdline held
 *   arg1 /usr/bin/torchrun them when the signal arrived (absent when unreadable; control
 *   arg2 --nproc-per-node  characters replaced by '?', each cut at KJ_SIGNAL_ARG_MAX bytes)
 * Readers skip keys they do not know. SIGKILL cannot be caught: it leaves no record. */
#define KJ_SIGNAL_HEADER "kjoule-signal 1"
#define KJ_SIGNAL_SUFFIX ".signal"
#define KJ_SIGNAL_ARG_MAX 200

/* NCCL calls (libkjoule_nccl.so, src/trace/nccl; LD_PRELOADed by kjoule run): a text file
 * p<pid>.nccl beside the process's spool, written only when the process called NCCL. Line 1 is
 * KJ_NCCL_HEADER followed by " pid <pid>"; then one line per call, nine fields apart by spaces:
 *   t_ns tid op count datatype bytes nranks peer group_depth
 * t_ns CLOCK_MONOTONIC at the call's entry (launch_ns's clock); op one of all_reduce, all_gather,
 * reduce_scatter, broadcast, reduce, send, recv; count as passed (all_gather's sendcount and
 * reduce_scatter's recvcount: per rank); datatype ncclDataType_t's value; bytes count x element
 * size (-1: datatype not known); nranks the communicator's size (-1: not known); peer the root
 * (broadcast, reduce) or peer (send, recv), else -1; group_depth the ncclGroupStart nesting of the
 * calling thread (0: outside a group). Readers skip nothing: a line that is not this is an error. */
#define KJ_NCCL_HEADER "kjoule-nccl 1"
#define KJ_NCCL_SUFFIX ".nccl"

#define KJ_REC_ALIGN(n) (((n) + 7u) & ~7u)

#endif
