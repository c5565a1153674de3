/* inject_thread.c: per-thread arrays zeroed, freed at thread exit with their owner pointers
 * cleared (also one taken again by a later exit handler), and the check of where the loader put a
 * library's thread-local block, on a small and a large one opened with dlopen. */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "inject_thread.h"

static void *owner_a, *owner_b, *late_owner;
static int zeroed, late_got;

static void *two_arrays(void *arg)
{
	(void)arg;
	unsigned char *a = kj_thread_calloc(&owner_a, 1000), *b = kj_thread_calloc(&owner_b, 24);
	zeroed = a && b && a == owner_a && b == owner_b;
	for (int i = 0; zeroed && i < 1000; i++)
		zeroed = a[i] == 0;
	if (a && b) {
		memset(a, 0xab, 1000);
		memset(b, 0xcd, 24);
	}
	return NULL;
}

static void test_arrays_freed_at_exit(void **state)
{
	(void)state;
	pthread_t t;
	owner_a = owner_b = NULL;
	assert_int_equal(pthread_create(&t, NULL, two_arrays, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(zeroed);
	assert_null(owner_a); /* cleared before the array went */
	assert_null(owner_b);
}

/* another exit handler that still launches: it gets a new array, freed in the next round */
static pthread_key_t late_key;
static void late_destructor(void *v)
{
	(void)v;
	late_got = kj_thread_calloc(&late_owner, 64) != NULL;
}

static void *uses_late(void *arg)
{
	(void)arg;
	kj_thread_calloc(&owner_a, 8); /* the library's key exists before the late one */
	pthread_setspecific(late_key, (void *)1);
	return NULL;
}

static void test_array_taken_again_in_exit_handler(void **state)
{
	(void)state;
	pthread_t t;
	late_owner = NULL;
	late_got = 0;
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	assert_int_equal(pthread_create(&t, NULL, uses_late, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(late_got);
	assert_null(late_owner);
	assert_null(owner_a);
	pthread_key_delete(late_key);
}

static void test_program_tls_is_static(void **state)
{
	(void)state;
#if defined(__x86_64__)
	assert_int_equal(kj_thread_tls_static(), 1); /* a program's own TLS always is */
#else
	assert_int_equal(kj_thread_tls_static(), -1);
#endif
}

/* the premise of building the injection library with TLS descriptors and a small block: a library
 * opened later gets static TLS when its block is small, dynamic TLS when it is large */
#if defined(KJ_TLS_MODULE_SMALL) && defined(__x86_64__)
static int module_static(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen %s: %s", path, dlerror());
	int (*f)(void) = (int (*)(void))dlsym(h, "tls_module_static");
	assert_non_null(f);
	return f();
}
#endif

static void test_opened_library_tls(void **state)
{
	(void)state;
#if defined(KJ_TLS_MODULE_SMALL) && defined(__x86_64__)
	assert_int_equal(module_static(KJ_TLS_MODULE_SMALL), 1);
	assert_int_equal(module_static(KJ_TLS_MODULE_LARGE), 0);
#elif defined(KJ_TLS_GNU2) && defined(__x86_64__)
	fail_msg("built with TLS descriptors, but the two libraries to open were not named");
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arrays_freed_at_exit),
		cmocka_unit_test(test_array_taken_again_in_exit_handler),
		cmocka_unit_test(test_program_tls_is_static),
		cmocka_unit_test(test_opened_library_tls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
