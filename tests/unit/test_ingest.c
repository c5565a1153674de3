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
#include <sys/stat.h>
#include <unistd.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_ingest.h"
#include "kj_iterations.h"
#include "kj_spool.h"
#include "kj_block_hash.h"

#include "spool_fixture.h"

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
	/* the L1/shared split the driver gave it; only grid 1024 asked for a carveout (50 %) */
	k.shmem_executed = grid == 2048 ? 65536 : 32768;
	k.carveout = grid == 1024 ? 50 : KJ_CARVEOUT_NONE;
	/* grid 2048 was launched cooperatively (CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
	 * CUPTI's record of a graph's kernel says regular even then (its group says cooperative) */
	k.launch_type = grid == 2048 && !node ? 1 : 0;
	/* launch 21's record as an older tracer wrote it, without those two */
	put(b, &k, corr == 21 ? KJ_REC_KERNEL_MIN_SIZE : sizeof(k), NULL, 0);
}

/* The form put_launch writes: 0 the words that differ from the group's block (spool version 2),
 * 1 the launch's whole block, 2 a whole block one word short, 3 as the tracer writes it now: a
 * whole block the first time it is seen (the group's own counts), after that its hash
 * (KJ_REC_LAUNCH_SAME); 4 as 3 with every hash one off (a block the spool does not hold). */
static int launch_form;
static uint64_t seen[256]; /* forms 3 and 4: the hashes of the blocks sent whole */
static int nseen, nsame;

/* forms 3 and 4: 1 when a block of hash h was sent whole, else noted */
static int sent_before(uint64_t h)
{
	for (int i = 0; i < nseen; i++)
		if (seen[i] == h)
			return 1;
	assert_true(nseen < 256);
	seen[nseen++] = h;
	return 0;
}

/* the reference blocks put_group wrote, for the whole blocks put_launch builds */
static struct {
	uint64_t group;
	int nwords;
	uint64_t ref[16];
} refs[8];

/* a launch of group g; diffs: pairs (word, value) */
static void put_launch(struct buf *b, uint32_t corr, uint64_t g, int64_t t, int ndiff, const uint64_t *diffs)
{
	struct kj_rec_launch l;
	struct kj_word_diff d[8];
	uint64_t block[16];
	memset(&l, 0, sizeof(l));
	l.h.type = KJ_REC_LAUNCH;
	l.group = g;
	l.launch_ns = t;
	l.correlation = corr;
	l.tid = 42;
	for (size_t r = 0; launch_form && r < sizeof(refs) / sizeof(refs[0]); r++) {
		if (refs[r].group != g || !refs[r].nwords)
			continue;
		memcpy(block, refs[r].ref, sizeof(block));
		for (int i = 0; i < ndiff; i++)
			block[diffs[2 * i]] = diffs[2 * i + 1];
		l.block_len = (uint32_t)(refs[r].nwords - (launch_form == 2)) * 8;
		if (launch_form >= 3) {
			uint64_t h = kj_block_hash(g, (const unsigned char *)block, l.block_len);
			if (sent_before(h)) {
				struct kj_rec_launch_same same;
				memset(&same, 0, sizeof(same));
				same.h.type = KJ_REC_LAUNCH_SAME;
				same.group = g;
				same.launch_ns = t;
				same.correlation = corr;
				same.tid = 42;
				same.block_hash = h + (launch_form == 4);
				same.block_len = l.block_len;
				put(b, &same, sizeof(same), NULL, 0);
				nsame++;
				return;
			}
		}
		put(b, &l, sizeof(l), block, l.block_len);
		return;
	}
	l.ndiff = (uint32_t)ndiff;
	for (int i = 0; i < ndiff; i++) {
		d[i].word = (uint32_t)diffs[2 * i];
		d[i].pad = 0;
		d[i].value = diffs[2 * i + 1];
	}
	put(b, &l, sizeof(l), d, (size_t)ndiff * sizeof(d[0]));
}

