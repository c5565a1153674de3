/* Unit tests that ingest hand-written spools include this (after cmocka.h): the records every
 * spool starts and ends with (put_start, put_end), NVTX markers (put_marker), a buffer written
 * whole to a file (write_buf), and for a job's folder under `dir` (tmpdir.h): the folder made
 * (mkdir_sub), a one-kernel spool of a process (write_spool), a text file beside it (write_beside)
 * and the folder ingested into a new database (ingest_sub). Each fails the test when a step does
 * not succeed. */
#ifndef KJ_TEST_SPOOL_FIXTURE_H
#define KJ_TEST_SPOOL_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kj_db.h"
#include "kj_ingest.h"
#include "kj_spool.h"

#include "spoolbuf.h"
#include "tmpdir.h"

/* The start of every spool: the file record, then the process (pid, ppid, its text block:
 * exe NUL argv words NUL-separated). */
static inline void put_start(struct buf *b, uint32_t pid, uint32_t ppid, const char *text, uint32_t text_len)
{
	struct kj_rec_file f = {{KJ_REC_FILE, 0}, KJ_SPOOL_MAGIC, KJ_SPOOL_VERSION, 0};
	struct kj_rec_process p;
	put(b, &f, sizeof(f), NULL, 0);
	memset(&p, 0, sizeof(p));
	p.h.type = KJ_REC_PROCESS;
	p.pid = pid;
	p.ppid = ppid;
	p.text_len = text_len;
	put(b, &p, sizeof(p), text, text_len);
}

/* The record of a trace closed cleanly at t_ns. */
static inline void put_end(struct buf *b, int64_t t_ns)
{
	struct kj_rec_text e;
	memset(&e, 0, sizeof(e));
	e.h.type = KJ_REC_END;
	e.t_ns = t_ns;
	put(b, &e, sizeof(e), NULL, 0);
}

/* An NVTX marker of thread 42: flags 2 opens range `id` named by string `name`, 4 closes it. */
static inline void put_marker(struct buf *b, uint32_t id, uint32_t flags, uint32_t name, int64_t t)
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

/* b's bytes into a new file at path (the buffer stays the caller's). */
static inline void write_buf(const char *path, const struct buf *b)
{
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(b->p, 1, b->n, fp), b->n);
	fclose(fp);
}

/* The folder dir/sub, made. */
static inline void mkdir_sub(const char *sub)
{
	char d[400];
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	assert_int_equal(mkdir(d, 0700), 0);
}

/* dir/sub/p<pid>.spool: process pid (ppid 1, text of tlen bytes), string 1 = kernel, one kernel
 * [100, 200) ns of correlation 5, grid and block 1; closed at 300 ns when end. */
static inline void write_spool(const char *sub, int pid, const char *text, size_t tlen, const char *kernel,
			       int end)
{
	char path[400];
	struct buf b = {0};
	struct kj_rec_kernel k;
	put_start(&b, (uint32_t)pid, 1, text, (uint32_t)tlen);
	put_string(&b, 1, kernel);
	memset(&k, 0, sizeof(k));
	k.h.type = KJ_REC_KERNEL;
	k.start_ns = 100;
	k.end_ns = 200;
	k.name_id = 1;
	k.correlation = 5;
	k.grid[0] = k.block[0] = 1;
	put(&b, &k, sizeof(k), NULL, 0);
	if (end)
		put_end(&b, 300);
	snprintf(path, sizeof(path), "%s/%s/p%d.spool", dir, sub, pid);
	write_buf(path, &b);
	free(b.p);
}

/* dir/sub/p<pid><suffix> (a record the tracer leaves beside a spool, kj_spool.h) holding text. */
static inline void write_beside(const char *sub, int pid, const char *suffix, const char *text)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s/p%d%s", dir, sub, pid, suffix);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* The folder dir/sub ingested (opts and st as kj_ingest_dir takes them, st zeroed first) into a
 * new database dir/sub.kjdb; the caller closes it. */
static inline sqlite3 *ingest_sub(const char *sub, const struct kj_ingest_opts *opts, struct kj_ingest_stats *st)
{
	char d[400], dbpath[400];
	sqlite3 *db = NULL;
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	snprintf(dbpath, sizeof(dbpath), "%s/%s.kjdb", dir, sub);
	assert_int_equal(kj_db_create(dbpath, &db), 0);
	if (st)
		memset(st, 0, sizeof(*st));
	assert_int_equal(kj_ingest_dir(db, d, opts, st), 0);
	return db;
}

#endif
