/* Kernel grouping on a hand-made run database: by unique_id, the (name, grid, block, shmem)
 * fallback, memcpy by kind and size, memset by size; durations, busy time over two devices,
 * untimed rows, tiers from the database or the rules; an empty run. */
#include <math.h>
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
#include "kj_kernels.h"

#include "tmpdir.h"

static sqlite3 *make_db(const char *name, const char *sql)
{
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	if (sql)
		assert_int_equal(kj_db_exec(db, sql, "fill"), 0);
	return db;
}

static const char fill_sql[] =
	"INSERT INTO kernel_name(id, mangled, demangled) VALUES"
	" (1, 'nvjet_hsh_64x8_64x16_2x1_v_bz_TNT', NULL),"
	" (2, 'my_kernel', 'my_kernel'),"
	" (3, '_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_', NULL),"
	" (4, 'other_kernel', NULL);"
	"INSERT INTO unique_kernel(id, key, name_id, tier, keyed_by) VALUES"
	" (10, 'k-gemm', 1, NULL, 'params'), (11, 'k-mine', 2, 'attention', 'geometry'),"
	" (12, 'k-bogus', 4, 'GEMM!', 'params');"
	/* device 0: uk 10 x3 (10, 20, 30 ns), uk 11 [5,50) overlapping the first, + one untimed */
	"INSERT INTO kernel(device_id, start_ns, end_ns, name_id, unique_id, grid_x, grid_y, grid_z,"
	" block_x, block_y, block_z, shmem_dynamic, registers) VALUES"
	" (0, 0, 10, 1, 10, 16, 8, 1, 128, 1, 1, 0, 168),"
	" (0, 100, 120, 1, 10, 16, 8, 1, 128, 1, 1, 0, 168),"
	" (0, 200, 230, 1, 10, 16, 8, 1, 128, 1, 1, 0, 168),"
	" (0, 5, 50, 2, 11, 1, 1, 1, 32, 1, 1, 0, 16),"
	" (0, 60, NULL, 2, 11, 1, 1, 1, 32, 1, 1, 0, 16),"
	/* fallback: same name/geometry twice (overlapping), then a different grid */
	" (0, 300, 310, 3, NULL, 4, 1, 1, 128, 1, 1, 0, 20),"
	" (0, 305, 315, 3, NULL, 4, 1, 1, 128, 1, 1, 0, 20),"
	" (0, 400, 401, 3, NULL, 8, 1, 1, 128, 1, 1, 0, 20),"
	/* device 1: one long fallback launch, and a bogus-tier unique kernel inside it */
	" (1, 0, 1000, 4, NULL, 1, 1, 1, 1, 1, 1, 0, 8),"
	" (1, 10, 20, 4, 12, 1, 1, 1, 1, 1, 1, 0, 8);"
	"INSERT INTO memcpy(device_id, start_ns, end_ns, bytes, kind) VALUES"
	" (0, 500, 600, 4096, 'HtoD'), (0, 600, 650, 4096, 'HtoD'), (0, 700, 710, 4096, 'DtoH');"
	"INSERT INTO memset(device_id, start_ns, end_ns, bytes, value) VALUES (0, 800, 808, 64, 0);";

static const struct kj_kernel_stat *find(const struct kj_kernel_report *r, const char *name,
					 int64_t grid_x, int64_t bytes)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->rows[i].name, name) && (grid_x < 0 || r->rows[i].grid[0] == grid_x) &&
		    (bytes < 0 || r->rows[i].bytes == bytes))
			return &r->rows[i];
	fail_msg("no group %s", name);
	return NULL;
}