/* a group: kj_scale with one grid and a reference block of nwords 8-byte parameters */
static void put_group(struct buf *b, uint64_t g, int grid, int nwords, const uint64_t *ref)
{
	struct {
		struct kj_rec_group g;
		uint32_t layout[16];
	} r;
	memset(&r, 0, sizeof(r));
	r.g.h.type = KJ_REC_GROUP;
	r.g.group = g;
	r.g.name_id = 1;
	r.g.grid[0] = (uint32_t)grid, r.g.grid[1] = r.g.grid[2] = 1;
	r.g.block[0] = 256, r.g.block[1] = r.g.block[2] = 1;
	r.g.handle_kind = 2;
	r.g.flags = grid == 2048 ? KJ_GROUP_COOPERATIVE : 0; /* as the graph node's attribute said */
	r.g.nparams = (uint32_t)nwords;
	r.g.blob_len = (uint32_t)nwords * 8;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		if (refs[i].group == g || !refs[i].nwords) {
			refs[i].group = g, refs[i].nwords = nwords;
			memcpy(refs[i].ref, ref, (size_t)nwords * 8);
			break;
		}
	for (int i = 0; i < nwords; i++)
		r.layout[2 * i] = (uint32_t)i * 8, r.layout[2 * i + 1] = 8;
	if (launch_form >= 3)
		(void)sent_before(kj_block_hash(g, (const unsigned char *)ref, r.g.blob_len));
	/* header with its layout, then the block: sizes computed like the injection library does */
	size_t head = sizeof(r.g) + (size_t)nwords * 2 * sizeof(uint32_t);
	unsigned char tmp[512];
	memcpy(tmp, &r, head);
	memcpy(tmp + head, ref, (size_t)nwords * 8);
	put(b, tmp, head + (size_t)nwords * 8, NULL, 0);
}

#define PTR1 0x7f0000000100ULL
#define PTR2 0x7f0000080000ULL

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

/* A whole process's spool. Group A (kj_scale, grid 4096) has four parameter words: a device
 * pointer, a size, a junk word (stack garbage) and a constant; launches 10 and 11 differ only in
 * pointer and junk (one unique kernel), launch 12 in its size (another). Group B (grid 2048):
 * launch 13, and launch 14 captured into graph node 70, whose clone 80 runs. Kernel 99 has no
 * launch record and is keyed by its geometry. */
