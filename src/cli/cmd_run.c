/* Placeholder until the run command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule run: not implemented yet\n");
	return 1;
}
