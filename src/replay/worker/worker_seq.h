/* kjoule-replay-worker's whole-iteration replay (--sequence), shared by its three files:
 * worker_seq_load.c reads the iteration and makes it ready on the GPU, worker_seq_time.c enqueues
 * and times it (eager, graph, energy, each kernel), worker_sequence.c runs it (sequence_run). */
#ifndef KJ_REPLAY_WORKER_SEQ_H
#define KJ_REPLAY_WORKER_SEQ_H

#include "replay_worker.h"

struct seq_op {
	int type;              /* 0 kernel, 1 memcpy, 2 memset, 3 event record, 4 event wait */
	int stream;            /* index into streams */
	int event;             /* index into events, -1 none */
	int kernel;            /* index into launches */
	int64_t bytes;
	int copy;              /* 0 HtoD, 1 DtoH, 2 DtoD, 3 HtoH */
	int pageable;          /* host side pageable */
	uint64_t address;      /* memset: recorded destination (0 unknown), its value and element size */
	uint32_t value;
	int element_bytes;
	CUdeviceptr dst;       /* memset: the destination in a re-created region (0: scratch memory) */
	int64_t correlation, pid; /* the op's call (-1: unknown): its copy's record is found by them */
	uint64_t copy_dst, copy_src; /* memcpy: the recorded device addresses (0: unknown, or host) */
	void *data;            /* memcpy HtoD: the bytes the program's copy carried (NULL: not kept) */
	void *data_pinned;     /* the same bytes in pinned memory (a capture's copies, pinned sources) */
	CUdeviceptr cdst, csrc; /* memcpy: its sides in re-created regions (0: scratch memory) */
};

struct seq {
	struct seq_op *ops;
	size_t nops;
	struct klaunch *k;
	size_t nk;
	int64_t *stream_ids;
	CUstream *streams;
	size_t nstreams;
	int64_t *event_ids;
	CUevent *events;
	size_t nevents;
	CUevent start, stop, *join;
	CUdeviceptr d1, d2;
	void *pinned, *pinned2, *pageable, *pageable2;
	int64_t max_bytes;
	int graph_mode;       /* enqueueing into a capture: pinned host memory only */
	ssize_t refused;      /* the kernel whose launch seq_enqueue's last failure was, -1 none */
	int program_bytes;    /* host-to-device copies replayed with the bytes the program's carried */
	int cond_setters;     /* launches left out: they set a graph conditional's condition */
};

/* worker_seq_load.c */
/** Read the ops of one iteration (R->o.seq_first..seq_last), their launches, and the host kinds
 * of their copies into S (zeroed by the caller); 0 or a negative KJ_E* code. */
int seq_load(struct replay *R, int64_t iteration, struct seq *S);
/** Marks used the allocations a copy replayed on the program's memory touches. */
void seq_mark_copies(struct replay *R, const struct seq *S, int *used);
/** A loaded sequence made ready on the GPU: launches relocated, memsets at their destinations,
 * functions loaded, streams, events and copy buffers. *moved: relocated launches added. */
int seq_gpu_ready(struct replay *R, struct seq *S, int *moved);

/* worker_seq_time.c */
/** Enqueue one iteration: fork every stream from the first, the ops in recorded order, join. */
CUresult seq_enqueue(struct seq *S);
/** Time one mode: the eager iteration, or the graph exec, on the first stream. */
int seq_time(struct replay *R, struct seq *S, CUgraphExec exec, struct kj_replay_seq *out);
/** The program's launch period where it left its GPU idle between the iteration's graph launches
 * (said on stderr), else 0; 0 with --no-pace. */
int64_t program_pace(struct replay *R, int64_t iteration);
#ifdef KJ_WITH_CUPTI
/** Each kernel's time where the iteration puts it (CUPTI): one KJ_TIMING line per unique kernel. */
void seq_per_kernel(struct replay *R, struct seq *S);
#endif

#endif
