/* kjoule predict's output: an operator shape's prediction and a model's step, as text or JSON
 * (kj_predict_out.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kj_predict_out.h"
#include "kj_sweep.h"

/* What a --model total is the sum of, printed beside it: a measured step also holds the rest. */
#define MODEL_SCOPE                                                                               \
	"the sum of these operators' kernels: not in it are the GPU's idle time between kernels, "      \
	"communication other than the tp/dp all-reduces listed (none without tp or dp), overlap of "   \
	"communication with compute (the sum counts both whole), and kernels a framework runs beside " \
	"them (unfused losses, separate bias "                                                         \
	"gradients, slower norms: docs/sweep.md, 'Against a measured step')"

/* x with two decimals, or four significant digits from 1e7 on (no digit cut off); "-" when !ok */
static void fmt(char *buf, size_t len, double x, int ok)
{
	if (ok && isfinite(x))
		snprintf(buf, len, fabs(x) < 1e7 ? "%.2f" : "%.4g", x);
	else
		snprintf(buf, len, "-");
}

/* "; 10.31% at this size, 23 rows" where fit measured the error of figures of this size */
static void at_size(char *buf, size_t len, const struct kj_prediction *p)
{
	if (p->found && p->size_mape_pct >= 0 && isfinite(p->size_mape_pct))
		snprintf(buf, len, "; %.2f%% at this size, %d rows", p->size_mape_pct, p->size_n);
	else
		buf[0] = 0;
}

/* One line of predict_op's text: "  time    12.34 us   (held-out MAPE 0.50%; ...)", the error
 * unknown outside the measured grid, no figure where the model does not resolve one. */
static void print_target(FILE *f, const char *what, const char *unit, const struct kj_prediction *p)
{
	char v[32], mape[32], sz[96];
	if (!p->found) {
		fprintf(f, "  %-7s -  (no model)\n", what);
		return;
	}
	if (!p->resolved) {
		fprintf(f, "  %-7s no figure: %s\n", what, p->unresolved);
		return;
	}
	fmt(v, sizeof(v), p->value, 1);
	if (p->nout) {
		fprintf(f, "  %-7s %s %s   (error unknown outside the measured grid)\n", what, v, unit);
		return;
	}
	fmt(mape, sizeof(mape), p->mape_pct, p->mape_pct >= 0);
	at_size(sz, sizeof(sz), p);
	fprintf(f, "  %-7s %s %s   (held-out MAPE %s%%%s%s)\n", what, v, unit, mape, sz,
	       p->grid_known ? "" : "; the measured grid is unknown: models.json predates it, refit to check");
}

/* p's misses of the measured grid as JSON ([{column, value, min, max}]; null: not recorded) */
static json_t *outside_json(const struct kj_sweep_op *op, const struct kj_prediction *p)
{
	if (!p->found || !p->grid_known)
		return json_null();
	json_t *a = json_array();
	for (int i = 0; i < p->nout; i++)
		json_array_append_new(a, json_pack("{s:s,s:I,s:I,s:I}", "column", op->columns[p->out[i].col], "value",
						   (json_int_t)p->out[i].value, "min", (json_int_t)p->out[i].lo, "max",
						   (json_int_t)p->out[i].hi));
	return a;
}

/* the figure of p as JSON: null without a model or where the model does not resolve one */
static json_t *value_json(const struct kj_prediction *p)
{
	return kj_predict_num_or_null(p->value, p->found && p->resolved);
}