static struct buf make_spool_of(int64_t pid)
{
	struct buf b = {NULL, 0};
	struct kj_rec_device d;
	const char text[] = "/usr/bin/python3\0python3\0infer.py\0";
	const uint64_t ref_a[4] = {PTR1, 5, 0x7ffd00000001ULL, 9};
	const uint64_t ref_b[1] = {3};
	const uint64_t d11[] = {0, PTR2, 2, 0x7ffd00000002ULL};
	const uint64_t d12[] = {1, 7, 2, 0x7ffd00000003ULL};
	nseen = 0; /* a new spool: no block sent yet */
	put_start(&b, (uint32_t)pid, 1, text, sizeof(text));
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
	{
		struct kj_rec_memory m;
		memset(&m, 0, sizeof(m));
		m.h.type = KJ_REC_MEMORY;
		m.t_ns = 50, m.address = 0x7f0000000000ULL, m.bytes = 1 << 20, m.op = 1, m.kind = 3;
		put(&b, &m, sizeof(m), NULL, 0);
		m.t_ns = 6000, m.op = 2;
		put(&b, &m, sizeof(m), NULL, 0);
		/* a graph's memory node, read at instantiation: never freed */
		m.t_ns = 60, m.address = 0x7e0000000000ULL, m.bytes = 1 << 16, m.op = 1, m.kind = 0, m.via = KJ_MEM_VIA_GRAPH;
		put(&b, &m, sizeof(m), NULL, 0);
		/* CUPTI's record of that graph's memory pool: 32 MiB at address 0. Taken as a range it
		 * would make every size word below 32 Mi a pointer, and group A would not split */
		m.t_ns = 61, m.address = 0, m.bytes = 32u << 20, m.op = 1, m.kind = 3, m.via = KJ_MEM_VIA_ACTIVITY;
		put(&b, &m, sizeof(m), NULL, 0);
	}
	put_group(&b, 0xA, 4096, 4, ref_a);
	put_launch(&b, 10, 0xA, 100, 0, NULL);
	put_launch(&b, 11, 0xA, 200, 2, d11);
	put_launch(&b, 12, 0xA, 300, 2, d12);
	{
		/* group C: the first launch's word 0 holds stack junk, the later ones a small number */
		const uint64_t ref_c[1] = {0x7ffe00000002ULL};
		const uint64_t d21[] = {0, 2};
		put_group(&b, 0xC, 512, 1, ref_c);
		put_launch(&b, 20, 0xC, 120, 0, NULL);
		put_launch(&b, 21, 0xC, 130, 1, d21);
	}
	put_group(&b, 0xB, 2048, 1, ref_b);
	put_launch(&b, 13, 0xB, 400, 0, NULL);
	put_launch(&b, 15, 0xB, 450, 0, NULL);
	struct kj_rec_graphnode g1 = {{KJ_REC_GRAPHNODE, 0}, 70, 15, 0};
	struct kj_rec_graphnode g2 = {{KJ_REC_GRAPHNODE, 0}, 80, 0, 70};
	put(&b, &g1, sizeof(g1), NULL, 0);
	put(&b, &g2, sizeof(g2), NULL, 0);
	put_kernel(&b, 10, 1000, 1500, 4096, 0);
	put_kernel(&b, 11, 2000, 2500, 4096, 0);
	put_kernel(&b, 12, 3000, 3100, 4096, 0);
	put_kernel(&b, 13, 3200, 3300, 2048, 0);
	put_kernel(&b, 99, 4000, 4100, 1024, 0);
	put_kernel(&b, 20, 4200, 4210, 512, 0);
	put_kernel(&b, 21, 4300, 4310, 512, 0);
	put_kernel(&b, 555, 5000, 5050, 2048, 80);
	{
		struct kj_rec_memcpy m;
		memset(&m, 0, sizeof(m));
		m.h.type = KJ_REC_MEMCPY;
		m.correlation = 14;
		m.start_ns = 500, m.end_ns = 900, m.bytes = 4096, m.copy_kind = 1, m.src_kind = 2, m.dst_kind = 3;
		put(&b, &m, sizeof(m), NULL, 0);
		m.h.type = KJ_REC_MEMSET;
		m.correlation = 9;
		m.is_memset = 1, m.value = 0, m.start_ns = 950, m.end_ns = 960;
		put(&b, &m, sizeof(m), NULL, 0);
		/* where that memset wrote (its API call: cuMemsetD32Async) */
		struct kj_rec_memset_dst md;
		memset(&md, 0, sizeof(md));
		md.h.type = KJ_REC_MEMSET_DST;
		md.address = PTR1 + 256, md.correlation = 9, md.value = 0, md.element_bytes = 4;
		put(&b, &md, sizeof(md), NULL, 0);
	}
	{
		struct kj_rec_api a;
		memset(&a, 0, sizeof(a));
		a.h.type = KJ_REC_API;
		a.start_ns = 90, a.end_ns = 95, a.domain = 2, a.cbid = 41, a.tid = 42, a.correlation = 14;
		a.name_id = 3, a.bytes = 4096, a.stream = 7;
		put(&b, &a, sizeof(a), NULL, 0);
		a.domain = 1, a.cbid = 307, a.correlation = 10, a.bytes = -1, a.stream = -1, a.status = 700;
		put(&b, &a, sizeof(a), NULL, 0);
	}
	{
		/* an event recorded on stream 7 and waited on by stream 8 inside forward 2; one in forward 1 */
		struct kj_rec_seqop e;
		memset(&e, 0, sizeof(e));
		e.h.type = KJ_REC_SEQOP;
		e.t_ns = 100, e.event = 0xE0, e.stream = 7, e.correlation = 5, e.op = 1;
		put(&b, &e, sizeof(e), NULL, 0);
		e.t_ns = 460, e.event = 0xE1, e.stream = 7, e.correlation = 16, e.op = 1;
		put(&b, &e, sizeof(e), NULL, 0);
		e.t_ns = 470, e.stream = 8, e.correlation = 17, e.op = 2;
		put(&b, &e, sizeof(e), NULL, 0);
	}
	put_marker(&b, 1, 2, 2, 10);     /* forward 1 starts */
	put_marker(&b, 2, 2, 3, 20);     /* layer starts inside it */
	put_marker(&b, 2, 4, 0, 150);    /* layer ends */
	put_marker(&b, 1, 4, 0, 250);    /* forward 1 ends */
	put_marker(&b, 4, 2, 2, 260);    /* forward 2: launches 12, 13 and 15, the copy of 14 */
	put_marker(&b, 4, 4, 0, 5100);
	put_marker(&b, 3, 2, 2, 5200);   /* a forward that never ends */
	return b;
}

static struct buf make_spool(void)
{
	return make_spool_of(4242);
}

static sqlite3 *ingest(struct buf *b, const char *name, const struct kj_ingest_opts *opts,
		       struct kj_ingest_stats *st)
{
	char path[256], dbpath[256];
	sqlite3 *db = NULL;
	const char *form = launch_form >= 3 ? "same_" : launch_form ? "whole_" : "";
	snprintf(path, sizeof(path), "%s/%s%s.spool", dir, form, name);
	snprintf(dbpath, sizeof(dbpath), "%s/%s%s.kjdb", dir, form, name);
	write_buf(path, b);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	memset(st, 0, sizeof(*st));
	assert_int_equal(kj_ingest_file(db, path, opts, st), 0);
	return db;
}

/* EXPR (of unique_kernel u) for the unique kernel the launch with correlation id CORR belongs to */
static int64_t q_unique(sqlite3 *db, const char *expr, int corr)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT %s FROM unique_kernel u JOIN kernel k ON k.unique_id = u.id"
		 " WHERE k.correlation_id = %d", expr, corr);
	return q1(db, sql);
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
	nseen = 0; /* a new spool: no block sent yet */
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

/* --snapshot: buffers before and after launch 10, stored compressed; the snapshot's own
 * device-to-host copy (correlation 77) is not one of the program's copies */
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

