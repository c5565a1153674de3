/* Placeholder until the info command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_info(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule info: not implemented yet\n");
	return 1;
}
