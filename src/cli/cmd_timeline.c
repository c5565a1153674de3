/* Placeholder until the timeline command lands: says so and fails. */
#include <stdio.h>

#include "kj_cli.h"

int cmd_timeline(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "kjoule timeline: not implemented yet\n");
	return 1;
}
