/* kjoule predict's model work: an operator shape, and a model's step operator by operator
 * (kj_predict_step.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_predict_step.h"
#include "kj_sweep.h"

json_t *kj_predict_num_or_null(double x, int ok)
{
	return ok && isfinite(x) ? json_real(x) : json_null();
}

/* in the measured grid: 1 inside (both models), 0 outside (either), -1 not recorded */
static int in_grid(const struct kj_prediction *t, const struct kj_prediction *e)
{
	if ((t->found && t->nout) || (e->found && e->nout))
		return 0;
	return (!t->found || t->grid_known) && (!e->found || e->grid_known) ? 1 : -1;
}

int kj_predict_op(struct kj_models *m, const char *gpu, const struct kj_sweep_op *op, int precision,
		  int prop, const int64_t *v, struct kj_op_prediction *out, char *err, size_t len)
{
	memset(out, 0, sizeof(*out));
	out->op = op;
	if (kj_models_predict(m, gpu, op, precision, prop, "time", v, &out->t, err, len) ||
	    kj_models_predict(m, gpu, op, precision, prop, "energy", v, &out->e, err, len))
		return KJ_EINVAL;
	out->in_grid = in_grid(&out->t, &out->e);
	out->implementation = out->t.found && out->t.implementation[0] ? out->t.implementation
								       : out->e.implementation;
	kj_prediction_outside(op, &out->t, out->t_outside, sizeof(out->t_outside));
	kj_prediction_outside(op, &out->e, out->e_outside, sizeof(out->e_outside));
	return 0;
}

/* term op's step total (count x fwd, + bwd where it has one) into the tier sums */
static int add_to_tier(struct kj_tier_sum *ts, int n, const char *op, double t, int t_ok, double e, int e_ok)
{
	const char *tier = kj_model_op_tier(op);
	int i = 0;
	while (i < n && strcmp(ts[i].tier, tier))
		i++;
	if (i == n) {
		memset(&ts[i], 0, sizeof(ts[i]));
		ts[i].tier = tier;
		ts[i].time_ok = ts[i].energy_ok = 1;
		n++;
	}
	size_t used = strlen(ts[i].ops);
	if (used + strlen(op) + 3 < sizeof(ts[i].ops))
		snprintf(ts[i].ops + used, sizeof(ts[i].ops) - used, "%s%s", used ? ", " : "", op);
	ts[i].time_us += t;
	ts[i].energy_uj += e;
	ts[i].time_ok &= t_ok;
	ts[i].energy_ok &= e_ok;
	return n;
}

/* The four predictions of term i into s->rows[i], the missing and unresolved lists, the outside
 * list and the tier sums. KJ_EINVAL with err set when a model could not be evaluated. */
static int predict_term(struct kj_models *m, struct kj_step_prediction *s, int i, char *err, size_t len)
{
	const struct kj_model_term *t = &s->terms[i];
	struct kj_step_row *r = &s->rows[i];
	struct kj_prediction *p = r->p;
	r->term = t;
	kj_sweep_shape_format(t->v, t->op->ncolumns, r->shape, sizeof(r->shape));
	for (int k = 0; k < 4; k++) {
		int prop = k % 2;
		memset(&p[k], 0, sizeof(p[k]));
		if (prop == 1 && (t->fwd_only || !s->spec.train))
			continue;
		if (kj_models_predict(m, s->gpu, t->op, s->spec.precision, prop, k < 2 ? "time" : "energy",
				      t->v, &p[k], err, len))
			return KJ_EINVAL;
		if (!p[k].found || !p[k].resolved) { /* no figure: the totals leave it out */
			s->missing_t += k < 2;
			s->missing_e += k >= 2;
			char *list = p[k].found ? s->unresolved : s->missing;
			if (!strstr(list, t->op->name) && strlen(list) + 64 < sizeof(s->missing))
				snprintf(list + strlen(list), sizeof(s->missing) - strlen(list), "%s%s",
					 list[0] ? ", " : "", t->op->name);
		}
	}
	int need_b = s->spec.train && !t->fwd_only;
	double v[4]; /* what was predicted, per call: time fwd, bwd, energy fwd, bwd */
	r->backward = need_b;
	r->out_k = -1;
	for (int k = 0; k < 4; k++) {
		int used = k % 2 == 0 || need_b;
		r->ok[k] = p[k].found && p[k].resolved;
		v[k] = r->ok[k] && used ? p[k].value : 0.0;
		if (used && p[k].found && p[k].nout && (r->out_k < 0 || p[k].nout > p[r->out_k].nout))
			r->out_k = k;
		r->unknown |= used && p[k].found && !p[k].grid_known;
		r->any |= used && p[k].found;
	}
	s->grid_unknown |= r->unknown;
	if (r->out_k >= 0) { /* how far outside the measured grid the shape lies */
		kj_prediction_outside(t->op, &p[r->out_k], r->where, sizeof(r->where));
		size_t used = strlen(s->outside);
		if (used + strlen(r->where) + 64 < sizeof(s->outside))
			snprintf(s->outside + used, sizeof(s->outside) - used, "%s%s (%s)", used ? "; " : "",
				 t->op->name, r->where);
	}
	s->ntiers = add_to_tier(s->tiers, s->ntiers, t->op->name, t->count * (v[0] + v[1]),
				r->ok[0] && (!need_b || r->ok[1]), t->count * (v[2] + v[3]),
				r->ok[2] && (!need_b || r->ok[3]));
	return 0;
}

int kj_predict_step(struct kj_models *m, const char *gpu, const char *path,
		    struct kj_step_prediction **out, char *err, size_t len)
{
	struct kj_step_prediction *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return KJ_ENOMEM;
	if (kj_model_load(path, &s->spec, err, len)) {
		free(s);
		return KJ_EINVAL;
	}
	s->gpu = gpu ? gpu : s->spec.gpu[0] ? s->spec.gpu : kj_models_only_gpu(m);
	if (!s->gpu) {
		snprintf(err, len, "%s: give --gpu NAME",
			 kj_models_count(m) ? "the models hold several GPUs" : "models.json lists no model");
		free(s);
		return KJ_ENOTFOUND;
	}
	s->n = kj_model_terms(&s->spec, s->terms, KJ_STEP_MAX_TERMS);
	for (int i = 0; i < s->n; i++) {
		if (predict_term(m, s, i, err, len)) {
			free(s);
			return KJ_EINVAL;
		}
	}
	for (int i = 0; i < s->ntiers; i++) /* of what was predicted: partial where something is missing */
		s->time_us += s->tiers[i].time_us, s->energy_uj += s->tiers[i].energy_uj;
	*out = s;
	return 0;
}
