/* Unit tests that ingest one whole synthetic process include this (after cmocka.h and
 * spool_fixture.h's own needs): its records written by hand (put_kernel, put_launch, put_group,
 * put_marker; launch_form picks how put_launch writes a launch's parameters), the process's whole
 * spool (make_spool_of, make_spool), a spool ingested into a new database under `dir` (ingest),
 * and two queries (q_unique, qtext). The test includes kj_db.h, kj_ingest.h and kj_spool.h itself
 * (tests/CMakeLists.txt links a test to the floors its own includes name). */
#ifndef KJ_TEST_PROCESS_SPOOL_FIXTURE_H
#define KJ_TEST_PROCESS_SPOOL_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kj_db.h"
#include "kj_ingest.h"
#include "kj_spool.h"

#include "spool_fixture.h"

static inline void put_kernel(struct buf *b, uint32_t corr, int64_t start, int64_t end, int grid, uint64_t node)
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
 * 1 the launch's whole block (as the tracer writes it now), 2 a whole block one word short. */
static int launch_form;

/* the reference blocks put_group wrote, for the whole blocks put_launch builds */
static struct {
	uint64_t group;
	int nwords;
	uint64_t ref[16];
} refs[8];

/* a launch of group g; diffs: pairs (word, value) */
static inline void put_launch(struct buf *b, uint32_t corr, uint64_t g, int64_t t, int ndiff, const uint64_t *diffs)
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
static inline void put_group(struct buf *b, uint64_t g, int grid, int nwords, const uint64_t *ref)
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
	/* header with its layout, then the block: sizes computed like the injection library does */
	size_t head = sizeof(r.g) + (size_t)nwords * 2 * sizeof(uint32_t);
	unsigned char tmp[512];
	memcpy(tmp, &r, head);
	memcpy(tmp + head, ref, (size_t)nwords * 8);
	put(b, tmp, head + (size_t)nwords * 8, NULL, 0);
}

#define PTR1 0x7f0000000100ULL
#define PTR2 0x7f0000080000ULL


/* A whole process's spool. Group A (kj_scale, grid 4096) has four parameter words: a device
 * pointer, a size, a junk word (stack garbage) and a constant; launches 10 and 11 differ only in
 * pointer and junk (one unique kernel), launch 12 in its size (another). Group B (grid 2048):
 * launch 13, and launch 14 captured into graph node 70, whose clone 80 runs. Kernel 99 has no
 * launch record and is keyed by its geometry. */
static inline struct buf make_spool_of(int64_t pid)
{
	struct buf b = {NULL, 0};
	struct kj_rec_device d;
	const char text[] = "/usr/bin/python3\0python3\0infer.py\0";
	const uint64_t ref_a[4] = {PTR1, 5, 0x7ffd00000001ULL, 9};
	const uint64_t ref_b[1] = {3};
	const uint64_t d11[] = {0, PTR2, 2, 0x7ffd00000002ULL};
	const uint64_t d12[] = {1, 7, 2, 0x7ffd00000003ULL};
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

static inline struct buf make_spool(void)
{
	return make_spool_of(4242);
}

static inline sqlite3 *ingest(struct buf *b, const char *name, const struct kj_ingest_opts *opts,
			      struct kj_ingest_stats *st)
{
	char path[256], dbpath[256];
	sqlite3 *db = NULL;
	const char *form = launch_form ? "whole_" : "";
	snprintf(path, sizeof(path), "%s/%s%s.spool", dir, form, name);
	snprintf(dbpath, sizeof(dbpath), "%s/%s%s.kjdb", dir, form, name);
	write_buf(path, b);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	memset(st, 0, sizeof(*st));
	assert_int_equal(kj_ingest_file(db, path, opts, st), 0);
	return db;
}

/* EXPR (of unique_kernel u) for the unique kernel the launch with correlation id CORR belongs to */
static inline int64_t q_unique(sqlite3 *db, const char *expr, int corr)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT %s FROM unique_kernel u JOIN kernel k ON k.unique_id = u.id"
		 " WHERE k.correlation_id = %d", expr, corr);
	return q1(db, sql);
}

static inline const char *qtext(sqlite3 *db, const char *sql, char *out, size_t len)
{
	sqlite3_stmt *s;
	out[0] = '\0';
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return out;
}

#endif
