/* Preload test (a): a program linked to the fake libnccl.so.2 (with an argument: calls, a pause,
 * a call and _exit, for the timed write). Makes one call of each kind, a
 * group, an unknown datatype, a failing broadcast, 300 all_reduces (past one buffered write), and
 * a forked child's one call. Prints "results ok" when every result passed through unchanged, then
 * "calls N" (the fake's count: each call reached it once). Exit 1 on a wrong result. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_calls.h"

int main(int argc, char **argv)
{
	int bad = 0;
	void *comm = (void *)0x1;
	if (argc > 1 && argv[1][0]) { /* "abrupt": three calls, 250 ms, a fourth, then _exit (no exit handlers) */
		for (int i = 0; i < 3; i++)
			bad |= ncclAllReduce(NULL, NULL, 4, 7, 0, comm, NULL);
		usleep(250000);
		bad |= ncclAllReduce(NULL, NULL, 4, 7, 0, comm, NULL);
		_exit(bad ? 1 : 0);
	}
	bad |= ncclAllReduce(NULL, NULL, 1000, 7, 0, comm, NULL);  /* float32: 4000 bytes */
	bad |= ncclGroupStart();
	bad |= ncclSend(NULL, 10, 9, 1, comm, NULL);               /* bfloat16: 20, peer 1, depth 1 */
	bad |= ncclRecv(NULL, 10, 9, 1, comm, NULL);
	bad |= ncclGroupEnd();
	bad |= ncclAllGather(NULL, NULL, 100, 4, comm, NULL);      /* int64: 800 per rank */
	bad |= ncclReduceScatter(NULL, NULL, 50, 6, 0, comm, NULL); /* float16: 100 per rank */
	bad |= ncclBroadcast(NULL, NULL, 8, 1, 0, comm, NULL);     /* uint8: 8, root 0 */
	bad |= ncclReduce(NULL, NULL, 3, 8, 0, 1, comm, NULL);     /* float64: 24, root 1 */
	bad |= ncclAllReduce(NULL, NULL, 5, 42, 0, comm, NULL);    /* unknown datatype: bytes -1 */
	bad |= ncclBroadcast(NULL, NULL, 1, 0, 7, comm, NULL) != 4; /* the fake's error passes through */
	for (int i = 0; i < 300; i++)
		bad |= ncclAllReduce(NULL, NULL, (size_t)i, 0, 0, comm, NULL);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		int r = ncclAllReduce(NULL, NULL, 77, 2, 0, comm, NULL); /* int32: 308, in the child's file */
		exit(r ? 1 : 0);
	}
	int st = 0;
	waitpid(child, &st, 0);
	bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	if (!bad)
		printf("results ok\n");
	printf("calls %ld\n", fake_nccl_calls());
	return bad ? 1 : 0;
}
