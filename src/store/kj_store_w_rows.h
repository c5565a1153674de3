/* Rows of a query read one at a time: what the replay worker's readers (kj_store_w_launch.h,
 * kj_store_w_seq.h) hand out where a row holds large blobs (modules, snapshots) or where the
 * caller reads other tables between rows. */
#ifndef KJ_STORE_W_ROWS_H
#define KJ_STORE_W_ROWS_H

#include <sqlite3.h>

/** An open query; what its next-row functions hand out lives until the next call or the close. */
struct kj_store_rows;

/** @brief Close the rows; accepts NULL. */
void kj_store_rows_close(struct kj_store_rows *r);

#endif
