/* The replay worker's readers of src/store (kj_store_w_launch.h, kj_store_w_seq.h) on a run built
 * by hand: what the GPU worker reads of a launch, its allocations, modules, memsets, an
 * iteration's operations and copies, and the snapshot, with NULL columns kept apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_store_w_launch.h"
#include "kj_store_w_seq.h"

#include "sqlexec.h"
#include "tmpdir.h"

static sqlite3 *make_run(const char *name)
{
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(kj_db_create(p, &db), 0);
	exec(db, "INSERT INTO process_device(pid, ordinal, device_id) VALUES(9, 0, 3), (7, 1, 5), (7, 0, 4)");
	exec(db, "INSERT INTO kernel_name(id, mangled) VALUES(1, '_Z1kv')");
	exec(db, "INSERT INTO unique_kernel(id, key, name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
		 " cluster_x, cluster_y, cluster_z, shmem_dynamic, registers, shmem_static, shmem_executed, carveout,"
		 " cooperative) VALUES(10, 'k', 1, 8, 4, 2, 128, 1, 1, 2, 1, 1, 512, 32, 0, NULL, 50, 1)");
	/* launch 100: its own grid_x and shared memory, the rest NULL (the unique kernel's); 101: a
	 * --params-iteration launch, which comes after plain ones */
	exec(db, "INSERT INTO launch_params(id, unique_id, pid, correlation_id, ordinal, grid_x, shmem_dynamic,"
		 " stream_id, launch_ns, iteration, layout, params) VALUES"
		 " (100, 10, 7, 55, 0, 16, NULL, 2, 1000, NULL, NULL, x'0102030405060708'),"
		 " (101, 10, 7, 56, 1, 1, 64, 2, 2000, 1, NULL, x'01')");
	exec(db, "INSERT INTO allocation(id, pid, address, bytes, alloc_ns, free_ns, kind) VALUES"
		 " (1, 7, 4096, 256, 10, NULL, 'device'), (2, 7, 8192, 64, 5, 1200, 'device'), (3, 7, 0, 99, 1, NULL, 'device'),"
		 " (4, 8, 16384, 64, 1, NULL, 'device'), (5, 7, 32768, 64, 1500, NULL, 'device'),"
		 " (6, 7, 65536, 128, 1800, NULL, 'graph')");
	exec(db, "INSERT INTO module(hash, format, bytes, codec, data) VALUES('aa', 'cubin', 4, NULL, x'11223344'),"
		 " ('bb', 'cubin', 2, NULL, x'5566'), ('cc', 'cubin', 1, NULL, NULL)");
	exec(db, "INSERT INTO module_function(hash, mangled) VALUES('aa', '_Z1kv'), ('bb', '_Z1kv'), ('cc', '_Z1kv')");
	exec(db, "INSERT INTO module_load(pid, cupti_module_id, hash, load_ns) VALUES(7, 1, 'aa', 100), (7, 2, 'bb', 500)");
	return db;
}

