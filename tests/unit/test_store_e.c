/* The energy and report floors' typed readers and writers of the run database
 * (src/store/kj_store_e_*.h), on a run built here: rows come in the query's order, a NULL column
 * stays told apart from a value (has_x flags, -1), a window filters, a callback's non-zero result
 * stops the walk and is returned, and a written power_sample row reads back with its NULLs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_store_e_power.h"
#include "kj_store_e_timeline.h"
#include "sqlexec.h"
#include "tmpdir.h"

#define MAXROWS 8

static sqlite3 *make_run(const char *name)
{
	char path[256];
	sqlite3 *db = NULL;
	snprintf(path, sizeof(path), "%s/%s.kjdb", dir, name);
	assert_int_equal(kj_db_create(path, &db), 0);
	return db;
}

struct api_rows {
	struct kj_store_api_call v[MAXROWS];
	char names[MAXROWS][32];
	int n, stop_at;
};

static int api_take(void *ctx, const struct kj_store_api_call *r)
{
	struct api_rows *a = ctx;
	if (a->n == a->stop_at)
		return 7;
	a->v[a->n] = *r;
	snprintf(a->names[a->n], sizeof(a->names[0]), "%s", r->name ? r->name : "(null)");
	a->n++;
	return 0;
}

static void test_api_calls(void **state)
{
	(void)state;
	sqlite3 *db = make_run("api");
	exec(db, "INSERT INTO api_call(pid, tid, name, start_ns, end_ns, correlation_id, bytes, stream_id)"
		 " VALUES(1, 11, 'cuLaunchKernel', 200, 250, 5, NULL, 3),"
		 " (1, 12, 'cuMemcpy', 100, NULL, NULL, 4096, NULL),"
		 " (1, 11, 'late', 900, 950, 6, NULL, NULL)");
	struct api_rows a = {.stop_at = -1};
	assert_int_equal(kj_store_e_api_calls_in(db, 0, 500, api_take, &a), 0);
	assert_int_equal(a.n, 2); /* the call at 900 lies outside the window */
	assert_string_equal(a.names[0], "cuMemcpy");
	assert_int_equal(a.v[0].has_end, 0);
	assert_int_equal(a.v[0].has_correlation, 0);
	assert_int_equal(a.v[0].has_bytes, 1);
	assert_int_equal(a.v[0].bytes, 4096);
	assert_int_equal(a.v[0].has_stream, 0);
	assert_string_equal(a.names[1], "cuLaunchKernel");
	assert_int_equal(a.v[1].tid, 11);
	assert_int_equal(a.v[1].has_end, 1);
	assert_int_equal(a.v[1].end_ns, 250);
	assert_int_equal(a.v[1].has_correlation, 1);
	assert_int_equal(a.v[1].correlation_id, 5);
	assert_int_equal(a.v[1].has_bytes, 0);
	assert_int_equal(a.v[1].has_stream, 1);
	assert_int_equal(a.v[1].stream_id, 3);
	/* the spans reader: the open call ends at its start */
	memset(&a, 0, sizeof(a));
	a.stop_at = -1;
	assert_int_equal(kj_store_e_api_spans_in(db, 0, 500, api_take, &a), 0);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.v[0].end_ns, 100);
	/* a callback's result stops the walk */
	memset(&a, 0, sizeof(a));
	a.stop_at = 1;
	assert_int_equal(kj_store_e_api_calls_in(db, 0, 1000, api_take, &a), 7);
	assert_int_equal(a.n, 1);
	kj_db_close(db);
}

struct gpu_rows {
	struct kj_store_gpu_work v[MAXROWS];
	char kinds[MAXROWS][32];
	int n;
};

static int gpu_take(void *ctx, const struct kj_store_gpu_work *r)
{
	struct gpu_rows *g = ctx;
	assert_true(g->n < MAXROWS);
	g->v[g->n] = *r;
	snprintf(g->kinds[g->n], sizeof(g->kinds[0]), "%s", r->kind ? r->kind : "(null)");
	g->n++;
	return 0;
}

