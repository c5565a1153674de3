/* Integer expressions in pipeline files ("9216*3/tp", "197*batch"): + - * / % and parentheses
 * over integers and the pipeline's parameters. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kj_error.h"
#include "kj_num.h"
#include "kj_pipeline.h"

struct ex {
	const char *s;
	const struct kj_pipeline *p;
	char *err;
	size_t errlen;
	int bad;
};

static void ex_fail(struct ex *e, const char *why)
{
	if (!e->bad)
		snprintf(e->err, e->errlen, "%s", why);
	e->bad = 1;
}

static void skip(struct ex *e)
{
	while (isspace((unsigned char)*e->s))
		e->s++;
}

static int64_t ex_sum(struct ex *e);

static int64_t ex_atom(struct ex *e)
{
	skip(e);
	if (*e->s == '(') {
		e->s++;
		int64_t v = ex_sum(e);
		skip(e);
		if (*e->s != ')')
			ex_fail(e, "missing ')'");
		else
			e->s++;
		return v;
	}
	if (*e->s == '-') {
		e->s++;
		int64_t v = ex_atom(e);
		return v == INT64_MIN ? 0 : -v;
	}
	if (isdigit((unsigned char)*e->s)) { /* the digits, through the one strict number parser */
		char digits[32];
		size_t n = 0;
		int64_t v = 0;
		while (isdigit((unsigned char)e->s[n]))
			n++;
		snprintf(digits, sizeof(digits), "%.*s", (int)n, e->s);
		e->s += n;
		if (n >= sizeof(digits) || kj_num_i64(digits, 0, INT64_MAX, &v, NULL, 0)) {
			ex_fail(e, "number too large");
			return 0;
		}
		return v;
	}
	if (isalpha((unsigned char)*e->s) || *e->s == '_') {
		const char *b = e->s;
		while (isalnum((unsigned char)*e->s) || *e->s == '_')
			e->s++;
		size_t n = (size_t)(e->s - b);
		for (int i = 0; e->p && i < e->p->nparams; i++)
			if (strlen(e->p->param_name[i]) == n && !strncmp(e->p->param_name[i], b, n))
				return e->p->param_value[i];
		char why[96];
		snprintf(why, sizeof(why), "unknown name '%.*s' (not a parameter of the pipeline)", (int)n, b);
		ex_fail(e, why);
		return 0;
	}
	ex_fail(e, *e->s ? "unexpected character" : "expression ends early");
	return 0;
}

static int64_t ex_product(struct ex *e)
{
	int64_t v = ex_atom(e);
	for (;;) {
		skip(e);
		char op = *e->s;
		if (op != '*' && op != '/' && op != '%')
			return v;
		e->s++;
		int64_t r = ex_atom(e);
		if (op == '*') {
			if (__builtin_mul_overflow(v, r, &v)) {
				ex_fail(e, "overflow");
				return 0;
			}
		} else if (!r) {
			ex_fail(e, "division by zero");
			return 0;
		} else if (r == -1 && v == INT64_MIN) {
			ex_fail(e, "overflow");
			return 0;
		} else if (op == '/') {
			v /= r;
		} else {
			v %= r;
		}
	}
}

static int64_t ex_sum(struct ex *e)
{
	int64_t v = ex_product(e);
	for (;;) {
		skip(e);
		char op = *e->s;
		if (op != '+' && op != '-')
			return v;
		e->s++;
		int64_t r = ex_product(e);
		if (op == '+' ? __builtin_add_overflow(v, r, &v) : __builtin_sub_overflow(v, r, &v)) {
			ex_fail(e, "overflow");
			return 0;
		}
	}
}

int kj_pipeline_expr_eval(const char *text, const struct kj_pipeline *p, int64_t *out, char *err,
			  size_t errlen)
{
	struct ex e = {text, p, err, errlen, 0};
	int64_t v = ex_sum(&e);
	skip(&e);
	if (!e.bad && *e.s)
		ex_fail(&e, "unexpected text after the expression");
	if (e.bad)
		return KJ_EINVAL;
	*out = v;
	return 0;
}
