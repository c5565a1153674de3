/* Internals of the sweep driver shared by kj_sweep_run.c (the loop, CSV rows, progress) and
 * kj_sweep_host.c (worker processes, requests and answers). Not for other folders. */
#ifndef KJ_SWEEP_INTERNAL_H
#define KJ_SWEEP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "kj_proc.h"
#include "kj_sweep.h"

#define MAX_WORKERS 64

/* One worker: a kjoule-sweep-worker process, or for a collective the group of kjoule-nccl-worker
 * processes of one communicator (one a GPU), each hosted by kj_proc. The driver talks to rank 0
 * (proc); every request goes to the peers too, whose stdout is discarded. */
struct worker {
	struct kj_proc *proc;                    /* rank 0; NULL when none runs (or given up) */
	int64_t shape; /* index in the todo list being measured, -1 idle, -2 warming up */
	int device;
	int deaths; /* consecutive ends without an answer */
	int ranks;                               /* 1, or the communicator's size */
	struct kj_proc *peer[KJ_SWEEP_MAX_RANKS]; /* ranks 1.. (index 0 unused); NULL once ended */
	char id_dir[256];                        /* where rank 0 leaves the ncclUniqueId; '' none */
};

struct answer {
	char status[16];
	char f_us[32], b_us[32], f_uj[32], f_uj_unc[32], b_uj[32], b_uj_unc[32], err_f[32], err_b[32];
	char f_mhz[32], b_mhz[32]; /* mean SM clock over each energy window */
	char f_uj_warm[32], f_uj_cold[32], b_uj_warm[32], b_uj_cold[32]; /* the energies f_uj is the mean of */
	char f_algo[96], b_algo[96]; /* each pass's cuBLASLt algorithms (a word of digits, '.' and '+') */
	char msg[256];
};

/** Parse "KJ_SWEEP status=ok f_us=.. ..."; figures not given or not finite numbers become '-'.
 *  Returns 0, or -1 when the line is not a KJ_SWEEP answer. */
int kj_sweep_parse_answer(const char *line, struct answer *a);

/** Start the worker (ranks == 1) or the ranks of one communicator on GPUs device..device+ranks-1,
 *  through the worker host (kj_proc): stdin and stdout of rank 0 piped to the caller, the peers'
 *  stdin piped and their stdout discarded, stderr ours. Rank 0 is killed (its process group)
 *  when a request has had no answer for timeout_s seconds (<= 0: never), while kj_proc_poll()
 *  watches it. Every process gets the config's wait/warmup/active in KJ_SWEEP_WAIT/WARMUP/ACTIVE
 *  and NVLink multicast off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
 *  NVSHMEM_DISABLE_NVLS=1) unless the user set them. A single worker sees only its GPU
 *  (CUDA_VISIBLE_DEVICES narrowed); a rank sees them all and is told its own in KJ_NCCL_DEVICE
 *  (NCCL's peer-to-peer paths want the peers visible), with KJ_NCCL_RANK, KJ_NCCL_NRANKS,
 *  KJ_NCCL_DEVICES and KJ_NCCL_ID_FILE (rank 0 writes the id there, the others wait for it).
 *  Returns 0 or KJ_EIO; on failure nothing is left running. */
int kj_sweep_worker_start(struct worker *w, const char *path, int device, int ranks,
			  const struct kj_sweep_config *cfg, double timeout_s);
/** Close the stdin of every process of w and reap them all; one that has not ended 5 s after its
 *  stdin closed (a rank stuck in a collective whose partner died) is killed. w->proc is NULL
 *  after. */
void kj_sweep_worker_stop(struct worker *w);
/** Send the request for shape v to every peer and rank 0. 0 or KJ_EIO. */
int kj_sweep_worker_send(struct worker *w, const struct kj_sweep_config *cfg, int precision,
			 const int64_t *v, int energy, int check);
/** For a group: 1 when a peer has ended (rank 0 is then killed, so the driver's death path
 *  restarts the whole group), else 0. */
int kj_sweep_worker_peer_died(struct worker *w);

#endif
