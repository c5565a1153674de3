/* One phase: kinds, shape checks with derived sizes, FLOP and byte counts, the worker's one-line
 * request format. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_pipeline.h"
#include "kj_sweep_op.h"

static const char *const kind_names[] = {"conv", "matmul", "pool", "norm", "act", "attention",
					 "custom", "seq"};

const char *kj_phase_kind_name(enum kj_phase_kind k)
{
	return (unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[k] : "?";
}

int kj_phase_kind_parse(const char *s)
{
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (!strcmp(s, kind_names[i]))
			return (int)i;
	if (!strcmp(s, "convolution"))
		return KJ_PHASE_CONV;
	if (!strcmp(s, "pooling"))
		return KJ_PHASE_POOL;
	if (!strcmp(s, "normalization") || !strcmp(s, "normalisation"))
		return KJ_PHASE_NORM;
	if (!strcmp(s, "activation"))
		return KJ_PHASE_ACT;
	if (!strcmp(s, "attn"))
		return KJ_PHASE_ATTN;
	return -1;
}

int kj_pipeline_elem_bytes(const char *p)
{
	int precision = kj_precision_parse(p);
	return precision < 0 ? 0 : kj_precision_bytes(precision);
}

int kj_pipeline_conv_algo_ok(const char *s)
{
	return s && (!strcmp(s, "fastest") || !strcmp(s, "heuristic"));
}

int kj_pipeline_bn_kernel_ok(const char *s)
{
	return s && (!strcmp(s, "vector") || !strcmp(s, "plane"));
}

int kj_pipeline_layout_ok(const char *s)
{
	return s && (!strcmp(s, "nchw") || !strcmp(s, "nhwc"));
}

static int fail(char *err, size_t len, const char *field, const char *why, int64_t v)
{
	snprintf(err, len, "%s: %s (%" PRId64 ")", field, why, v);
	return KJ_EINVAL;
}

#define NEED_POS(ph, f)                                                    \
	do {                                                               \
		if ((ph)->f <= 0)                                          \
			return fail(err, errlen, #f, "must be > 0", (ph)->f); \
	} while (0)

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return 1;
	return 0;
}

/* Output size of a window over n (conv/pool arithmetic, floor division); the input size that
 * gives out when only out is known. */
static int64_t window_out(int64_t n, int64_t pad, int64_t dil, int64_t k, int64_t stride)
{
	int64_t span = n + 2 * pad - dil * (k - 1) - 1;
	if (span < 0)
		return -1 - (-span - 1) / stride; /* negative: no output */
	return span / stride + 1;
}

static int check_window(struct kj_phase *ph, char *err, size_t errlen)
{
	if (!ph->stride_h)
		ph->stride_h = 1;
	if (!ph->stride_w)
		ph->stride_w = ph->stride_h;
	if (!ph->dil_h)
		ph->dil_h = 1;
	if (!ph->dil_w)
		ph->dil_w = ph->dil_h;
	if (!ph->pad_w && ph->pad_h && ph->kind == KJ_PHASE_POOL)
		ph->pad_w = ph->pad_h;
	NEED_POS(ph, R);
	NEED_POS(ph, S);
	NEED_POS(ph, stride_h);
	NEED_POS(ph, stride_w);
	NEED_POS(ph, dil_h);
	NEED_POS(ph, dil_w);
	if (ph->pad_h < 0)
		return fail(err, errlen, "pad_h", "must be >= 0", ph->pad_h);
	if (ph->pad_w < 0)
		return fail(err, errlen, "pad_w", "must be >= 0", ph->pad_w);
	if (ph->H <= 0 && ph->W <= 0 && ph->P > 0 && ph->Q > 0) {
		ph->H = (ph->P - 1) * ph->stride_h + ph->dil_h * (ph->R - 1) + 1 - 2 * ph->pad_h;
		ph->W = (ph->Q - 1) * ph->stride_w + ph->dil_w * (ph->S - 1) + 1 - 2 * ph->pad_w;
	}
	NEED_POS(ph, H);
	NEED_POS(ph, W);
	int64_t p = window_out(ph->H, ph->pad_h, ph->dil_h, ph->R, ph->stride_h);
	int64_t q = window_out(ph->W, ph->pad_w, ph->dil_w, ph->S, ph->stride_w);
	if (p <= 0)
		return fail(err, errlen, "P", "output height is not positive: the window R does not fit H "
			    "with this padding and dilation", p);
	if (q <= 0)
		return fail(err, errlen, "Q", "output width is not positive: the window S does not fit W "
			    "with this padding and dilation", q);
	if (ph->P && ph->P != p)
		return fail(err, errlen, "P", "does not match H, R, stride, pad, dilation, which give", p);
	if (ph->Q && ph->Q != q)
		return fail(err, errlen, "Q", "does not match W, S, stride, pad, dilation, which give", q);
	ph->P = p;
	ph->Q = q;
	return 0;
}

