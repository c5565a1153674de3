/* External power-meter logs: parsing with line-numbered errors, and window energy that refuses
 * to integrate across gaps. Only libc here, so the fuzz target links this file alone. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_error.h"
#include "kj_meter.h"

#define MAX_FIELDS 8

static int all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return n > 0;
}

static int num(const char *s, size_t n, int digits)
{
	int v = 0;
	if (!all_digits(s, (size_t)digits) || n < (size_t)digits)
		return -1;
	for (int i = 0; i < digits; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

int kj_meter_parse_time(const char *s, size_t len, double *out)
{
	char buf[64];
	while (len && isspace((unsigned char)*s))
		s++, len--;
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	/* Unix seconds: digits with an optional fraction */
	{
		size_t i = 0;
		while (i < len && isdigit((unsigned char)buf[i]))
			i++;
		if (i > 0 && (i == len || (buf[i] == '.' && all_digits(buf + i + 1, len - i - 1)) ||
			      (buf[i] == '.' && i + 1 == len))) {
			if (i > 12)
				return -1;
			*out = strtod(buf, NULL);
			return 0;
		}
	}
	/* ISO-8601: YYYY-MM-DD[T ]hh:mm:ss[.frac][Z|+hh:mm|-hh:mm|+hhmm] */
	if (len < 19 || buf[4] != '-' || buf[7] != '-' || (buf[10] != 'T' && buf[10] != ' ') ||
	    buf[13] != ':' || buf[16] != ':')
		return -1;
	int Y = num(buf, len, 4), M = num(buf + 5, len - 5, 2), D = num(buf + 8, len - 8, 2);
	int h = num(buf + 11, len - 11, 2), m = num(buf + 14, len - 14, 2), sec = num(buf + 17, len - 17, 2);
	if (Y < 1970 || Y > 9999 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || m < 0 ||
	    m > 59 || sec < 0 || sec > 60)
		return -1;
	size_t i = 19;
	double frac = 0;
	if (i < len && buf[i] == '.') {
		double scale = 0.1;
		i++;
		if (i >= len || !isdigit((unsigned char)buf[i]))
			return -1;
		while (i < len && isdigit((unsigned char)buf[i])) {
			frac += (buf[i] - '0') * scale;
			scale /= 10;
			i++;
		}
	}
	long off = 0;
	if (i < len) {
		if (buf[i] == 'Z' && i + 1 == len) {
			i++;
		} else if (buf[i] == '+' || buf[i] == '-') {
			int sign = buf[i] == '-' ? -1 : 1;
			int oh = num(buf + i + 1, len - i - 1, 2), om;
			if (oh < 0 || oh > 23)
				return -1;
			if (i + 3 == len)
				om = 0;
			else if (buf[i + 3] == ':' && i + 6 == len)
				om = num(buf + i + 4, 2, 2);
			else if (i + 5 == len)
				om = num(buf + i + 3, 2, 2);
			else
				return -1;
			if (om < 0 || om > 59)
				return -1;
			off = sign * (oh * 3600L + om * 60L);
			i = len;
		} else {
			return -1;
		}
	}
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*out = (double)t - (double)off + frac;
	return 0;
}

/* Splits a line at commas (no quoting in these formats); returns the field count. */
static int split(const char *s, size_t n, const char **f, size_t *fl)
{
	int k = 0;
	size_t a = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == ',') {
			if (k == MAX_FIELDS)
				return MAX_FIELDS + 1;
			size_t x = a, y = i;
			while (x < y && isspace((unsigned char)s[x]))
				x++;
			while (y > x && isspace((unsigned char)s[y - 1]))
				y--;
			f[k] = s + x;
			fl[k] = y - x;
			k++;
			a = i + 1;
		}
	}
	return k;
}

static int number(const char *s, size_t n, double *out)
{
	char buf[64], *end;
	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	*out = strtod(buf, &end);
	if (*end || !isfinite(*out))
		return -1;
	return 0;
}

