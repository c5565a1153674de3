/* Schema migrations: the oldest schema 1 layout opened for writing becomes a complete current run
 * (the same tables and columns as a new one), its rows kept and replay_kernel.reason filled from
 * the error text; a second open changes nothing; a read-only open leaves the file byte for byte;
 * a newer schema is refused naming both versions. */
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

/* Make path a database from the SQL of tests/data/schema/v1_oldest.sql. */
static void make_oldest(const char *path)
{
	FILE *f = fopen(KJ_TEST_DATA "/schema/v1_oldest.sql", "r");
	assert_non_null(f);
	static char sql[65536];
	size_t n = fread(sql, 1, sizeof(sql) - 1, f);
	fclose(f);
	sql[n] = '\0';
	sqlite3 *db = NULL;
	unlink(path);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* Each row of sql (two text columns) appended to out[*used..len) as fmt puts them. */
static void append_rows(sqlite3 *db, const char *sql, const char *fmt, char *out, size_t len, size_t *used)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && *used < len)
		*used += (size_t)snprintf(out + *used, len - *used, fmt, sqlite3_column_text(st, 0),
					  sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
}

/* Every table's columns, in order, and every index's definition, as one text. */
static void layout(sqlite3 *db, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	append_rows(db, "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p"
			" WHERE m.type = 'table' ORDER BY m.name, p.name", "%s.%s ", out, len, &used);
	append_rows(db, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
		    "%s: %s; ", out, len, &used);
}

static char *slurp(const char *path, long *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*n = ftell(f);
	rewind(f);
	char *b = malloc((size_t)*n);
	assert_int_equal(fread(b, 1, (size_t)*n, f), (size_t)*n);
	fclose(f);
	return b;
}

static void test_oldest_to_current(void **state)
{
	(void)state;
	static char got[32768], want[32768];
	char p[256], q[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/old.kjdb", dir);
	snprintf(q, sizeof(q), "%s/new.kjdb", dir);
	make_oldest(p);
	/* read-only: the file stays byte for byte, and the answers say what it lacks */
	long n0, n1;
	char *b0 = slurp(p, &n0);
	assert_int_equal(kj_db_open(p, 0, &db), 0);
	assert_int_equal(kj_db_caps(db)->schema_version, 1);
	assert_false(kj_db_caps(db)->kernel_capture_range_id);
	assert_false(kj_db_caps(db)->replay_energy_data);
	assert_false(kj_db_caps(db)->host_call);
	assert_true(kj_db_caps(db)->power_sample_clocks);
	kj_db_close(db);
	char *b1 = slurp(p, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(b0, b1, (size_t)n0);
	free(b1);
	/* writable: migrated to the current schema, the same layout as a new run */
	assert_int_equal(kj_db_open(p, 1, &db), 0);
	assert_int_equal(kj_db_schema_version(db), KJ_SCHEMA_VERSION);
	char v[16];
	assert_int_equal(kj_db_meta_get(db, "schema_version", v, sizeof(v)), 0);
	assert_int_equal(atoi(v), KJ_SCHEMA_VERSION);
	const struct kj_db_caps *c = kj_db_caps(db);
	assert_true(c->kernel_capture_range_id && c->replay_energy_data && c->host_call && c->graph_edge_type &&
		    c->replay_energy_cold && c->replay_sequence_pace_ns && c->replay_kernel_reason &&
		    c->replay_energy_clocks && c->replay_sequence_clocks && c->memset_address);
	layout(db, got, sizeof(got));
	/* rows kept; the reason filled from the text once */
	assert_int_equal(kj_db_one_i64(db, "SELECT end_ns - start_ns FROM kernel WHERE id = 1", 0, -1), 150);
	assert_int_equal(kj_db_one_i64(db, "SELECT count(*) FROM replay_kernel WHERE reason = '" KJ_REASON_COND_SETTER
				       "' AND unique_id = 1", 0, -1), 1);
	assert_int_equal(kj_db_one_i64(db, "SELECT count(*) FROM replay_kernel WHERE reason = '" KJ_REASON_TIMED_OUT
				       "' AND unique_id = 2", 0, -1), 1);
	assert_int_equal(kj_db_one_i64(db, "SELECT count(*) FROM replay_kernel WHERE reason IS NULL", 0, -1), 1);
	kj_db_close(db);
	unlink(q);
	assert_int_equal(kj_db_create(q, &db), 0);
	layout(db, want, sizeof(want));
	kj_db_close(db);
	assert_string_equal(got, want);
	/* opened again: nothing to do, the file unchanged */
	b0 = (free(b0), slurp(p, &n0));
	assert_int_equal(kj_db_open(p, 1, &db), 0);
	kj_db_close(db);
	b1 = slurp(p, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(b0, b1, (size_t)n0);
	free(b0);
	free(b1);
}

static void test_newer_refused(void **state)
{
	(void)state;
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/newer.kjdb", dir);
	make_oldest(p);
	assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	db = NULL;
	assert_int_equal(kj_db_open(p, 1, &db), KJ_ESCHEMA);
	assert_null(db);
	assert_int_equal(kj_db_open(p, 0, &db), KJ_ESCHEMA);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oldest_to_current),
		cmocka_unit_test(test_newer_refused),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
