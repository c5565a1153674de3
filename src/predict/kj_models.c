/* Predictions from a models folder: models.json names each model, its baseline weights and
 * held-out error; XGBoost files are loaded on first use and kept. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_coll_model.h"
#include "kj_error.h"
#include "kj_predict.h"
#include "kj_sweep.h"
#include "kj_xgb.h"

struct kj_models {
	char dir[2048];
	json_t *index;
	struct kj_xgb_model **loaded; /* one slot per index entry */
	size_t n;
};

int kj_models_open(const char *dir, struct kj_models **out, char *err, size_t len)
{
	char path[2200];
	json_error_t je;
	*out = NULL;
	snprintf(path, sizeof(path), "%s/models.json", dir);
	json_t *idx = json_load_file(path, 0, &je);
	if (!idx) {
		snprintf(err, len, "%s:%d: %s (run kjoule fit first, or give --models DIR)", path, je.line, je.text);
		return KJ_EIO;
	}
	json_t *models = json_object_get(idx, "models");
	if (!json_is_array(models)) {
		snprintf(err, len, "%s: no \"models\" list: not written by kjoule fit", path);
		json_decref(idx);
		return KJ_EINVAL;
	}
	struct kj_models *m = calloc(1, sizeof(*m));
	if (!m) {
		json_decref(idx);
		return KJ_ENOMEM;
	}
	snprintf(m->dir, sizeof(m->dir), "%s", dir);
	m->index = idx;
	m->n = json_array_size(models);
	m->loaded = calloc(m->n + 1, sizeof(*m->loaded));
	*out = m;
	return 0;
}

void kj_models_close(struct kj_models *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		kj_xgb_close(m->loaded[i]);
	free(m->loaded);
	json_decref(m->index);
	free(m);
}

const char *kj_models_only_gpu(const struct kj_models *m)
{
	json_t *models = json_object_get(m->index, "models"), *e;
	const char *gpu = NULL;
	size_t i;
	json_array_foreach(models, i, e) {
		const char *g = json_string_value(json_object_get(e, "gpu"));
		if (g && gpu && strcmp(g, gpu))
			return NULL;
		gpu = g ? g : gpu;
	}
	return gpu;
}

size_t kj_models_count(const struct kj_models *m)
{
	return json_array_size(json_object_get(m->index, "models"));
}

static int is(json_t *e, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(e, key));
	return v && !strcmp(v, want);
}

/* the out-of-sample error fit measured on rows of out->value's size (models.json
 * "mape_by_size"; models fitted before it have none: -1) */
static void size_error(json_t *by_size, struct kj_prediction *out)
{
	size_t i;
	json_t *b;
	json_array_foreach(by_size, i, b) {
		double from = json_number_value(json_object_get(b, "from"));
		double to = json_number_value(json_object_get(b, "to"));
		json_t *mp = json_object_get(b, "mape_pct"), *n = json_object_get(b, "n");
		if (out->value >= from && out->value < to && json_is_number(mp) && json_is_integer(n)) {
			out->size_mape_pct = json_number_value(mp);
			out->size_n = (int)json_integer_value(n);
			return;
		}
	}
}

/* What every model's prediction out carries besides its figure: the held-out errors of entry e,
 * and the grid (of grid: e itself, or a collective's GPU count) with what it takes away. */
static void found(const json_t *e, const json_t *grid, const struct kj_sweep_op *op, const char *target,
		  const int64_t *v, struct kj_prediction *out)
{
	json_t *mp = json_object_get(e, "mape_test_pct");
	out->mape_pct = json_is_number(mp) ? json_number_value(mp) : -1;
	if (isfinite(out->value))
		size_error(json_object_get(e, "mape_by_size"), out);
	/* outside the grid its rows spanned: no held-out error, and maybe no figure */
	kj_prediction_grid(grid, op, v, strcmp(target, "time") ? "uJ" : "us", out);
	const char *impl = json_string_value(json_object_get(e, "implementation"));
	snprintf(out->implementation, sizeof(out->implementation), "%s", impl ? impl : "");
	out->found = 1;
}

/* The index of models' entry for (gpu tag, op, precision, prop, target) into *at; 0 when none.
 * A collective's model serves every precision (its shape counts bytes): one fitted at another
 * precision is taken where none was fitted at this one. */
