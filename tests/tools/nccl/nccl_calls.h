/* The NCCL calls the preload tests make (tests/tools/nccl), declared as NCCL declares them
 * (ints for its enums, void * for its handles) and the fake's call counter. */
#ifndef KJ_TEST_NCCL_CALLS_H
#define KJ_TEST_NCCL_CALLS_H
#include <stddef.h>
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream);
int ncclAllGather(const void *s, void *r, size_t n, int dt, void *comm, void *stream);
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream);
int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, void *comm, void *stream);
int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, void *comm, void *stream);
int ncclSend(const void *s, size_t n, int dt, int peer, void *comm, void *stream);
int ncclRecv(void *r, size_t n, int dt, int peer, void *comm, void *stream);
int ncclGroupStart(void);
int ncclGroupEnd(void);
long fake_nccl_calls(void);
#endif
