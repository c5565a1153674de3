/* What replay's plan reads of a run: the tables it needs, the captured device, the unique
 * kernels with what replaying each needs, the iterations' kernel launches, the conditional
 * handles of graphs and each kernel's first captured parameter block. Plain rows: the replay
 * floor decides what to replay. */
#ifndef KJ_STORE_R_PLAN_H
#define KJ_STORE_R_PLAN_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** A prepared lookup, answered many times (opaque); close with kj_store_r_lookup_close. */
struct kj_store_r_lookup;
/** @brief Free a lookup; accepts NULL. */
void kj_store_r_lookup_close(struct kj_store_r_lookup *q);

/** @brief 1 when the run has a table of that name, else 0 (quiet). */
int kj_store_r_has_table(sqlite3 *db, const char *name);
/** @brief Rows of launch_params (0 when none or unreadable; quiet). */
int64_t kj_store_r_launch_params_count(sqlite3 *db);
/** @brief 1 when the run holds an after-launch buffer snapshot (`kjoule run --snapshot`), 0 when
 *  not (runs made before snapshot phases included). Quiet. */
int kj_store_r_has_after_snapshot(sqlite3 *db);
/** @brief 1 when the run captured a whole iteration (sequence_op rows), else 0. Quiet. */
int kj_store_r_has_sequence(sqlite3 *db);

/** The run's first device row. */
struct kj_store_r_device {
	char name[128];   /* "" when NULL */
	int has_cc;       /* 0: cc_major NULL, cc_major/cc_minor unset */
	int cc_major, cc_minor;
};
/** @brief The device of lowest id. @return 1 found, 0 none, KJ_EDB (message printed). */
int kj_store_r_first_device(sqlite3 *db, struct kj_store_r_device *out);

/** @brief Σ(end_ns - start_ns) of the kernel rows (0 when none). Quiet. */
int64_t kj_store_r_kernel_busy_ns(sqlite3 *db);
/** @brief Number of kernel rows (0 when none). Quiet. */
int64_t kj_store_r_kernel_count(sqlite3 *db);
/** @brief Σ unique_kernel.launches, the tracer's count (0 when none). Quiet. */
int64_t kj_store_r_unique_launches(sqlite3 *db);

/** One unique kernel, with what replaying it needs (counts 0 where none; texts NULL where NULL;
 *  the pointers are valid during the callback only). */
struct kj_store_r_unique {
	int64_t unique_id;
	const char *mangled, *demangled;
	int64_t launches;            /* unique_kernel.launches, the tracer's count */
	int64_t kernel_rows;         /* its kernel rows */
	int64_t traced_ns;           /* Σ of their durations */
	int64_t params_rows;         /* its launch_params rows */
	int64_t functions;           /* module_function rows of its mangled name */
	int64_t functions_with_data; /* of those, in a module whose data was kept */
	const char *hashes;          /* those modules' hashes, ", " between */
};
/**
 * @brief Call fn once per unique kernel, in id order; fn returning non-zero stops the walk.
 * @return 0, fn's value, or KJ_EDB (message printed; on a failed read it names run:
 *         "RUN: reading unique kernels: ...").
 */
int kj_store_r_unique_each(sqlite3 *db, const char *run,
			   int (*fn)(void *ctx, const struct kj_store_r_unique *u), void *ctx);

/** A time span [start_ns, end_ns]. */
struct kj_store_r_span {
	int64_t start_ns, end_ns;
};
/** @brief The instances of NVTX range `name` with both ends recorded, in the run's order, into
 *  *out (malloc'ed, caller frees; NULL when none). @return 0, KJ_EDB (message printed), KJ_ENOMEM. */
int kj_store_r_nvtx_spans(sqlite3 *db, const char *name, struct kj_store_r_span **out, size_t *n);

/** One kernel launch with its unique kernel and GPU span (launch_ns: host issue time). */
struct kj_store_r_launch {
	int64_t unique_id;
	int has_launch_ns; /* 0: launch_ns NULL */
	int64_t launch_ns, start_ns, end_ns;
};
/** @brief Call fn per kernel row with a unique kernel and a span (end_ns >= start_ns), in the
 *  table's order; fn returning non-zero stops. @return 0, fn's value, KJ_EDB (message printed). */
int kj_store_r_launches_each(sqlite3 *db, int (*fn)(void *ctx, const struct kj_store_r_launch *l), void *ctx);

/** A conditional handle a process made, with an exec instantiated from its graph. */
struct kj_store_r_cond_handle {
	int64_t pid, exec;
	uint64_t value;
};
/** @brief The run's conditional handles, each once per exec of its graph, into *out (malloc'ed,
 *  caller frees). Quiet. @return 0, KJ_EDB (the run predates the tables), KJ_ENOMEM. */
int kj_store_r_cond_handles(sqlite3 *db, struct kj_store_r_cond_handle **out, size_t *n);

/** @brief A lookup for kj_store_r_ran_in, or NULL when it cannot be prepared (quiet). */
struct kj_store_r_lookup *kj_store_r_ran_in_open(sqlite3 *db);
/** @brief 1 when unique kernel unique_id of process pid has a kernel row in graph exec, else 0. */
int kj_store_r_ran_in(struct kj_store_r_lookup *q, int64_t unique_id, int64_t pid, int64_t exec);

/** @brief A lookup for kj_store_r_first_params. @return 0 or KJ_EDB (message printed). */
int kj_store_r_first_params_open(sqlite3 *db, struct kj_store_r_lookup **out);
/** The first captured launch of a unique kernel: its process, parameter block and layout text
 *  (pointers valid until the lookup's next use; params NULL, layout NULL where NULL). */
struct kj_store_r_params {
	int64_t pid;
	const unsigned char *params;
	size_t len;
	const char *layout;
};
/** @brief The launch_params row of lowest id of unique_id. @return 1 found, 0 none. */
int kj_store_r_first_params(struct kj_store_r_lookup *q, int64_t unique_id, struct kj_store_r_params *out);

#endif
