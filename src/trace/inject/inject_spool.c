/* Spool writer: one buffered, append-only file per process. A flush thread writes the buffer
 * out every 100 ms, so a killed process loses at most that much, and as soon as it is half full,
 * so the program's threads do not wait for a write unless the disk falls a whole buffer behind.
 * Two buffers: the one written out is swapped out under the records' lock and written under the
 * file's, so threads recording meanwhile fill the other one instead of waiting for the write. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;  /* buf, used, kicked */
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER; /* the file, the buffer out */
static pthread_cond_t kick = PTHREAD_COND_INITIALIZER;    /* the flush thread: half full */
static int fd = -1;
static unsigned char *bufs[2], *buf; /* buf: the one records go into */
static size_t used;
static int kicked; /* the flush thread was woken for this buffer */
static uint64_t caller_writes;
static pthread_t flusher;
static volatile int stopping;
static int write_failed;
static unsigned char *tail_hint; /* buf + used as last left, read without the lock to warm it */

/* With lock held, after buf or used changed. */
static void note_tail(void)
{
	__atomic_store_n(&tail_hint, buf + used, __ATOMIC_RELAXED);
}

/* A hint that the line at p will be written soon: the write needs it in this core's cache, and
 * asking now lets the fetch overlap other work instead of waiting at the write. */
static inline void warm_for_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

KJ_HOT void kj_spool_warm_tail(void)
{
	const unsigned char *p = __atomic_load_n(&tail_hint, __ATOMIC_RELAXED);
	warm_for_write(&lock);
	warm_for_write(&used);
	if (p) {
		warm_for_write(p);
		warm_for_write((const void *)((uintptr_t)p + 64)); /* may lie past the buffer: a hint */
	}
}

KJ_HOT int64_t kj_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void write_all(const void *p, size_t n)
{
	const unsigned char *c = p;
	while (n && !write_failed) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			write_failed = 1;
			fprintf(stderr, "kjoule: trace file write failed (%s): tracing stops here\n",
				strerror(errno));
			return;
		}
		c += w;
		n -= (size_t)w;
	}
}

/* Called with lock held; returns with it released and wlock held: the records so far are
 * swapped out and written, in the order of the calls (the next caller waits for wlock). */
static void swap_out_unlock(void)
{
	pthread_mutex_lock(&wlock);
	unsigned char *out = buf;
	size_t n = used;
	buf = buf == bufs[0] ? bufs[1] : bufs[0];
	used = 0;
	note_tail();
	pthread_mutex_unlock(&lock);
	if (n && fd >= 0)
		write_all(out, n);
}

/* with lock held: write everything out, lock held again after (wlock is released before lock
 * is taken again: the order is always lock, then wlock) */
static void flush_locked(void)
{
	swap_out_unlock();
	pthread_mutex_unlock(&wlock);
	pthread_mutex_lock(&lock);
}

/* With lock held, after a record went in: wake the flush thread once the buffer is half full. */
static void kick_if_half(void)
{
	if (!kicked && used >= KJ_SPOOL_BUF_BYTES / 2) {
		kicked = 1;
		pthread_cond_signal(&kick);
	}
}

static unsigned opened; /* kj_spool_open's count: a flush thread of an earlier open stops */