static int find_model(json_t *models, const char *tag, const char *op, const char *precision,
		      const char *prop, const char *target, size_t *at)
{
	json_t *e;
	size_t i;
	int other = 0;
	json_array_foreach(models, i, e) {
		if (!is(e, "gpu", tag) || !is(e, "op", op) || !is(e, "prop", prop) || !is(e, "target", target))
			continue;
		if (is(e, "precision", precision)) {
			*at = i;
			return 1;
		}
		if (!other && is(e, "kind", KJ_COLL_MODEL_KIND)) {
			*at = i;
			other = 1;
		}
	}
	return other;
}

int kj_models_predict(struct kj_models *m, const char *gpu, const struct kj_sweep_op *op,
		      int precision, int prop, const char *target, const int64_t *v,
		      struct kj_prediction *out, char *err, size_t len)
{
	json_t *models = json_object_get(m->index, "models"), *e;
	char tag[128];
	size_t i;
	kj_sweep_gpu_tag(gpu, tag, sizeof(tag));
	memset(out, 0, sizeof(*out));
	out->mape_pct = out->size_mape_pct = -1;
	if (!find_model(models, tag, op->name, kj_precision_name(precision), prop ? "bwd" : "fwd", target, &i))
		return 0;
	e = json_array_get(models, i);
	if (is(e, "kind", KJ_COLL_MODEL_KIND)) { /* a collective: its points, per GPU count */
		json_t *grid;
		int rc = kj_coll_predict(e, m->dir, op, v, &out->value, &grid, err, len);
		if (rc)
			return rc;
		found(e, grid, op, target, v, out);
		json_decref(grid);
		return 0;
	}
	json_t *fv = json_object_get(e, "features");
	if (json_integer_value(fv) != KJ_PREDICT_FEATURES) {
		snprintf(err, len, "%s/models.json: model %s was fitted on features version %lld, this "
			 "kjoule computes version %d: run kjoule fit again", m->dir,
			 json_string_value(json_object_get(e, "model")),
			 json_is_integer(fv) ? (long long)json_integer_value(fv) : 1LL, KJ_PREDICT_FEATURES);
		return KJ_EINVAL;
	}
	int form = kj_baseline_form(json_string_value(json_object_get(e, "baseline")));
	int trees = json_is_true(json_object_get(e, "trees"));
	json_t *w = json_object_get(e, "linear");
	if (form < 0 || !json_is_array(w)) {
		snprintf(err, len, "%s/models.json: model %s: no baseline form or weights", m->dir,
			 json_string_value(json_object_get(e, "svg")));
		return KJ_EINVAL;
	}
	if (trees && !m->loaded[i]) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", m->dir,
			 json_string_value(json_object_get(e, "model")));
		int rc = kj_xgb_open(path, &m->loaded[i], err, len);
		if (rc)
			return rc;
	}
	float f[KJ_PREDICT_NF], r = 0;
	double terms[KJ_BASE_MAX];
	int sm = (int)json_integer_value(json_object_get(e, "sm_count"));
	json_t *l2 = json_object_get(e, "l2_bytes");
	kj_predict_features(op, v, prop, kj_precision_bytes(precision), sm,
			    json_is_number(l2) ? json_number_value(l2) : -1.0, f);
	if (trees) {
		int rc = kj_xgb_predict(m->loaded[i], f, 1, KJ_PREDICT_NF, &r, err, len);
		if (rc)
			return rc;
	}
	int p = kj_baseline_terms(form, f, op->ncolumns, terms);
	if ((int)json_array_size(w) != p) {
		snprintf(err, len, "%s/models.json: model %s: %zu baseline weights, its form takes %d",
			 m->dir, json_string_value(json_object_get(e, "svg")), json_array_size(w), p);
		return KJ_EINVAL;
	}
	double lin = 0;
	for (int k = 0; k < p; k++)
		lin += json_number_value(json_array_get(w, k)) * terms[k];
	out->value = exp(lin + r);
	if (is(e, "predicts", "power_w")) { /* an energy model of power: times the time model's */
		struct kj_prediction tp;
		int rc = kj_models_predict(m, gpu, op, precision, prop, "time", v, &tp, err, len);
		if (rc)
			return rc;
		if (!tp.found)
			return 0; /* not found: no time, no energy */
		out->value *= tp.value;
	}
	found(e, e, op, target, v, out);
	return 0;
}
