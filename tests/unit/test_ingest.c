/* Spool ingest: synthetic spool files of known content become the rows they describe; a file
 * cut short keeps its complete records; module images yield their function names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_ingest.h"
#include "kj_spool.h"

static char dir[] = "/tmp/kjtest_ingest_XXXXXX";

struct buf {
	unsigned char *p;
	size_t n;
};

static void put(struct buf *b, const void *rec, size_t size, const void *payload, size_t plen)
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

static void put_string(struct buf *b, uint32_t id, const char *s)
{
	struct kj_rec_string r = {{KJ_REC_STRING, 0}, id, (uint32_t)strlen(s)};
	put(b, &r, sizeof(r), s, strlen(s));
}

static void put_kernel(struct buf *b, uint32_t corr, int64_t start, int64_t end, int grid, uint64_t node)
{
	struct kj_rec_kernel k;
	memset(&k, 0, sizeof(k));
	k.h.type = KJ_REC_KERNEL;
	k.start_ns = start;
	k.end_ns = end;
	k.correlation = corr;
	k.name_id = 1;
	k.grid[0] = grid, k.grid[1] = 1, k.grid[2] = 1;
	k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
	k.stream = 7;
	k.graph_node_id = node;
	k.registers = 32;
	put(b, &k, sizeof(k), NULL, 0);
}

static void put_launch(struct buf *b, uint32_t corr, uint64_t key, int64_t t)
{
	struct kj_rec_launch l = {{KJ_REC_LAUNCH, 0}, key, t, corr, 42};
	put(b, &l, sizeof(l), NULL, 0);
}

static void put_marker(struct buf *b, uint32_t id, uint32_t flags, uint32_t name, int64_t t)
{
	struct kj_rec_marker m;
	memset(&m, 0, sizeof(m));
	m.h.type = KJ_REC_MARKER;
	m.t_ns = t;
	m.id = id;
	m.flags = flags;
	m.name_id = name;
	m.tid = 42;
	put(b, &m, sizeof(m), NULL, 0);
}

/* A whole process's spool: 5 kernels (2 launches of key A, 1 of key B, 1 without a launch record,
 * 1 from a graph node cloned from a node of key B), copies, NVTX ranges, an allocation. */
