/* Unit tests that write spool files by hand include this: a growing buffer of records (put, each
 * padded to KJ_REC_ALIGN with its size in the header), interned strings (put_string), and q1, the
 * first column of a query's first row. */
#ifndef KJ_TEST_SPOOLBUF_H
#define KJ_TEST_SPOOLBUF_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_spool.h"

struct buf {
	unsigned char *p;
	size_t n;
};

static inline void put(struct buf *b, const void *rec, size_t size, const void *payload, size_t plen)
{
	size_t total = KJ_REC_ALIGN(size + plen);
	b->p = realloc(b->p, b->n + total);
	memset(b->p + b->n, 0, total);
	memcpy(b->p + b->n, rec, size);
	if (plen)
		memcpy(b->p + b->n + size, payload, plen);
	((struct kj_rec_hdr *)(b->p + b->n))->size = (uint32_t)total;
	b->n += total;
}

static inline void put_string(struct buf *b, uint32_t id, const char *s)
{
	struct kj_rec_string r = {{KJ_REC_STRING, 0}, id, (uint32_t)strlen(s)};
	put(b, &r, sizeof(r), s, strlen(s));
}

/* The first column of SQL's first row; -1 for NULL, -12345 for no row (cmocka.h comes first). */
static inline int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -12345;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

#endif
