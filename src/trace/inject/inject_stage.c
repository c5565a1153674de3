/* Per-thread staging of launch records. Appending a launch record straight to the shared spool
 * buffer cost the launching thread a lock, an unlock whose barrier waited for the stores before
 * it, and lines of a 4 MiB buffer that were cold. Here each launching thread appends to a ring of
 * its own: the lines stay in its core's cache, and an append is two copies and one release store,
 * with no lock and no atomic read-modify-write. The ring is moved into the spool in bulk:
 *  - by its thread, when a record does not fit;
 *  - by the spool's flush thread every period (so a killed process loses no more than before);
 *  - before the activity records of a CUPTI buffer are written (kj_activity), so that a launch's
 *    record still comes before its kernel's, as the ingest expects;
 *  - when the thread exits, and when the spool closes.
 * One thread writes a ring and one drainer at a time (the ring's lock) reads it; its thread
 * publishes what it wrote by storing head, a drainer what it took by storing tail. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

struct kj_stage {
	_Alignas(64) uint64_t head; /* bytes ever appended (its thread's line) */
	_Alignas(64) uint64_t tail; /* bytes ever moved to the spool */
	pthread_mutex_t drain;      /* one drainer at a time */
	int spare;                  /* its thread exited: the next new thread takes it */
	struct kj_stage *next;
	_Alignas(64) unsigned char ring[KJ_STAGE_BYTES];
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER; /* the list, spare */
static struct kj_stage *stages;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;
static volatile int abandoned;
static __thread struct kj_stage *tl_stage;

/* Move what the ring holds to the spool. */
static void drain(struct kj_stage *s)
{
	pthread_mutex_lock(&s->drain);
	uint64_t t = s->tail, h = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
	if (h != t) {
		size_t off = (size_t)(t & (KJ_STAGE_BYTES - 1)), n = (size_t)(h - t);
		size_t first = n < KJ_STAGE_BYTES - off ? n : KJ_STAGE_BYTES - off;
		kj_spool_write_raw(s->ring + off, first, s->ring, n - first);
		__atomic_store_n(&s->tail, h, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->drain);
}

static void at_thread_exit(void *p)
{
	struct kj_stage *s = p;
	drain(s);
	pthread_mutex_lock(&reg_lock);
	s->spare = 1;
	pthread_mutex_unlock(&reg_lock);
	tl_stage = NULL;
}

static void make_key(void)
{
	key_ok = pthread_key_create(&exit_key, at_thread_exit) == 0;
}

/* This thread's ring: a spare one, or a new one. NULL when none can be had. */
static struct kj_stage *claim(void)
{
	struct kj_stage *s;
	pthread_once(&key_once, make_key);
	if (!key_ok)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (s = stages; s && !s->spare; s = s->next)
		;
	if (s) {
		s->spare = 0;
	} else if ((s = aligned_alloc(64, sizeof(*s))) != NULL) {
		s->head = s->tail = 0;
		s->spare = 0;
		pthread_mutex_init(&s->drain, NULL);
		s->next = stages;
		stages = s;
	}
	pthread_mutex_unlock(&reg_lock);
	if (s && pthread_setspecific(exit_key, s) != 0) {
		pthread_mutex_lock(&reg_lock);
		s->spare = 1;
		pthread_mutex_unlock(&reg_lock);
		return NULL;
	}
	return tl_stage = s;
}

/* Copy n bytes to the ring at byte count at, wrapping round. */
static void put(struct kj_stage *s, uint64_t at, const void *p, size_t n)
{
	size_t off = (size_t)(at & (KJ_STAGE_BYTES - 1));
	size_t first = n < KJ_STAGE_BYTES - off ? n : KJ_STAGE_BYTES - off;
	memcpy(s->ring + off, p, first);
	memcpy(s->ring, (const unsigned char *)p + first, n - first);
}

void kj_stage_write2(void *head, size_t head_size, const void *payload, size_t payload_size)
{
	static const unsigned char zeros[8];
	size_t total = KJ_REC_ALIGN(head_size + payload_size);
	struct kj_stage *s = tl_stage;
	if (abandoned)
		return;
	if (!s)
		s = claim();
	if (!s || total > KJ_STAGE_BYTES / 2) {
		if (s)
			drain(s); /* this thread's earlier records first */
		kj_spool_write2(head, head_size, payload, payload_size);
		return;
	}
	((struct kj_rec_hdr *)head)->size = (uint32_t)total;
	uint64_t at = s->head;
	if (at + total - __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) > KJ_STAGE_BYTES)
		drain(s);
	put(s, at, head, head_size);
	put(s, at + head_size, payload, payload_size);
	put(s, at + head_size + payload_size, zeros, total - head_size - payload_size);
	__atomic_store_n(&s->head, at + total, __ATOMIC_RELEASE);
}

void kj_stage_drain_all(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct kj_stage *s = stages; s; s = s->next)
		drain(s);
	pthread_mutex_unlock(&reg_lock);
}

void kj_stage_abandon(void)
{
	abandoned = 1;
}