static void *flush_loop(void *arg)
{
	unsigned mine = (unsigned)(uintptr_t)arg;
	pthread_mutex_lock(&lock);
	while (!stopping && mine == opened) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L)
			until.tv_sec++, until.tv_nsec -= 1000000000L;
		while (!kicked && !stopping && pthread_cond_timedwait(&kick, &lock, &until) == 0)
			;
		kicked = 0;
		if (stopping || !used)
			continue;
		swap_out_unlock();
		pthread_mutex_unlock(&wlock);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int kj_spool_open(const char *dir)
{
	char path[4096];
	struct kj_rec_file f;
	snprintf(path, sizeof(path), "%s/p%ld.spool", dir, (long)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
	if (fd < 0) {
		fprintf(stderr, "kjoule: cannot create %s: %s: this process is not traced\n", path,
			strerror(errno));
		return -1;
	}
	bufs[0] = malloc(KJ_SPOOL_BUF_BYTES);
	bufs[1] = malloc(KJ_SPOOL_BUF_BYTES);
	if (!bufs[0] || !bufs[1]) {
		free(bufs[0]);
		free(bufs[1]);
		close(fd);
		fd = -1;
		return -1;
	}
	pthread_mutex_lock(&lock);
	buf = bufs[0];
	used = 0, kicked = 0, caller_writes = 0, stopping = 0, write_failed = 0;
	note_tail();
	opened++;
	pthread_mutex_unlock(&lock);
	memset(&f, 0, sizeof(f));
	f.h.type = KJ_REC_FILE;
	f.h.size = sizeof(f);
	f.magic = KJ_SPOOL_MAGIC;
	f.version = KJ_SPOOL_VERSION;
	kj_spool_write(&f, sizeof(f));
	if (pthread_create(&flusher, NULL, flush_loop, (void *)(uintptr_t)opened) == 0)
		pthread_detach(flusher);
	return 0;
}

/* With lock held: room for n bytes in the buffer, the records before them written out. Returns 0
 * with lock held, or 1 with wlock held instead when n is larger than a buffer: the caller writes
 * the record straight to the file, after the ones before it, and releases wlock. */
static int make_room(size_t n)
{
	while (fd >= 0 && used + n > KJ_SPOOL_BUF_BYTES) {
		caller_writes++;
		swap_out_unlock();
		if (n > KJ_SPOOL_BUF_BYTES)
			return 1;
		pthread_mutex_unlock(&wlock);
		pthread_mutex_lock(&lock);
	}
	return 0;
}

void kj_spool_write(const void *rec, size_t size)
{
	pthread_mutex_lock(&lock);
	if (make_room(size)) {
		write_all(rec, size);
		pthread_mutex_unlock(&wlock);
		return;
	}
	if (fd >= 0) {
		memcpy(buf + used, rec, size);
		used += size;
		note_tail();
		kick_if_half();
	}
	pthread_mutex_unlock(&lock);
}

KJ_HOT void kj_spool_write2(void *head, size_t head_size, const void *payload, size_t payload_size)
{
	static const unsigned char zeros[8];
	size_t total = KJ_REC_ALIGN(head_size + payload_size);
	struct kj_rec_hdr *h = head;
	h->size = (uint32_t)total;
	pthread_mutex_lock(&lock);
	if (make_room(total)) {
		write_all(head, head_size);
		write_all(payload, payload_size);
		write_all(zeros, total - head_size - payload_size);
		pthread_mutex_unlock(&wlock);
		return;
	}
	if (fd >= 0) {
		memcpy(buf + used, head, head_size);
		memcpy(buf + used + head_size, payload, payload_size);
		memset(buf + used + head_size + payload_size, 0, total - head_size - payload_size);
		used += total;
		note_tail();
		kick_if_half();
	}
	pthread_mutex_unlock(&lock);
}

void kj_spool_flush(void)
{
	pthread_mutex_lock(&lock);
	flush_locked();
	pthread_mutex_unlock(&lock);
}

void kj_spool_close(int clean)
{
	struct kj_rec_text end;
	if (fd < 0)
		return;
	if (clean) {
		memset(&end, 0, sizeof(end));
		end.h.type = KJ_REC_END;
		end.h.size = sizeof(end);
		end.t_ns = kj_now_ns();
		kj_spool_write(&end, sizeof(end));
	}
	stopping = 1;
	pthread_mutex_lock(&lock);
	pthread_cond_signal(&kick);
	flush_locked();
	pthread_mutex_lock(&wlock); /* the flush thread may be writing a buffer it swapped out */
	if (used)
		write_all(buf, used);
	used = 0;
	__atomic_store_n(&tail_hint, NULL, __ATOMIC_RELAXED);
	close(fd);
	fd = -1;
	pthread_mutex_unlock(&wlock);
	pthread_mutex_unlock(&lock);
}

/* String interning: open-addressing table keyed by content hash. */
struct str_slot {
	uint64_t hash;
	char *text;
	uint32_t id;
};
static struct str_slot *strs;
static size_t str_cap, str_n;
static pthread_mutex_t str_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h | 1;
}

static int str_grow(void)
{
	size_t ncap = str_cap ? str_cap * 2 : 1024;
	struct str_slot *n = calloc(ncap, sizeof(*n));
	if (!n)
		return -1;
	for (size_t i = 0; i < str_cap; i++) {
		if (!strs[i].hash)
			continue;
		size_t j = strs[i].hash & (ncap - 1);
		while (n[j].hash)
			j = (j + 1) & (ncap - 1);
		n[j] = strs[i];
	}
	free(strs);
	strs = n;
	str_cap = ncap;
	return 0;
}

uint32_t kj_spool_string(const char *s)
{
	uint64_t h;
	size_t i;
	uint32_t id = 0;
	if (!s)
		s = "";
	h = fnv1a(s);
	pthread_mutex_lock(&str_lock);
	if ((str_n + 1) * 2 > str_cap && str_grow() != 0)
		goto out;
	for (i = h & (str_cap - 1); strs[i].hash; i = (i + 1) & (str_cap - 1))
		if (strs[i].hash == h && !strcmp(strs[i].text, s)) {
			id = strs[i].id;
			goto out;
		}
	strs[i].hash = h;
	strs[i].text = strdup(s);
	strs[i].id = id = (uint32_t)++str_n;
	{
		struct kj_rec_string r;
		memset(&r, 0, sizeof(r));
		r.h.type = KJ_REC_STRING;
		r.id = id;
		r.len = (uint32_t)strlen(s);
		kj_spool_write2(&r, sizeof(r), s, r.len);
	}
out:
	pthread_mutex_unlock(&str_lock);
	return id;
}

void kj_spool_problem(const char *fmt, ...)
{
	char text[1024];
	struct kj_rec_text r;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(stderr, "kjoule: %s\n", text);
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_PROBLEM;
	r.t_ns = kj_now_ns();
	r.len = (uint32_t)strlen(text);
	kj_spool_write2(&r, sizeof(r), text, r.len);
}

uint64_t kj_spool_caller_writes(void)
{
	pthread_mutex_lock(&lock);
	uint64_t n = caller_writes;
	pthread_mutex_unlock(&lock);
	return n;
}

void kj_spool_abandon(void)
{
	/* in a child forked without exec: the buffer holds the parent's records, the descriptor is
	 * the parent's file; drop both without writing anything */
	used = 0;
	stopping = 1;
	if (fd >= 0)
		close(fd);
	fd = -1;
}
