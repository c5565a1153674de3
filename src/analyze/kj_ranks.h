/* Several GPUs: the ranks of a job (one process per GPU, as torchrun starts them) and the job
 * they make together (docs/multi-gpu.md). A rank is a process of the run that put work on a GPU;
 * the launcher (torchrun itself) has none and is no rank. Ranks are numbered in the order of
 * their GPU (device row id), then pid: torchrun's LOCAL_RANK picks cuda:LOCAL_RANK, so on one
 * host rank N runs on the N-th GPU the job used.
 *
 * Each rank's iterations are its own: the iteration range is chosen per process
 * (kj_iter_default_range with its pid) and its instances split only that process's work. Every
 * figure of a rank is over its own GPU: busy time is the union of that rank's kernels and copies
 * (never across devices), its energy is its GPU's counter over its measured iterations. */
#ifndef KJ_RANKS_H
#define KJ_RANKS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** One rank: means over its measured (kept) iterations, times in ns, energy in mJ. */
struct kj_rank {
	int64_t pid;
	int64_t device_id;      /* its GPU (the lowest device row id it used) */
	int64_t n_devices;      /* devices it put work on (more than one: busy is per device summed) */
	char gpu[96];           /* device.name; "" unknown */
	char range[256];        /* its iteration range; "" none (its whole run is one iteration) */
	const char *chosen_by;  /* "named", or kj_iter_default_range's reason */
	int64_t n_iters, n_kept;
	double wall_ns, busy_ns, kernel_ns;
	double comm_ns;         /* NCCL kernel time issued inside the iteration (overlap counted once) */
	double comm_exposed_ns; /* the part of it not overlapped by this rank's compute kernels */
	double comm_launches;   /* NCCL kernel launches per iteration */
	int have_explained;     /* some compute kernel has a warm replay */
	double explained_fraction; /* as compare's: predicted wall / wall, NCCL kept in situ */
	int energy_ok;          /* 0: its GPU has no usable samples over the window */
	double energy_mj, energy_unc_mj; /* its GPU per iteration */
	const char *energy_why; /* when not ok */
	/* NCCL's recorded calls (libkjoule_nccl.so), each matched to the first NCCL kernel its process
	 * launched at or after it; per measured iteration (docs/multi-gpu.md) */
	int nccl_bytes_ok;      /* 0: nccl_bytes_why says why there is no figure */
	double nccl_bytes;      /* algorithm bytes per iteration (nccl-tests' definition) */
	double nccl_bus_bytes;  /* bus bytes per iteration (nccl-tests' factors) */
	double nccl_matched_ns; /* the matched NCCL kernels' time per iteration */
	int nccl_bw_ok;         /* 0: nccl_bw_why says why */
	double nccl_bus_gbps;   /* bus bytes over the matched NCCL kernels' time, waits included */
	const char *nccl_bytes_why, *nccl_bw_why;
	char nccl_ops[160];     /* the ops per iteration, "all_reduce x2" with a times sign */
	int64_t nccl_calls;     /* calls recorded over the whole run */
	int64_t nccl_calls_unmatched;       /* of them, calls no later NCCL kernel of the process matched */
	int64_t nccl_calls_unknown;         /* calls of the measured iterations of unknown size */
	int64_t nccl_kernels_without_call;  /* NCCL kernels of the measured iterations no call matched */
	int died;               /* the process never closed its trace (killed, crashed, _exit) */
	char died_why[256];     /* how it ended, as ingest recorded it ("ended by SIGTERM from pid 7
	                         * (torchrun)", "ended without closing its trace: SIGKILL ..."); a fixed
	                         * text for runs ingested before kjoule recorded it */
};

/** A job: its ranks and the figures they make together. */
struct kj_job {
	struct kj_rank *r;
	size_t n;               /* ranks (processes with GPU work) */
	int64_t n_processes;    /* traced processes, launcher included */
	double time_ns;         /* per iteration: the slowest rank's mean wall */
	size_t slowest;         /* its index */
	double imbalance;       /* the largest rank's work / the mean rank's work, work = GPU busy less the
	                         * NCCL time no compute overlapped (waits inside collectives); 0 when none */
	int energy_ok;          /* every GPU of the job has an energy figure */
	double energy_mj, energy_unc_mj; /* summed over the GPUs (each GPU once); bounds add */
	int64_t n_gpus;         /* distinct GPUs the ranks used */
	int mixed_gpus;         /* the ranks' GPUs are not all of one type */
	char gpus[256];         /* their types, ", "-joined, each once */
	size_t n_died;
};

/**
 * @brief The ranks of a run and their job. region NULL: each rank's own range by
 *        kj_iter_default_range(db, pid); else that name for every rank (a rank without it is one
 *        iteration). skip < 0: kj_iter_default_skip per rank. *out is filled (free with
 *        kj_job_free); out->n < 2 means the run is no multi-GPU job and the caller prints nothing.
 * @return 0, KJ_EDB, KJ_ENOMEM.
 */
int kj_job_analyze(sqlite3 *db, const char *region, int skip, struct kj_job *out);

/**
 * @brief The ranks alone, in rank order, into *out (free with kj_job_free): pid, device_id,
 *        n_devices, gpu, died and the job's n_processes, gpus, mixed_gpus, n_died (those only
 *        when out->n >= 2); no iteration figure. Cheap: for naming ranks, info's checks.
 * @return 0, KJ_EDB, KJ_ENOMEM.
 */
int kj_ranks_list(sqlite3 *db, struct kj_job *out);

/** @brief "rank N (GPU k)" for pid when the job has two ranks or more and pid is one of them;
 *  else buf[0] = 0. */
void kj_rank_label(const struct kj_job *j, int64_t pid, char *buf, size_t len);

/** @brief Free the ranks; accepts a zeroed job. */
void kj_job_free(struct kj_job *j);

/** @brief 1 when a kernel name is NCCL's (ncclKernel_*, ncclDevKernel_*, ncclDevFunc_*), mangled
 *  or demangled; NULL gives 0. */
int kj_kernel_is_nccl(const char *name);

#endif
