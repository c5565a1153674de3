/* Preload test (b): dlopen(argv[1], RTLD_NOW | RTLD_LOCAL), the library of nccl_mid.c, and run it.
 * Prints "calls N" (the fake's count) or says what failed (exit 1). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	long (*run)(void) = (long (*)(void))dlsym(h, "nccl_mid_run");
	long n = run ? run() : -1;
	printf("calls %ld\n", n);
	return n < 0;
}
