/* Option values that several commands take the same way. */
#include <stdio.h>
#include <stdlib.h>

#include "kj_cli.h"
#include "kj_error.h"

int kj_cli_parse_count(const char *cmd, const char *opt, const char *s, int *out)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 0 || v > 1000000000) {
		fprintf(stderr, "kjoule %s: %s wants a non-negative integer, not '%s'\n", cmd, opt, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int kj_cli_parse_int_range(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi) {
		kj_errorf("%s: %s wants %ld..%ld, got '%s'", cmd, opt, lo, hi, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}