/* The complete spool in the current launch form, as file NAME.spool: its ingest is refused. */
static void refused_spool(const char *name)
{
	struct buf b = make_spool();
	char path[256], dbpath[256];
	sqlite3 *db;
	snprintf(path, sizeof(path), "%s/%s.spool", dir, name);
	snprintf(dbpath, sizeof(dbpath), "%s/%s.kjdb", dir, name);
	write_buf(path, &b);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	assert_int_equal(kj_ingest_file(db, path, NULL, NULL), KJ_EINVAL);
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
	refused_spool("short_block");
	launch_form = 0;
}

/* Launches that name a block sent before by its hash (the tracer sends each distinct block of a
 * group once) give the same unique kernels and parameter blocks as whole blocks; a hash the spool
 * holds no block for is refused. */
static void test_blocks_by_hash(void **state)
{
	launch_form = 3;
	nsame = 0;
	test_complete_spool(state);
	test_recurring_sizes_and_counters(state);
	test_iteration_capture(state);
	assert_true(nsame >= 10); /* the form was used, not only whole blocks */

	/* a block other than the group's sent whole, then named: the named launch has its block */
	struct buf r = {NULL, 0};
	struct kj_ingest_stats st;
	struct kj_ingest_opts opts = {1, 0, NULL, NULL};
	const uint64_t ref[2] = {PTR1, 64}, other[] = {1, 128};
	int named = nsame;
	nseen = 0;
	put_start(&r, 77, 0, NULL, 0);
	put_string(&r, 1, "_Z8kj_scalePKfPfif");
	put_group(&r, 0xF, 8, 2, ref);
	for (uint32_t i = 0; i < 4; i++) { /* sizes 64, 128, 128, 64: all but the second named */
		put_launch(&r, 500 + i, 0xF, 100 + 10 * i, i == 1 || i == 2 ? 1 : 0, other);
		put_kernel(&r, 500 + i, 1000 + 100 * i, 1050 + 100 * i, 8, 0);
	}
	assert_int_equal(nsame - named, 3);
	sqlite3 *db1 = ingest(&r, "named", &opts, &st);
	assert_int_equal(q1(db1, "SELECT count(DISTINCT unique_id) FROM kernel WHERE correlation_id >= 500"), 2);
	assert_int_equal(q_unique(db1, "u.id", 502), q_unique(db1, "u.id", 501));
	assert_int_equal(q_unique(db1, "u.id", 503), q_unique(db1, "u.id", 500));
	assert_true(q_unique(db1, "u.id", 502) != q_unique(db1, "u.id", 500));
	kj_db_close(db1);
	free(r.p);
	launch_form = 4;
	refused_spool("unknown_hash");
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
	assert_int_equal(kj_ingest_file(db, path, NULL, NULL), KJ_EINVAL);
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

static void note_facts(const struct kj_cubin_fn *f, void *ud)
{
	struct kj_cubin_fn *out = ud; /* [0] k_req, [1] k_free */
	int i = !strcmp(f->name, "k_req") ? 0 : !strcmp(f->name, "k_free") ? 1 : -1;
	if (i >= 0) {
		out[i] = *f;
		out[i].name = "seen";
	}
}

/* A function compiled with .reqntid (Triton's) carries its one block shape; others carry none. */
static void test_cubin_reqntid(void **state)
{
	(void)state;
	size_t n;
	struct kj_cubin_fn f[2];
	memset(f, 0, sizeof(f));
	void *p = slurp("reqntid_sm90.cubin", &n);
	assert_int_equal(kj_cubin_function_facts(p, n, note_facts, f), 2);
	assert_string_equal(f[0].name, "seen");
	assert_string_equal(f[1].name, "seen");
	assert_int_equal(f[0].reqntid[0], 128);
	assert_int_equal(f[0].reqntid[1], 1);
	assert_int_equal(f[0].reqntid[2], 1);
	assert_int_equal(f[1].reqntid[0], 0);
	assert_true(f[0].regs > 0);
	assert_int_equal(f[0].param_bytes, 8);
	assert_int_equal(f[1].param_bytes, 12);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cubin_reqntid),
		cmocka_unit_test(test_complete_spool),
		cmocka_unit_test(test_recurring_sizes_and_counters),
		cmocka_unit_test(test_iteration_capture),
		cmocka_unit_test(test_iteration_one_process),
		cmocka_unit_test(test_snapshot_records),
		cmocka_unit_test(test_graph_edge_types),
		cmocka_unit_test(test_whole_blocks),
		cmocka_unit_test(test_blocks_by_hash),
		cmocka_unit_test(test_truncated_spool),
		cmocka_unit_test(test_not_a_spool),
		cmocka_unit_test(test_cubin_symbols),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
