/* A library opened by test_thread: inject_thread.c with TLS_PAD_BYTES of thread-local data of
 * its own, built with TLS descriptors as the injection library is. */
#include <stdint.h>

#include "inject_thread.h"

static __thread unsigned char tl_pad[TLS_PAD_BYTES];

/* 1 if the block is in static TLS, as kj_thread_tls_static says; the pad is touched so it stays */
__attribute__((visibility("default"))) int tls_module_static(void)
{
	tl_pad[0]++;
	return kj_thread_tls_static();
}
