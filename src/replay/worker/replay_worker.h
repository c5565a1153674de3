/* Internals of kjoule-replay-worker shared by its files: the options, one captured launch, the
 * worker's state, and the functions each file offers the others. */
#ifndef KJ_REPLAY_WORKER_H
#define KJ_REPLAY_WORKER_H

#include <cuda.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>
#ifdef KJ_WITH_CUPTI
#include <cupti.h>
#endif

#include "kj_db.h"
#include "kj_energy.h"
#include "kj_gpu.h"
#include "kj_error.h"
#include "kj_replay.h"
#include "kj_store_w_launch.h"
#include "kj_store_w_seq.h"

struct opts {
	const char *db;
	int64_t unique;
	int runs, warmup, warm, cold, energy, unroll, device, relocate, use_cupti, graph;
	int64_t sequence; /* >= 0: replay this iteration (sequence_op), not a unique kernel */
	int64_t seq_first, seq_last; /* --ordinals A:B: only these sequence_op ordinals */
	int fill;         /* 0 random, 1 small integers, 2 zeros (fallbacks when random data faults) */
	double hang_s;    /* a first launch running longer is reported as hung */
	int64_t *uniques; /* the unique kernels of this worker, replayed in order in one context */
	size_t nuniques;
	int debug;
	double energy_s;
	int probe;
	int verify;       /* compare outputs with the run's after-launch snapshot */
	int topology;     /* --sequence --graph: also the graph launches with their recorded topology */
	int no_pace;      /* --no-pace: energy back to back only (iteration and kernels) */
	double pace_duty; /* --pace-duty D: the program ran capped at this GPU busy share (0: not) */
	int no_cold_energy; /* --no-cold-energy: with the cold cache, energy with warm L2 only */
};

/* A function compiled with PTX .reqntid (Triton's kernels): the one block shape the driver
 * launches it with (cuFuncGetAttribute does not tell; the cubin's EIATTR_REQNTID does). */
struct kj_reqntid {
	uint64_t name_hash;
	unsigned x, y, z;
};

/* One launch as captured: function, geometry, parameter block and its pointer words. */
struct klaunch {
	CUfunction fn;
	char *mangled;
	int64_t pid, launch_ns, correlation, unique_id, stream_id;
	unsigned grid[3], block[3], cluster[3], shmem;
	int regs, smem_static; /* of the function that ran, as traced; -1 unknown */
	int shmem_executed;    /* the shared memory the driver set aside per SM as traced; -1 unknown */
	int carveout;          /* the carveout (%) the program asked of the function; -1 none or unknown */
	int carveout_set;      /* the carveout (%) the replay asked of it (replay_carveout), -1 none */
	char module_hash[40];  /* the module the launch's function came from, as traced; "" unknown */
	int fn_unmatched;      /* no captured function of the name has those: fn is only the first that fits */
	char unmatched_why[400]; /* then what each candidate had instead, or why it did not load */
	uint8_t *blob;
	size_t blob_len;
	struct kj_replay_param *layout;
	size_t nlayout;
	void **kparams;
	int use_cluster_attr;
	int cooperative;       /* the program launched it cooperatively (grid-wide sync): so does replay */
	struct kj_replay_ptr *ptrs;
	size_t nptrs;
};

/* Everything one worker holds: the context, modules and database for all its kernels, and the
 * per-kernel state that kernel_close() releases. */
struct replay {
	struct opts o;
	sqlite3 *db;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUlibrary lib;
	CUmodule mods[256];    /* modules loaded, by hash (a sequence replay of a JIT-compiled program loads many) */
	char mod_hash[256][72];
	struct kj_reqntid *mod_req[256]; /* per module: its functions that launch with one block shape only */
	size_t mod_nreq[256];
	size_t nmods;
	struct klaunch k;
	int64_t device_id;
	int nvml_index;        /* NVML's index of R->dev (worker_nvml_map); -1: none, nvml_why says why */
	char nvml_why[160];
	struct kj_replay_range *ranges;
	size_t nranges;
	struct kj_replay_region *regions;
	size_t nregions;
	int *region_of;
	CUdeviceptr *region_va;
	CUmemGenericAllocationHandle *region_h;
	int *region_moved;
	CUdeviceptr flush;
	size_t flush_bytes;
	struct kj_replay_result res;
	int poisoned;          /* the context cannot run more work (sticky error, hung kernel) */
	void *fill_host;       /* pinned pattern buffer, kept across kernels */
	struct prereserve { uintptr_t addr; size_t len; } *pre;
	struct early { uint64_t base, len; CUdeviceptr va; } *early; /* device VA taken right after cuInit */
	size_t nearly;
	int *region_owned;     /* 1: reserved for this kernel (freed after it); 0: inside an early one */
	size_t npre;
	/* memsets the program made on the kernel's stream just before it, into its buffers (split-K
	 * semaphores, accumulators): repeated before every launch of the kernel */
	struct premem { CUdeviceptr dst; uint32_t value; int element_bytes; size_t bytes; } *premem;
	size_t npremem;
};

