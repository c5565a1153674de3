/* kjoule fit's models: a least-squares baseline of log y in one of kj_baseline's forms, with or
 * without XGBoost trees on its residual; training, prediction and the cross-validation that
 * chooses among the forms. */
#ifndef KJ_FIT_MODEL_H
#define KJ_FIT_MODEL_H

#include <jansson.h>

#include "kj_predict.h"
#include "kj_xgb.h"

/* one fitted model: a baseline form with its weights, and trees on what it leaves (or none) */
struct kj_fitted {
	int form, trees, nw;
	double w[KJ_BASE_MAX];
	struct kj_xgb_model *xm;
};

/* the forms the cross-validation chooses from; the first is the one for too few rows */
struct kj_fit_form {
	int form, trees;
};
#define KJ_FIT_NFORMS 5
extern const struct kj_fit_form kj_fit_forms[KJ_FIT_NFORMS];

void kj_fitted_free(struct kj_fitted *m);
/** @brief Train form (+ trees, `rounds` of them) on n rows of x (nf features each, ncols shape
 *  columns) whose log targets are ly; 1 when the baseline is singular on these rows. */
int kj_fitted_train(int rounds, const float *x, const double *ly, int n, int nf, int ncols, int form, int trees,
		    struct kj_fitted *m);
/** @brief Log predictions of m for n rows of x into out. */
int kj_fitted_predict_log(struct kj_fitted *m, const float *x, int n, int nf, int ncols, double *out);
/** @brief Out-of-fold log predictions of form c into oof (n rows): each row's from a model of
 *  the other four folds (fold[i] in 0..4); -1 when the form cannot be fitted on them. xt, yt, pr:
 *  scratch of n rows. */
int kj_fit_oof_log(int rounds, const float *x, const double *ly, const int *fold, int n, int nf,
		   int ncols, int c, float *xt, double *yt, double *pr, double *oof);
/** @brief Mean absolute percentage error of those out-of-fold predictions (left in oof); -1 when
 *  the form cannot be fitted. */
double kj_fit_cv_mape(int rounds, const float *x, const double *ly, const int *fold, int n, int nf, int ncols,
		      int c, float *xt, double *yt, double *pr, double *oof);
/** @brief fit's out-of-sample error by the size of the figure (half-decades of the measured value):
 *  the held-out rows (ho) by pred, the training rows, in order, by exp(oof + tlog) where oof is
 *  given (tlog NULL: 0); the bins of at least 5 rows as [{from, to, n, mape_pct}]. */
json_t *kj_fit_error_by_size(const double *meas, const double *pred, const int *ho, int m, const double *oof,
			     const double *tlog);

#endif
