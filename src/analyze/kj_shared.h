/* Energy on a shared GPU, read back from a run: whether kjoule run watched for other processes,
 * what it saw, and which iterations had another process's work on the GPU (docs/energy.md);
 * report's kj_shared_out.h says it in words and JSON. */
#ifndef KJ_SHARED_H
#define KJ_SHARED_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** Fewest iterations without foreign work that energy figures are taken from instead of all. */
#define KJ_SHARED_MIN_CLEAN 3
#define KJ_SHARED_MAX_PIDS 16

/** What a run says about other processes on its GPUs. */
enum kj_shared_watch {
	KJ_SHARED_NOT_WATCHED = 0, /* an older run, --no-watch or no NVML: nothing is known */
	KJ_SHARED_WATCHED = 1,     /* the processes on the GPUs were listed */
	KJ_SHARED_BLIND = -1,      /* the driver would not list them: "cannot be seen here" */
};

struct kj_shared_iv {
	int64_t device_id, pid, start_ns, end_ns; /* pid <= 0: unknown (utilisation signal) */
};

struct kj_shared {
	int watch;                     /* enum kj_shared_watch */
	char note[320];                /* why blind (the driver's words) */
	int pid_match_by_time;         /* the driver's pids were another namespace's */
	int mig, mps;                  /* 1 on, 0 off, -1 not known */
	struct kj_shared_iv *proc;     /* another process listed on a GPU */
	size_t n_proc;
	struct kj_shared_iv *util;     /* GPU busy while no traced work ran (secondary) */
	size_t n_util;
	int64_t pids[KJ_SHARED_MAX_PIDS];
	size_t n_pids;
	int more_pids;                 /* more distinct pids than pids[] holds */
};

/** Which iterations had foreign work, and which ones energy figures should use. */
struct kj_shared_choice {
	int64_t n_measured;   /* iterations considered */
	int64_t n_foreign;    /* of them, with another process on a GPU */
	int64_t n_util;       /* of them, with unexplained GPU utilisation (secondary) */
	int use_clean;        /* 1: energy figures from the n_measured - n_foreign clean ones */
};

/**
 * @brief Read a run's watch (tables absent: KJ_SHARED_NOT_WATCHED, never "alone").
 * @param out  filled; free its arrays with kj_shared_free()
 * @return 0 or a negative kj error code.
 */
int kj_shared_load(sqlite3 *db, struct kj_shared *out);
/** @brief Free the arrays of a kj_shared; accepts a zeroed struct. */
void kj_shared_free(struct kj_shared *sh);

/** @brief 1 when another process was on a GPU at some time in [start_ns, end_ns]. */
int kj_shared_foreign_in(const struct kj_shared *sh, int64_t start_ns, int64_t end_ns);
/** @brief 1 when unexplained utilisation was read in [start_ns, end_ns] (secondary signal). */
int kj_shared_util_in(const struct kj_shared *sh, int64_t start_ns, int64_t end_ns);

/**
 * @brief Mark the iterations (windows start_ns[i]..end_ns[i], those with use[i] set) that had
 * foreign work in foreign[i], count them, and decide: energy from the clean iterations when the
 * run was watched, some had foreign work and at least KJ_SHARED_MIN_CLEAN were clean.
 */
void kj_shared_choose(const struct kj_shared *sh, const int64_t *start_ns, const int64_t *end_ns,
		      const unsigned char *use, size_t n, unsigned char *foreign,
		      struct kj_shared_choice *out);

/** @brief Total time in ns in which another process was on some GPU (union of intervals). */
int64_t kj_shared_foreign_ns(const struct kj_shared *sh);

#endif
