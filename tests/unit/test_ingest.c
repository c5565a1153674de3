/* Spool ingest: synthetic spool files of known content become the rows they describe (the whole
 * process of process_spool_fixture.h: kernels, unique kernels, parameter blocks in either launch
 * form, iteration capture, snapshots, graph edges); a file cut short keeps its complete records.
 * (Module images: test_ingest_cubin.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_ingest.h"
#include "kj_iterations.h"
#include "kj_spool.h"

#include "spool_fixture.h"
#include "process_spool_fixture.h"

static void test_complete_spool(void **state)
{
	(void)state;
	struct buf b = make_spool();
	struct kj_ingest_stats st;
	struct kj_ingest_opts opts = {1, 0, NULL, NULL};
	char t[256];
	put_end(&b, 7000);
	sqlite3 *db = ingest(&b, "complete", &opts, &st);
	assert_int_equal(st.kernels, 8);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 8);
	/* A split in two by its size word (not by pointer or junk), B, C (junk only in its first
	 * launch: one unique kernel), and one by geometry */
	assert_int_equal(q1(db, "SELECT count(*) FROM unique_kernel"), 5);
	assert_int_equal(q1(db, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id IN (20, 21)"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM unique_kernel WHERE keyed_by='geometry'"), 1);
	assert_int_equal(q1(db, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id IN (10, 11)"), 1);
	assert_int_equal(q1(db, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id IN (10, 12)"), 2);
	assert_int_equal(q1(db, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id = 13"
				" OR graph_node_id = 80"), 1);
	assert_int_equal(q_unique(db, "launches", 13), 2);
	assert_int_equal(q1(db, "SELECT launch_ns FROM kernel WHERE correlation_id = 11"), 200);
	assert_int_equal(q1(db, "SELECT launch_tid FROM kernel WHERE correlation_id = 11"), 42);
	assert_int_equal(q1(db, "SELECT launch_ns FROM kernel WHERE correlation_id = 99"), -1);
	assert_string_equal(qtext(db, "SELECT demangled FROM kernel_name", t, sizeof(t)),
			    "kj_scale(float const*, float*, int, float)");
	/* first-K capture, K = 1: one parameter block per unique kernel that has parameters */
	assert_int_equal(q1(db, "SELECT count(*) FROM launch_params"), 4);
	assert_string_equal(qtext(db, "SELECT layout FROM launch_params WHERE correlation_id = 12", t, sizeof(t)),
			    "0:8,8:8,16:8,24:8");
	/* the block of launch 12 is the reference with its words applied: size 7, constant 9 */
	assert_int_equal(q1(db, "SELECT length(params) FROM launch_params WHERE correlation_id = 12"), 32);
	assert_int_equal(q1(db, "SELECT hex(substr(params, 9, 1)) = '07' AND hex(substr(params, 25, 1)) = '09'"
				" FROM launch_params WHERE correlation_id = 12"), 1);
	assert_int_equal(q_unique(db, "param_bytes", 10), 32);
	assert_string_equal(qtext(db, "SELECT handle_kind FROM launch_params LIMIT 1", t, sizeof(t)), "kernel");
	assert_int_equal(q1(db, "SELECT count(*) FROM sequence_op"), 0);
	assert_string_equal(qtext(db, "SELECT kind || src_kind || dst_kind FROM memcpy", t, sizeof(t)),
			    "HtoDpinneddevice");
	assert_int_equal(q1(db, "SELECT count(*) FROM memset"), 1);
	assert_int_equal(q1(db, "SELECT address FROM memset"), PTR1 + 256);
	assert_int_equal(q1(db, "SELECT element_bytes FROM memset"), 4);
	assert_int_equal(q1(db, "SELECT free_ns FROM allocation WHERE kind <> 'graph' AND address > 0"), 6000);
	assert_int_equal(q1(db, "SELECT bytes FROM allocation WHERE address = 0"), 32 << 20);
	assert_int_equal(q1(db, "SELECT bytes FROM allocation WHERE kind = 'graph' AND free_ns IS NULL"
				" AND address = 0x7e0000000000"), 1 << 16);
	/* API calls keep their domain, name, main argument, stream and status; unknown is NULL */
	assert_int_equal(q1(db, "SELECT count(*) FROM api_call"), 2);
	assert_int_equal(q1(db, "SELECT bytes FROM api_call WHERE domain = 'runtime' AND stream_id = 7"), 4096);
	assert_int_equal(q1(db, "SELECT bytes IS NULL AND stream_id IS NULL FROM api_call WHERE domain = 'driver'"), 1);
	assert_int_equal(q1(db, "SELECT status FROM api_call WHERE correlation_id = 10"), 700);
	assert_int_equal(q1(db, "SELECT count(*) FROM api_call a JOIN kernel k ON k.correlation_id = a.correlation_id"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range"), 4);
	assert_int_equal(q1(db, "SELECT depth FROM nvtx_range WHERE name='layer'"), 1);
	assert_int_equal(q1(db, "SELECT p.start_ns FROM nvtx_range c JOIN nvtx_range p ON p.id=c.parent_id"
				" WHERE c.name='layer'"), 10);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range WHERE name='forward' AND end_ns IS NULL"), 1);
	assert_int_equal(q1(db, "SELECT ended_cleanly FROM process WHERE pid=4242"), 1);
	assert_string_equal(qtext(db, "SELECT args FROM process", t, sizeof(t)), "python3 infer.py");
	assert_string_equal(qtext(db, "SELECT uuid FROM device", t, sizeof(t)),
			    "GPU-ab000000-0000-0000-0000-000000000000");
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel WHERE device_id IS NULL"), 0);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem"), 0);
	/* older spools' kernel records are 104 bytes: the fields added since begin there */
	assert_int_equal(KJ_REC_KERNEL_MIN_SIZE, 104);
	/* the shared memory the driver set aside and the carveout asked for, per kernel and per
	 * unique kernel; a record of an older tracer has neither (NULL, not 0) */
	assert_int_equal(q1(db, "SELECT shmem_executed FROM kernel WHERE correlation_id = 13"), 65536);
	assert_int_equal(q1(db, "SELECT carveout FROM kernel WHERE correlation_id = 99"), 50);
	assert_int_equal(q1(db, "SELECT carveout IS NULL FROM kernel WHERE correlation_id = 10"), 1);
	assert_int_equal(q1(db, "SELECT shmem_executed IS NULL AND carveout IS NULL FROM kernel WHERE correlation_id = 21"), 1);
	assert_int_equal(q_unique(db, "u.shmem_executed", 21), 32768);
	assert_int_equal(q_unique(db, "u.carveout", 99), 50);
	assert_int_equal(q_unique(db, "u.carveout IS NULL", 13), 1);
	/* the launch type per kernel (NULL from an older tracer's record), and a unique kernel is
	 * cooperative when its launches were: replay must launch it so */
	assert_int_equal(q1(db, "SELECT launch_type FROM kernel WHERE correlation_id = 13"), 1);
	assert_int_equal(q1(db, "SELECT launch_type FROM kernel WHERE correlation_id = 10"), 0);
	assert_int_equal(q1(db, "SELECT launch_type IS NULL FROM kernel WHERE correlation_id = 21"), 1);
	assert_int_equal(q_unique(db, "u.cooperative", 13), 1);
	assert_int_equal(q_unique(db, "u.cooperative", 10), 0);
	assert_int_equal(q1(db, "SELECT launch_type FROM kernel WHERE graph_node_id = 80"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM unique_kernel WHERE cooperative = 1"), 1);
	kj_db_close(db);
	free(b.p);
}

/* Sizes that come back (a model initialising its layers one after another: 12 shapes over 30
 * launches) split a group; a word new in every launch does not — a random-number offset that
 * grows, heap junk that does not — nor one with more distinct values than a parameter has. */
static void test_recurring_sizes_and_counters(void **state)
{
	(void)state;
	struct buf b = {NULL, 0};
	struct kj_ingest_stats st;
	struct kj_ingest_opts opts = {1, 0, NULL, NULL};
	/* the first launch's size is BLOOM's embedding, 250880 x 1024: 64 KiB aligned, not a heap address */
	const uint64_t ref[3] = {250880ULL * 1024, 1000, 7};
	put_start(&b, 77, 0, NULL, 0);
	put_string(&b, 1, "_Z8kj_scalePKfPfif");
	put_group(&b, 0xD, 64, 3, ref);
	for (uint32_t i = 0; i < 30; i++) {
		/* word 0: the size, 12 values in turn; word 1: +17 each launch; word 2: 100 values */
		const uint64_t d[] = {0, i % 12 ? 1024 * (uint64_t)(i % 12 + 1) : ref[0], 1, 1000 + 17 * (uint64_t)i,
				      2, 7 + (uint64_t)i * 3};
		put_launch(&b, 100 + i, 0xD, 1000 + 10 * i, i ? 3 : 0, d);
		put_kernel(&b, 100 + i, 5000 + 100 * i, 5050 + 100 * i, 64, 0);
	}
	/* word 2 takes 100 values in all: more than a parameter has */
	for (uint32_t i = 30; i < 100; i++) {
		const uint64_t d[] = {0, ref[0], 1, 1000 + 17 * (uint64_t)i, 2, 7 + (uint64_t)i * 3};
		put_launch(&b, 100 + i, 0xD, 1000 + 10 * i, 3, d);
		put_kernel(&b, 100 + i, 5000 + 100 * i, 5050 + 100 * i, 64, 0);
	}
	/* group E: a word new in every one of its 20 launches, never growing for long (heap junk
	 * that each forward allocates anew): volatile, one unique kernel */
	put_group(&b, 0xE, 32, 1, ref);
	for (uint32_t i = 0; i < 20; i++) {
		const uint64_t d[] = {0, 0x9000008 + ((uint64_t)(i * 7919 % 20) << 12)};
		put_launch(&b, 300 + i, 0xE, 3000 + 10 * i, i ? 1 : 0, d);
		put_kernel(&b, 300 + i, 20000 + 100 * i, 20050 + 100 * i, 32, 0);
	}
	sqlite3 *db = ingest(&b, "sizes", &opts, &st);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 120);
	assert_int_equal(q1(db, "SELECT count(*) FROM unique_kernel"), 13);
	assert_int_equal(q1(db, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id >= 300"), 1);
	assert_int_equal(q1(db, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id IN (100, 112, 124)"), 1);
	assert_int_equal(q1(db, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id IN (100, 101)"), 2);
	assert_int_equal(q_unique(db, "launches", 130), 73);
	kj_db_close(db);
	free(b.p);
}

static void test_iteration_capture(void **state)
{
	(void)state;
	struct buf b = make_spool();
	struct kj_ingest_stats st;
	struct kj_ingest_opts opts = {0, 2, NULL, kj_iter_default_range};
	char t[128];
	sqlite3 *db = ingest(&b, "iter", &opts, &st);
	/* K = 0: no first-K blocks; the second 'forward' holds launches 12, 13 and the copy of 14;
	 * launch 15 went into a capturing stream: it made a graph node and ran nothing itself */
	assert_int_equal(q1(db, "SELECT count(*) FROM launch_params WHERE iteration IS NULL"), 0);
	assert_int_equal(q1(db, "SELECT count(*) FROM launch_params WHERE iteration = 2"), 2);
	assert_int_equal(q1(db, "SELECT count(*) FROM sequence_op WHERE iteration = 2"), 5);
	assert_string_equal(qtext(db, "SELECT group_concat(op || correlation_id, ' ') FROM"
				      " (SELECT * FROM sequence_op ORDER BY ordinal)", t, sizeof(t)),
			    "kernel12 kernel13 memcpy14 event_record16 event_wait17");
	/* the wait names the event the record made, on its own stream */
	assert_int_equal(q1(db, "SELECT count(*) FROM sequence_op r JOIN sequence_op w ON w.event_id = r.event_id"
				" WHERE r.op = 'event_record' AND w.op = 'event_wait' AND r.stream_id = 7"
				" AND w.stream_id = 8 AND r.event_id = 225"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM sequence_op s JOIN launch_params p"
				" ON p.id = s.launch_params_id WHERE s.op = 'kernel'"), 2);
	/* a launch's stream comes from its kernel's activity record (stream 7 in this spool) */
	assert_int_equal(q1(db, "SELECT count(*) FROM sequence_op WHERE op = 'kernel' AND stream_id = 7"), 2);
	assert_int_equal(q1(db, "SELECT count(*) FROM sequence_op WHERE correlation_id = 15"), 0);
	assert_string_equal(qtext(db, "SELECT value FROM meta WHERE key = 'params_iteration'", t, sizeof(t)),
			    "forward#2");
	kj_db_close(db);
	free(b.p);
}

/* Two processes of one job (torchrun workers) each have the iteration range: only the first by
 * pid keeps its middle instance whole, so replay never mixes two processes into one sequence. */
static void test_iteration_one_process(void **state)
{
	(void)state;
	char path[300];
	struct kj_ingest_stats st;
	struct kj_ingest_opts opts = {1, KJ_ITERATION_AUTO, NULL, kj_iter_default_range};
	char t[64];
	mkdir_sub("job");
	const int64_t pids[] = {900, 31};
	for (int i = 0; i < 2; i++) {
		struct buf b = make_spool_of(pids[i]);
		snprintf(path, sizeof(path), "%s/job/p%lld.spool", dir, (long long)pids[i]);
		write_buf(path, &b);
		free(b.p);
	}
	sqlite3 *db = ingest_sub("job", &opts, &st);
	assert_int_equal(q1(db, "SELECT count(*) FROM process"), 2);
	/* forward has 2 closed instances: the 2nd is kept, by pid 31 only */
	assert_int_equal(q1(db, "SELECT count(DISTINCT pid) FROM sequence_op"), 1);
	assert_int_equal(q1(db, "SELECT min(pid) FROM sequence_op"), 31);
	assert_int_equal(q1(db, "SELECT count(*) FROM sequence_op WHERE op = 'kernel'"), 2);
	assert_string_equal(qtext(db, "SELECT value FROM meta WHERE key = 'params_iteration'", t, sizeof(t)),
			    "forward#2");
	assert_string_equal(qtext(db, "SELECT value FROM meta WHERE key = 'params_iteration_pid'", t, sizeof(t)),
			    "31");
	kj_db_close(db);
}

/* --snapshot: buffers before and after launch 10, stored compressed; the snapshot's own
 * device-to-host copy (correlation 77) is not one of the program's copies */
static void test_snapshot_records(void **state)
{
	(void)state;
	struct buf b = make_spool();
	struct kj_ingest_stats st;
	struct kj_ingest_opts opts = {1, 0, NULL, NULL};
	unsigned char before[4096], after[4096];
	for (size_t i = 0; i < sizeof(before); i++) {
		before[i] = (unsigned char)(i % 7);
		after[i] = (unsigned char)(i % 7 + (i == 100));
	}
	struct kj_rec_snapshot r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_SNAPSHOT;
	r.t_ns = 99, r.address = PTR1, r.bytes = sizeof(before), r.correlation = 10, r.phase = 0;
	r.copy_correlation = 76;
	put(&b, &r, sizeof(r), before, sizeof(before));
	r.t_ns = 101, r.phase = 1, r.copy_correlation = 77;
	put(&b, &r, sizeof(r), after, sizeof(after));
	struct kj_rec_memcpy m;
	memset(&m, 0, sizeof(m));
	m.h.type = KJ_REC_MEMCPY;
	m.correlation = 77;
	m.start_ns = 1600, m.end_ns = 1700, m.bytes = 4096, m.copy_kind = 2, m.src_kind = 3, m.dst_kind = 1;
	put(&b, &m, sizeof(m), NULL, 0);
	sqlite3 *db = ingest(&b, "snap", &opts, &st);
	char t[64];
	assert_int_equal(st.snapshots, 2);
	assert_int_equal(q1(db, "SELECT count(*) FROM snapshot WHERE correlation_id = 10"), 2);
	assert_string_equal(qtext(db, "SELECT group_concat(phase || ':' || codec, ' ') FROM"
				      " (SELECT * FROM snapshot ORDER BY id)", t, sizeof(t)), "before:zstd after:zstd");
	assert_int_equal(q1(db, "SELECT max(length(data)) < 4096 FROM snapshot"), 1);
	/* the program's copy (14) stays, kjoule's own (77) is gone */
	assert_int_equal(q1(db, "SELECT count(*) FROM memcpy WHERE correlation_id = 77"), 0);
	assert_int_equal(q1(db, "SELECT count(*) FROM memcpy WHERE correlation_id = 14"), 1);
	kj_db_close(db);
	free(b.p);
}

/* A graph node's dependencies: plain ids become full edges; one carrying edge data (a
 * programmatic dependency, PDL) keeps its type and ports, its node id unpacked. */
static void test_graph_edge_types(void **state)
{
	(void)state;
	struct buf b = make_spool();
	struct kj_ingest_stats st;
	struct {
		struct kj_rec_graph_node r;
		uint64_t deps[2];
	} g;
	memset(&g, 0, sizeof(g));
	g.r.h.type = KJ_REC_GRAPH_NODE;
	g.r.node_id = 31, g.r.graph_id = 4, g.r.type = 0, g.r.ndeps = 2;
	g.deps[0] = 29;
	g.deps[1] = 30 | KJ_EDGE_PACK(1, 1, 0);
	put(&b, &g, sizeof(g), NULL, 0);
	sqlite3 *db = ingest(&b, "edges", NULL, &st);
	char t[128];
	assert_string_equal(qtext(db, "SELECT group_concat(from_node_id || ':' || type || ':' || from_port || ':' || to_port, ' ')"
				      " FROM (SELECT * FROM graph_edge WHERE to_node_id = 31 ORDER BY from_node_id)", t, sizeof(t)),
			    "29:default:0:0 30:programmatic:1:0");
	kj_db_close(db);
	free(b.p);
}

/* Launches that carry their whole parameter block (the tracer leaves the comparison with the
 * group's block to the ingest) give the same unique kernels and parameter blocks as launches that
 * carry only the words that differ; a block of another length than its group's is refused. */
static void test_whole_blocks(void **state)
{
	launch_form = 1;
	test_complete_spool(state);
	test_recurring_sizes_and_counters(state);
	test_iteration_capture(state);
	launch_form = 2;
	struct buf b = make_spool();
	char path[256], dbpath[256];
	sqlite3 *db;
	snprintf(path, sizeof(path), "%s/short_block.spool", dir);
	snprintf(dbpath, sizeof(dbpath), "%s/short_block.kjdb", dir);
	write_buf(path, &b);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	assert_int_equal(kj_ingest_file(db, path, NULL, NULL), KJ_EINVAL);
	kj_db_close(db);
	free(b.p);
	launch_form = 0;
}

static void test_truncated_spool(void **state)
{
	(void)state;
	struct buf b = make_spool();
	struct kj_ingest_stats st;
	/* cut inside the last record: the process was killed mid-write */
	b.n -= 5;
	sqlite3 *db = ingest(&b, "cut", NULL, &st);
	assert_int_equal(st.truncated_files, 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 8);
	assert_int_equal(q1(db, "SELECT ended_cleanly FROM process"), 0);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE '%cut short%'"), 1);
	kj_db_close(db);
	free(b.p);
}

/* The n bytes at p, written as NAME.spool, are refused by the ingest as damaged (KJ_EINVAL). */
static void assert_refused(const char *name, const void *p, size_t n)
{
	char path[256], dbpath[256];
	struct buf b = {(unsigned char *)p, n};
	sqlite3 *db;
	snprintf(path, sizeof(path), "%s/%s.spool", dir, name);
	snprintf(dbpath, sizeof(dbpath), "%s/%s.kjdb", dir, name);
	write_buf(path, &b);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	assert_int_equal(kj_ingest_file(db, path, NULL, NULL), KJ_EINVAL);
	kj_db_close(db);
}

static void test_not_a_spool(void **state)
{
	(void)state;
	const char junk[] = "this is not a spool file at all, but long enough";
	assert_refused("junk", junk, sizeof(junk) - 1);
}

/* A string record whose id no file of this size could reach (the tracer numbers strings 1, 2, ...)
 * is damaged: refused and named, before the ingest's tables grow to the id (50,000,000 would ask
 * for about 1 GiB). */
static void test_string_id_past_the_file(void **state)
{
	(void)state;
	struct buf b = {NULL, 0};
	const char text[] = "/usr/bin/python3\0python3\0";
	put_start(&b, 77, 1, text, sizeof(text));
	put_string(&b, 1, "forward");
	put_string(&b, 50000000, "damaged");
	put_end(&b, 1000);
	assert_refused("p77", b.p, b.n);
	free(b.p);
}

/* A module or snapshot record whose 64-bit size runs past its record (a damaged size near 2^64
 * wraps the sum of head and payload) is refused, never hashed, compressed or read past the file. */
static void test_payload_size_past_the_record(void **state)
{
	(void)state;
	const char text[] = "/usr/bin/python3\0python3\0";
	struct kj_rec_module m;
	struct kj_rec_snapshot r;
	const unsigned char payload[16] = {0x7f, 'E', 'L', 'F'};
	for (int kind = 0; kind < 2; kind++) {
		struct buf b = {NULL, 0};
		put_start(&b, 78, 1, text, sizeof(text));
		if (kind == 0) {
			memset(&m, 0, sizeof(m));
			m.h.type = KJ_REC_MODULE;
			m.bytes = UINT64_MAX - sizeof(m) + 1 + sizeof(payload); /* head + bytes wraps to 16 */
			put(&b, &m, sizeof(m), payload, sizeof(payload));
		} else {
			memset(&r, 0, sizeof(r));
			r.h.type = KJ_REC_SNAPSHOT;
			r.bytes = UINT64_MAX - 7;
			put(&b, &r, sizeof(r), payload, sizeof(payload));
		}
		put_end(&b, 1000);
		assert_refused(kind == 0 ? "p78_module" : "p78_snapshot", b.p, b.n);
		free(b.p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_complete_spool),
		cmocka_unit_test(test_recurring_sizes_and_counters),
		cmocka_unit_test(test_iteration_capture),
		cmocka_unit_test(test_iteration_one_process),
		cmocka_unit_test(test_snapshot_records),
		cmocka_unit_test(test_graph_edge_types),
		cmocka_unit_test(test_whole_blocks),
		cmocka_unit_test(test_truncated_spool),
		cmocka_unit_test(test_not_a_spool),
		cmocka_unit_test(test_string_id_past_the_file),
		cmocka_unit_test(test_payload_size_past_the_record),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
