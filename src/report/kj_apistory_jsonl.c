/* kjoule api --jsonl: every event of a run as one JSON object per line, read row by row. */
#include "kj_apistory_out.h"

#include "kj_acts.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_escape.h"

static void put_us(FILE *f, int64_t ns)
{
	int64_t a = ns < 0 ? -ns : ns;
	fprintf(f, "%s%lld.%03lld", ns < 0 ? "-" : "", (long long)(a / 1000), (long long)(a % 1000));
}

int kj_api_jsonl(sqlite3 *db, FILE *f)
{
	static const char *sql =
		"SELECT 'api', name, start_ns, end_ns, bytes, stream_id FROM api_call"
		" UNION ALL SELECT 'kernel', coalesce(n.demangled, n.mangled), k.start_ns, k.end_ns,"
		" NULL, k.stream_id FROM kernel k LEFT JOIN kernel_name n ON n.id = k.name_id"
		" UNION ALL SELECT 'memcpy', 'memcpy ' || coalesce(kind, ''), start_ns, end_ns, bytes,"
		" stream_id FROM memcpy"
		" UNION ALL SELECT 'memset', 'memset', start_ns, end_ns, bytes, stream_id FROM memset"
		" UNION ALL SELECT 'nvtx', name, start_ns, end_ns, NULL, NULL FROM nvtx_range"
		" UNION ALL SELECT 'alloc', coalesce(kind, 'allocation'), alloc_ns, free_ns, bytes,"
		" stream_id FROM allocation";
	sqlite3_stmt *st = NULL;
	int64_t t0, t1;
	int rc = kj_run_extent(db, &t0, &t1);
	if (rc == KJ_ENOTFOUND) {
		kj_errorf("the run holds no kernels, copies, API calls or NVTX ranges");
		return rc;
	}
	if (rc)
		return rc;
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_type(st, 2) == SQLITE_NULL)
			continue;
		int64_t s = sqlite3_column_int64(st, 2);
		fputs("{\"type\":\"", f);
		fputs((const char *)sqlite3_column_text(st, 0), f);
		fputs("\",\"name\":", f);
		kj_json_put_str(f, (const char *)sqlite3_column_text(st, 1));
		fputs(",\"ts\":", f);
		put_us(f, s - t0);
		fputs(",\"duration_us\":", f);
		if (sqlite3_column_type(st, 3) == SQLITE_NULL || sqlite3_column_int64(st, 3) < s)
			fputs("null", f);
		else
			put_us(f, sqlite3_column_int64(st, 3) - s);
		fputs(",\"size\":", f);
		if (sqlite3_column_type(st, 4) == SQLITE_NULL)
			fputs("null", f);
		else
			fprintf(f, "%lld", (long long)sqlite3_column_int64(st, 4));
		fputs(",\"stream\":", f);
		if (sqlite3_column_type(st, 5) == SQLITE_NULL)
			fputs("null", f);
		else
			fprintf(f, "%lld", (long long)sqlite3_column_int64(st, 5));
		fputs("}\n", f);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: %s", sqlite3_errmsg(db));
		return KJ_EDB;
	}
	return ferror(f) ? KJ_EIO : 0;
}