static void test_gpu_work(void **state)
{
	(void)state;
	sqlite3 *db = make_run("gpu");
	exec(db, "INSERT INTO memset(pid, device_id, stream_id, correlation_id, start_ns, end_ns, bytes)"
		 " VALUES(1, 0, 7, NULL, 10, 20, NULL)");
	exec(db, "INSERT INTO memcpy(pid, device_id, stream_id, correlation_id, start_ns, end_ns, bytes, kind)"
		 " VALUES(1, 1, 7, 9, 30, 40, 64, 'HtoD')");
	exec(db, "INSERT INTO kernel(pid, device_id, stream_id, correlation_id, start_ns, end_ns, name_id,"
		 " unique_id, grid_x, grid_y, grid_z, block_x, block_y, block_z)"
		 " VALUES(1, NULL, NULL, 8, 50, 60, 3, NULL, 4, 5, 6, 32, 1, 1),"
		 " (1, 0, 2, NULL, 70, 80, NULL, 2, NULL, NULL, NULL, NULL, NULL, NULL)");
	struct gpu_rows g = {0};
	assert_int_equal(kj_store_e_gpu_work_in(db, 0, 1000, gpu_take, &g), 0);
	assert_int_equal(g.n, 4);
	/* kernels, then copies, then memsets */
	assert_int_equal(g.v[0].type, KJ_STORE_GPU_KERNEL);
	assert_int_equal(g.v[0].device_id, 0); /* NULL device reads 0, NULL stream -1 */
	assert_int_equal(g.v[0].stream_id, -1);
	assert_int_equal(g.v[0].has_correlation, 1);
	assert_int_equal(g.v[0].has_name_id, 1);
	assert_int_equal(g.v[0].name_id, 3);
	assert_int_equal(g.v[0].has_unique_id, 0);
	assert_int_equal(g.v[0].has_grid, 1);
	assert_int_equal(g.v[0].grid[2], 6);
	assert_int_equal(g.v[0].block[0], 32);
	assert_int_equal(g.v[1].has_name_id, 0);
	assert_int_equal(g.v[1].has_unique_id, 1);
	assert_int_equal(g.v[1].has_grid, 0);
	assert_int_equal(g.v[1].has_correlation, 0);
	assert_int_equal(g.v[2].type, KJ_STORE_GPU_MEMCPY);
	assert_string_equal(g.kinds[2], "HtoD");
	assert_int_equal(g.v[2].has_bytes, 1);
	assert_int_equal(g.v[2].bytes, 64);
	assert_int_equal(g.v[3].type, KJ_STORE_GPU_MEMSET);
	assert_int_equal(g.v[3].has_bytes, 0);
	assert_string_equal(g.kinds[3], "(null)");
	/* the window */
	memset(&g, 0, sizeof(g));
	assert_int_equal(kj_store_e_gpu_work_in(db, 45, 65, gpu_take, &g), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.v[0].start_ns, 50);
	kj_db_close(db);
}

struct counter_rows {
	struct kj_store_power_counter v[MAXROWS];
	int n;
};

static int counter_take(void *ctx, const struct kj_store_power_counter *r)
{
	struct counter_rows *c = ctx;
	assert_true(c->n < MAXROWS);
	c->v[c->n++] = *r;
	return 0;
}

static int sample_take(void *ctx, const struct kj_store_power_sample *r)
{
	struct kj_store_power_sample *out = ctx;
	*out = *r;
	return 0;
}

