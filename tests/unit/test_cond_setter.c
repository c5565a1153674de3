/* kj_cond_setter_param: which kernel sets a CUDA graph conditional node's condition. Handles are
 * small numbers, so only an 8-byte parameter holding one, of a kernel that ran in an exec of the
 * handle's graph, counts (the layout of cond_target's step_body, as traced on an H200). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "kj_replay_cond.h"

static sqlite3 *run(int with_table)
{
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
		"CREATE TABLE host_call(pid, op, graph_id, graph_exec_id);"
		"CREATE TABLE kernel(pid, unique_id, graph_id);"
		"INSERT INTO host_call VALUES(7, 'graph_instantiate', 1, 4), (7, 'graph_instantiate', 10, 11);"
		/* unique 4 ran in exec 4 (graph 1, which holds the handles); unique 5 in exec 11 */
		"INSERT INTO kernel VALUES(7, 4, 4), (7, 5, 11), (7, 6, NULL);", NULL, NULL, NULL), SQLITE_OK);
	if (with_table)
		assert_int_equal(sqlite3_exec(db,
			"CREATE TABLE graph_conditional_handle(pid, handle, graph_id, default_value);"
			"INSERT INTO graph_conditional_handle VALUES(7, 1, 1, 1), (7, 2, 1, 1);", NULL, NULL, NULL), SQLITE_OK);
	return db;
}

/* step_body(float*, int, int*, int*, cudaGraphConditionalHandle): handle 1 at offset 32 */
static void block(unsigned char p[40], uint64_t last, uint32_t n)
{
	uint64_t x = 0x7f2ab0800000ULL, c = 0x7f2ab1400000ULL, t = 0x7f2ab1400200ULL;
	memset(p, 0, 40);
	memcpy(p, &x, 8);
	memcpy(p + 8, &n, 4);
	memcpy(p + 16, &c, 8);
	memcpy(p + 24, &t, 8);
	memcpy(p + 32, &last, 8);
}

static const char *layout_text = "0:8,8:4,16:8,24:8,32:8";

/* kj_cond_setter_param on the run in db, with the handles read as replay reads them */
static int setter(sqlite3 *db, int64_t pid, int64_t uid, const unsigned char *p, size_t len)
{
	struct kj_replay_param *layout = NULL;
	size_t n = 0;
	assert_int_equal(kj_replay_layout_parse(layout_text, len, &layout, &n, NULL, 0), 0);
	struct kj_cond_handles *h = kj_cond_handles_load(db);
	int r = kj_cond_setter_param(h, pid, uid, layout, n, p, len);
	kj_cond_handles_free(h);
	free(layout);
	return r;
}

static void test_setter_found(void **state)
{
	(void)state;
	sqlite3 *db = run(1);
	unsigned char p[40];
	block(p, 1, 1 << 20);
	assert_int_equal(setter(db, 7, 4, p, sizeof(p)), 4);
	assert_int_equal(setter(db, -1, 4, p, sizeof(p)), 4);
	block(p, 2, 1 << 20);
	assert_int_equal(setter(db, 7, 4, p, sizeof(p)), 4);
	sqlite3_close(db);
}

static void test_not_setters(void **state)
{
	(void)state;
	sqlite3 *db = run(1);
	unsigned char p[40];
	block(p, 3, 1 << 20);  /* no handle of that value */
	assert_int_equal(setter(db, 7, 4, p, sizeof(p)), -1);
	block(p, 1, 1 << 20);  /* the value, but the kernel ran in another graph's exec, or in none */
	assert_int_equal(setter(db, 7, 5, p, sizeof(p)), -1);
	assert_int_equal(setter(db, 7, 6, p, sizeof(p)), -1);
	assert_int_equal(setter(db, 8, 4, p, sizeof(p)), -1); /* another process */
	block(p, 0x99, 1);      /* a 4-byte parameter of value 1 is no handle */
	assert_int_equal(setter(db, 7, 4, p, sizeof(p)), -1);
	sqlite3_close(db);
	db = run(0);            /* a run recorded before handles were */
	block(p, 1, 1 << 20);
	assert_int_equal(setter(db, 7, 4, p, sizeof(p)), -1);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setter_found),
		cmocka_unit_test(test_not_setters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