static int phase_too_large(const struct kj_phase *ph, char *err, size_t errlen);

int kj_phase_check(struct kj_phase *ph, char *err, size_t errlen)
{
	static const char *const pools[] = {"max", "avg", NULL};
	static const char *const norms[] = {"batch", "layer", "rms", NULL};
	static const char *const acts[] = {"relu", "relu6", "gelu", "silu", "sigmoid", "hardswish",
					   "hardsigmoid", "add_relu", "add", "mul", NULL};
	err[0] = 0;
	if (phase_too_large(ph, err, errlen))
		return KJ_EINVAL;
	if (!ph->repeat)
		ph->repeat = 1;
	if (ph->repeat < 0)
		return fail(err, errlen, "repeat", "must be > 0", ph->repeat);
	if (ph->nhwc && ph->kind == KJ_PHASE_ACT && !strcmp(ph->op, "mul")) {
		snprintf(err, errlen, "layout: nhwc is not built for act 'mul' (a per-channel scale): use nchw");
		return KJ_EINVAL;
	}
	if (ph->bn_plane && (ph->kind != KJ_PHASE_NORM || (ph->op[0] && strcmp(ph->op, "batch")) || ph->nhwc)) {
		snprintf(err, errlen, "bn_kernel: plane is built for batch norm in nchw only");
		return KJ_EINVAL;
	}
	if (ph->kind == KJ_PHASE_SEQ) {
		if (ph->first < 0 || ph->last < ph->first)
			return fail(err, errlen, "first", "ordinal range is empty", ph->first);
		return 0;
	}
	if (!ph->precision[0])
		snprintf(ph->precision, sizeof(ph->precision), "fp16");
	if (!kj_pipeline_elem_bytes(ph->precision)) {
		snprintf(err, errlen, "precision: '%s' is not fp16, bf16 or fp32", ph->precision);
		return KJ_EINVAL;
	}
	switch (ph->kind) {
	case KJ_PHASE_CONV:
		if (!ph->N)
			ph->N = 1;
		if (!ph->groups)
			ph->groups = 1;
		NEED_POS(ph, N);
		NEED_POS(ph, C);
		NEED_POS(ph, M);
		NEED_POS(ph, groups);
		if (ph->C % ph->groups)
			return fail(err, errlen, "groups", "does not divide the input channels C", ph->groups);
		if (ph->M % ph->groups)
			return fail(err, errlen, "groups", "does not divide the output channels M", ph->groups);
		return check_window(ph, err, errlen);
	case KJ_PHASE_MATMUL:
		if (!ph->count)
			ph->count = 1;
		NEED_POS(ph, M);
		NEED_POS(ph, K);
		NEED_POS(ph, N);
		NEED_POS(ph, count);
		return 0;
	case KJ_PHASE_POOL:
		if (!ph->N)
			ph->N = 1;
		if (!ph->op[0])
			snprintf(ph->op, sizeof(ph->op), "max");
		if (!in_list(ph->op, pools)) {
			snprintf(err, errlen, "op: '%s' is not a pooling (max, avg)", ph->op);
			return KJ_EINVAL;
		}
		NEED_POS(ph, N);
		NEED_POS(ph, C);
		return check_window(ph, err, errlen);
	case KJ_PHASE_NORM:
	case KJ_PHASE_ACT:
		if (!ph->N)
			ph->N = 1;
		if (!ph->H)
			ph->H = 1;
		if (!ph->W)
			ph->W = 1;
		if (!ph->op[0])
			snprintf(ph->op, sizeof(ph->op), "%s", ph->kind == KJ_PHASE_NORM ? "batch" : "relu");
		if (!in_list(ph->op, ph->kind == KJ_PHASE_NORM ? norms : acts)) {
			snprintf(err, errlen, "op: '%s' is not a known %s", ph->op,
				 ph->kind == KJ_PHASE_NORM ? "normalisation (batch, layer, rms)" :
				 "activation (relu, relu6, gelu, silu, sigmoid, hardswish, hardsigmoid, add, "
				 "mul, add_relu)");
			return KJ_EINVAL;
		}
		NEED_POS(ph, N);
		NEED_POS(ph, C);
		NEED_POS(ph, H);
		NEED_POS(ph, W);
		return 0;
	case KJ_PHASE_ATTN:
		if (!ph->N)
			ph->N = 1;
		if (!ph->seq_kv)
			ph->seq_kv = ph->seq_q;
		NEED_POS(ph, N);
		NEED_POS(ph, heads);
		NEED_POS(ph, seq_q);
		NEED_POS(ph, seq_kv);
		NEED_POS(ph, K);
		if (ph->K > 256)
			return fail(err, errlen, "K", "head_dim above 256 is not supported", ph->K);
		if (ph->causal && ph->seq_q > ph->seq_kv)
			return fail(err, errlen, "seq_q", "causal attention needs seq_q <= seq_kv", ph->seq_q);
		if (ph->seq_kv > 16384)
			return fail(err, errlen, "seq_kv", "above 16384 is not supported", ph->seq_kv);
		return 0;
	case KJ_PHASE_CUSTOM:
		if (!ph->op[0]) {
			snprintf(err, errlen, "kernel: missing (the registered custom kernel's name)");
			return KJ_EINVAL;
		}
		return 0;
	case KJ_PHASE_SEQ:
		return 0;
	}
	snprintf(err, errlen, "type: unknown");
	return KJ_EINVAL;
}

