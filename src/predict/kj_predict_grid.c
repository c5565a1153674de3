/* What a prediction may claim: the shape read field by field, the range of shapes a model was
 * fitted on (models.json's shape_range) against the shape asked for, and whether the figure is one
 * the model resolves. Outside the measured grid no held-out error applies. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_predict.h"

int kj_predict_shape_parse(const struct kj_sweep_op *op, const char *text, int64_t *v, char *err, size_t len)
{
	char cols[256] = "";
	int n = 1;
	for (const char *c = text; *c; c++)
		n += *c == ',';
	for (int i = 0; i < op->ncolumns; i++)
		snprintf(cols + strlen(cols), sizeof(cols) - strlen(cols), "%s%s", i ? "," : "", op->columns[i]);
	if (n != op->ncolumns) {
		snprintf(err, len, "%d value%s; %s takes %d: %s", n, n == 1 ? "" : "s", op->name, op->ncolumns, cols);
		return KJ_EINVAL;
	}
	const char *s = text;
	for (int i = 0; i < n; i++) {
		const char *end = strchr(s, ',');
		size_t w = end ? (size_t)(end - s) : strlen(s);
		char field[32];
		snprintf(field, sizeof(field), "%.*s", (int)(w < sizeof(field) - 1 ? w : sizeof(field) - 1), s);
		int digits = w > 0;
		for (size_t k = 0; k < w; k++)
			digits &= s[k] >= '0' && s[k] <= '9';
		errno = 0;
		long long x = digits ? strtoll(s, NULL, 10) : 0;
		if (!digits || errno || x < 1) {
			snprintf(err, len, "column '%s' (%d of %d): '%s%s' is %s", op->columns[i], i + 1, n, field,
				 w >= sizeof(field) ? "..." : "", digits && errno ? "too large" : "not a positive integer");
			return KJ_EINVAL;
		}
		v[i] = x;
		s += w + 1;
	}
	return 0;
}

void kj_prediction_grid(const json_t *e, const struct kj_sweep_op *op, const int64_t *v, const char *unit,
			struct kj_prediction *p)
{
	const json_t *r = json_object_get(e, "shape_range"), *mr = json_object_get(e, "measured_range");
	p->grid_known = json_is_object(r);
	p->nout = 0;
	for (int j = 0; p->grid_known && j < op->ncolumns; j++) {
		const json_t *a = json_object_get(r, op->columns[j]);
		p->grid_known = json_array_size(a) == 2 && json_is_integer(json_array_get(a, 0)) &&
				json_is_integer(json_array_get(a, 1));
	}
	for (int j = 0; p->grid_known && j < op->ncolumns; j++) {
		const json_t *a = json_object_get(r, op->columns[j]);
		int64_t lo = json_integer_value(json_array_get(a, 0)), hi = json_integer_value(json_array_get(a, 1));
		if (v[j] < lo || v[j] > hi)
			p->out[p->nout++] = (struct kj_grid_miss){.col = j, .value = v[j], .lo = lo, .hi = hi};
	}
	p->measured_min = json_is_number(json_array_get(mr, 0)) && json_number_value(json_array_get(mr, 0)) > 0
				  ? json_number_value(json_array_get(mr, 0))
				  : -1;
	if (p->nout) { /* the held-out rows lie inside the grid: their error says nothing here */
		p->mape_pct = p->size_mape_pct = -1;
		p->size_n = 0;
	}
	p->unresolved[0] = '\0';
	if (!isfinite(p->value) || !(p->value > 0))
		snprintf(p->unresolved, sizeof(p->unresolved), "not a finite figure: the model does not resolve this "
			 "shape%s", p->nout ? " so far outside its measured grid" : "");
	else if (p->value < KJ_PREDICT_RESOLUTION)
		snprintf(p->unresolved, sizeof(p->unresolved), "below %.2f %s: under what the model resolves",
			 KJ_PREDICT_RESOLUTION, unit);
	else if (p->nout && p->measured_min > 0 && p->value < p->measured_min)
		snprintf(p->unresolved, sizeof(p->unresolved), "below %.3g %s, the least its rows measured, outside "
			 "the measured grid: under what the model resolves", p->measured_min, unit);
	p->resolved = !p->unresolved[0];
}

/* a factor as "3815", "12.5" or "2.5e+08" */
static void factor_text(double f, char *buf, size_t len)
{
	snprintf(buf, len, f >= 100 && f < 1e7 ? "%.0f" : "%.3g", f);
}

void kj_prediction_outside(const struct kj_sweep_op *op, const struct kj_prediction *p, char *buf, size_t len)
{
	size_t w = 0;
	buf[0] = '\0';
	for (int i = 0; i < p->nout && w < len; i++) {
		const struct kj_grid_miss *m = &p->out[i];
		char f[32];
		int above = m->value > m->hi;
		factor_text(above ? (double)m->value / (double)m->hi : (double)m->lo / (double)m->value, f, sizeof(f));
		int n = snprintf(buf + w, len - w, "%s%s=%lld is %sx %s %lld", i ? "; " : "", op->columns[m->col],
				 (long long)m->value, f, above ? "the largest measured" : "under the least measured",
				 (long long)(above ? m->hi : m->lo));
		w += n > 0 ? (size_t)n : 0;
	}
}