static struct buf make_spool(void)
{
	struct buf b = {NULL, 0};
	struct kj_rec_file f = {{KJ_REC_FILE, 0}, KJ_SPOOL_MAGIC, KJ_SPOOL_VERSION, 0};
	struct kj_rec_process p;
	struct kj_rec_device d;
	const char text[] = "/usr/bin/python3\0python3\0infer.py\0";
	put(&b, &f, sizeof(f), NULL, 0);
	memset(&p, 0, sizeof(p));
	p.h.type = KJ_REC_PROCESS;
	p.pid = 4242;
	p.ppid = 1;
	p.text_len = sizeof(text);
	put(&b, &p, sizeof(p), text, sizeof(text));
	put_string(&b, 1, "_Z8kj_scalePKfPfif");
	put_string(&b, 2, "forward");
	put_string(&b, 3, "layer");
	memset(&d, 0, sizeof(d));
	d.h.type = KJ_REC_DEVICE;
	d.ordinal = 0;
	d.cc_major = 9;
	d.sm_count = 132;
	d.uuid[0] = 0xab;
	snprintf(d.name, sizeof(d.name), "NVIDIA H200");
	put(&b, &d, sizeof(d), NULL, 0);
	put_launch(&b, 10, 0xA, 100);
	put_launch(&b, 11, 0xA, 200);
	put_launch(&b, 12, 0xB, 300);
	struct kj_rec_graphnode g1 = {{KJ_REC_GRAPHNODE, 0}, 70, 0xB, 0};
	struct kj_rec_graphnode g2 = {{KJ_REC_GRAPHNODE, 0}, 80, 0, 70};
	put(&b, &g1, sizeof(g1), NULL, 0);
	put(&b, &g2, sizeof(g2), NULL, 0);
	{
		struct {
			struct kj_rec_params p;
			uint32_t layout[4];
		} pr;
		unsigned char blob[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
		memset(&pr, 0, sizeof(pr));
		pr.p.h.type = KJ_REC_PARAMS;
		pr.p.key = 0xA;
		pr.p.correlation = 10;
		pr.p.name_id = 1;
		pr.p.grid[0] = 4096, pr.p.grid[1] = pr.p.grid[2] = 1;
		pr.p.block[0] = 256, pr.p.block[1] = pr.p.block[2] = 1;
		pr.p.handle_kind = 2;
		pr.p.nparams = 2;
		pr.p.blob_len = sizeof(blob);
		pr.p.iteration = -1;
		pr.layout[0] = 0, pr.layout[1] = 8, pr.layout[2] = 8, pr.layout[3] = 4;
		put(&b, &pr, sizeof(pr), blob, sizeof(blob));
	}
	put_kernel(&b, 10, 1000, 1500, 4096, 0);
	put_kernel(&b, 11, 2000, 2500, 4096, 0);
	put_kernel(&b, 12, 3000, 3100, 2048, 0);
	put_kernel(&b, 99, 4000, 4100, 1024, 0);
	put_kernel(&b, 555, 5000, 5050, 2048, 80);
	{
		struct kj_rec_memcpy m;
		memset(&m, 0, sizeof(m));
		m.h.type = KJ_REC_MEMCPY;
		m.start_ns = 500, m.end_ns = 900, m.bytes = 4096, m.copy_kind = 1, m.src_kind = 2, m.dst_kind = 3;
		put(&b, &m, sizeof(m), NULL, 0);
		m.h.type = KJ_REC_MEMSET;
		m.is_memset = 1, m.value = 0, m.start_ns = 950, m.end_ns = 960;
		put(&b, &m, sizeof(m), NULL, 0);
	}
	{
		struct kj_rec_memory m;
		memset(&m, 0, sizeof(m));
		m.h.type = KJ_REC_MEMORY;
		m.t_ns = 50, m.address = 0x7f0000000000ULL, m.bytes = 1 << 20, m.op = 1, m.kind = 3;
		put(&b, &m, sizeof(m), NULL, 0);
		m.t_ns = 6000, m.op = 2;
		put(&b, &m, sizeof(m), NULL, 0);
	}
	put_marker(&b, 1, 2, 2, 10);     /* forward starts */
	put_marker(&b, 2, 2, 3, 20);     /* layer starts inside it */
	put_marker(&b, 2, 4, 0, 2600);   /* layer ends */
	put_marker(&b, 1, 4, 0, 5100);   /* forward ends */
	put_marker(&b, 3, 2, 2, 5200);   /* a forward that never ends */
	return b;
}

static sqlite3 *ingest(struct buf *b, const char *name, struct kj_ingest_stats *st)
{
	char path[256], dbpath[256];
	sqlite3 *db = NULL;
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s.spool", dir, name);
	snprintf(dbpath, sizeof(dbpath), "%s/%s.kjdb", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b->p, 1, b->n, f), b->n);
	fclose(f);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	memset(st, 0, sizeof(*st));
	assert_int_equal(kj_ingest_file(db, path, st), 0);
	return db;
}

static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -12345;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static const char *qtext(sqlite3 *db, const char *sql, char *out, size_t len)
{
	sqlite3_stmt *s;
	out[0] = '\0';
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return out;
}

