/* kjoule-sweep-worker: request-line parsing and answer-line writing (no GPU). */
#include "worker_request.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"

/* Split line into at most n space-separated tokens (in place in buf); returns how many. */
static int split(char *buf, char **tok, int n)
{
	int k = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (k == n)
			return n + 1;
		tok[k++] = t;
	}
	return k;
}

/* The worker's own precision names (kj_precision_parse lives in the CLI's operator table). */
static int precision_parse(const char *s)
{
	static const char *names[] = {"fp16", "bf16", "fp32"};
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

const char *sw_precision_name(int precision)
{
	static const char *names[] = {"fp16", "bf16", "fp32"};
	return precision >= 0 && precision < 3 ? names[precision] : "?";
}

static int parse_flag(const char *s, int *out)
{
	if (!strcmp(s, "0") || !strcmp(s, "1")) {
		*out = s[0] - '0';
		return 0;
	}
	return KJ_EINVAL;
}

int sw_req_parse(const char *line, struct sw_req *r, char *msg, size_t msg_size)
{
	char buf[1024], *tok[5];
	memset(r, 0, sizeof(*r));
	if (strlen(line) >= sizeof(buf)) {
		snprintf(msg, msg_size, "request line longer than %zu bytes", sizeof(buf) - 1);
		return KJ_EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", line);
	int n = split(buf, tok, 5);
	if (n != 5) {
		snprintf(msg, msg_size, "expected 5 fields 'OP PRECISION V1,...,Vn ENERGY CHECK', got %s",
			 n > 5 ? "more" : (n == 0 ? "none" : "fewer"));
		return KJ_EINVAL;
	}
	if (strlen(tok[0]) >= sizeof(r->op)) {
		snprintf(msg, msg_size, "operator name too long");
		return KJ_EINVAL;
	}
	snprintf(r->op, sizeof(r->op), "%s", tok[0]);
	r->precision = precision_parse(tok[1]);
	if (r->precision < 0) {
		snprintf(msg, msg_size, "unknown precision '%.32s' (fp16, bf16 or fp32)", tok[1]);
		return KJ_EINVAL;
	}
	const char *p = tok[2];
	for (;;) {
		char *end = NULL;
		if (!isdigit((unsigned char)*p)) {
			snprintf(msg, msg_size, "shape '%.64s': value %d is not a positive integer", tok[2], r->nv + 1);
			return KJ_EINVAL;
		}
		errno = 0;
		long long x = strtoll(p, &end, 10);
		if (errno || x <= 0 || x > (1ll << 40)) {
			snprintf(msg, msg_size, "shape '%.64s': value %d out of range (1..2^40)", tok[2], r->nv + 1);
			return KJ_EINVAL;
		}
		if (r->nv == KJ_SWEEP_MAX_COLS) {
			snprintf(msg, msg_size, "shape '%.64s': more than %d values", tok[2], KJ_SWEEP_MAX_COLS);
			return KJ_EINVAL;
		}
		r->v[r->nv++] = x;
		if (*end == '\0')
			break;
		if (*end != ',') {
			snprintf(msg, msg_size, "shape '%.64s': unexpected '%c' after value %d", tok[2], *end, r->nv);
			return KJ_EINVAL;
		}
		p = end + 1;
	}
	if (parse_flag(tok[3], &r->energy)) {
		snprintf(msg, msg_size, "ENERGY must be 0 or 1, got '%.16s'", tok[3]);
		return KJ_EINVAL;
	}
	if (parse_flag(tok[4], &r->check)) {
		snprintf(msg, msg_size, "CHECK must be 0 or 1, got '%.16s'", tok[4]);
		return KJ_EINVAL;
	}
	return 0;
}

void sw_answer_init(struct sw_answer *a, const char *status, const char *msg)
{
	a->status = status;
	a->f_us = a->b_us = a->f_uj = a->f_uj_unc = a->b_uj = a->b_uj_unc = -1;
	a->err_f = a->err_b = -1;
	a->f_flops = a->b_flops = a->f_bytes = a->b_bytes = -1;
	a->f_mhz = a->b_mhz = a->f_tmhz = a->b_tmhz = a->f_wus = a->b_wus = -1;
	a->f_uj_warm = a->b_uj_warm = a->f_uj_cold = a->b_uj_cold = -1;
	a->f_algo = a->b_algo = NULL;
	a->msg = msg;
}

/* Append " key=value" with value printed as %.*g, or '-' when not measured (< 0, NaN, inf). */
static int put(char *buf, size_t size, size_t *len, const char *key, double x, int digits)
{
	int n;
	if (!(x >= 0) || isinf(x))
		n = snprintf(buf + *len, size - *len, " %s=-", key);
	else
		n = snprintf(buf + *len, size - *len, " %s=%.*g", key, digits, x);
	if (n < 0 || (size_t)n >= size - *len)
		return -1;
	*len += (size_t)n;
	return 0;
}

/* Append " key=word", or '-' when word is NULL or empty; a word holding a space or a quote is '-'. */
static int put_word(char *buf, size_t size, size_t *len, const char *key, const char *word)
{
	if (!word || !*word || strpbrk(word, " \t\n\"="))
		word = "-";
	int n = snprintf(buf + *len, size - *len, " %s=%s", key, word);
	if (n < 0 || (size_t)n >= size - *len)
		return -1;
	*len += (size_t)n;
	return 0;
}

int sw_answer_format(const struct sw_answer *a, char *buf, size_t size)
{
	size_t len = 0;
	int n = snprintf(buf, size, "KJ_SWEEP status=%s", a->status);
	if (n < 0 || (size_t)n >= size)
		return -1;
	len = (size_t)n;
	if (put(buf, size, &len, "f_us", a->f_us, 6) || put(buf, size, &len, "b_us", a->b_us, 6) ||
	    put(buf, size, &len, "f_uj", a->f_uj, 6) || put(buf, size, &len, "f_uj_unc", a->f_uj_unc, 3) ||
	    put(buf, size, &len, "b_uj", a->b_uj, 6) || put(buf, size, &len, "b_uj_unc", a->b_uj_unc, 3) ||
	    put(buf, size, &len, "err_f", a->err_f, 3) || put(buf, size, &len, "err_b", a->err_b, 3) ||
	    put(buf, size, &len, "flops_f", a->f_flops, 6) || put(buf, size, &len, "flops_b", a->b_flops, 6) ||
	    put(buf, size, &len, "bytes_f", a->f_bytes, 6) || put(buf, size, &len, "bytes_b", a->b_bytes, 6) ||
	    put(buf, size, &len, "f_mhz", a->f_mhz, 5) || put(buf, size, &len, "b_mhz", a->b_mhz, 5) ||
	    put(buf, size, &len, "f_tmhz", a->f_tmhz, 5) || put(buf, size, &len, "b_tmhz", a->b_tmhz, 5) ||
	    put(buf, size, &len, "f_wus", a->f_wus, 6) || put(buf, size, &len, "b_wus", a->b_wus, 6) ||
	    put(buf, size, &len, "f_uj_warm", a->f_uj_warm, 6) || put(buf, size, &len, "f_uj_cold", a->f_uj_cold, 6) ||
	    put(buf, size, &len, "b_uj_warm", a->b_uj_warm, 6) || put(buf, size, &len, "b_uj_cold", a->b_uj_cold, 6) ||
	    put_word(buf, size, &len, "f_algo", a->f_algo) || put_word(buf, size, &len, "b_algo", a->b_algo))
		return -1;
	if (len + 8 >= size)
		return -1;
	memcpy(buf + len, " msg=\"", 6);
	len += 6;
	for (const char *m = a->msg ? a->msg : ""; *m && len + 3 < size; m++)
		buf[len++] = (*m == '\n' || *m == '\r') ? ' ' : (*m == '"' ? '\'' : *m);
	buf[len++] = '"';
	buf[len++] = '\n';
	buf[len] = '\0';
	return (int)len;
}
