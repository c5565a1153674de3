/* Option values that several commands take the same way: every number through kj_num's strict
 * parser (the whole value a number, in range), the message naming the command and the option. */
#include <stdio.h>
#include <stdlib.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_num.h"

int kj_cli_num_i64(const char *cmd, const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char why[160];
	if (kj_num_i64(s, lo, hi, out, why, sizeof(why))) {
		kj_errorf("%s: %s: %s", cmd, opt, why);
		return -1;
	}
	return 0;
}

int kj_cli_num_int(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out)
{
	int64_t v;
	if (kj_cli_num_i64(cmd, opt, s, lo, hi, &v))
		return -1;
	*out = (int)v;
	return 0;
}

int kj_cli_num_f64(const char *cmd, const char *opt, const char *s, double lo, double hi, int lo_open,
		   double *out)
{
	char why[160];
	int rc = lo_open ? kj_num_f64_above(s, lo, hi, out, why, sizeof(why)) :
			   kj_num_f64(s, lo, hi, out, why, sizeof(why));
	if (rc) {
		kj_errorf("%s: %s: %s", cmd, opt, why);
		return -1;
	}
	return 0;
}

int kj_cli_parse_count(const char *cmd, const char *opt, const char *s, int *out)
{
	int64_t v;
	if (kj_num_i64(s, 0, 1000000000, &v, NULL, 0)) {
		fprintf(stderr, "kjoule %s: %s wants a non-negative integer, not '%s'\n", cmd, opt, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int kj_cli_parse_int_range(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out)
{
	int64_t v;
	if (kj_num_i64(s, lo, hi, &v, NULL, 0)) {
		kj_errorf("%s: %s wants %ld..%ld, got '%s'", cmd, opt, lo, hi, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}
