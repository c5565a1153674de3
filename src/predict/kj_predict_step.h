/* kjoule predict's model work: one operator shape's time and energy, and a model's step (a
 * transformer from MODEL.yml) predicted operator by operator, summed overall and per kernel tier,
 * with what is missing, unresolved or outside the measured grid named. No output here: the report
 * floor writes these (kj_predict_out.h). */
#ifndef KJ_PREDICT_STEP_H
#define KJ_PREDICT_STEP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_predict.h"

/* One kernel tier's share of the operator sum: the operators that land there and their time and
 * energy a step (ok: every one of them predicted). */
struct kj_tier_sum {
	const char *tier;
	char ops[256];
	double time_us, energy_uj;
	int time_ok, energy_ok;
};

/** @brief x as a JSON number, or null when !ok or x is not finite (never NaN or inf). */
json_t *kj_predict_num_or_null(double x, int ok);

/** One operator shape predicted (kj_predict_op). */
struct kj_op_prediction {
	const struct kj_sweep_op *op;
	struct kj_prediction t, e;  /* time (us) and energy (uJ); found 0: no model */
	int in_grid;                /* 1 inside the measured grid (both models), 0 outside (either),
				     * -1 not recorded */
	const char *implementation; /* what the models' rows ran (into t or e); "" not named */
	char t_outside[512], e_outside[512]; /* how far outside each model's grid ("" inside) */
};

/**
 * @brief Time and energy of op at shape v (precision, prop 0 fwd / 1 bwd) on gpu from m.
 * @return 0 (out filled; neither model found is for the caller to judge), or KJ_EINVAL with err
 * saying why a model could not be evaluated.
 */
int kj_predict_op(struct kj_models *m, const char *gpu, const struct kj_sweep_op *op, int precision,
		  int prop, const int64_t *v, struct kj_op_prediction *out, char *err, size_t len);

#define KJ_STEP_MAX_TERMS 32

/** One operator term of a step: its four predictions, per call (time fwd, bwd, energy fwd, bwd). */
struct kj_step_row {
	const struct kj_model_term *term;
	char shape[128];
	int backward;          /* the step runs its backward (a training step, not fwd_only) */
	struct kj_prediction p[4];
	int ok[4];             /* p[k] found and resolved */
	int out_k;             /* the prediction furthest outside its grid; -1 none */
	int unknown;           /* a model used has no recorded grid */
	int any;               /* a model used was found */
	char where[512];       /* how far outside the grid (out_k's), "" inside */
};

/** A model's step predicted: rows in term order, sums of what was predicted (partial where a
 *  figure is missing: missing_* count them), per tier, and the lists the totals leave out. */
struct kj_step_prediction {
	struct kj_model_spec spec;
	const char *gpu;       /* --gpu, the model's gpu, or the models' only GPU (borrowed) */
	struct kj_model_term terms[KJ_STEP_MAX_TERMS];
	struct kj_step_row rows[KJ_STEP_MAX_TERMS];
	int n;
	struct kj_tier_sum tiers[KJ_STEP_MAX_TERMS];
	int ntiers;
	double time_us, energy_uj;
	int missing_t, missing_e; /* predictions without a figure, time and energy */
	char missing[1024];       /* operators without a model, ", "-separated */
	char unresolved[1024];    /* operators whose model resolves no figure */
	char outside[2048];       /* "op (where); ..." of operators outside their grid */
	int grid_unknown;         /* a model used has no recorded grid */
};

/**
 * @brief Load MODEL.yml at path and predict its step from m on gpu (NULL: the model's gpu, else
 * the models' only GPU). *out is malloc'ed (caller frees). @return 0; KJ_EINVAL with err set
 * (a bad model file, a model that could not be evaluated); KJ_ENOTFOUND when no GPU can be
 * chosen (err says why: give --gpu); KJ_ENOMEM.
 */
int kj_predict_step(struct kj_models *m, const char *gpu, const char *path,
		    struct kj_step_prediction **out, char *err, size_t len);

#endif
