/* XGBoost's C API reached through dlopen("libxgboost.so.0"): kjoule builds without it and only
 * fit and predict need it (Debian: libxgboost0; CPU-only, no CUDA). */
#ifndef KJ_XGB_H
#define KJ_XGB_H

#include <stddef.h>

struct kj_xgb_model;

/** @brief Load the library once; 0, or KJ_ENODEV with why filled. */
int kj_xgb_load(char *why, size_t len);
/**
 * @brief Train a regressor (squared error, depth 6, eta 0.1, `rounds` rounds, one thread, seed 0)
 * on n rows of nf features (row-major) and targets y. *out owned by the caller.
 */
int kj_xgb_train(const float *x, const float *y, int n, int nf, int rounds,
		 struct kj_xgb_model **out, char *err, size_t len);
/** @brief Predictions for n rows into out. */
int kj_xgb_predict(struct kj_xgb_model *m, const float *x, int n, int nf, float *out, char *err,
		   size_t len);
int kj_xgb_save(struct kj_xgb_model *m, const char *path, char *err, size_t len);
int kj_xgb_open(const char *path, struct kj_xgb_model **out, char *err, size_t len);
/** @brief Free a model; accepts NULL. */
void kj_xgb_close(struct kj_xgb_model *m);

#endif