void kj_phase_cost(const struct kj_phase *ph, double *flops, double *bytes)
{
	double e = kj_pipeline_elem_bytes(ph->precision);
	double f = 0, b = 0;
	double n = (double)ph->N, c = (double)ph->C, hw = (double)ph->H * (double)ph->W;
	double pq = (double)ph->P * (double)ph->Q;
	switch (ph->kind) {
	case KJ_PHASE_CONV:
		f = 2.0 * n * (double)ph->M * pq * (c / (double)ph->groups) * (double)ph->R * (double)ph->S;
		b = e * (n * c * hw + (double)ph->M * (c / (double)ph->groups) * (double)ph->R * (double)ph->S +
			 n * (double)ph->M * pq);
		break;
	case KJ_PHASE_MATMUL:
		f = 2.0 * (double)ph->count * (double)ph->M * (double)ph->N * (double)ph->K;
		b = e * (double)ph->count * ((double)ph->M * (double)ph->K + (double)ph->K * (double)ph->N +
					     (double)ph->M * (double)ph->N);
		break;
	case KJ_PHASE_POOL:
		f = n * c * pq * (double)ph->R * (double)ph->S;
		b = e * (n * c * hw + n * c * pq);
		break;
	case KJ_PHASE_NORM:
		f = 5.0 * n * c * hw;
		b = e * 2.0 * n * c * hw + 2.0 * e * c;
		break;
	case KJ_PHASE_ACT: {
		int two = !strcmp(ph->op, "add") || !strcmp(ph->op, "mul") || !strcmp(ph->op, "add_relu");
		f = (two ? 2.0 : 1.0) * n * c * hw;
		b = e * (two ? 3.0 : 2.0) * n * c * hw;
		break;
	}
	case KJ_PHASE_ATTN: {
		double pairs = (double)ph->seq_q * (double)ph->seq_kv;
		if (ph->causal && ph->seq_q == ph->seq_kv)
			pairs = (double)ph->seq_q * ((double)ph->seq_q + 1) / 2;
		f = 4.0 * n * (double)ph->heads * pairs * (double)ph->K;
		b = e * n * (double)ph->heads * (double)ph->K *
		    (2.0 * (double)ph->seq_q + 2.0 * (double)ph->seq_kv);
		break;
	}
	case KJ_PHASE_CUSTOM:
		/* the example's add + ReLU convention: M x N elements, two inputs, one output */
		f = 2.0 * (double)ph->M * (double)ph->N;
		b = e * 3.0 * (double)ph->M * (double)ph->N;
		break;
	case KJ_PHASE_SEQ:
		break;
	}
	*flops = f;
	*bytes = b;
}

