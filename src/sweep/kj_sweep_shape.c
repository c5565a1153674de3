/* The shape grid of a sweep config: the values of each column, their product in
 * itertools.product order, Megatron's divisibility rules, and parts of the grid. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_sweep.h"

int kj_sweep_axis_values(const struct kj_sweep_config *cfg, int col, int64_t *out, int cap)
{
	int n = 0;
	for (int64_t x = cfg->starts[col]; x <= cfg->ends[col];
	     x = cfg->mul[col] ? x * cfg->steps[col] : x + cfg->steps[col]) {
		if (n < cap && out)
			out[n] = x;
		n++;
		if (x > INT64_MAX / 4)
			break;
	}
	return n;
}

int64_t kj_sweep_grid_size(const struct kj_sweep_config *cfg)
{
	int64_t n = 1;
	for (int i = 0; i < cfg->ncols; i++) {
		n *= kj_sweep_axis_values(cfg, i, NULL, 0);
		if (n > ((int64_t)1 << 40))
			return n;
	}
	return n;
}

void kj_sweep_grid_at(const struct kj_sweep_config *cfg, int64_t idx, int64_t *v)
{
	for (int i = cfg->ncols - 1; i >= 0; i--) {
		int64_t n = kj_sweep_axis_values(cfg, i, NULL, 0);
		int64_t k = idx % n;
		idx /= n;
		int64_t x = cfg->starts[i];
		for (int64_t j = 0; j < k; j++)
			x = cfg->mul[i] ? x * cfg->steps[i] : x + cfg->steps[i];
		v[i] = x;
	}
}

static int col_of(const struct kj_sweep_op *op, const char *name)
{
	for (int i = 0; i < op->ncolumns; i++)
		if (!strcmp(op->columns[i], name))
			return i;
	return -1;
}

int kj_sweep_shape_valid(const struct kj_sweep_op *op, const int64_t *v, char *why, size_t len)
{
	int mp = col_of(op, "mp"), h = col_of(op, "h"), dim = col_of(op, "dim");
	int inter = col_of(op, "intermediate_size"), ex = col_of(op, "moe_num_experts");
	int topk = col_of(op, "top_k"), vocab = col_of(op, "vocab");
	const char *rule = NULL;
	if (mp >= 0 && h >= 0 && v[h] % v[mp])
		rule = "mp must divide h";
	else if (h >= 0 && dim >= 0 && v[dim] % v[h])
		rule = "h must divide dim";
	else if (mp >= 0 && dim >= 0 && v[dim] % v[mp])
		rule = "mp must divide dim";
	else if (mp >= 0 && inter >= 0 && v[inter] % v[mp])
		rule = "mp must divide intermediate_size";
	else if (mp >= 0 && vocab >= 0 && v[vocab] % v[mp])
		rule = "mp must divide vocab";
	else if (topk >= 0 && ex >= 0 && v[topk] > v[ex])
		rule = "top_k must not exceed moe_num_experts";
	else if (mp >= 0 && dim >= 0 && !strcmp(op->name, "embedding") && KJ_SWEEP_VOCAB % v[mp])
		rule = "mp must divide the vocabulary";
	else if (op->collective && v[0] < 2)
		rule = "a collective takes gpus >= 2";
	else if (op->collective && v[1] % 4)
		rule = "bytes must be a multiple of 4 (whole fp32 elements)";
	else if (op->collective && (!strcmp(op->name, "all_gather") || !strcmp(op->name, "reduce_scatter")) &&
		 v[1] % (4 * v[0]))
		rule = "bytes must be a multiple of 4 x gpus (whole fp32 elements a rank)";
	if (why && len)
		snprintf(why, len, "%s", rule ? rule : "");
	return rule == NULL;
}

int kj_sweep_shapes(const struct kj_sweep_config *cfg, int parts, int part, int64_t **out,
		    int64_t *n, int64_t *invalid)
{
	int64_t total = kj_sweep_grid_size(cfg), k = 0, valid = 0;
	int nc = cfg->ncols;
	int64_t v[KJ_SWEEP_MAX_COLS];

	*out = NULL;
	*n = 0;
	*invalid = 0;
	if (parts < 1 || part < 1 || part > parts)
		return KJ_EINVAL;
	int64_t cap = total / parts + 1;
	int64_t *buf = malloc((size_t)cap * nc * sizeof(*buf));
	if (!buf)
		return KJ_ENOMEM;
	for (int64_t i = 0; i < total; i++) {
		kj_sweep_grid_at(cfg, i, v);
		if (!kj_sweep_shape_valid(cfg->op, v, NULL, 0)) {
			(*invalid)++;
			continue;
		}
		if (valid++ % parts == part - 1 && k < cap)
			memcpy(buf + k++ * nc, v, nc * sizeof(*v));
	}
	*out = buf;
	*n = k;
	return 0;
}

int kj_sweep_shape_parse(const char *text, int ncols, int64_t *v)
{
	const char *s = text;
	char *end = (char *)text;
	for (int i = 0; i < ncols; i++) {
		errno = 0;
		if (*s < '0' || *s > '9')
			return -1;
		long long x = strtoll(s, &end, 10);
		if (errno || x < 1)
			return -1;
		v[i] = x;
		if (i < ncols - 1 && *end != ',')
			return -1;
		s = end + 1;
	}
	return *end ? -1 : 0;
}

void kj_sweep_shape_format(const int64_t *v, int ncols, char *buf, size_t len)
{
	size_t w = 0;
	buf[0] = '\0';
	for (int i = 0; i < ncols && w < len; i++)
		w += snprintf(buf + w, len - w, "%s%lld", i ? "," : "", (long long)v[i]);
}
