/* Typed readers for the ranks of a multi-GPU job (src/analyze/kj_ranks.c): the processes with GPU
 * work, each one's kernels and copies, its iteration range's instances, its GPU's name and how it
 * ended, and the replayed medians. Each reader runs one query of that analysis, in its order;
 * readers that take a callback call it once per row and stop at (and return) its first non-zero
 * return. */
#ifndef KJ_STORE_A2_RANKS_H
#define KJ_STORE_A2_RANKS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** @brief The largest unique_kernel id, 0 when none or when it cannot be read. Quiet. */
int64_t kj_store_a2_unique_kernel_max_id(sqlite3 *db);

/**
 * @brief The replays of replay_kernel with a median whose status is neither failed nor timeout:
 *        unique_id (0 where NULL), cache mode as stored (or NULL; valid during the callback) and
 *        median_ns. Calls nothing when the run has no replay_kernel row (or no such table).
 * @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a2_rank_replays_each(sqlite3 *db, int (*fn)(void *ud, int64_t unique_id, const char *cache,
							  double median_ns),
				  void *ud);

/** One kernel, copy or memset of one process. */
struct kj_store_a2_rank_act {
	int has_times;             /* 0: start_ns or end_ns NULL (the rest unset) */
	int64_t start_ns, end_ns;
	int has_launch;            /* 0: launch_ns NULL */
	int64_t launch_ns;
	int64_t name_id, unique_id; /* -1 where NULL (always for copies and memsets) */
	int kind;                  /* 0 kernel, 2 copy or memset */
};

/**
 * @brief The kernels, then copies, then memsets of process pid.
 * @return 0, the callback's return, or KJ_EDB (a row that cannot be read is not reported).
 */
int kj_store_a2_rank_acts_each(sqlite3 *db, int64_t pid, int (*fn)(void *ud, const struct kj_store_a2_rank_act *a),
			       void *ud);

/**
 * @brief The instances of NVTX range name in process pid with a start and no end before it, by
 *        start: start_ns, and end_ns with has_end 0 where it is NULL.
 * @return 0, the callback's return, or KJ_EDB (a row that cannot be read ends the read quietly).
 */
int kj_store_a2_rank_ranges_each(sqlite3 *db, const char *name, int64_t pid,
				 int (*fn)(void *ud, int64_t start_ns, int has_end, int64_t end_ns), void *ud);

/**
 * @brief The processes with GPU work, by lowest GPU then pid: pid, lowest device id (-1 where
 *        NULL) and how many GPUs it used.
 * @return 0, the callback's return, or KJ_EDB (also when a row cannot be read; not reported).
 */
int kj_store_a2_ranks_each(sqlite3 *db, int (*fn)(void *ud, int64_t pid, int64_t device_id, int64_t n_devices),
			   void *ud);

/** One NCCL call of a process (nccl_call; kj_spool.h has the fields' meaning). */
struct kj_store_a2_nccl_call {
	int64_t t_ns;
	char op[16];           /* "all_reduce", ...; "" when longer than that (not one kjoule writes) */
	int64_t count, datatype;
	int64_t bytes;         /* count x element size; -1 not known */
	int64_t nranks;        /* -1 not known */
	int64_t peer, group_depth;
};

/**
 * @brief The NCCL calls of process pid, by time (then row order). Calls nothing when the run has
 *        no nccl_call table (no call recorded: kj_db_caps' nccl_call).
 * @return 0, the callback's return, or KJ_EDB.
 */
int kj_store_a2_nccl_calls_each(sqlite3 *db, int64_t pid,
				int (*fn)(void *ud, const struct kj_store_a2_nccl_call *c), void *ud);

/** Prepared lookups of a rank's GPU name and end (kj_store_a2_rank_reader_open). */
struct kj_store_a2_rank_reader;

/** @brief Prepare the lookups. @return 0 or KJ_EDB (message printed); *out NULL on failure. */
int kj_store_a2_rank_reader_open(sqlite3 *db, struct kj_store_a2_rank_reader **out);

/**
 * @brief The name of GPU device_id ('' when unknown) into gpu, and in *ended_cleanly process
 *        pid's ended_cleanly (0 where NULL or the process is not recorded).
 * @return 1 when read, 0 when not (gpu and *ended_cleanly untouched).
 */
int kj_store_a2_rank_gpu(struct kj_store_a2_rank_reader *rd, int64_t device_id, int64_t pid, char *gpu,
			 size_t len, int *ended_cleanly);

/**
 * @brief The first recorded problem of process pid saying how it ended (text starting "ended ")
 *        into buf. @return 1 when there is one, else 0 (buf untouched).
 */
int kj_store_a2_rank_end(struct kj_store_a2_rank_reader *rd, int64_t pid, char *buf, size_t len);

/** @brief Finalize the lookups; accepts NULL. */
void kj_store_a2_rank_reader_close(struct kj_store_a2_rank_reader *rd);

#endif
