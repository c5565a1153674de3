/* The injection library's spool writer under load: four threads write records of many sizes,
 * some larger than a buffer, while the flush thread swaps the two buffers out; every record must
 * land whole, once, each thread's in the order it wrote them, its padding zero. Each asks for the
 * buffer's tail first, as a launch does, and so does the test before the spool is open and after
 * it is closed: the hint never reads what it points at. */
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
#define PER_THREAD 30000
#define BIG (KJ_SPOOL_BUF_BYTES + KJ_SPOOL_BUF_BYTES / 2) /* larger than one spool buffer */

struct test_rec {
	struct kj_rec_hdr h;
	uint32_t thread, seq;
};

/* The payload bytes of thread t's i-th record: 0..1023, now and then one larger than a buffer. */
static size_t payload_bytes(uint32_t t, uint32_t i)
{
	return t == 0 && i % 5000 == 4999 ? BIG : (i * 37u + t * 11u) % 1024;
}

static void *writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	unsigned char payload[4096];
	for (uint32_t i = 0; i < PER_THREAD; i++) {
		struct test_rec r = {{0x7000 + t, 0}, t, i};
		size_t n = payload_bytes(t, i);
		unsigned char *p = n > sizeof(payload) ? malloc(n) : payload;
		assert_non_null(p);
		memset(p, (int)((t * 31 + i) & 0xff), n);
		kj_spool_warm_tail(); /* as a launch does first, while others write and buffers swap */
		kj_spool_write2(&r, sizeof(r), p, n);
		if (p != payload)
			free(p);
	}
	return NULL;
}

static void test_spool_threads(void **state)
{
	(void)state;
	char dir[] = "/tmp/kj_spool_test.XXXXXX", path[256];
	assert_non_null(mkdtemp(dir));
	kj_spool_warm_tail(); /* before any spool: a hint of nothing */
	assert_int_equal(kj_spool_open(dir), 0);
	pthread_t th[THREADS];
	for (uintptr_t t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, writer, (void *)t), 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	kj_spool_close(1);
	kj_spool_warm_tail(); /* and after it */

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
			size_t room = h->size - sizeof(*r), n = payload_bytes(r->thread, r->seq);
			unsigned char want = (unsigned char)((r->thread * 31 + r->seq) & 0xff);
			assert_int_equal(room, KJ_REC_ALIGN(sizeof(*r) + n) - sizeof(*r));
			for (size_t k = 0; k < room && k < 1100; k++) /* the payload, then zeros */
				assert_true(buf[off + sizeof(*r) + k] == (k < n ? want : 0));
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
					   cmocka_unit_test(test_spool_threads)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
