/* --params-iteration's value, shared by `kjoule run` and `kjoule ingest`. */
#include <stdlib.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_ingest.h"

int kj_cli_parse_iteration(const char *cmd, const char *text, int *out)
{
	char *end;
	long v;
	if (!strcmp(text, "auto")) {
		*out = KJ_ITERATION_AUTO;
		return 0;
	}
	if (!strcmp(text, "none")) {
		*out = 0;
		return 0;
	}
	v = strtol(text, &end, 10);
	if (!*text || *end || v < 0 || v > 1000000000) {
		kj_errorf("%s: --params-iteration wants auto, none or an instance number >= 1, got '%s'", cmd,
			  text);
		return -1;
	}
	*out = (int)v;
	return 0;
}
