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
/** @brief 1 when table has the column (runs recorded by an older kjoule may lack it), else 0. */
int kj_db_has_column(sqlite3 *db, const char *table, const char *column);
/** @brief Add the column to a table of a run recorded before it existed (its older rows hold
 *  NULL); nothing when the table has it. 0, or KJ_EDB (message printed). */
int kj_db_ensure_column(sqlite3 *db, const char *table, const char *column, const char *type);
/** @brief CLOCK_REALTIME minus CLOCK_MONOTONIC of the run (its clock_sync table) into *offset_ns.
 *  @return 1 when the run has one, else 0 (*offset_ns untouched). */
int kj_db_realtime_offset(sqlite3 *db, int64_t *offset_ns);

/** @brief Record a problem (something not captured, an error) in the problem table. */
int kj_db_problem(sqlite3 *db, int64_t pid, int64_t t_ns, const char *severity, const char *what);

#endif
