/* Opening, creating and checking run databases. The handle is a plain sqlite3 *, so every
 * module can run its own SQL; these helpers own only the checks and the meta table. */
#ifndef KJ_DB_H
#define KJ_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/**
 * @brief Open an existing run database.
 * @param path   file to open
 * @param write  0 read-only, 1 read-write (for commands that add replay or power results)
 * @param out    receives the handle; close it with kj_db_close()
 * @return 0, KJ_ENOTFOUND (no file), KJ_ESCHEMA (foreign, truncated or newer schema) or KJ_EDB.
 *         A message naming the file and the problem is printed on failure; a newer schema's names
 *         its version, the kjoule that wrote it, and this kjoule's version and schema.
 */
int kj_db_open(const char *path, int write, sqlite3 **out);

/**
 * @brief Create a new, empty run database at path with the current schema (in one transaction):
 *        PRAGMA user_version and meta.schema_version hold KJ_SCHEMA_VERSION, meta.kjoule_version
 *        this kjoule's version.
 * @return 0, KJ_EEXIST if path exists, KJ_EDB.
 */
int kj_db_create(const char *path, sqlite3 **out);

/** @brief The run's schema version (PRAGMA user_version), or a negative code. */
int kj_db_schema_version(sqlite3 *db);

/** @brief Close a handle; accepts NULL. */
void kj_db_close(sqlite3 *db);

/** @brief Run SQL with no result rows; prints SQLite's message with `what` on failure. */
int kj_db_exec(sqlite3 *db, const char *sql, const char *what);

/** @brief Prepare a statement; prints SQLite's message on failure. */
int kj_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out);

/** @brief Set meta[key] = value (text). */
int kj_db_meta_set(sqlite3 *db, const char *key, const char *value);

/** @brief Copy meta[key] into buf (empty string if absent). @return 0, or KJ_ENOTFOUND. */
int kj_db_meta_get(sqlite3 *db, const char *key, char *buf, size_t len);

/** @brief Number of rows of a table (or -1 on error). */
int64_t kj_db_count(sqlite3 *db, const char *table);

/** @brief 1 when the query yields a row, 0 when it yields none or cannot run (a table an older
 * run lacks). Quiet. */
int kj_db_has_row(sqlite3 *db, const char *sql);
/** @brief 1 when the run saved device buffers (`kjoule run --snapshot` or `--snapshot-graphs`),
 * which replays lay over their fill; 0 otherwise (older runs without the table included). */
int kj_db_has_snapshot(sqlite3 *db);
/** @brief The first column of the first row of sql as an integer, or dflt when the query yields
 *  no row, a NULL, or cannot run (a table an older run lacks). When the statement has a
 *  parameter, arg is bound to ?1. Quiet. */
int64_t kj_db_one_i64(sqlite3 *db, const char *sql, int64_t arg, int64_t dflt);
/** @brief Column i of the current row as an integer, or dflt when it is NULL. */
int64_t kj_db_col_i64(sqlite3_stmt *st, int i, int64_t dflt);
/** @brief Column i of the current row into *out (0 where NULL, as sqlite3_column_int64 gives);
 *  returns 1 when it holds a value, 0 when it is NULL. */
int kj_db_col_has_i64(sqlite3_stmt *st, int i, int64_t *out);
/** @brief The end of a walk over st's rows: finalizes st; rc, the last sqlite3_step's result,
 *  other than SQLITE_DONE prints "database: reading WHAT: <error>" and returns KJ_EDB; else 0. */
int kj_db_walk_end(sqlite3 *db, sqlite3_stmt *st, int rc, const char *what);
/**
 * @brief What a run holds of the columns and tables added after the first schema, read once when
 *        it was opened. A run opened for writing has been migrated to KJ_SCHEMA_VERSION, so every
 *        answer is 1; a run opened read-only keeps its layout and readers ask here instead of
 *        probing (older runs lack some; their readers say what is missing).
 */
struct kj_db_caps {
	int schema_version;			/* PRAGMA user_version when opened */
	unsigned char kernel_capture_range_id;	/* kernel.capture_range_id */
	unsigned char kernel_shmem_executed;	/* kernel.shmem_executed and carveout */
	unsigned char kernel_launch_type;	/* kernel.launch_type */
	unsigned char unique_kernel_shmem_executed; /* unique_kernel.shmem_executed */
	unsigned char unique_kernel_cooperative;    /* unique_kernel.cooperative */
	unsigned char launch_params_module_id;	/* launch_params.module_id */
	unsigned char launch_params_params;	/* launch_params.params */
	unsigned char module_data;		/* module.data */
	unsigned char memcpy_launch_ns;		/* memcpy.launch_ns */
	unsigned char memcpy_dst_address;	/* memcpy.dst_address */
	unsigned char memset_launch_ns;		/* memset.launch_ns */
	unsigned char memset_address;		/* memset.address and element_bytes */
	unsigned char copy_data;		/* the copy_data table */
	unsigned char sequence_op_kernel_id;	/* sequence_op.kernel_id */
	unsigned char host_call;		/* the host_call table */
	unsigned char graph_node;		/* the graph_node table */
	unsigned char graph_edge;		/* the graph_edge table */
	unsigned char graph_edge_type;		/* graph_edge.type and from_port */
	unsigned char graph_node_clone;		/* the graph_node_clone table */
	unsigned char power_sample_clocks;	/* power_sample.throttle_reasons and sm_clock_mhz */
	unsigned char replay_energy_clocks;	/* replay_energy.sm_clock_{mean,min,max}_mhz, throttle_reasons */
	unsigned char replay_energy_data;	/* replay_energy.data */
	unsigned char replay_energy_cold;	/* the replay_energy_cold table (with ns_per_launch) */
	unsigned char replay_energy_b2b;	/* the replay_energy_b2b table */
	unsigned char replay_sequence_clocks;	/* replay_sequence's four clock columns */
	unsigned char replay_sequence_data;	/* replay_sequence.data */
	unsigned char replay_sequence_pace_ns;	/* replay_sequence.pace_ns */
	unsigned char replay_kernel_reason;	/* replay_kernel.reason */
	unsigned char nccl_call;		/* the nccl_call table */
};

/** @brief The answers for a handle of kj_db_open or kj_db_create (read once at open; valid until
 *  kj_db_close). A handle opened otherwise is read now. Never NULL. */
const struct kj_db_caps *kj_db_caps(sqlite3 *db);
/** @brief CLOCK_REALTIME minus CLOCK_MONOTONIC of the run (its clock_sync table) into *offset_ns.
 *  @return 1 when the run has one, else 0 (*offset_ns untouched). */
int kj_db_realtime_offset(sqlite3 *db, int64_t *offset_ns);

/** @brief Record a problem (something not captured, an error) in the problem table. */
int kj_db_problem(sqlite3 *db, int64_t pid, int64_t t_ns, const char *severity, const char *what);

#endif
