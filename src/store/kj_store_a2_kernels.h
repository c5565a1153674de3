/* Typed readers for the per-kernel table (src/analyze/kj_kernels.c): every kernel launch with its
 * geometry, every copy and memset, and the names, keys and tiers of the kernels found. Readers
 * that take a callback call it once per row and stop at (and return) its first non-zero return. */
#ifndef KJ_STORE_A2_KERNELS_H
#define KJ_STORE_A2_KERNELS_H

#include <sqlite3.h>
#include <stdint.h>

/** One kernel launch; integers are -1 where the column is NULL or the run does not record it. */
struct kj_store_a2_launch {
	int64_t device_id;
	int has_times;             /* 0: start_ns or end_ns NULL */
	int64_t start_ns, end_ns;
	int has_unique;            /* 0: unique_id NULL */
	int64_t unique_id, name_id;
	int64_t grid[3], block[3], cluster[3];
	int64_t shmem_dynamic, shmem_static, registers;
	int64_t shmem_executed, carveout;
	int has_launch_type;       /* 0: launch_type NULL or not recorded */
	int64_t launch_type;
};

/**
 * @brief Every kernel launch of process pid (every process when pid < 0), in stored order.
 * @return 0, the callback's return, or KJ_EDB ("database: reading kernels: ..." printed when a
 *         row cannot be read).
 */
int kj_store_a2_launches_each(sqlite3 *db, int64_t pid, int (*fn)(void *ud, const struct kj_store_a2_launch *l),
			      void *ud);

/** One memcpy or memset. */
struct kj_store_a2_copy {
	int64_t device_id;         /* -1 where NULL */
	int has_times;             /* 0: start_ns or end_ns NULL */
	int64_t start_ns, end_ns;
	int64_t bytes;             /* -1 where NULL */
	const char *kind;          /* memcpy.kind, NULL where NULL and for memsets; valid during the callback */
};

/**
 * @brief Every memcpy (memset_table 0) or memset (1) of process pid (every process when pid < 0),
 *        in stored order.
 * @return 0, the callback's return, or KJ_EDB ("database: reading memcpys: ..." or "... memsets"
 *         printed when a row cannot be read).
 */
int kj_store_a2_copies_each(sqlite3 *db, int memset_table, int64_t pid,
			    int (*fn)(void *ud, const struct kj_store_a2_copy *c), void *ud);

/** Prepared lookups of kernel names (kj_store_a2_names_open). */
struct kj_store_a2_names;

/** @brief Prepare the lookups. @return 0, KJ_ENOMEM or KJ_EDB (message printed); *out NULL then. */
int kj_store_a2_names_open(sqlite3 *db, struct kj_store_a2_names **out);

/** A unique kernel's name facts, each malloc'ed (the caller frees) and NULL where NULL. */
struct kj_store_a2_unique_name {
	char *key, *keyed_by, *tier, *mangled, *demangled;
};

/** @brief The key, keyed_by, tier and names of unique kernel id. @return 1 when found, else 0
 *  (*out untouched). */
int kj_store_a2_names_unique(struct kj_store_a2_names *nm, int64_t id, struct kj_store_a2_unique_name *out);

/** @brief The mangled and demangled name (malloc'ed; NULL where NULL) of kernel_name id.
 *  @return 1 when found, else 0 (untouched). */
int kj_store_a2_names_of(struct kj_store_a2_names *nm, int64_t id, char **mangled, char **demangled);

/** @brief Finalize the lookups; accepts NULL. */
void kj_store_a2_names_close(struct kj_store_a2_names *nm);

#endif
