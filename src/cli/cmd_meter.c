/* Placeholder until the meter command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_meter(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule meter: not implemented yet\n");
	return 1;
}
