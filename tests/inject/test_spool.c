/* The injection library's spool writer under load: four threads write records of many sizes,
 * some larger than a buffer, while the flush thread swaps the two buffers out; every record must
 * land whole, once, and each thread's in the order it wrote them. The same through the threads'
 * rings of launch records (inject_stage.c), with threads that exit and threads that take their
 * rings, and records larger than a ring. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "inject.h"

#define THREADS 4
#define WAVES 2 /* --stage: a second wave of threads takes the rings the first left */
#define PER_THREAD 30000
#define BIG (KJ_SPOOL_BUF_BYTES + KJ_SPOOL_BUF_BYTES / 2) /* larger than one spool buffer */
#define BIG_STAGED (KJ_STAGE_BYTES / 2 + 8)              /* larger than a ring takes */

struct test_rec {
	struct kj_rec_hdr h;
	uint32_t thread, seq;
};

struct writer_arg {
	uint32_t thread, first, count; /* records first .. first+count-1 of thread */
	int staged;
};

static void *writer(void *arg)
{
	const struct writer_arg *a = arg;
	uint32_t t = a->thread;
	unsigned char payload[4096];
	for (uint32_t i = a->first; i < a->first + a->count; i++) {
		struct test_rec r = {{0x7000 + t, 0}, t, i};
		size_t n = (i * 37u + t * 11u) % 1024; /* 0..1023 bytes of payload */
		if (t == 0 && i % 5000 == 4999)
			n = a->staged ? BIG_STAGED : BIG; /* now and then one record larger than a buffer */
		unsigned char *p = n > sizeof(payload) ? malloc(n) : payload;
		assert_non_null(p);
		memset(p, (int)((t * 31 + i) & 0xff), n);
		if (a->staged)
			kj_stage_write2(&r, sizeof(r), p, n);
		else
			kj_spool_write2(&r, sizeof(r), p, n);
		if (p != payload)
			free(p);
	}
	return NULL;
}

static void check_spool(const char *dir);

static void run_threads(int staged)
{
	char dir[] = "/tmp/kj_spool_test.XXXXXX";
	int waves = staged ? WAVES : 1;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(kj_spool_open(dir), 0);
	for (int w = 0; w < waves; w++) {
		pthread_t th[THREADS];
		struct writer_arg a[THREADS];
		for (uint32_t t = 0; t < THREADS; t++) {
			a[t] = (struct writer_arg){t, w * (PER_THREAD / waves), PER_THREAD / waves, staged};
			assert_int_equal(pthread_create(&th[t], NULL, writer, &a[t]), 0);
		}
		for (int t = 0; t < THREADS; t++)
			pthread_join(th[t], NULL);
	}
	kj_spool_close(1);
	check_spool(dir);
}

static void test_spool_threads(void **state)
{
	(void)state;
	run_threads(0);
}

static void test_stage_threads(void **state)
{
	(void)state;
	run_threads(1);
}

/* Every record whole, once, each thread's in order; one file header, one end. */
static void check_spool(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/p%ld.spool", dir, (long)getpid());
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	struct stat st;
	assert_int_equal(fstat(fileno(f), &st), 0);
	unsigned char *buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);

	uint32_t next[THREADS] = {0};
	int files = 0, ends = 0;
	size_t off = 0;
	while (off < (size_t)st.st_size) {
		struct kj_rec_hdr *h = (struct kj_rec_hdr *)(buf + off);
		assert_true(h->size >= sizeof(*h) && off + h->size <= (size_t)st.st_size);
		if (h->type == KJ_REC_FILE) {
			assert_int_equal(off, 0);
			files++;
		} else if (h->type == KJ_REC_END) {
			ends++;
		} else {
			struct test_rec *r = (struct test_rec *)h;
			assert_true(r->thread < THREADS && h->type == 0x7000 + r->thread);
			assert_int_equal(r->seq, next[r->thread]); /* whole, once, in order */
			next[r->thread]++;
			size_t n = h->size - sizeof(*r);
			unsigned char want = (unsigned char)((r->thread * 31 + r->seq) & 0xff);
			for (size_t k = 0; k < n; k++) /* the payload (and its padding) */
				assert_true(buf[off + sizeof(*r) + k] == want || k + 8 > n);
		}
		off += h->size;
	}
	assert_int_equal(files, 1);
	assert_int_equal(ends, 1);
	for (int t = 0; t < THREADS; t++)
		assert_int_equal(next[t], PER_THREAD);
	free(buf);
	unlink(path);
	rmdir(dir);
}

static size_t spool_size(const char *dir)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/p%ld.spool", dir, (long)getpid());
	assert_int_equal(stat(path, &st), 0);
	return (size_t)st.st_size;
}

/* A thread's ring reaches the file within the flush period though the thread writes nothing
 * more and lives on (a process killed then loses no more than without the rings). */
static void test_stage_flush_period(void **state)
{
	(void)state;
	char dir[] = "/tmp/kj_spool_test.XXXXXX", path[256];
	unsigned char payload[200] = {0};
	assert_non_null(mkdtemp(dir));
	assert_int_equal(kj_spool_open(dir), 0);
	for (uint32_t i = 0; i < 10; i++) {
		struct test_rec r = {{0x7000, 0}, 0, i};
		kj_stage_write2(&r, sizeof(r), payload, sizeof(payload));
	}
	usleep(350 * 1000);
	assert_int_equal(spool_size(dir),
			 sizeof(struct kj_rec_file) + 10 * (sizeof(struct test_rec) + sizeof(payload)));
	/* and what is left in a ring of a thread still alive reaches the file when the spool closes */
	for (uint32_t i = 10; i < 15; i++) {
		struct test_rec r = {{0x7000, 0}, 0, i};
		kj_stage_write2(&r, sizeof(r), payload, sizeof(payload));
	}
	kj_spool_close(1);
	assert_int_equal(spool_size(dir), sizeof(struct kj_rec_file) + sizeof(struct kj_rec_text) +
						  15 * (sizeof(struct test_rec) + sizeof(payload)));
	snprintf(path, sizeof(path), "%s/p%ld.spool", dir, (long)getpid());
	unlink(path);
	rmdir(dir);
}

/* A thread recording faster than the 100 ms flush period but slower than the disk never writes
 * the buffer out itself: the flush thread is woken when the buffer is half full. Four buffers'
 * worth go in over about half a second, 64 KiB a millisecond or two. */
static void test_flush_thread_keeps_up(void **state)
{
	(void)state;
	char dir[] = "/tmp/kj_spool_test.XXXXXX", path[256];
	static unsigned char payload[4096];
	struct stat st;
	size_t total = 0;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(kj_spool_open(dir), 0);
	for (uint32_t i = 0; total < 4 * (size_t)KJ_SPOOL_BUF_BYTES; i++) {
		struct test_rec r = {{0x7000, 0}, 0, i};
		kj_spool_write2(&r, sizeof(r), payload, sizeof(payload));
		total += sizeof(r) + sizeof(payload);
		if (i % 16 == 15)
			usleep(1500);
	}
	assert_int_equal(kj_spool_caller_writes(), 0);
	kj_spool_close(1);
	snprintf(path, sizeof(path), "%s/p%ld.spool", dir, (long)getpid());
	assert_int_equal(stat(path, &st), 0);
	assert_true((size_t)st.st_size > total);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_flush_thread_keeps_up),
					   cmocka_unit_test(test_spool_threads),
					   cmocka_unit_test(test_stage_threads),
					   cmocka_unit_test(test_stage_flush_period)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
