/* Schema versions and migrations of the run database (docs/schema.md, "Versions and migrations").
 * kj_db_open applies them; readers ask kj_db_caps (kj_db.h). */
#ifndef KJ_MIGRATE_H
#define KJ_MIGRATE_H

#include <sqlite3.h>

#include "kj_db.h"

/**
 * @brief Bring a run opened for writing from its schema (PRAGMA user_version) to
 *        KJ_SCHEMA_VERSION: every step in order, PRAGMA user_version and meta.schema_version set,
 *        all in one transaction. Nothing when the run is current.
 * @return 0, or KJ_EDB with a message naming path and both versions (the file is then unchanged).
 */
int kj_db_migrate(sqlite3 *db, const char *path);

/** @brief Apply the steps from schema `from` to `to` without a transaction or the version (tests).
 *  @return 0, KJ_EINVAL (no such step) or KJ_EDB. */
int kj_db_migrate_steps(sqlite3 *db, int from, int to);

/** @brief Read the answers of struct kj_db_caps from the run's layout now. */
void kj_db_caps_read(sqlite3 *db, struct kj_db_caps *caps);
/** @brief Read and keep db's answers for kj_db_caps (kj_db_open, kj_db_create). */
void kj_db_caps_remember(sqlite3 *db);
/** @brief Drop db's kept answers (kj_db_close). */
void kj_db_caps_forget(sqlite3 *db);

#endif
