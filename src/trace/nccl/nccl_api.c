/* libkjoule_nccl.so's exported wrappers: NCCL's public functions with NCCL's signatures. Each one
 * records the call (when recording: nccl_record.c), then calls the real function (nccl_resolve.c)
 * and returns its result unchanged; ncclInternalError only where no NCCL is loaded at all. */
#include <stddef.h>

#include "nccl_shim.h"

#define KJ_EXPORT __attribute__((visibility("default")))

/* ncclGroupStart nesting of this thread (NCCL's groups are per thread). */
static _Thread_local int group_depth;

typedef kj_nccl_result (*coll_fn)(const void *, void *, size_t, kj_nccl_datatype, kj_nccl_redop, kj_nccl_comm,
				   kj_cuda_stream);
typedef kj_nccl_result (*gather_fn)(const void *, void *, size_t, kj_nccl_datatype, kj_nccl_comm, kj_cuda_stream);
typedef kj_nccl_result (*bcast_fn)(const void *, void *, size_t, kj_nccl_datatype, int, kj_nccl_comm,
				    kj_cuda_stream);
typedef kj_nccl_result (*reduce_fn)(const void *, void *, size_t, kj_nccl_datatype, kj_nccl_redop, int,
				     kj_nccl_comm, kj_cuda_stream);
typedef kj_nccl_result (*send_fn)(const void *, size_t, kj_nccl_datatype, int, kj_nccl_comm, kj_cuda_stream);
typedef kj_nccl_result (*recv_fn)(void *, size_t, kj_nccl_datatype, int, kj_nccl_comm, kj_cuda_stream);
typedef kj_nccl_result (*group_fn)(void);
typedef kj_nccl_result (*count_fn)(const kj_nccl_comm, int *);

/* The communicator's size, -1 when it cannot be asked. */
static int comm_ranks(kj_nccl_comm comm)
{
	count_fn f = (count_fn)kj_nccl_real(KJ_FN_COMM_COUNT, 0);
	int n = -1;
	if (!f || f(comm, &n) != 0 || n < 1)
		return -1;
	return n;
}

/* Record the call op (when recording). */
static void note(const char *op, size_t count, kj_nccl_datatype dt, kj_nccl_comm comm, int peer)
{
	if (!kj_nccl_recording())
		return;
	int size = kj_nccl_type_bytes(dt);
	struct kj_nccl_call c = {op, count, dt, size < 0 ? -1 : (int64_t)count * size, comm_ranks(comm), peer};
	kj_nccl_record(&c, group_depth);
}

KJ_EXPORT kj_nccl_result ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, kj_nccl_datatype datatype,
				       kj_nccl_redop op, kj_nccl_comm comm, kj_cuda_stream stream)
{
	coll_fn f = (coll_fn)kj_nccl_real(KJ_FN_ALL_REDUCE, 1);
	note("all_reduce", count, datatype, comm, -1);
	return f ? f(sendbuff, recvbuff, count, datatype, op, comm, stream) : KJ_NCCL_INTERNAL_ERROR;
}

KJ_EXPORT kj_nccl_result ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
				       kj_nccl_datatype datatype, kj_nccl_comm comm, kj_cuda_stream stream)
{
	gather_fn f = (gather_fn)kj_nccl_real(KJ_FN_ALL_GATHER, 1);
	note("all_gather", sendcount, datatype, comm, -1);
	return f ? f(sendbuff, recvbuff, sendcount, datatype, comm, stream) : KJ_NCCL_INTERNAL_ERROR;
}

KJ_EXPORT kj_nccl_result ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
					   kj_nccl_datatype datatype, kj_nccl_redop op, kj_nccl_comm comm,
					   kj_cuda_stream stream)
{
	coll_fn f = (coll_fn)kj_nccl_real(KJ_FN_REDUCE_SCATTER, 1);
	note("reduce_scatter", recvcount, datatype, comm, -1);
	return f ? f(sendbuff, recvbuff, recvcount, datatype, op, comm, stream) : KJ_NCCL_INTERNAL_ERROR;
}

KJ_EXPORT kj_nccl_result ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, kj_nccl_datatype datatype,
				       int root, kj_nccl_comm comm, kj_cuda_stream stream)
{
	bcast_fn f = (bcast_fn)kj_nccl_real(KJ_FN_BROADCAST, 1);
	note("broadcast", count, datatype, comm, root);
	return f ? f(sendbuff, recvbuff, count, datatype, root, comm, stream) : KJ_NCCL_INTERNAL_ERROR;
}

KJ_EXPORT kj_nccl_result ncclReduce(const void *sendbuff, void *recvbuff, size_t count, kj_nccl_datatype datatype,
				    kj_nccl_redop op, int root, kj_nccl_comm comm, kj_cuda_stream stream)
{
	reduce_fn f = (reduce_fn)kj_nccl_real(KJ_FN_REDUCE, 1);
	note("reduce", count, datatype, comm, root);
	return f ? f(sendbuff, recvbuff, count, datatype, op, root, comm, stream) : KJ_NCCL_INTERNAL_ERROR;
}

KJ_EXPORT kj_nccl_result ncclSend(const void *sendbuff, size_t count, kj_nccl_datatype datatype, int peer,
				  kj_nccl_comm comm, kj_cuda_stream stream)
{
	send_fn f = (send_fn)kj_nccl_real(KJ_FN_SEND, 1);
	note("send", count, datatype, comm, peer);
	return f ? f(sendbuff, count, datatype, peer, comm, stream) : KJ_NCCL_INTERNAL_ERROR;
}

KJ_EXPORT kj_nccl_result ncclRecv(void *recvbuff, size_t count, kj_nccl_datatype datatype, int peer,
				  kj_nccl_comm comm, kj_cuda_stream stream)
{
	recv_fn f = (recv_fn)kj_nccl_real(KJ_FN_RECV, 1);
	note("recv", count, datatype, comm, peer);
	return f ? f(recvbuff, count, datatype, peer, comm, stream) : KJ_NCCL_INTERNAL_ERROR;
}

KJ_EXPORT kj_nccl_result ncclGroupStart(void)
{
	group_fn f = (group_fn)kj_nccl_real(KJ_FN_GROUP_START, 1);
	if (!f)
		return KJ_NCCL_INTERNAL_ERROR;
	kj_nccl_result r = f();
	if (r == 0)
		group_depth++;
	return r;
}

KJ_EXPORT kj_nccl_result ncclGroupEnd(void)
{
	group_fn f = (group_fn)kj_nccl_real(KJ_FN_GROUP_END, 1);
	if (!f)
		return KJ_NCCL_INTERNAL_ERROR;
	if (group_depth > 0)
		group_depth--;
	return f();
}
