/* Preload test (c): a program without NCCL; it must run as without the preload. */
#include <stdio.h>

int main(void)
{
	printf("no nccl here\n");
	return 0;
}
