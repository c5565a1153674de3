/* The run database schema (see docs/schema.md). */
#ifndef KJ_SCHEMA_H
#define KJ_SCHEMA_H

/** @brief Schema version written to PRAGMA user_version and meta.schema_version. */
#define KJ_SCHEMA_VERSION 1
/** @brief PRAGMA application_id of a kjoule run database ('kjou'). */
#define KJ_APPLICATION_ID 1785359221

/** @brief SQL that creates an empty run database of KJ_SCHEMA_VERSION. */
extern const char kj_schema_sql[];
/** @brief SQL that adds the tables of the watch for other processes (kjoule run); idempotent. */
extern const char kj_schema_watch_sql[];

#endif
