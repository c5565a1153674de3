/* Unit tests that build a two-rank torchrun job by SQL include this (after cmocka.h). Times are
 * given in us from T0 (the database holds ns = T0 + us * US). The job: the launcher torchrun
 * (pid 100, no GPU work), rank 0 pid 101 on device 0, rank 1 pid 102 on device 1 (ranks_db_create),
 * their kernels (ranks_kernel) and 'step' ranges (ranks_step); then the job analysed (job_of) or
 * compared, text and JSON (compare_run, compare_done). */
#ifndef KJ_TEST_RANKS_FIXTURE_H
#define KJ_TEST_RANKS_FIXTURE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_ranks.h"

#include "sqlexec.h"

#define US 1000LL
#define T0 1000000000LL

/* A new run database at path (any old one removed) holding the three processes (the ranks'
 * ended_cleanly clean0 and clean1) and the two devices (0 'GPU-a' an NVIDIA H200, 1 'GPU-b' named
 * gpu1); the caller closes it. */
static inline sqlite3 *ranks_db_create(const char *path, int clean0, int clean1, const char *gpu1)
{
	sqlite3 *db = NULL;
	unlink(path);
	assert_int_equal(kj_db_create(path, &db), 0);
	exec(db, "INSERT INTO process(pid, exe, ended_cleanly) VALUES(100, 'torchrun', 1),"
		 " (101, 'python3', %d), (102, 'python3', %d)", clean0, clean1);
	exec(db, "INSERT INTO device(id, uuid, name) VALUES(0, 'GPU-a', 'NVIDIA H200'),"
		 " (1, 'GPU-b', '%s')", gpu1);
	return db;
}

/* A kernel of pid on device dev and stream, name_id name and unique_id uid, running [s, e) and
 * launched at launch (us from T0). */
static inline void ranks_kernel(sqlite3 *db, int pid, int dev, int stream, int name, int uid, int64_t s,
				int64_t e, int64_t launch)
{
	exec(db, "INSERT INTO kernel(pid, device_id, stream_id, start_ns, end_ns, name_id, unique_id,"
		 " launch_ns) VALUES(%d, %d, %d, %lld, %lld, %d, %d, %lld)",
	     pid, dev, stream, (long long)(T0 + s * US), (long long)(T0 + e * US), name, uid,
	     (long long)(T0 + launch * US));
}

/* A 'step' range of pid on its main thread (tid = pid) at depth, [o, o + len) us from T0. */
static inline void ranks_step(sqlite3 *db, int pid, int64_t o, int64_t len, int depth)
{
	exec(db, "INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES"
		 " (%d, %d, 'step', %lld, %lld, %d)",
	     pid, pid, (long long)(T0 + o * US), (long long)(T0 + (o + len) * US), depth);
}

/* The job found in the run at path (kj_job_analyze: its own region, default skip) into j; the
 * caller frees it with kj_job_free. */
static inline void job_of(const char *path, struct kj_job *j)
{
	sqlite3 *db = NULL;
	assert_int_equal(kj_db_open(path, 0, &db), 0);
	assert_int_equal(kj_job_analyze(db, NULL, -1, j), 0);
	kj_db_close(db);
}

/* compare over one run: the database, the comparison, its JSON and its text. */
struct compare_run {
	sqlite3 *db;
	struct kj_compare *c;
	json_t *js;
	char *text;
};

/* compare (default skip, top 5, quiet) over the run at path into r: JSON and text, the
 * text on stderr too when KJ_TEST_SHOW is set. All stays r's until compare_done(r). */
static inline void compare_run(const char *path, struct compare_run *r)
{
	struct kj_compare_opts o = {.skip = -1, .top = 5, .quiet = 1};
	size_t len = 0;
	r->db = NULL;
	r->c = NULL;
	r->text = NULL;
	assert_int_equal(kj_db_open(path, 0, &r->db), 0);
	assert_int_equal(kj_compare_compute(r->db, &o, &r->c), 0);
	r->js = kj_compare_json(r->c);
	FILE *f = open_memstream(&r->text, &len);
	kj_compare_print(r->c, f);
	fclose(f);
	if (getenv("KJ_TEST_SHOW"))
		fputs(r->text, stderr);
}

/* Frees all that compare_run put in r. */
static inline void compare_done(struct compare_run *r)
{
	free(r->text);
	json_decref(r->js);
	kj_compare_free(r->c);
	kj_db_close(r->db);
}

#endif
