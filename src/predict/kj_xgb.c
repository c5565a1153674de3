/* XGBoost through dlopen: the few C API declarations kjoule uses, written here by hand (from
 * xgboost/c_api.h, stable since 1.0), and thin wrappers that keep XGBoost's own error text. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_xgb.h"

typedef void *dmat_t;
typedef void *booster_t;

static struct {
	void *lib;
	const char *(*last_error)(void);
	int (*dm_from_mat)(const float *, uint64_t, uint64_t, float, dmat_t *);
	int (*dm_set_float)(dmat_t, const char *, const float *, uint64_t);
	int (*dm_free)(dmat_t);
	int (*create)(const dmat_t[], uint64_t, booster_t *);
	int (*free)(booster_t);
	int (*set_param)(booster_t, const char *, const char *);
	int (*update)(booster_t, int, dmat_t);
	int (*predict)(booster_t, dmat_t, int, unsigned, int, uint64_t *, const float **);
	int (*save)(booster_t, const char *);
	int (*load_model)(booster_t, const char *);
} X;

struct kj_xgb_model {
	booster_t b;
};

int kj_xgb_load(char *why, size_t len)
{
	static const char *const names[] = {"libxgboost.so.0", "libxgboost.so"};
	if (X.lib)
		return 0;
	for (size_t i = 0; i < 2 && !X.lib; i++)
		X.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!X.lib) {
		snprintf(why, len, "XGBoost's library is not installed (%s); on Debian: apt-get install "
			 "libxgboost0", dlerror());
		return KJ_ENODEV;
	}
#define SYM(field, name)                                                                      \
	do {                                                                                  \
		*(void **)&X.field = dlsym(X.lib, name);                                      \
		if (!X.field) {                                                               \
			snprintf(why, len, "libxgboost lacks %s", name);                      \
			dlclose(X.lib);                                                       \
			X.lib = NULL;                                                         \
			return KJ_ENODEV;                                                     \
		}                                                                             \
	} while (0)
	SYM(last_error, "XGBGetLastError");
	SYM(dm_from_mat, "XGDMatrixCreateFromMat");
	SYM(dm_set_float, "XGDMatrixSetFloatInfo");
	SYM(dm_free, "XGDMatrixFree");
	SYM(create, "XGBoosterCreate");
	SYM(free, "XGBoosterFree");
	SYM(set_param, "XGBoosterSetParam");
	SYM(update, "XGBoosterUpdateOneIter");
	SYM(predict, "XGBoosterPredict");
	SYM(save, "XGBoosterSaveModel");
	SYM(load_model, "XGBoosterLoadModel");
#undef SYM
	return 0;
}

static int xfail(char *err, size_t len, const char *what)
{
	snprintf(err, len, "XGBoost %s: %s", what, X.last_error ? X.last_error() : "?");
	return KJ_EINVAL;
}

int kj_xgb_train(const float *x, const float *y, int n, int nf, int rounds,
		 struct kj_xgb_model **out, char *err, size_t len)
{
	dmat_t d = NULL;
	booster_t b = NULL;
	int rc;
	*out = NULL;
	if ((rc = kj_xgb_load(err, len)))
		return rc;
	if (X.dm_from_mat(x, (uint64_t)n, (uint64_t)nf, NAN, &d))
		return xfail(err, len, "DMatrix");
	if (X.dm_set_float(d, "label", y, (uint64_t)n) || X.create(&d, 1, &b)) {
		X.dm_free(d);
		return xfail(err, len, "booster");
	}
	static const char *const params[][2] = {
		{"objective", "reg:squarederror"}, {"max_depth", "6"}, {"eta", "0.1"},
		{"nthread", "1"}, {"seed", "0"}, {"min_child_weight", "1"}, {"verbosity", "0"}};
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (X.set_param(b, params[i][0], params[i][1]))
			goto fail;
	/* studies only (bench/predict_accuracy/grouped_cv.py): KJ_FIT_XGB_PARAMS="name=value,..."
	 * sets XGBoost parameters over the defaults above */
	const char *extra = getenv("KJ_FIT_XGB_PARAMS");
	if (extra && *extra) {
		char buf[512], *save = NULL;
		snprintf(buf, sizeof(buf), "%s", extra);
		for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(kv, '=');
			if (!eq)
				continue;
			*eq = '\0';
			if (X.set_param(b, kv, eq + 1))
				goto fail;
		}
	}
	for (int it = 0; it < rounds; it++)
		if (X.update(b, it, d))
			goto fail;
	X.dm_free(d);
	*out = calloc(1, sizeof(**out));
	if (!*out) {
		X.free(b);
		return KJ_ENOMEM;
	}
	(*out)->b = b;
	return 0;
fail:
	rc = xfail(err, len, "training");
	X.free(b);
	X.dm_free(d);
	return rc;
}

int kj_xgb_predict(struct kj_xgb_model *m, const float *x, int n, int nf, float *out, char *err,
		   size_t len)
{
	dmat_t d = NULL;
	uint64_t got = 0;
	const float *res = NULL;
	if (X.dm_from_mat(x, (uint64_t)n, (uint64_t)nf, NAN, &d))
		return xfail(err, len, "DMatrix");
	if (X.predict(m->b, d, 0, 0, 0, &got, &res) || got != (uint64_t)n) {
		X.dm_free(d);
		return xfail(err, len, "prediction");
	}
	for (int i = 0; i < n; i++)
		out[i] = res[i];
	X.dm_free(d);
	return 0;
}

int kj_xgb_save(struct kj_xgb_model *m, const char *path, char *err, size_t len)
{
	return X.save(m->b, path) ? xfail(err, len, "save") : 0;
}

int kj_xgb_open(const char *path, struct kj_xgb_model **out, char *err, size_t len)
{
	booster_t b = NULL;
	int rc;
	*out = NULL;
	if ((rc = kj_xgb_load(err, len)))
		return rc;
	if (X.create(NULL, 0, &b))
		return xfail(err, len, "booster");
	if (X.load_model(b, path)) {
		rc = xfail(err, len, path);
		X.free(b);
		return rc;
	}
	*out = calloc(1, sizeof(**out));
	if (!*out) {
		X.free(b);
		return KJ_ENOMEM;
	}
	(*out)->b = b;
	return 0;
}

void kj_xgb_close(struct kj_xgb_model *m)
{
	if (!m)
		return;
	if (X.free)
		X.free(m->b);
	free(m);
}
