/* Placeholder until the compare command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_compare(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule compare: not implemented yet\n");
	return 1;
}