void kj_predict_op_write(FILE *f, const struct kj_op_prediction *o, const char *gpu, int precision,
			 int prop, const char *shape, int json)
{
	if (json) {
		json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "gpu", gpu, "op", o->op->name, "precision",
				      kj_precision_name(precision), "prop", prop ? "bwd" : "fwd", "shape", shape);
		json_object_set_new(j, "time_us", value_json(&o->t));
		json_object_set_new(j, "time_mape_pct", kj_predict_num_or_null(o->t.mape_pct, o->t.found && o->t.mape_pct >= 0));
		json_object_set_new(j, "energy_uj", value_json(&o->e));
		json_object_set_new(j, "energy_mape_pct", kj_predict_num_or_null(o->e.mape_pct, o->e.found && o->e.mape_pct >= 0));
		json_object_set_new(j, "time_mape_at_size_pct",
				    kj_predict_num_or_null(o->t.size_mape_pct, o->t.found && o->t.size_mape_pct >= 0));
		json_object_set_new(j, "time_rows_at_size", json_integer(o->t.found ? o->t.size_n : 0));
		json_object_set_new(j, "energy_mape_at_size_pct",
				    kj_predict_num_or_null(o->e.size_mape_pct, o->e.found && o->e.size_mape_pct >= 0));
		json_object_set_new(j, "energy_rows_at_size", json_integer(o->e.found ? o->e.size_n : 0));
		json_object_set_new(j, "in_grid", o->in_grid < 0 ? json_null() : json_boolean(o->in_grid));
		json_object_set_new(j, "time_outside_grid", outside_json(o->op, &o->t));
		json_object_set_new(j, "energy_outside_grid", outside_json(o->op, &o->e));
		json_object_set_new(j, "error_note", o->in_grid == 0 ? json_string("error unknown outside the measured grid")
						    : o->in_grid < 0 ? json_string("the measured grid is unknown: models.json "
									   "predates it, refit to check")
							     : json_null());
		json_object_set_new(j, "time_unresolved", o->t.found && !o->t.resolved ? json_string(o->t.unresolved) : json_null());
		json_object_set_new(j, "energy_unresolved", o->e.found && !o->e.resolved ? json_string(o->e.unresolved) : json_null());
		json_object_set_new(j, "implementation", o->implementation[0] ? json_string(o->implementation) : json_null());
		json_dumpf(j, f, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
		fprintf(f, "\n");
		json_decref(j);
		return;
	}
	fprintf(f, "%s %s %s %s on %s%s%s%s\n", o->op->name, kj_precision_name(precision), prop ? "bwd" : "fwd", shape, gpu,
	       o->implementation[0] ? " (fitted on " : "", o->implementation, o->implementation[0] ? ")" : "");
	print_target(f, "time", "us", &o->t);
	print_target(f, "energy", "uJ", &o->e);
	if (o->t_outside[0] || o->e_outside[0])
		fprintf(f, "  outside the measured grid: %s\n", o->t_outside[0] ? o->t_outside : o->e_outside);
	if (o->t_outside[0] && o->e_outside[0] && strcmp(o->t_outside, o->e_outside))
		fprintf(f, "  outside the energy model's grid: %s\n", o->e_outside);
}

/* One operator row of the step as JSON. */
static json_t *step_row_json(const struct kj_step_row *r)
{
	const struct kj_model_term *t = r->term;
	const struct kj_prediction *p = r->p;
	json_t *o = json_pack("{s:s,s:I,s:s}", "op", t->op->name, "count", (json_int_t)t->count, "shape",
			      r->shape);
	json_t *cols = json_array();
	for (int c = 0; c < t->op->ncolumns; c++)
		json_array_append_new(cols, json_string(t->op->columns[c]));
	json_object_set_new(o, "columns", cols);
	json_object_set_new(o, "backward", json_boolean(r->backward));
	json_object_set_new(o, "tier", json_string(kj_model_op_tier(t->op->name)));
	json_object_set_new(o, "fwd_us", kj_predict_num_or_null(p[0].value, r->ok[0]));
	json_object_set_new(o, "bwd_us", kj_predict_num_or_null(p[1].value, r->backward && r->ok[1]));
	json_object_set_new(o, "fwd_uj", kj_predict_num_or_null(p[2].value, r->ok[2]));
	json_object_set_new(o, "bwd_uj", kj_predict_num_or_null(p[3].value, r->backward && r->ok[3]));
	/* outside the grid its rows spanned the error is unknown; null: not recorded */
	json_object_set_new(o, "in_grid", r->out_k >= 0 ? json_false() : r->unknown || !r->any ? json_null() : json_true());
	json_object_set_new(o, "outside_grid", r->where[0] ? json_string(r->where) : json_null());
	return o;
}

