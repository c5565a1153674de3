/* inject_fncache.c: one driver query per handle until a module unload, then one more; facts of a
 * handle the driver gave to another function after an unload are not served from before it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "inject_fncache.h"
#include "inject_thread.h"

static int queries;
static uint32_t driver_layout[1 << 12]; /* what the "driver" says of each handle now (total bytes) */

static struct fninfo *fake_query(uintptr_t handle)
{
	struct fninfo *fi = calloc(1, sizeof(*fi));
	queries++;
	fi->handle = handle;
	fi->total = driver_layout[(handle >> 4) & 0xfff];
	return fi;
}

static void test_one_query_per_handle(void **state)
{
	(void)state;
	queries = 0;
	driver_layout[1] = 24;
	struct fninfo *a = kj_fncache_lookup(0x10, fake_query);
	assert_non_null(a);
	assert_int_equal(a->total, 24);
	assert_ptr_equal(kj_fncache_lookup(0x10, fake_query), a);
	assert_int_equal(queries, 1);
}

static void test_unload_rereads(void **state)
{
	(void)state;
	queries = 0;
	driver_layout[2] = 24; /* an autotuning candidate: three pointers */
	struct fninfo *before = kj_fncache_lookup(0x20, fake_query);
	assert_int_equal(before->total, 24);
	/* its module is unloaded; the chosen function (three 128-byte TMA descriptors) gets the handle */
	kj_fncache_invalidate();
	driver_layout[2] = 432;
	struct fninfo *after = kj_fncache_lookup(0x20, fake_query);
	assert_int_equal(after->total, 432);
	assert_int_equal(queries, 2);
	assert_int_equal(before->total, 24); /* the old facts stay readable for whoever held them */
	assert_ptr_equal(kj_fncache_lookup(0x20, fake_query), after);
	assert_int_equal(queries, 2);
}

static void test_many_handles(void **state)
{
	(void)state;
	queries = 0;
	for (uintptr_t h = 1; h <= 10000; h++) /* past the first table size and the per-thread cache */
		assert_int_equal(kj_fncache_lookup(h << 8, fake_query)->handle, h << 8);
	for (uintptr_t h = 1; h <= 10000; h++)
		assert_int_equal(kj_fncache_lookup(h << 8, fake_query)->handle, h << 8);
	assert_int_equal(queries, 10000);
}

static struct fninfo *thread_found;
static void *thread_lookup(void *arg)
{
	thread_found = kj_fncache_lookup((uintptr_t)arg, fake_query);
	thread_found = kj_fncache_lookup((uintptr_t)arg, fake_query); /* its own cache now */
	return NULL;
}

/* each thread's cache goes with the thread; the facts stay in the shared table for the others */
static void test_thread_cache_freed_at_exit(void **state)
{
	(void)state;
	pthread_t t;
	queries = 0;
	driver_layout[3] = 40;
	for (int round = 0; round < 3; round++) { /* a new thread each round: a new cache */
		assert_int_equal(pthread_create(&t, NULL, thread_lookup, (void *)(uintptr_t)0x30), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_non_null(thread_found);
		assert_int_equal(thread_found->total, 40);
	}
	assert_int_equal(queries, 1);
	assert_int_equal(kj_fncache_lookup(0x30, fake_query)->total, 40);
	assert_int_equal(queries, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_query_per_handle),
		cmocka_unit_test(test_unload_rereads),
		cmocka_unit_test(test_many_handles),
		cmocka_unit_test(test_thread_cache_freed_at_exit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
