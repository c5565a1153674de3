/* Placeholder until the api command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_api(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule api: not implemented yet\n");
	return 1;
}