static void test_power_rows(void **state)
{
	(void)state;
	sqlite3 *db = make_run("power");
	struct kj_store_power_writer *w = NULL;
	/* power_mw not read: the counter shows the average; no energy, no memory clock */
	const struct kj_store_power_row r1 = {2, 100, 5, -1, 250000, -1, 1, 1400, -1, 60, 90, -1, 4};
	const struct kj_store_power_row r2 = {1, 200, 6, 300000, 290000, 1234, 1, 1500, 5001, -1, -1, -1, -1};
	assert_int_equal(kj_store_e_power_writer_open(db, &w), 0);
	assert_int_equal(kj_store_e_power_write(w, &r1), 0);
	assert_int_equal(kj_store_e_power_write(w, &r2), 0);
	kj_store_e_power_writer_close(w);
	struct counter_rows c = {0};
	assert_int_equal(kj_store_e_power_counters(db, 0, 1000, counter_take, &c), 0);
	assert_int_equal(c.n, 2);
	/* by device, then time */
	assert_int_equal(c.v[0].device_id, 1);
	assert_int_equal(c.v[0].has_power, 1);
	assert_int_equal(c.v[0].power_mw, 300000);
	assert_int_equal(c.v[0].has_energy, 1);
	assert_int_equal(c.v[0].energy_mj, 1234);
	assert_int_equal(c.v[0].has_mem_clock, 1);
	assert_int_equal(c.v[1].device_id, 2);
	assert_int_equal(c.v[1].power_mw, 250000);
	assert_int_equal(c.v[1].has_energy, 0);
	assert_int_equal(c.v[1].has_sm_clock, 1);
	assert_int_equal(c.v[1].sm_clock_mhz, 1400);
	assert_int_equal(c.v[1].has_mem_clock, 0);
	/* read back for energy: NULL columns -1, energy_updated NULL (0) when energy is */
	struct kj_store_power_sample s;
	assert_int_equal(kj_store_e_power_samples(db, 2, sample_take, &s), 0);
	assert_int_equal(s.t_ns, 100);
	assert_int_equal(s.power_mw, -1);
	assert_int_equal(s.power_avg_mw, 250000);
	assert_int_equal(s.energy_mj, -1);
	assert_int_equal(s.energy_updated, 0);
	assert_int_equal(kj_store_e_power_samples(db, 1, sample_take, &s), 0);
	assert_int_equal(s.energy_mj, 1234);
	assert_int_equal(s.energy_updated, 1);
	/* idle power: none, then the stored median */
	assert_true(kj_store_e_idle_median_mw(db, 1) == -1);
	const struct kj_store_idle_power idle = {41000, 40000, 43000, 50, 1, "nvml-power"};
	assert_int_equal(kj_store_e_idle_power_put(db, "power.kjdb", 1, &idle), 0);
	assert_true(kj_store_e_idle_median_mw(db, 1) == 41000);
	kj_db_close(db);
}

struct event_rows {
	struct kj_store_event v[MAXROWS];
	char types[MAXROWS][16];
	int n;
};

static int event_take(void *ctx, const struct kj_store_event *e)
{
	struct event_rows *a = ctx;
	assert_true(a->n < MAXROWS);
	a->v[a->n] = *e;
	snprintf(a->types[a->n], sizeof(a->types[0]), "%s", e->type);
	a->n++;
	return 0;
}

static void test_events(void **state)
{
	(void)state;
	sqlite3 *db = make_run("events");
	exec(db, "INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES(1, 2, 'step', 5, NULL, 1)");
	exec(db, "INSERT INTO allocation(pid, bytes, kind, alloc_ns, free_ns, stream_id)"
		 " VALUES(1, 512, NULL, 7, 9, NULL)");
	struct event_rows a = {0};
	assert_int_equal(kj_store_e_events(db, event_take, &a), 0);
	assert_int_equal(a.n, 2);
	assert_string_equal(a.types[0], "nvtx");
	assert_int_equal(a.v[0].has_start, 1);
	assert_int_equal(a.v[0].has_end, 0);
	assert_int_equal(a.v[0].has_bytes, 0);
	assert_string_equal(a.types[1], "alloc");
	assert_int_equal(a.v[1].has_end, 1);
	assert_int_equal(a.v[1].end_ns, 9);
	assert_int_equal(a.v[1].has_bytes, 1);
	assert_int_equal(a.v[1].bytes, 512);
	assert_int_equal(a.v[1].has_stream, 0);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_calls),
		cmocka_unit_test(test_gpu_work),
		cmocka_unit_test(test_power_rows),
		cmocka_unit_test(test_events),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