static int header_is(const char **f, const size_t *fl, int k, const char *const *names, int nn)
{
	if (k != nn)
		return 0;
	for (int i = 0; i < k; i++)
		if (fl[i] != strlen(names[i]) || strncasecmp(f[i], names[i], fl[i]))
			return 0;
	return 1;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void kj_meter_free(struct kj_meter_log *log)
{
	if (!log)
		return;
	free(log->t_s);
	free(log->watts);
	free(log->line);
	free(log);
}

int kj_meter_parse(const char *buf, size_t len, const char *name, enum kj_meter_format fmt,
		   struct kj_meter_log **out, char *err, size_t errlen)
{
	static const char *const wu[] = {"time", "id", "pm1", "pm2", "sum"};
	static const char *const gen[] = {"time", "watts"};
	struct kj_meter_log *log = calloc(1, sizeof(*log));
	size_t cap = 0, pos = 0;
	int lineno = 0, have_header = 0;
	const char *f[MAX_FIELDS + 1];
	size_t fl[MAX_FIELDS + 1];

	*out = NULL;
	if (!log)
		return KJ_ENOMEM;
	while (pos < len) {
		size_t e = pos;
		while (e < len && buf[e] != '\n')
			e++;
		size_t n = e - pos;
		const char *s = buf + pos;
		pos = e + 1;
		lineno++;
		if (n && s[n - 1] == '\r')
			n--;
		if (memchr(s, 0, n)) {
			snprintf(err, errlen, "%s:%d: NUL byte: not a text log", name, lineno);
			goto bad;
		}
		size_t i = 0;
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		if (i == n || s[i] == '#')
			continue; /* blank lines and comments */
		int k = split(s, n, f, fl);
		if (!have_header) {
			int is_wu = header_is(f, fl, k, wu, 5), is_gen = header_is(f, fl, k, gen, 2);
			if (fmt == KJ_METER_AUTO)
				fmt = is_wu ? KJ_METER_WATTSUP : is_gen ? KJ_METER_GENERIC : KJ_METER_AUTO;
			if ((fmt == KJ_METER_WATTSUP && !is_wu) || (fmt == KJ_METER_GENERIC && !is_gen) ||
			    fmt == KJ_METER_AUTO) {
				snprintf(err, errlen, "%s:%d: bad header '%.*s': want 'time,id,pm1,pm2,sum' "
					 "(wattsup) or 'time,watts' (generic)", name, lineno,
					 (int)(n > 80 ? 80 : n), s);
				goto bad;
			}
			log->format = fmt;
			have_header = 1;
			continue;
		}
		int want = fmt == KJ_METER_WATTSUP ? 5 : 2;
		const char *const *names = fmt == KJ_METER_WATTSUP ? wu : gen;
		if (k != want) {
			snprintf(err, errlen, "%s:%d: %d fields, want %d (%s)", name, lineno, k, want,
				 fmt == KJ_METER_WATTSUP ? "time,id,pm1,pm2,sum" : "time,watts");
			goto bad;
		}
		for (int j = 0; j < k; j++)
			if (!fl[j]) {
				snprintf(err, errlen, "%s:%d: missing field '%s'", name, lineno, names[j]);
				goto bad;
			}
		double t, w, v[5];
		if (kj_meter_parse_time(f[0], fl[0], &t)) {
			snprintf(err, errlen, "%s:%d: time '%.*s' is neither ISO-8601 nor Unix seconds", name,
				 lineno, (int)(fl[0] > 40 ? 40 : fl[0]), f[0]);
			goto bad;
		}
		for (int j = fmt == KJ_METER_WATTSUP ? 2 : 1; j < k; j++) {
			if (number(f[j], fl[j], &v[j])) {
				snprintf(err, errlen, "%s:%d: field '%s' is not a number: '%.*s'", name, lineno,
					 names[j], (int)(fl[j] > 40 ? 40 : fl[j]), f[j]);
				goto bad;
			}
			if (v[j] < 0) {
				snprintf(err, errlen, "%s:%d: negative watts in '%s': %g", name, lineno,
					 names[j], v[j]);
				goto bad;
			}
			if (v[j] > KJ_METER_MAX_WATTS) {
				snprintf(err, errlen, "%s:%d: absurd watts in '%s': %g (over %g W)", name,
					 lineno, names[j], v[j], KJ_METER_MAX_WATTS);
				goto bad;
			}
		}
		if (fmt == KJ_METER_WATTSUP) {
			w = v[4];
			if (fabs(v[4] - (v[2] + v[3])) > 0.01 * v[4] + 0.5) {
				snprintf(err, errlen, "%s:%d: sum %g W is not pm1 + pm2 = %g W", name, lineno,
					 v[4], v[2] + v[3]);
				goto bad;
			}
		} else {
			w = v[1];
		}
		if (log->n) {
			double pt = log->t_s[log->n - 1];
			if (t == pt) {
				snprintf(err, errlen, "%s:%d: duplicate timestamp (same as line %d)", name,
					 lineno, log->line[log->n - 1]);
				goto bad;
			}
			if (t < pt) {
				snprintf(err, errlen, "%s:%d: time goes backwards (%.3f s before line %d)",
					 name, lineno, pt - t, log->line[log->n - 1]);
				goto bad;
			}
		}
		if (log->n == cap) {
			cap = cap ? cap * 2 : 256;
			double *nt = realloc(log->t_s, cap * sizeof(double));
			if (nt)
				log->t_s = nt;
			double *nw = realloc(log->watts, cap * sizeof(double));
			if (nw)
				log->watts = nw;
			int *nl = realloc(log->line, cap * sizeof(int));
			if (nl)
				log->line = nl;
			if (!nt || !nw || !nl) {
				kj_meter_free(log);
				return KJ_ENOMEM;
			}
		}
		log->t_s[log->n] = t;
		log->watts[log->n] = w;
		log->line[log->n] = lineno;
		log->n++;
	}
	if (!have_header) {
		snprintf(err, errlen, "%s:1: empty file: no header", name);
		goto bad;
	}
	if (log->n < 2) {
		snprintf(err, errlen, "%s:%d: %zu sample%s: need at least 2 to integrate", name, lineno,
			 log->n, log->n == 1 ? "" : "s");
		goto bad;
	}
	double *d = malloc((log->n - 1) * sizeof(double));
	if (!d) {
		kj_meter_free(log);
		return KJ_ENOMEM;
	}
	for (size_t i = 1; i < log->n; i++)
		d[i - 1] = log->t_s[i] - log->t_s[i - 1];
	qsort(d, log->n - 1, sizeof(double), cmp_d);
	log->period_s = d[(log->n - 1) / 2];
	free(d);
	*out = log;
	return 0;
bad:
	kj_meter_free(log);
	return KJ_EINVAL;
}

static double interp(const struct kj_meter_log *l, size_t i, double t)
{
	/* t in [t_s[i], t_s[i+1]] */
	double f = (t - l->t_s[i]) / (l->t_s[i + 1] - l->t_s[i]);
	return l->watts[i] + f * (l->watts[i + 1] - l->watts[i]);
}

int kj_meter_window(const struct kj_meter_log *l, const char *name, double from, double to,
		    struct kj_meter_stats *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	if (isnan(from))
		from = l->t_s[0];
	if (isnan(to))
		to = l->t_s[l->n - 1];
	if (!(from < to)) {
		snprintf(err, errlen, "%s: empty window: --from %.3f is not before --to %.3f", name, from, to);
		return KJ_EINVAL;
	}
	if (from < l->t_s[0] - 1e-9 || to > l->t_s[l->n - 1] + 1e-9) {
		snprintf(err, errlen, "%s: window [%.3f, %.3f] is outside the log, which covers [%.3f "
			 "(line %d), %.3f (line %d)] in Unix seconds", name, from, to, l->t_s[0], l->line[0],
			 l->t_s[l->n - 1], l->line[l->n - 1]);
		return KJ_EINVAL;
	}
	double gap = KJ_METER_GAP_PERIODS * l->period_s;
	o->peak_w = -INFINITY;
	o->min_w = INFINITY;
	for (size_t i = 0; i + 1 < l->n; i++) {
		double a = l->t_s[i], b = l->t_s[i + 1];
		if (b <= from || a >= to)
			continue;
		if (b - a > gap) {
			snprintf(err, errlen, "%s:%d: gap of %.3f s before this sample (sampling period %.3f "
				 "s): the energy across it is unknown, not zero; choose a window without it",
				 name, l->line[i + 1], b - a, l->period_s);
			return KJ_EINVAL;
		}
		double x = a < from ? from : a, y = b > to ? to : b;
		double px = interp(l, i, x), py = interp(l, i, y);
		o->energy_j += 0.5 * (px + py) * (y - x);
		o->peak_w = fmax(o->peak_w, fmax(px, py));
		o->min_w = fmin(o->min_w, fmin(px, py));
	}
	for (size_t i = 0; i < l->n; i++)
		o->samples += l->t_s[i] >= from - 1e-9 && l->t_s[i] <= to + 1e-9;
	o->duration_s = to - from;
	o->avg_w = o->energy_j / o->duration_s;
	return 0;
}
