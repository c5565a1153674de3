#include <stdio.h>
#include "kj_cli.h"
int cmd_merge(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 1;
}
