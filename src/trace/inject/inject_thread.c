/* Per-thread arrays on the heap, freed at thread exit (inject_thread.h). */
#include "inject_thread.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

struct block {
	struct block *next;
	void **owner;
	_Alignas(16) unsigned char data[];
};

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int key_ok;

/* at thread exit: each owner pointer cleared before its array goes */
static void free_blocks(void *head)
{
	for (struct block *b = head, *next; b; b = next) {
		next = b->next;
		*b->owner = NULL;
		free(b);
	}
}

static void make_key(void)
{
	key_ok = pthread_key_create(&key, free_blocks) == 0;
}

void *kj_thread_calloc(void **owner, size_t size)
{
	pthread_once(&key_once, make_key);
	if (!key_ok)
		return NULL;
	struct block *b = calloc(1, sizeof(*b) + size);
	if (!b)
		return NULL;
	b->owner = owner;
	b->next = pthread_getspecific(key);
	if (pthread_setspecific(key, b) != 0) {
		free(b);
		return NULL;
	}
	*owner = b->data;
	return b->data;
}

static __thread int tl_probe;

int kj_thread_tls_static(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	/* x86-64 keeps static TLS just below the thread pointer (the TCB), within the few KiB the
	 * loader reserved at start; a dynamic block is malloc'd elsewhere at first use */
	uintptr_t tp, v = (uintptr_t)&tl_probe;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return v < tp && tp - v < ((uintptr_t)64 << 10);
#else
	return -1;
#endif
}
