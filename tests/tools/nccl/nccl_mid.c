/* Preload test (b): a library linked to the fake libnccl.so.2 that a program dlopen()s with
 * RTLD_LOCAL (PyTorch's shape: libtorch_cuda.so and its libnccl out of the global scope).
 * nccl_mid_run() makes two all_reduces in a group and returns the fake's call count, or -1 when a
 * result was not the fake's. */
#include "nccl_calls.h"

long nccl_mid_run(void);
long nccl_mid_run(void)
{
	int bad = 0;
	bad |= ncclGroupStart();
	bad |= ncclAllReduce(NULL, NULL, 256, 7, 0, (void *)0x1, NULL);
	bad |= ncclAllReduce(NULL, NULL, 128, 9, 0, (void *)0x1, NULL);
	bad |= ncclGroupEnd();
	bad |= ncclBroadcast(NULL, NULL, 1, 0, 7, (void *)0x1, NULL) != 4;
	return bad ? -1 : fake_nccl_calls();
}
