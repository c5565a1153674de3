/* Run database: create, reopen, refuse foreign/truncated/newer files, meta round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_schema.h"

#include "tmpdir.h"

static void path_in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void test_create_reopen_meta(void **state)
{
	(void)state;
	char p[256], v[64];
	sqlite3 *db = NULL;
	path_in_dir(p, sizeof(p), "a.kjdb");
	assert_int_equal(kj_db_create(p, &db), 0);
	assert_int_equal(kj_db_meta_set(db, "command", "[\"python\"]"), 0);
	kj_db_close(db);
	assert_int_equal(kj_db_open(p, 0, &db), 0);
	assert_int_equal(kj_db_meta_get(db, "command", v, sizeof(v)), 0);
	assert_string_equal(v, "[\"python\"]");
	assert_int_equal(kj_db_meta_get(db, "schema_version", v, sizeof(v)), 0);
	assert_int_equal(atoi(v), KJ_SCHEMA_VERSION);
	assert_int_equal(kj_db_meta_get(db, "absent", v, sizeof(v)), KJ_ENOTFOUND);
	assert_int_equal(kj_db_count(db, "kernel"), 0);
	kj_db_close(db);
	/* creating over an existing database is refused */
	assert_int_equal(kj_db_create(p, &db), KJ_EEXIST);
	assert_null(db);
}

static void test_refuses_foreign_and_broken(void **state)
{
	(void)state;
	char p[256];
	sqlite3 *db = NULL;
	FILE *f;

	path_in_dir(p, sizeof(p), "missing.kjdb");
	assert_int_equal(kj_db_open(p, 0, &db), KJ_ENOTFOUND);

	path_in_dir(p, sizeof(p), "empty.kjdb");
	f = fopen(p, "w");
	fclose(f);
	assert_int_equal(kj_db_open(p, 0, &db), KJ_ESCHEMA);

	path_in_dir(p, sizeof(p), "text.kjdb");
	f = fopen(p, "w");
	fputs("time,watts\n1,2\n", f);
	fclose(f);
	assert_int_equal(kj_db_open(p, 0, &db), KJ_ESCHEMA);

	/* a SQLite file that is not ours */
	path_in_dir(p, sizeof(p), "foreign.db");
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(kj_db_open(p, 0, &db), KJ_ESCHEMA);
	assert_null(db);
}

static void test_refuses_newer_schema(void **state)
{
	(void)state;
	char p[256], sql[64];
	sqlite3 *db = NULL;
	path_in_dir(p, sizeof(p), "newer.kjdb");
	assert_int_equal(kj_db_create(p, &db), 0);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", KJ_SCHEMA_VERSION + 1);
	assert_int_equal(kj_db_exec(db, sql, "bump"), 0);
	kj_db_close(db);
	assert_int_equal(kj_db_open(p, 0, &db), KJ_ESCHEMA);
}

static void test_truncated(void **state)
{
	(void)state;
	char p[256];
	sqlite3 *db = NULL;
	path_in_dir(p, sizeof(p), "trunc.kjdb");
	assert_int_equal(kj_db_create(p, &db), 0);
	kj_db_close(db);
	assert_int_equal(truncate(p, 100), 0);
	assert_int_equal(kj_db_open(p, 0, &db), KJ_ESCHEMA);
}

/* kj_db_one_i64 and kj_db_col_i64: a number, ?1 bound where the query has it, dflt for no row, NULL or bad SQL */
static void test_one_i64(void **state)
{
	(void)state;
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(kj_db_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(3),(5),(NULL)", "t"), 0);
	assert_int_equal(kj_db_one_i64(db, "SELECT max(x) FROM t", 0, -1), 5);
	assert_int_equal(kj_db_one_i64(db, "SELECT count(*) FROM t WHERE x > ?1", 4, -1), 1);
	assert_int_equal(kj_db_one_i64(db, "SELECT x FROM t WHERE x IS NULL", 0, -1), -1);
	assert_int_equal(kj_db_one_i64(db, "SELECT x FROM t WHERE x > 9", 0, -7), -7);
	assert_int_equal(kj_db_one_i64(db, "SELECT x FROM absent_table", 0, -2), -2);
	/* kj_db_col_i64: the value, or dflt for NULL */
	sqlite3_stmt *st = NULL;
	assert_int_equal(kj_db_prepare(db, "SELECT 4, NULL", &st), 0);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(kj_db_col_i64(st, 0, -1), 4);
	assert_int_equal(kj_db_col_i64(st, 1, -9), -9);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_reopen_meta),
		cmocka_unit_test(test_refuses_foreign_and_broken),
		cmocka_unit_test(test_refuses_newer_schema),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_one_i64),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