/* A launch's row: its own columns first, its unique kernel's where NULL; -1 where unknown. */
static void test_launch_read(void **state)
{
	(void)state;
	sqlite3 *db = make_run("launch.kjdb");
	struct kj_store_launch l;
	assert_int_equal(kj_store_launch_read(db, 10, -1, &l), 0);
	assert_string_equal(l.mangled, "_Z1kv");
	assert_int_equal(l.pid, 7);
	assert_int_equal(l.launch_ns, 1000);
	assert_int_equal(l.correlation, 55);
	assert_int_equal(l.unique_id, 10);
	assert_int_equal(l.stream_id, 2);
	assert_int_equal(l.grid[0], 16);
	assert_int_equal(l.grid[1], 4);
	assert_int_equal(l.grid[2], 2);
	assert_int_equal(l.block[0], 128);
	assert_int_equal(l.cluster[0], 2);
	assert_int_equal(l.shmem, 512);
	assert_int_equal(l.regs, 32);
	assert_int_equal(l.smem_static, 0);
	assert_int_equal(l.shmem_executed, -1);
	assert_int_equal(l.carveout, 50);
	assert_int_equal(l.cooperative, 1);
	assert_string_equal(l.module_hash, "");
	assert_int_equal(l.blob_len, 8);
	assert_memory_equal(l.blob, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	assert_null(l.layout);
	kj_store_launch_free(&l);
	assert_int_equal(kj_store_launch_read(db, 10, 101, &l), 0);
	assert_int_equal(l.shmem, 64);
	assert_int_equal(l.grid[0], 1);
	kj_store_launch_free(&l);
	assert_int_equal(kj_store_launch_read(db, 10, 999, &l), KJ_ENOTFOUND);
	assert_null(l.mangled);
	assert_int_equal(kj_store_first_process_device(db, -1), 4);
	kj_db_close(db);
}

static int add_alloc(int64_t id, uint64_t address, uint64_t bytes, void *ud)
{
	char *s = ud;
	size_t n = strlen(s);
	snprintf(s + n, 256 - n, "%lld:%llu+%llu ", (long long)id, (unsigned long long)address,
		 (unsigned long long)bytes);
	return 0;
}

/* The allocations live at the launch, of its process, none at address 0; by allocation time. A
 * graph memory node's allocation is live for the graph's life: recorded when the graph was
 * launched, after its kernels' capture-time launches, it counts at any time. */
static void test_live_allocations(void **state)
{
	(void)state;
	sqlite3 *db = make_run("alloc.kjdb");
	char s[256] = "";
	assert_int_equal(kj_store_live_allocations(db, 7, 1000, add_alloc, s), 0);
	assert_string_equal(s, "2:8192+64 1:4096+256 6:65536+128 ");
	s[0] = 0;
	assert_int_equal(kj_store_live_allocations(db, -1, -1, add_alloc, s), 0);
	assert_string_equal(s, "4:16384+64 2:8192+64 1:4096+256 5:32768+64 6:65536+128 ");
	kj_db_close(db);
}

/* Modules with data defining the function: the traced one first, else the latest loaded before
 * the launch first. */
static void test_modules(void **state)
{
	(void)state;
	sqlite3 *db = make_run("mod.kjdb");
	struct kj_store_rows *r = NULL;
	struct kj_store_module m;
	assert_int_equal(kj_store_modules_open(db, "_Z1kv", 1000, NULL, &r), 0);
	assert_int_equal(kj_store_modules_next(r, &m), 1);
	assert_string_equal(m.hash, "bb");
	assert_int_equal(m.len, 2);
	assert_int_equal(m.bytes, 2);
	assert_memory_equal(m.data, "\x55\x66", 2);
	assert_int_equal(kj_store_modules_next(r, &m), 1);
	assert_string_equal(m.hash, "aa");
	assert_int_equal(kj_store_modules_next(r, &m), 0);
	kj_store_rows_close(r);
	assert_int_equal(kj_store_modules_open(db, "_Z1kv", 200, NULL, &r), 0);
	assert_int_equal(kj_store_modules_next(r, &m), 1);
	assert_string_equal(m.hash, "aa");
	kj_store_rows_close(r);
	assert_int_equal(kj_store_modules_open(db, "_Z1kv", -1, "aa", &r), 0);
	assert_int_equal(kj_store_modules_next(r, &m), 1);
	assert_string_equal(m.hash, "aa");
	kj_store_rows_close(r);
	kj_db_close(db);
}

/* Eager memsets after the previous kernel on the stream and before the launch; the graph check. */
static void test_premem(void **state)
{
	(void)state;
	sqlite3 *db = make_run("premem.kjdb");
	struct kj_store_rows *r = NULL;
	struct kj_store_memset m;
	exec(db, "INSERT INTO kernel(id, pid, stream_id, correlation_id, start_ns, end_ns, unique_id, graph_node_id)"
		 " VALUES(1, 7, 2, 50, 10, 20, 10, NULL), (2, 7, 2, 80, 10, 20, 10, 5)");
	exec(db, "INSERT INTO memset(id, pid, stream_id, correlation_id, bytes, value, address, element_bytes)"
		 " VALUES(1, 7, 2, 49, 16, 1, 4096, 4), (2, 7, 2, 52, 32, 7, 4352, 4), (3, 7, 2, 53, 8, 0, NULL, 1),"
		 " (4, 7, 3, 54, 8, 0, 4096, 1)");
	assert_int_equal(kj_store_premem_open(db, 0, 7, 2, 55, 10, &r), 0);
	assert_non_null(r);
	assert_int_equal(kj_store_premem_next(r, &m), 1);
	assert_int_equal(m.address, 4352);
	assert_int_equal(m.value, 7);
	assert_int_equal(m.element_bytes, 4);
	assert_int_equal(m.bytes, 32);
	assert_int_equal(kj_store_premem_next(r, &m), 0);
	kj_store_rows_close(r);
	assert_int_equal(kj_store_launch_in_graph(db, 7, 55), 0);
	assert_int_equal(kj_store_launch_in_graph(db, 7, 80), 1);
	kj_db_close(db);
}

/* An iteration's operations in order, NULL columns apart (pid, memset destination), the copy's
 * host kinds; eager copies' addresses and kept bytes. */
static void test_seq_ops_and_copies(void **state)
{
	(void)state;
	sqlite3 *db = make_run("seq.kjdb");
	struct kj_store_rows *r = NULL;
	struct kj_store_seq_op o;
	struct kj_store_copy c;
	exec(db, "INSERT INTO memcpy(id, pid, correlation_id, bytes, kind, src_kind, dst_kind, dst_address, src_address,"
		 " graph_node_id) VALUES(1, 7, 60, 4, 'HtoD', 'pageable', 'device', 4096, 77, NULL)");
	exec(db, "INSERT INTO copy_data(memcpy_id, pid, correlation_id, bytes, data) VALUES(1, 7, 60, 4, x'0a0b0c0d')");
	exec(db, "INSERT INTO memset(id, pid, correlation_id, bytes, value, address, element_bytes)"
		 " VALUES(5, 7, 61, 16, 9, 4096, NULL)");
	exec(db, "INSERT INTO sequence_op(id, iteration, ordinal, pid, stream_id, op, correlation_id, event_id,"
		 " launch_params_id, bytes, kind, memset_id) VALUES"
		 " (1, 1, 2, 7, 2, 'kernel', 55, NULL, 100, NULL, NULL, NULL),"
		 " (2, 1, 1, NULL, NULL, 'memcpy', 60, NULL, NULL, 4, 'HtoD', NULL),"
		 " (3, 1, 3, 7, 2, 'memset', 61, NULL, NULL, 16, NULL, 5),"
		 " (4, 1, 4, 7, 2, 'event_record', NULL, 3, NULL, NULL, NULL, NULL),"
		 " (5, 2, 1, 7, 2, 'kernel', 55, NULL, 100, NULL, NULL, NULL)");
	assert_int_equal(kj_store_seq_ops_open(db, 1, 0, INT64_MAX, &r), 0);
	assert_int_equal(kj_store_seq_ops_next(r, &o), 1);
	assert_string_equal(o.op, "memcpy");
	assert_string_equal(o.kind, "HtoD");
	assert_string_equal(o.host_kinds, "pageable,device");
	assert_int_equal(o.has_pid, 0);
	assert_int_equal(o.pid, -1);
	assert_int_equal(o.stream_id, 0);
	assert_int_equal(o.bytes, 4);
	assert_int_equal(o.correlation, 60);
	assert_int_equal(kj_store_seq_ops_next(r, &o), 1);
	assert_string_equal(o.op, "kernel");
	assert_int_equal(o.launch_params_id, 100);
	assert_int_equal(o.has_pid, 1);
	assert_int_equal(o.pid, 7);
	assert_int_equal(o.has_address, 0);
	assert_int_equal(o.event_id, -1);
	assert_int_equal(kj_store_seq_ops_next(r, &o), 1);
	assert_string_equal(o.op, "memset");
	assert_int_equal(o.has_address, 1);
	assert_int_equal(o.address, 4096);
	assert_int_equal(o.value, 9);
	assert_int_equal(o.element_bytes, 1);
	assert_int_equal(kj_store_seq_ops_next(r, &o), 1);
	assert_int_equal(o.event_id, 3);
	assert_int_equal(o.launch_params_id, -1);
	assert_int_equal(kj_store_seq_ops_next(r, &o), 0);
	kj_store_rows_close(r);
	/* --ordinals 2:3 */
	assert_int_equal(kj_store_seq_ops_open(db, 1, 2, 3, &r), 0);
	int n = 0;
	while (kj_store_seq_ops_next(r, &o))
		n++;
	assert_int_equal(n, 2);
	kj_store_rows_close(r);

	assert_int_equal(kj_store_seq_copies_open(db, &r), 0);
	assert_non_null(r);
	assert_int_equal(kj_store_seq_copy_get(r, 60, 7, &c), 1);
	assert_int_equal(c.dst, 4096);
	assert_int_equal(c.src, 77);
	assert_int_equal(c.data_is_blob, 1);
	assert_int_equal(c.data_bytes, 4);
	assert_memory_equal(c.data, "\x0a\x0b\x0c\x0d", 4);
	assert_int_equal(kj_store_seq_copy_get(r, 60, 8, &c), 0);
	assert_int_equal(kj_store_seq_copy_get(r, 60, -1, &c), 1);
	kj_store_rows_close(r);
	kj_db_close(db);
}

/* Snapshot places before launches, this launch's last; data by id; after-launch buffers. */
static void test_snapshot(void **state)
{
	(void)state;
	sqlite3 *db = make_run("snap.kjdb");
	struct kj_store_rows *r = NULL, *d = NULL;
	struct kj_store_snap_row s;
	exec(db, "INSERT INTO snapshot(id, pid, address, bytes, correlation_id, codec, data, phase) VALUES"
		 " (1, 7, 4096, 2, 55, NULL, x'0102', 'before'), (2, 7, 8192, 1, NULL, NULL, x'03', 'before'),"
		 " (3, 7, 4096, 2, 55, NULL, x'0405', 'after'), (4, 8, 4096, 2, 40, NULL, x'0607', 'before'),"
		 " (5, NULL, 16384, 1, 41, 'zstd', x'08', NULL)");
	assert_int_equal(kj_store_snap_places_open(db, 7, 55, &r), 0);
	assert_non_null(r);
	assert_int_equal(kj_store_snap_places_next(r, &s), 1);
	assert_int_equal(s.id, 2);
	assert_int_equal(s.has_correlation, 0);
	assert_int_equal(kj_store_snap_places_next(r, &s), 1);
	assert_int_equal(s.id, 5);
	assert_int_equal(s.address, 16384);
	assert_int_equal(kj_store_snap_places_next(r, &s), 1);
	assert_int_equal(s.id, 1);
	assert_int_equal(s.has_correlation, 1);
	assert_int_equal(s.correlation, 55);
	assert_int_equal(kj_store_snap_places_next(r, &s), 0);
	kj_store_rows_close(r);
	assert_int_equal(kj_store_snap_data_open(db, &d), 0);
	assert_non_null(d);
	assert_int_equal(kj_store_snap_data_get(d, 5, &s), 1);
	assert_string_equal(s.codec, "zstd");
	assert_int_equal(s.len, 1);
	assert_int_equal(kj_store_snap_data_get(d, 1, &s), 1);
	assert_null(s.codec);
	assert_memory_equal(s.data, "\x01\x02", 2);
	assert_int_equal(kj_store_snap_data_get(d, 99, &s), 0);
	kj_store_rows_close(d);
	assert_int_equal(kj_store_snap_after_open(db, 7, 55, &r), 0);
	assert_int_equal(kj_store_snap_after_next(r, &s), 1);
	assert_int_equal(s.address, 4096);
	assert_int_equal(s.bytes, 2);
	assert_memory_equal(s.data, "\x04\x05", 2);
	assert_int_equal(kj_store_snap_after_next(r, &s), 0);
	kj_store_rows_close(r);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launch_read),
		cmocka_unit_test(test_live_allocations),
		cmocka_unit_test(test_modules),
		cmocka_unit_test(test_premem),
		cmocka_unit_test(test_seq_ops_and_copies),
		cmocka_unit_test(test_snapshot),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