void kj_predict_step_json(FILE *f, const struct kj_step_prediction *s, const char *path, json_t *against)
{
	const char *what = s->spec.train ? "training step" : "inference forward";
	json_t *rows = json_array();
	for (int i = 0; i < s->n; i++)
		json_array_append_new(rows, step_row_json(&s->rows[i]));
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:o}", "gpu", s->gpu, "model", path, "what", what,
			      "precision", kj_precision_name(s->spec.precision), "operators", rows);
	json_object_set_new(j, "time_us", kj_predict_num_or_null(s->time_us, !s->missing_t));
	json_object_set_new(j, "energy_uj", kj_predict_num_or_null(s->energy_uj, !s->missing_e));
	/* null, not 0, where no operator has a figure */
	json_object_set_new(j, "time_us_partial", kj_predict_num_or_null(s->time_us, s->time_us > 0));
	json_object_set_new(j, "energy_uj_partial", kj_predict_num_or_null(s->energy_uj, s->energy_uj > 0));
	json_object_set_new(j, "missing_models", json_string(s->missing));
	json_object_set_new(j, "unresolved", json_string(s->unresolved));
	json_object_set_new(j, "outside_grid", json_string(s->outside));
	json_object_set_new(j, "scope", json_string(MODEL_SCOPE));
	if (against)
		json_object_set(j, "against", against);
	json_dumpf(j, f, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
	fprintf(f, "\n");
	json_decref(j);
}

void kj_predict_step_print(FILE *f, const struct kj_step_prediction *s)
{
	const char *what = s->spec.train ? "training step" : "inference forward";
	fprintf(f, "%-31s %5s %-22s %12s %12s %14s %14s  %s\n", "operator", "count", "shape", "fwd us",
		"bwd us", "fwd uJ", "bwd uJ", "grid");
	for (int i = 0; i < s->n; i++) {
		const struct kj_step_row *r = &s->rows[i];
		const struct kj_prediction *p = r->p;
		char a[32], b[32], c[32], d[32];
		fmt(a, sizeof(a), p[0].value, r->ok[0]);
		fmt(b, sizeof(b), p[1].value, r->backward && r->ok[1]);
		fmt(c, sizeof(c), p[2].value, r->ok[2]);
		fmt(d, sizeof(d), p[3].value, r->backward && r->ok[3]);
		fprintf(f, "%-31s %5lld %-22s %12s %12s %14s %14s  %s\n", r->term->op->name,
			(long long)r->term->count, r->shape, a, b, c, d,
			r->out_k >= 0 ? "OUTSIDE" : r->unknown ? "unknown" : r->any ? "in" : "-");
	}
	char ts[48] = "- (no operator predicted)", es[48] = "- (no operator predicted)";
	if (s->time_us > 0)
		snprintf(ts, sizeof(ts), "%.3f ms%s", s->time_us / 1e3, s->missing_t ? " (partial)" : "");
	if (s->energy_uj > 0)
		snprintf(es, sizeof(es), "%.3f J%s", s->energy_uj / 1e6, s->missing_e ? " (partial)" : "");
	fprintf(f, "%s on %s: time %s, energy %s\n", what, s->gpu, ts, es);
	if (s->missing[0])
		fprintf(f, "no model for: %s (their rows show '-'; the totals leave them out)\n", s->missing);
	if (s->unresolved[0])
		fprintf(f, "no figure the model resolves (outside its measured grid) for: %s (their rows show '-'; "
			   "the totals leave them out)\n", s->unresolved);
	if (s->outside[0])
		fprintf(f, "outside the measured grid, error unknown: %s\n", s->outside);
	if (s->grid_unknown)
		fprintf(f, "grid 'unknown': models.json predates the record of the measured grid (refit to check "
			   "these shapes against it)\n");
	fprintf(f, "%s\n", MODEL_SCOPE);
}
