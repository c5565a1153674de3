/* Typed readers for `kjoule api` (kj_store_a2_api.h). */
#include "kj_store_a2_api.h"

#include "kj_db.h"
#include "kj_error.h"

void kj_store_a2_api_bounds(sqlite3 *db, struct kj_store_a2_api_bounds *b)
{
	b->first_api_ns = kj_db_one_i64(db, "SELECT min(start_ns) FROM api_call", 0, -1);
	b->first_alloc_ns = kj_db_one_i64(db, "SELECT min(alloc_ns) FROM allocation", 0, -1);
	if (b->first_alloc_ns < 0)
		b->first_alloc_ns = kj_db_one_i64(db,
						  "SELECT min(start_ns) FROM api_call WHERE name LIKE"
						  " '%Alloc%' OR name LIKE '%MemCreate%'",
						  0, -1);
	b->process_start_ns = kj_db_one_i64(db, "SELECT min(start_ns) FROM process", 0, -1);
}

int kj_store_a2_token_ranges_each(sqlite3 *db, int (*fn)(void *ud, const char *name, int64_t duration_ns),
				  void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db,
			  "SELECT name, end_ns - start_ns FROM nvtx_range WHERE end_ns IS NOT"
			  " NULL AND start_ns IS NOT NULL AND (lower(name) LIKE '%token%' OR"
			  " lower(name) LIKE '%decode%') ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_a2_api_calls_each(sqlite3 *db, int (*fn)(void *ud, const char *name, int64_t start_ns,
						       int64_t end_ns),
			       void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, step = SQLITE_DONE;
	if (kj_db_prepare(db,
			  "SELECT name, start_ns, coalesce(end_ns, start_ns) FROM api_call WHERE"
			  " start_ns IS NOT NULL ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW)
		rc = fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
			sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
	/* a row that cannot be read ends the read without failing it (what was read is reported) */
	if (!rc && step != SQLITE_DONE)
		kj_errorf("database: reading API calls: %s", sqlite3_errmsg(db));
	return rc;
}

int kj_store_a2_allocations_each(sqlite3 *db, int (*fn)(void *ud, int64_t alloc_ns, int has_free, int64_t free_ns,
							 int64_t bytes),
				 void *ud)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(db,
			  "SELECT alloc_ns, free_ns, coalesce(bytes, 0) FROM allocation WHERE"
			  " alloc_ns IS NOT NULL",
			  &st))
		return KJ_EDB;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_type(st, 1) != SQLITE_NULL,
			sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
	return rc;
}
