/* Placeholder until the replay command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_replay(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule replay: not implemented yet\n");
	return 1;
}
