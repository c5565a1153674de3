/* Internal to src/store's readers for the replay worker (kj_store_w_launch.c, kj_store_w_seq.c):
 * the rows of kj_store_w_rows.h made from a statement. Not for use outside src/store. */
#ifndef KJ_STORE_W_INTERNAL_H
#define KJ_STORE_W_INTERNAL_H

#include "kj_store_w_rows.h"

/* The rows of a prepared statement (owned from now on; NULL: NULL, the statement
 * finalized when there is no memory). */
struct kj_store_rows *kj_store_rows_of(sqlite3_stmt *st);
/* The statement of rows. */
sqlite3_stmt *kj_store_rows_stmt(const struct kj_store_rows *r);
/* A statement, or NULL without a message (a query an older run's schema refuses). */
sqlite3_stmt *kj_store_prepare_quiet(sqlite3 *db, const char *sql);

#endif
