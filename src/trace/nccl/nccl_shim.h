/* libkjoule_nccl.so's private interface: NCCL's few public types as plain C (no NCCL header), the
 * real functions found behind the wrappers, and the per-process call file (kj_spool.h,
 * KJ_NCCL_HEADER). Everything here is hidden; only the wrappers of nccl_api.c are exported. */
#ifndef KJ_NCCL_SHIM_H
#define KJ_NCCL_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* NCCL's public types as its ABI has them: enums (int) and opaque pointers. */
typedef int kj_nccl_result;   /* ncclResult_t */
typedef int kj_nccl_datatype; /* ncclDataType_t */
typedef int kj_nccl_redop;    /* ncclRedOp_t */
typedef void *kj_nccl_comm;   /* ncclComm_t */
typedef void *kj_cuda_stream; /* cudaStream_t */

#define KJ_NCCL_INTERNAL_ERROR 3 /* ncclInternalError */

/* The functions the wrappers forward to (index into the table of nccl_resolve.c). */
enum kj_nccl_fn {
	KJ_FN_ALL_REDUCE, KJ_FN_ALL_GATHER, KJ_FN_REDUCE_SCATTER, KJ_FN_BROADCAST, KJ_FN_REDUCE,
	KJ_FN_SEND, KJ_FN_RECV, KJ_FN_GROUP_START, KJ_FN_GROUP_END, KJ_FN_COMM_COUNT, KJ_FN_COUNT
};

/** The real NCCL function fn: dlsym(RTLD_NEXT) first, else from the loaded object whose file name
 *  holds "libnccl" (NCCL loaded RTLD_LOCAL under a dlopen'ed library). Found once, then kept.
 *  NULL when none is loaded; with complain set, one message on stderr names the function (once). */
void *kj_nccl_real(enum kj_nccl_fn fn, int complain);

/** One recorded call (a line of p<pid>.nccl). */
struct kj_nccl_call {
	const char *op;            /* "all_reduce", ... */
	size_t count;
	kj_nccl_datatype datatype;
	int64_t bytes;             /* count x element size; -1 unknown datatype */
	int nranks;                /* -1 not known */
	int peer;                  /* root or peer; -1 none */
};

/** Element size in bytes of NCCL datatype dt; -1 for a value this library does not know. */
int kj_nccl_type_bytes(kj_nccl_datatype dt);

/** 1 when calls are recorded (KJOULE_SPOOL set when the library loaded), else 0. */
int kj_nccl_recording(void);

/** Record one call made now by this thread at group depth depth (buffered; the file is opened at
 *  the first call, written every 256 lines and at exit). Never fails the caller: a file that
 *  cannot be written turns recording off with one message on stderr. */
void kj_nccl_record(const struct kj_nccl_call *c, int depth);

#endif