/* ---- one-line request format: key=value words; name and op may not hold spaces ---- */
struct field {
	const char *key;
	size_t off;
};
#define F(k, m) {k, offsetof(struct kj_phase, m)}
static const struct field int_fields[] = {
	F("N", N), F("C", C), F("H", H), F("W", W), F("M", M), F("K", K), F("R", R), F("S", S),
	F("P", P), F("Q", Q), F("sh", stride_h), F("sw", stride_w), F("ph", pad_h), F("pw", pad_w),
	F("dh", dil_h), F("dw", dil_w), F("groups", groups), F("count", count), F("heads", heads),
	F("seq_q", seq_q), F("seq_kv", seq_kv), F("causal", causal), F("first", first),
	F("last", last), F("repeat", repeat), F("nhwc", nhwc), F("fastest", conv_fastest),
	F("bn_plane", bn_plane),
};

/* Every size below 2^31 (and > -2^31): the shape arithmetic then cannot overflow. */
static int phase_too_large(const struct kj_phase *ph, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(int_fields) / sizeof(int_fields[0]); i++) {
		int64_t v = *(const int64_t *)((const char *)ph + int_fields[i].off);
		if (v >= (int64_t)1 << 31 || v <= -((int64_t)1 << 31))
			return fail(err, errlen, int_fields[i].key, "too large", v);
	}
	return 0;
}

int kj_phase_format(const struct kj_phase *ph, char *buf, size_t len)
{
	size_t n = 0;
	int w = snprintf(buf, len, "type=%s precision=%s op=%s", kj_phase_kind_name(ph->kind),
			 ph->precision, ph->op[0] ? ph->op : "-");
	if (w < 0 || (size_t)w >= len)
		return KJ_EINVAL;
	n = (size_t)w;
	for (size_t i = 0; i < sizeof(int_fields) / sizeof(int_fields[0]); i++) {
		int64_t v = *(const int64_t *)((const char *)ph + int_fields[i].off);
		if (!v)
			continue;
		w = snprintf(buf + n, len - n, " %s=%" PRId64, int_fields[i].key, v);
		if (w < 0 || (size_t)w >= len - n)
			return KJ_EINVAL;
		n += (size_t)w;
	}
	/* the name last: it may hold any character but a newline */
	w = snprintf(buf + n, len - n, " name=%s", ph->name);
	if (w < 0 || (size_t)w >= len - n || strchr(ph->name, '\n'))
		return KJ_EINVAL;
	return (int)(n + (size_t)w);
}

int kj_phase_parse(const char *line, struct kj_phase *ph)
{
	memset(ph, 0, sizeof(*ph));
	const char *p = line;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		const char *eq = strchr(p, '=');
		if (!eq)
			return KJ_EINVAL;
		size_t kl = (size_t)(eq - p);
		const char *v = eq + 1;
		if (kl == 4 && !strncmp(p, "name", 4)) {
			size_t vl = strcspn(v, "\n");
			snprintf(ph->name, sizeof(ph->name), "%.*s", (int)vl, v);
			break;
		}
		size_t vl = strcspn(v, " \n");
		char val[64];
		snprintf(val, sizeof(val), "%.*s", (int)vl, v);
		if (kl == 4 && !strncmp(p, "type", 4)) {
			int k = kj_phase_kind_parse(val);
			if (k < 0)
				return KJ_EINVAL;
			ph->kind = (enum kj_phase_kind)k;
		} else if (kl == 9 && !strncmp(p, "precision", 9)) {
			snprintf(ph->precision, sizeof(ph->precision), "%.7s", val);
		} else if (kl == 2 && !strncmp(p, "op", 2)) {
			snprintf(ph->op, sizeof(ph->op), "%.31s", strcmp(val, "-") ? val : "");
		} else {
			size_t i;
			for (i = 0; i < sizeof(int_fields) / sizeof(int_fields[0]); i++)
				if (strlen(int_fields[i].key) == kl && !strncmp(p, int_fields[i].key, kl))
					break;
			if (i == sizeof(int_fields) / sizeof(int_fields[0]))
				return KJ_EINVAL;
			char *end;
			long long x = strtoll(val, &end, 10);
			if (end == val || *end)
				return KJ_EINVAL;
			*(int64_t *)((char *)ph + int_fields[i].off) = x;
		}
		p = v + vl;
	}
	return 0;
}
