/* kjoule fit's model of an NCCL collective: the measured points themselves, per GPU count, and
 * between them the curve a collective follows (time = latency + bytes / bandwidth, with NCCL's
 * protocol changes in between) read piecewise-linearly in log(bytes)-log(figure). Kept in
 * models.json beside the regressors of the other operators ("kind": KJ_COLL_MODEL_KIND). */
#ifndef KJ_COLL_MODEL_H
#define KJ_COLL_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_sweep_op.h"

#define KJ_COLL_MODEL_KIND "collective_loglog"

/** One measured row of a collective: its shape (gpus, bytes) and one figure (us or uJ, > 0). */
struct kj_coll_row {
	int64_t gpus, bytes;
	double value;
};

/**
 * @brief The figure at b from n points of one GPU count (bytes ascending and distinct, values > 0,
 *        n >= 1): between two points, linear in log(bytes)-log(value) from the two nearest; below
 *        the least size, that size's figure (the latency floor); above the largest, the last
 *        segment's slope in bytes carried on (value = v_max + (b - b_max) / bw_last, bw_last =
 *        (b_max - b_prev) / (v_max - v_prev)), or, with one point or a last segment that does not
 *        rise, v_max x b / b_max (the last point's bandwidth).
 */
double kj_coll_interp(const int64_t *bytes, const double *val, int n, int64_t b);

/** What kj_coll_fit was asked to name and where it writes. */
struct kj_coll_fit_key {
	const char *gpu, *op, *precision, *prop, *target, *unit;
	const char *dir; /* the folder the model's .svg goes to */
	int quiet;       /* 0: one line printed, as fit prints for every model */
};

/**
 * @brief The models.json entry of one collective (time or energy) from its n rows (any order; a
 *        repeated shape keeps its first row): the points per GPU count, the shape range, and the
 *        leave-one-out error of the interior points (each predicted from the others of its GPU
 *        count, i.e. on a grid twice as coarse: "mape_test_pct", "n_test"). Writes DIR/NAME.svg
 *        (measured against leave-one-out predicted) and appends the entry to models.
 * @return 0; 1 when there are no rows (no model); a negative code after a message.
 */
int kj_coll_fit(const struct kj_coll_fit_key *k, struct kj_coll_row *rows, int n, json_t *models);

/**
 * @brief The figure of the collective entry e at shape v (gpus, bytes) into *value, and into *grid
 *        a new object holding that GPU count's own shape_range and measured_range (for
 *        kj_prediction_grid; the caller frees it). A GPU count that was not measured is refused
 *        naming the counts that were, KJ_EINVAL; a malformed entry names models_dir's index.
 */
int kj_coll_predict(const json_t *e, const char *models_dir, const struct kj_sweep_op *op, const int64_t *v,
		    double *value, json_t **grid, char *err, size_t len);

#endif