static void test_grouping(void **state)
{
	(void)state;
	sqlite3 *db = make_db("g.kjdb", fill_sql);
	struct kj_kernel_report *r = NULL;
	const struct kj_kernel_stat *s;

	assert_int_equal(kj_kernels_analyze(db, &r), 0);
	/* groups: uk10, uk11, uk12, fallback grid 4, fallback grid 8, other_kernel fallback,
	 * memcpy HtoD 4096, memcpy DtoH 4096, memset 64 */
	assert_int_equal(r->n, 9);
	assert_int_equal(r->unique_kernels, 6);
	assert_int_equal(r->kernel_launches, 10);
	assert_int_equal(r->memcpys, 3);
	assert_int_equal(r->memsets, 1);
	assert_int_equal(r->untimed, 1);
	assert_int_equal(r->devices, 2);
	/* device 0: 50 + 20 + 30 + 15 + 1 + 150 + 10 + 8 = 284; device 1: 1000 */
	assert_int_equal(r->busy_ns, 1284);
	assert_int_equal(r->span_ns, 1000);

	s = find(r, "nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", -1, -1);
	assert_int_equal(s->unique_id, 10);
	assert_string_equal(s->key, "k-gemm");
	assert_string_equal(s->keyed_by, "params");
	assert_string_equal(s->tier, "gemm");
	assert_int_equal(s->count, 3);
	assert_int_equal(s->total_ns, 60);
	assert_int_equal(s->min_ns, 10);
	assert_int_equal(s->max_ns, 30);
	assert_true(s->mean_ns == 20.0);
	assert_true(fabs(s->share_of_busy - 60.0 / 1284.0) < 1e-12);
	assert_int_equal(s->grid[0], 16);
	assert_int_equal(s->grid[1], 8);
	assert_int_equal(s->block[0], 128);
	assert_int_equal(s->registers, 168);
	assert_string_equal(s->demangled, "nvjet_hsh_64x8_64x16_2x1_v_bz_TNT");

	s = find(r, "my_kernel", -1, -1);
	assert_string_equal(s->tier, "attention"); /* the database's tier wins */
	assert_int_equal(s->count, 2);
	assert_int_equal(s->timed, 1);
	assert_int_equal(s->total_ns, 45);
	assert_string_equal(s->keyed_by, "geometry");

	s = find(r, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", 4, -1);
	assert_int_equal(s->unique_id, -1);
	assert_null(s->key);
	assert_int_equal(s->count, 2);
	assert_int_equal(s->total_ns, 20);
	assert_string_equal(s->tier, "elementwise");
	assert_non_null(strstr(s->demangled, "at::native::vectorized_elementwise_kernel<4"));
	s = find(r, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", 8, -1);
	assert_int_equal(s->count, 1);

	/* unique kernel with a tier the program does not know: classified by the rules */
	s = find(r, "other_kernel", 1, -1);
	assert_int_equal(s->count, 1);
	for (size_t i = 0; i < r->n; i++)
		if (r->rows[i].unique_id == 12)
			assert_string_equal(r->rows[i].tier, "other");

	s = find(r, "memcpy HtoD", -1, 4096);
	assert_int_equal(s->kind, KJ_ACT_MEMCPY);
	assert_string_equal(s->tier, "copy");
	assert_int_equal(s->count, 2);
	assert_int_equal(s->total_ns, 150);
	assert_string_equal(s->copy_kind, "HtoD");
	s = find(r, "memcpy DtoH", -1, 4096);
	assert_int_equal(s->count, 1);
	s = find(r, "memset", -1, 64);
	assert_int_equal(s->kind, KJ_ACT_MEMSET);
	assert_int_equal(s->total_ns, 8);

	/* default order: total descending */
	for (size_t i = 1; i < r->n; i++)
		assert_true(r->rows[i - 1].total_ns >= r->rows[i].total_ns);
	assert_int_equal(r->rows[0].total_ns, 1000);
	kj_kernel_report_sort(r, KJ_SORT_COUNT);
	for (size_t i = 1; i < r->n; i++)
		assert_true(r->rows[i - 1].count >= r->rows[i].count);
	assert_int_equal(r->rows[0].count, 3);
	kj_kernel_report_sort(r, KJ_SORT_MEAN);
	for (size_t i = 1; i < r->n; i++)
		assert_true(r->rows[i - 1].mean_ns >= r->rows[i].mean_ns);
	kj_kernel_report_free(r);
	kj_db_close(db);
}

static void test_empty(void **state)
{
	(void)state;
	sqlite3 *db = make_db("e.kjdb", NULL);
	struct kj_kernel_report *r = NULL;
	assert_int_equal(kj_kernels_analyze(db, &r), 0);
	assert_int_equal(r->n, 0);
	assert_int_equal(r->busy_ns, 0);
	assert_int_equal(r->span_ns, 0);
	assert_int_equal(r->devices, 0);
	kj_kernel_report_sort(r, KJ_SORT_MEAN);
	kj_kernel_report_free(r);
	kj_kernel_report_free(NULL);
	kj_db_close(db);
}

static void test_only_untimed(void **state)
{
	(void)state;
	sqlite3 *db = make_db("u.kjdb", "INSERT INTO kernel(device_id, start_ns, end_ns, name_id)"
					" VALUES (0, NULL, NULL, NULL), (0, 50, 40, NULL);");
	struct kj_kernel_report *r = NULL;
	assert_int_equal(kj_kernels_analyze(db, &r), 0);
	assert_int_equal(r->n, 1);
	assert_int_equal(r->rows[0].count, 2);
	assert_int_equal(r->rows[0].timed, 0);
	assert_true(r->rows[0].mean_ns == 0.0);
	assert_true(r->rows[0].share_of_busy == 0.0);
	assert_false(isnan(r->rows[0].share_of_busy));
	assert_string_equal(r->rows[0].name, "(unknown)");
	assert_string_equal(r->rows[0].tier, "other");
	kj_kernel_report_free(r);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grouping),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_only_untimed),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