#define CU(call)                                                   \
	do {                                                       \
		CUresult e_ = (call);                              \
		if (e_ != CUDA_SUCCESS) {                          \
			cu_fail(&R->res, #call, e_, __FILE__, __LINE__);     \
			return KJ_EGPU;                            \
		}                                                  \
	} while (0)

/* worker_load.c */
/** A failed CUDA call as the kernel's result ("failed", the call, its error, where). */
void cu_fail(struct kj_replay_result *r, const char *what, CUresult e, const char *file,
	     int line);
CUresult launch(struct replay *R);
CUresult launch_k(const struct klaunch *k, CUstream stream);
int load_function(struct replay *R);
int load_function_k(struct replay *R, struct klaunch *kl);
int load_launch(struct replay *R);
int load_launch_k(struct replay *R, struct klaunch *k, int64_t lp_id);
/* What load_launch_k and prepare_k allocated in k, freed; k zeroed. */
void klaunch_free(struct klaunch *k);
int load_ranges(struct replay *R);
int prepare_k(struct replay *R, struct klaunch *k, CUstream stream, int check);
int prepare_launch(struct replay *R);
/* worker_memory.c */
/** Where [addr, addr + bytes) of the recorded address space lies in the re-created regions (their
 * address, relocated or not), or 0 when no region holds it. */
CUdeviceptr region_address(const struct replay *R, uint64_t addr, size_t bytes);
/** The memsets that preceded the captured launch on its stream, at their re-created addresses
 * (R->premem; none for runs without memset destinations). 0 or KJ_ENOMEM. */
int load_premem(struct replay *R);
/** Enqueue R->premem on stream. */
CUresult run_premem(const struct replay *R, CUstream stream);
int early_cmp(const void *a, const void *b);
int early_reserve(struct replay *R, int with_ctx);
void fill_pattern(uint8_t *p, size_t n, uint64_t seed);
int fill_regions(struct replay *R);
int map_allocations(struct replay *R);
int map_used(struct replay *R, const int *used);
void prereserve(struct replay *R, uintptr_t addr, size_t len);
int relocate(struct replay *R);
size_t relocate_launch(struct replay *R, struct klaunch *k, int describe);
int scan_launch(struct replay *R, struct klaunch *k, int *used);
uint64_t va_align_bytes(void);
/* worker_sequence.c */
int sequence_run(struct replay *R, int64_t iteration, int graph);
/** Time an instantiated graph: R->o.runs launches after R->o.warmup, each between events on s;
 *  min/median/max into out (status failed and error on a CUDA error). 0 or KJ_EGPU. */
int graph_time(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out);
/** Energy per launch of an instantiated graph (kj_amortize_measure), into out when measured.
 *  out->pace_ns > 0 on entry: launches paced at that period and waited for (kj_replay_pace.h);
 *  on return the period as measured, 0 when no energy was measured. */
void graph_energy(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out);
/* worker_topology.c: the kept iteration's graph launches rebuilt with their recorded topology */
struct topo;
/** Build the topology graph of the iteration (kj_replay_topo_load) from the loaded launches k[0..nk)
 *  (the iteration's kernel ops in order), instantiate it, time it (and its energy with --energy)
 *  into out (mode "topology"). *tp receives the state for topology_per_node/topology_free, also on
 *  failure (then out says why). 0, or a KJ_E* code with out failed. */
int topology_run(struct replay *R, int64_t iteration, struct klaunch *k, size_t nk, CUstream s,
		 struct kj_replay_seq *out, struct topo **tp);
/** Each kernel node timed where it runs in the topology graph (CUPTI, up to 20 launches): one
 *  KJ_NODE line per kernel node; none when the records cannot all be tied to their nodes. */
void topology_per_node(struct replay *R, struct topo *tp, CUstream s);
/** Release what topology_run made; accepts NULL. */
void topology_free(struct topo *tp);
/* worker_snapshot.c */
/** The run's saved buffers overlaid on the re-created regions (see worker_snapshot.c); with
 *  own_only, nothing at all unless rows of this very launch are among them (the caller then runs
 *  the kernel on the fill alone: other launches' rows would be wiped again). */
int apply_snapshot(struct replay *R, int *applied, int *exact, int own_only);
void verify_outputs(struct replay *R, int exact_inputs);
/* worker_timing.c (the CUPTI kernel records of the last cupti_start..cupti_stop) */
#ifdef KJ_WITH_CUPTI
extern int64_t *g_dur, *g_start;
extern uint32_t *g_stream;
extern uint64_t *g_node; /* CUPTI's graph node id of each record (0 outside graphs) */
extern size_t g_ndur;
#endif
int cupti_start(void);
void cupti_stop(void);
/* NVML's index of the worker's CUDA device, by its PCI bus id (NVML ignores CUDA_VISIBLE_DEVICES),
 * into R->nvml_index; -1 with R->nvml_why when NVML has no such GPU. */
void worker_nvml_map(struct replay *R);
int measure_energy(struct replay *R);
int time_mode(struct replay *R, int cold, struct kj_replay_timing *out);

#endif
