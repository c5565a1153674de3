/* A stand-in libnccl.so.2 for libkjoule_nccl.so's tests (tests/cli/test_nccl_preload.sh): NCCL's
 * public functions with its signatures, each counting its calls and returning 0 (ncclSuccess),
 * but ncclBroadcast with root 7, which returns 4 (ncclInvalidArgument), so a test sees results
 * pass through. Communicators have 2 ranks. fake_nccl_calls() gives the count of every call. */
#include <stddef.h>

static long calls;

long fake_nccl_calls(void);
long fake_nccl_calls(void)
{
	return calls;
}

int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream);
int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream)
{
	(void)s; (void)r; (void)n; (void)dt; (void)op; (void)comm; (void)stream;
	calls++;
	return 0;
}

int ncclAllGather(const void *s, void *r, size_t n, int dt, void *comm, void *stream);
int ncclAllGather(const void *s, void *r, size_t n, int dt, void *comm, void *stream)
{
	(void)s; (void)r; (void)n; (void)dt; (void)comm; (void)stream;
	calls++;
	return 0;
}

int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream);
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream)
{
	(void)s; (void)r; (void)n; (void)dt; (void)op; (void)comm; (void)stream;
	calls++;
	return 0;
}

int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, void *comm, void *stream);
int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, void *comm, void *stream)
{
	(void)s; (void)r; (void)n; (void)dt; (void)comm; (void)stream;
	calls++;
	return root == 7 ? 4 : 0;
}

int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, void *comm, void *stream);
int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, void *comm, void *stream)
{
	(void)s; (void)r; (void)n; (void)dt; (void)op; (void)root; (void)comm; (void)stream;
	calls++;
	return 0;
}

int ncclSend(const void *s, size_t n, int dt, int peer, void *comm, void *stream);
int ncclSend(const void *s, size_t n, int dt, int peer, void *comm, void *stream)
{
	(void)s; (void)n; (void)dt; (void)peer; (void)comm; (void)stream;
	calls++;
	return 0;
}

int ncclRecv(void *r, size_t n, int dt, int peer, void *comm, void *stream);
int ncclRecv(void *r, size_t n, int dt, int peer, void *comm, void *stream)
{
	(void)r; (void)n; (void)dt; (void)peer; (void)comm; (void)stream;
	calls++;
	return 0;
}

int ncclGroupStart(void);
int ncclGroupStart(void)
{
	calls++;
	return 0;
}

int ncclGroupEnd(void);
int ncclGroupEnd(void)
{
	calls++;
	return 0;
}

int ncclCommCount(void *comm, int *n);
int ncclCommCount(void *comm, int *n)
{
	(void)comm;
	*n = 2;
	return 0;
}
