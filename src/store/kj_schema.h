/* The run database schema (see docs/schema.md). */
#ifndef KJ_SCHEMA_H
#define KJ_SCHEMA_H

/** @brief Schema version written to PRAGMA user_version and meta.schema_version.
 *  1: runs of kjoule before 0.9.0 (they record kjoule_version 0.1.0, or none): their tables may
 *     lack columns and tables added during 0.1, which readers probe for (kj_db_has_column).
 *  2: kjoule 0.9.0: the tables and columns of 0.1 complete (replay_energy.data aside).
 *  3: replay_energy.data, the replay tables replay created on the fly, replay_kernel.reason.
 *  4: the index snapshot_places (the saved buffers' places read without their data).
 *  kj_migrate.c brings older runs up on a writable open; docs/schema.md keeps the list. */
#define KJ_SCHEMA_VERSION 4
/** @brief replay_kernel.reason: why a kernel was not measured, as a code (the error column says it
 *  in words). A condition setter not replayed alone; a worker killed at its time limit. */
#define KJ_REASON_COND_SETTER "cond_setter"
#define KJ_REASON_TIMED_OUT "timed_out"
/** @brief The oldest schema version kjoule reads. */
#define KJ_SCHEMA_VERSION_MIN 1
/** @brief PRAGMA application_id of a kjoule run database ('kjou'). */
#define KJ_APPLICATION_ID 1785359221

/** @brief SQL that creates an empty run database of KJ_SCHEMA_VERSION. */
extern const char kj_schema_sql[];
/** @brief SQL that adds the tables of the watch for other processes (kjoule run); idempotent. */
extern const char kj_schema_watch_sql[];
/** @brief SQL that adds the tables of a --capture run (iteration_mark, capture_window); idempotent. */
extern const char kj_schema_capture_sql[];
/** @brief SQL that creates the NCCL call table (IF NOT EXISTS): made by ingest when a process
 *  left a p<pid>.nccl file (docs/schema.md). */
extern const char kj_schema_nccl_sql[];

#endif
