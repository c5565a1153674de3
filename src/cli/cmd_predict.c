#include <stdio.h>
#include "kj_cli.h"
int cmd_predict(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 1;
}
