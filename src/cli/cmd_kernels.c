/* Placeholder until the kernels command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_kernels(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule kernels: not implemented yet\n");
	return 1;
}
