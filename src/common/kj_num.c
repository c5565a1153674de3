/* Strict number parsing: one place that decides what text is a number. */
#include "kj_num.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The reason for a refused text, with the text quoted (shortened when long). */
static int refuse(char *why, size_t whylen, const char *s, const char *what)
{
	if (why && whylen)
		snprintf(why, whylen, "'%.40s%s' %s", s, strlen(s) > 40 ? "..." : "", what);
	return KJ_EINVAL;
}

int kj_num_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, char *why, size_t whylen)
{
	if (!s)
		return refuse(why, whylen, "", "is not an integer");
	const char *d = s + (s[0] == '-' || s[0] == '+');
	if (!is_digit(*d))
		return refuse(why, whylen, s, "is not an integer");
	for (const char *q = d; *q; q++)
		if (!is_digit(*q))
			return refuse(why, whylen, s, "is not an integer");
	errno = 0;
	char *end = NULL;
	intmax_t v = strtoimax(s, &end, 10);
	char range[80];
	snprintf(range, sizeof(range), "is not in %" PRId64 "..%" PRId64, lo, hi);
	if (errno == ERANGE || *end || v < lo || v > hi)
		return refuse(why, whylen, s, range);
	*out = (int64_t)v;
	return 0;
}

/* 1 when s is [+-]digits[.digits][(e|E)[+-]digits] with at least one mantissa digit. */
static int decimal_form(const char *s)
{
	const char *p = s + (*s == '-' || *s == '+');
	int mant = 0;
	for (; is_digit(*p); p++)
		mant = 1;
	if (*p == '.')
		for (p++; is_digit(*p); p++)
			mant = 1;
	if (!mant)
		return 0;
	if (*p == 'e' || *p == 'E') {
		p++;
		p += *p == '-' || *p == '+';
		if (!is_digit(*p))
			return 0;
		while (is_digit(*p))
			p++;
	}
	return *p == 0;
}

static int f64_in(const char *s, double lo, double hi, int lo_open, double *out, char *why, size_t whylen)
{
	if (!s || !decimal_form(s))
		return refuse(why, whylen, s ? s : "", "is not a number");
	errno = 0;
	double v = strtod(s, NULL);
	char range[96];
	if (lo_open)
		snprintf(range, sizeof(range), "is not above %g (up to %g)", lo, hi);
	else
		snprintf(range, sizeof(range), "is not in %g..%g", lo, hi);
	if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1.0) || v < lo || v > hi || (lo_open && v <= lo))
		return refuse(why, whylen, s, range);
	*out = v;
	return 0;
}

int kj_num_f64(const char *s, double lo, double hi, double *out, char *why, size_t whylen)
{
	return f64_in(s, lo, hi, 0, out, why, whylen);
}

int kj_num_f64_list(const char *s, double lo, double hi, double *out, size_t max, size_t *n, char *why,
		    size_t whylen)
{
	double v[16];
	size_t k = 0;
	char item[64];
	if (!s || !*s)
		return refuse(why, whylen, s ? s : "", "is not a list of numbers");
	for (const char *p = s;; k++) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (k >= max || k >= sizeof(v) / sizeof(v[0])) {
			char most[64];
			snprintf(most, sizeof(most), "has more than %zu numbers", max);
			return refuse(why, whylen, s, most);
		}
		if (len >= sizeof(item))
			return refuse(why, whylen, s, "has an item too long to be a number");
		memcpy(item, p, len);
		item[len] = 0;
		if (f64_in(item, lo, hi, 0, &v[k], why, whylen))
			return KJ_EINVAL;
		if (!end)
			break;
		p = end + 1;
	}
	memcpy(out, v, (k + 1) * sizeof(*out));
	*n = k + 1;
	return 0;
}

int kj_num_f64_above(const char *s, double lo, double hi, double *out, char *why, size_t whylen)
{
	return f64_in(s, lo, hi, 1, out, why, whylen);
}
