/* Per-thread arrays kept out of the library's thread-local block (inject_thread.c). A small
 * thread-local block lets the loader place it in the static TLS that glibc keeps spare for
 * libraries opened later, where each access is one load instead of a call to __tls_get_addr. */
#ifndef KJ_INJECT_THREAD_H
#define KJ_INJECT_THREAD_H

#include <stddef.h>

/** A zeroed array of size bytes for the calling thread, stored in *owner (a thread-local
 *  pointer of the caller's). At the thread's exit *owner is set back to NULL and the array
 *  freed, so a launch made later on that thread (another exit handler's) allocates again.
 *  NULL when memory runs out: the caller then goes without its cache. */
void *kj_thread_calloc(void **owner, size_t size);

/** This thread's array at *owner, made by kj_thread_calloc at its first use (or after the thread's
 *  exit handlers freed it); NULL when memory runs out. */
static inline void *kj_thread_array(void **owner, size_t size)
{
	return *owner ? *owner : kj_thread_calloc(owner, size);
}

/** 1 if this library's thread-local block lies in the static TLS (one load an access), 0 if
 *  glibc placed it dynamically (a call an access), -1 if it cannot tell on this machine. */
int kj_thread_tls_static(void);

#endif