static void test_complete_spool(void **state)
{
	(void)state;
	struct buf b = make_spool();
	struct kj_rec_text end;
	struct kj_ingest_stats st;
	char t[256];
	memset(&end, 0, sizeof(end));
	end.h.type = KJ_REC_END;
	end.t_ns = 7000;
	put(&b, &end, sizeof(end), NULL, 0);
	sqlite3 *db = ingest(&b, "complete", &st);
	assert_int_equal(st.kernels, 5);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 5);
	/* keys A, B (launch and cloned graph node), and one by geometry */
	assert_int_equal(q1(db, "SELECT count(*) FROM unique_kernel"), 3);
	assert_int_equal(q1(db, "SELECT count(*) FROM unique_kernel WHERE keyed_by='geometry'"), 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel k JOIN unique_kernel u ON u.id=k.unique_id"
				" WHERE u.key='p000000000000000a'"), 2);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel k JOIN unique_kernel u ON u.id=k.unique_id"
				" WHERE u.key='p000000000000000b'"), 2);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel WHERE graph_node_id = 80"), 1);
	assert_int_equal(q1(db, "SELECT launch_ns FROM kernel WHERE correlation_id = 11"), 200);
	assert_int_equal(q1(db, "SELECT launch_tid FROM kernel WHERE correlation_id = 11"), 42);
	assert_int_equal(q1(db, "SELECT launch_ns FROM kernel WHERE correlation_id = 99"), -1);
	assert_string_equal(qtext(db, "SELECT demangled FROM kernel_name", t, sizeof(t)),
			    "kj_scale(float const*, float*, int, float)");
	assert_string_equal(qtext(db, "SELECT layout FROM launch_params", t, sizeof(t)), "0:8,8:4");
	assert_int_equal(q1(db, "SELECT length(params) FROM launch_params"), 12);
	assert_int_equal(q1(db, "SELECT param_bytes FROM unique_kernel WHERE key='p000000000000000a'"), 12);
	assert_string_equal(qtext(db, "SELECT handle_kind FROM launch_params", t, sizeof(t)), "kernel");
	assert_string_equal(qtext(db, "SELECT kind || src_kind || dst_kind FROM memcpy", t, sizeof(t)),
			    "HtoDpinneddevice");
	assert_int_equal(q1(db, "SELECT count(*) FROM memset"), 1);
	assert_int_equal(q1(db, "SELECT free_ns FROM allocation"), 6000);
	assert_int_equal(q1(db, "SELECT count(*) FROM nvtx_range"), 3);
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
	kj_db_close(db);
	free(b.p);
}

static void test_truncated_spool(void **state)
{
	(void)state;
	struct buf b = make_spool();
	struct kj_ingest_stats st;
	/* cut inside the last record: the process was killed mid-write */
	b.n -= 5;
	sqlite3 *db = ingest(&b, "cut", &st);
	assert_int_equal(st.truncated_files, 1);
	assert_int_equal(q1(db, "SELECT count(*) FROM kernel"), 5);
	assert_int_equal(q1(db, "SELECT ended_cleanly FROM process"), 0);
	assert_int_equal(q1(db, "SELECT count(*) FROM problem WHERE what LIKE '%cut short%'"), 1);
	kj_db_close(db);
	free(b.p);
}

static void test_not_a_spool(void **state)
{
	(void)state;
	char path[256], dbpath[256];
	sqlite3 *db;
	FILE *f;
	snprintf(path, sizeof(path), "%s/junk.spool", dir);
	snprintf(dbpath, sizeof(dbpath), "%s/junk.kjdb", dir);
	f = fopen(path, "w");
	fputs("this is not a spool file at all, but long enough", f);
	fclose(f);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	assert_int_equal(kj_ingest_file(db, path, NULL), KJ_EINVAL);
	kj_db_close(db);
}

static void count_fn(const char *name, void *ud)
{
	char *found = ud;
	if (!strcmp(name, "_Z8kj_scalePKfPfif"))
		found[0] = 1;
	if (!strcmp(name, "kj_plain"))
		found[1] = 1;
}

static void *slurp(const char *name, size_t *n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/cubin/%s", KJ_TEST_DATA, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc(*n);
	assert_int_equal(fread(p, 1, *n, f), *n);
	fclose(f);
	return p;
}

static void test_cubin_symbols(void **state)
{
	(void)state;
	size_t n;
	char found[2] = {0, 0};
	void *p = slurp("tiny_sm90.cubin", &n);
	assert_string_equal(kj_cubin_format(p, n), "cubin");
	assert_true(kj_cubin_functions(p, n, count_fn, found) >= 2);
	assert_true(found[0] && found[1]);
	/* a damaged image is refused, not read out of bounds */
	assert_true(kj_cubin_functions(p, 40, count_fn, found) < 0);
	free(p);
	memset(found, 0, sizeof(found));
	p = slurp("tiny.fatbin", &n);
	assert_string_equal(kj_cubin_format(p, n), "fatbin");
	assert_true(kj_cubin_functions(p, n, count_fn, found) >= 2);
	assert_true(found[0] && found[1]);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_complete_spool),
		cmocka_unit_test(test_truncated_spool),
		cmocka_unit_test(test_not_a_spool),
		cmocka_unit_test(test_cubin_symbols),
	};
	if (!mkdtemp(dir))
		return 1;
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return rc;
}
