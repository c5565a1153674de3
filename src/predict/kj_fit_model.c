/* kjoule fit's models: training a baseline form with or without trees, predicting with it, the
 * 5-fold cross-validation that chooses the form, and the error by size (kj_fit_model.h). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_fit_model.h"

const struct kj_fit_form kj_fit_forms[KJ_FIT_NFORMS] = {
	{KJ_BASE_FLOPS_BYTES, 1}, {KJ_BASE_SHAPE, 1}, {KJ_BASE_SHAPE, 0}, {KJ_BASE_SHAPE2, 0}, {KJ_BASE_SHAPE2, 1},
};

void kj_fitted_free(struct kj_fitted *m)
{
	kj_xgb_close(m->xm);
	m->xm = NULL;
}

/* train form (+ trees) on the rows of x (nf features each) whose log targets are ly */
int kj_fitted_train(int rounds, const float *x, const double *ly, int n, int nf, int ncols,
		 int form, int trees, struct kj_fitted *m)
{
	char err[1024];
	int p = kj_baseline_terms(form, x, ncols, m->w), rc = 0;
	double *A = malloc((size_t)n * p * sizeof(*A));
	float *r = malloc((n ? n : 1) * sizeof(*r));
	m->form = form;
	m->trees = trees;
	m->nw = p;
	m->xm = NULL;
	if (!A || !r) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++)
		kj_baseline_terms(form, &x[i * nf], ncols, &A[i * p]);
	if (kj_baseline_solve(A, ly, n, p, m->w)) {
		rc = 1; /* singular: this form cannot be fitted on these rows */
		goto out;
	}
	if (trees) {
		for (int i = 0; i < n; i++) {
			double b = 0;
			for (int k = 0; k < p; k++)
				b += m->w[k] * A[i * p + k];
			r[i] = (float)(ly[i] - b);
		}
		if ((rc = kj_xgb_train(x, r, n, nf, rounds, &m->xm, err, sizeof(err))))
			kj_errorf("fit: %s", err);
	}
out:
	free(A);
	free(r);
	return rc;
}

/* log predictions of m for n rows of x into out */
int kj_fitted_predict_log(struct kj_fitted *m, const float *x, int n, int nf, int ncols, double *out)
{
	char err[1024];
	double t[KJ_BASE_MAX];
	float *tr = NULL;
	if (m->trees) {
		if (!(tr = malloc((n ? n : 1) * sizeof(*tr))))
			return KJ_ENOMEM;
		if (kj_xgb_predict(m->xm, x, n, nf, tr, err, sizeof(err))) {
			kj_errorf("fit: %s", err);
			free(tr);
			return KJ_EIO;
		}
	}
	for (int i = 0; i < n; i++) {
		int p = kj_baseline_terms(m->form, &x[i * nf], ncols, t);
		double b = 0;
		for (int k = 0; k < p; k++)
			b += m->w[k] * t[k];
		out[i] = b + (tr ? tr[i] : 0.0);
	}
	free(tr);
	return 0;
}

/* out-of-fold log predictions of candidate c: oof[i] from a model of the other four folds;
 * -1: not fittable */
int kj_fit_oof_log(int rounds, const float *x, const double *ly, const int *fold, int n, int nf,
		   int ncols, int c, float *xt, double *yt, double *pr, double *oof)
{
	for (int k = 0; k < 5; k++) {
		int nt = 0, nk = 0;
		for (int i = 0; i < n; i++)
			if (fold[i] != k) {
				memcpy(&xt[nt * nf], &x[i * nf], nf * sizeof(*x));
				yt[nt++] = ly[i];
			}
		double tmp[KJ_BASE_MAX];
		if (nt == n || nt < 2 * kj_baseline_terms(kj_fit_forms[c].form, x, ncols, tmp))
			return -1; /* too few rows for this many weights */
		struct kj_fitted m;
		if (kj_fitted_train(rounds, xt, yt, nt, nf, ncols, kj_fit_forms[c].form, kj_fit_forms[c].trees, &m)) {
			kj_fitted_free(&m);
			return -1;
		}
		for (int i = 0; i < n; i++)
			if (fold[i] == k)
				memcpy(&xt[nk++ * nf], &x[i * nf], nf * sizeof(*x));
		int rc = kj_fitted_predict_log(&m, xt, nk, nf, ncols, pr);
		kj_fitted_free(&m);
		if (rc)
			return -1;
		nk = 0;
		for (int i = 0; i < n; i++)
			if (fold[i] == k)
				oof[i] = pr[nk++];
	}
	return 0;
}

/* mean absolute percentage error of candidate c over 5 folds of the n rows; -1: not fittable */
double kj_fit_cv_mape(int rounds, const float *x, const double *ly, const int *fold, int n,
		      int nf, int ncols, int c, float *xt, double *yt, double *pr, double *oof)
{
	if (n <= 0 || kj_fit_oof_log(rounds, x, ly, fold, n, nf, ncols, c, xt, yt, pr, oof))
		return -1;
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += fabs(exp(oof[i] - ly[i]) - 1.0);
	return 100.0 * sum / n;
}

/* The out-of-sample error by the size of the figure: rows grouped by their measured value in
 * half-decades (1-3.16, 3.16-10, 10-31.6 ... us or uJ), each row predicted by a model that did not
 * see it (the held-out fifth by the model of the training rows, pred; a training row by the 5-fold
 * cross-validation of the chosen form, oof in log, times the time model's figure, tlog, for an
 * energy model of power), the groups of at least 5 rows as [{from, to, n, mape_pct}]. Short
 * kernels can miss by several times a model's mean error (the GEMMs under 20 us: 10-28 % where
 * the rest reach 3-5 %, 72a7992:bench/results/predict_accuracy_ninth.json), so predict quotes
 * the error of the prediction's own size. */
json_t *kj_fit_error_by_size(const double *meas, const double *pred, const int *ho, int m, const double *oof,
			     const double *tlog)
{
	enum { LO = -20, NB = 60 };
	double sum[NB] = {0};
	int cnt[NB] = {0}, k = 0;
	for (int i = 0; i < m; i++) {
		double p = -1;
		if (ho[i])
			p = pred[i];
		else if (oof)
			p = exp(oof[k++] + (tlog ? tlog[i] : 0.0));
		if (!(p > 0) || !(meas[i] > 0) || !isfinite(p))
			continue;
		int b = (int)floor(2.0 * log10(meas[i])) - LO;
		b = b < 0 ? 0 : b >= NB ? NB - 1 : b;
		sum[b] += fabs(p - meas[i]) / meas[i] * 100.0;
		cnt[b]++;
	}
	json_t *a = json_array();
	for (int b = 0; b < NB; b++)
		if (cnt[b] >= 5)
			json_array_append_new(a, json_pack("{s:f,s:f,s:i,s:f}", "from", pow(10.0, (b + LO) / 2.0),
							   "to", pow(10.0, (b + LO + 1) / 2.0), "n", cnt[b],
							   "mape_pct", sum[b] / cnt[b]));
	return a;
}
