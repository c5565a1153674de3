/* Placeholder until the power command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_power(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule power: not implemented yet\n");
	return 1;
}
