/* Regressors of operator time and energy: features from the operator table, `kjoule fit`'s
 * training over sweep CSVs, and predictions from the saved models (MODELS_DIR/models.json). */
#ifndef KJ_PREDICT_H
#define KJ_PREDICT_H

#include <stddef.h>
#include <stdint.h>

#include "kj_sweep_op.h"

/* log FLOPs (times the imbalance of the busiest SM or thread, or a GEMM's tile padding), log
 * bytes, waves (ceil), wave tail, log of the bytes over the L2's size, a GEMM's N and K alignment
 * (log2 of the largest power of two dividing each, at most 64 elements), then the log of each
 * shape column */
#define KJ_PREDICT_COL0 7
#define KJ_PREDICT_NF (KJ_PREDICT_COL0 + KJ_SWEEP_MAX_COLS)
/* the features' version, kept with each model: a model fitted on other features is refused */
#define KJ_PREDICT_FEATURES 9

/** @brief SMs of a GPU from kjoule's table of known GPUs, matched on the file-name tag
 *  ("NVIDIAH100PCIe" -> 114, "NVIDIAH20080GB..." -> 132); -1 when unknown. */
int kj_predict_sm_count(const char *gpu_tag);
/** @brief L2 bytes of a known GPU from the same table; -1 when unknown. */
double kj_predict_l2_bytes(const char *gpu_tag);
/** @brief Work units (GEMM output tiles of 128x128, attention query blocks, or blocks of 2048
 *  elements for the rest) one call launches; waves are units / SMs. */
double kj_predict_units(const struct kj_sweep_op *op, const int64_t *v, int prop, int elem_bytes);
/** @brief How much longer the busiest part of the GPU works than evenly spread work would take:
 *  causal attention's CTAs differ in work (a greedy schedule of them in launch order on sm_count
 *  SMs) and compute whole tiles of queries and keys, the row kernels' threads take whole 16-byte
 *  packs (softmax's forward: whole packs a lane of its warp), a GEMM's tiles cover more than its M x N x K (whole tiles, k-steps of 64); 1 where work
 *  is even. */
double kj_predict_imbalance(const struct kj_sweep_op *op, const int64_t *v, int prop, int elem_bytes,
			    int sm_count);
/** @brief Features of one call into f (KJ_PREDICT_NF floats; missing ones NaN); sm_count <= 0
 *  leaves the wave features missing, l2_bytes <= 0 the cache one. */
void kj_predict_features(const struct kj_sweep_op *op, const int64_t *v, int prop, int elem_bytes,
			 int sm_count, double l2_bytes, float *f);

/* baseline forms: log y on [1, log FLOPs, log bytes], + the log shape columns, + their products */
enum { KJ_BASE_FLOPS_BYTES, KJ_BASE_SHAPE, KJ_BASE_SHAPE2, KJ_BASE_FORMS };
#define KJ_BASE_MAX (3 + KJ_SWEEP_MAX_COLS + KJ_SWEEP_MAX_COLS * (KJ_SWEEP_MAX_COLS + 1) / 2)
const char *kj_baseline_name(int form);
/** @brief The form of a name kj_baseline_name gives; -1 when unknown. */
int kj_baseline_form(const char *name);
/** @brief The baseline's regressors of one row of features f into out; returns their count. */
int kj_baseline_terms(int form, const float *f, int ncols, double *out);
/** @brief Ridge least squares of y on the n x p row-major A into w; -1 when singular. */
int kj_baseline_solve(const double *A, const double *y, int n, int p, double *w);

struct kj_fit_opts {
	const char *data_dir;
	const char *gpu;      /* only this GPU's CSVs; NULL: all */
	const char *out_dir;
	int sm_count;         /* > 0: overrides the known-GPU table */
	int rounds;           /* boosting rounds (default 200) */
	int quiet;
};
/**
 * @brief Train one model per (GPU, operator, precision, fwd/bwd, time/energy) found in the CSVs
 * of data_dir; writes out_dir/{name}.json (XGBoost), {name}.svg (predicted against measured)
 * and out_dir/models.json (index with held-out errors). Prints one line per model.
 */
int kj_fit_run(const struct kj_fit_opts *o);

/* The least figure predict prints (two decimals): a prediction under it is shown as no figure. */
#define KJ_PREDICT_RESOLUTION 0.01

/** One shape column outside the range the model's rows spanned. */
struct kj_grid_miss {
	int col;               /* the operator's column */
	int64_t value, lo, hi; /* the shape's value; the least and largest the rows measured */
};

/** One prediction: value (us or uJ), the model's held-out MAPE (-1 when not known, and outside
 *  the measured grid, where no held-out error applies), and the out-of-sample MAPE of the model's
 *  rows of the prediction's size (the half-decade of values it falls in; -1 when fit had fewer
 *  than 5 rows there, or outside the grid) with their count. */
struct kj_prediction {
	double value;
	double mape_pct;
	double size_mape_pct;
	int size_n;
	int found;               /* a model of this key exists and was evaluated */
	int resolved;            /* value is a figure to show: finite, at least KJ_PREDICT_RESOLUTION,
				  * and outside the grid not below the least figure the rows measured;
				  * 0: unresolved says why */
	int grid_known;          /* models.json records the shape range the model was fitted on
				  * (models fitted before it: 0, the range unknown) */
	int nout;                /* the shape's columns outside that range: the error is unknown */
	struct kj_grid_miss out[KJ_SWEEP_MAX_COLS];
	double measured_min;     /* the least figure of the model's rows; -1 not recorded */
	char unresolved[192];
	char implementation[64]; /* the implementation its rows ran (models.json), '' not named */
};
struct kj_models;
/** @brief Read models_dir/models.json; err names the file on failure. */
int kj_models_open(const char *models_dir, struct kj_models **out, char *err, size_t len);
void kj_models_close(struct kj_models *m);
/** @brief The GPU the models are for when there is exactly one, else NULL. */
const char *kj_models_only_gpu(const struct kj_models *m);
/** @brief How many models the index holds (0: predict can name no GPU by itself). */
size_t kj_models_count(const struct kj_models *m);
/** @brief Predict op at shape v; target "time" or "energy". found = 0 when no model; outside the
 *  shape range models.json records, out->nout > 0 and no held-out error is given. */
int kj_models_predict(struct kj_models *m, const char *gpu, const struct kj_sweep_op *op,
		      int precision, int prop, const char *target, const int64_t *v,
		      struct kj_prediction *out, char *err, size_t len);

/** @brief The text of --shape into v (op->ncolumns values), naming the column of a value that is
 *  no positive integer ("column 'b' (2 of 4): '0' is not a positive integer") or the count
 *  ("3 values; linear1 takes 4: mp,b,l,dim") in err; 0 or KJ_EINVAL. */
int kj_predict_shape_parse(const struct kj_sweep_op *op, const char *text, int64_t *v, char *err, size_t len);
/** @brief The range fields of a models.json entry (shape_range, measured_range) against shape v
 *  into p's grid_known, nout, out and measured_min; then resolved and unresolved from p->value
 *  (unit "us" or "uJ" for the text); outside the range the held-out errors are taken away. */
struct json_t; /* jansson's */
void kj_prediction_grid(const struct json_t *entry, const struct kj_sweep_op *op, const int64_t *v, const char *unit,
			struct kj_prediction *p);
/** @brief How far outside the measured grid p's shape lies ("b=1000000000 is 2.5e+08x the largest
 *  measured 4; l=3 is 85x under the least measured 256") into buf; '' inside it or unknown. */
void kj_prediction_outside(const struct kj_sweep_op *op, const struct kj_prediction *p, char *buf, size_t len);

/** @brief An SVG scatter of predicted against measured (log-log), held-out points marked. */
int kj_svg_scatter(const char *path, const char *title, const char *unit, const double *meas,
		   const double *pred, const int *heldout, int n);


/* ---- a transformer as a sum of operators ------------------------------------------------- */
/** A GPT-style model (Megatron layout) read from MODEL.yml. */
struct kj_model_spec {
	int64_t layers, hidden, heads, seq, batch, mp;
	int64_t tp, dp;   /* tensor- and data-parallel sizes (tp, when given, is mp); 1: none */
	int precision;
	int train;        /* 1: a training step (fwd + bwd + optimizer), 0: an inference forward */
	int adam;         /* optimizer: adam (1) or none (0) */
	int rms;          /* norm: RMSlayernorm (1) or layernorm (0) */
	int rope;         /* rotary embeddings on q and k */
	int flash;        /* attention: flash_atten (1) or baddbmm + masked softmax + bmm (0) */
	int master_copies; /* the optimizer leaves the half copies to separate casts (master_copies) */
	int swiglu;       /* ffn: swiglu (LLaMA's gated FFN of width intermediate) or gelu (4 x hidden) */
	int64_t intermediate; /* the gated FFN's width (ffn: swiglu); 0 otherwise */
	int64_t vocab;    /* the output layer's vocabulary (lm_head); 0: the table's linear_final */
	int lm_head_replicated; /* lm_head: replicated (every rank holds all of it) or parallel */
	char gpu[128];    /* optional */
};
/** One operator of the model: its shape and how many times a step calls it. */
struct kj_model_term {
	const struct kj_sweep_op *op;
	int64_t v[KJ_SWEEP_MAX_COLS];
	int64_t count;
	int fwd_only;     /* the optimizer and the collectives: calls of their own, no backward */
};
/** @brief Read MODEL.yml (a mapping of scalars); err "FILE:LINE: key 'K': ..." on failure. */
int kj_model_load(const char *path, struct kj_model_spec *m, char *err, size_t len);
/** @brief The operator terms of one step into t (at most cap); returns their number. With tp > 1
 *  they include the tensor-parallel all-reduces (2 a layer in each forward, and 2 a layer in each
 *  backward of a training step, of batch x seq x hidden elements), with dp > 1 the data-parallel
 *  gradient all-reduce of a training step in DDP's 25 MiB buckets (KJ_MODEL_DDP_BUCKET_BYTES). */
#define KJ_MODEL_DDP_BUCKET_BYTES (25ll << 20)
/** @brief Bytes of one rank's gradients of m (its parameters at its precision), as DDP reduces them. */
int64_t kj_model_grad_bytes(const struct kj_model_spec *m);
int kj_model_terms(const struct kj_model_spec *m, struct kj_model_term *t, int cap);
/** @brief The kernel tier (src/common/kj_kernel_class.c's names) where a framework's kernels for
 *  operator op land in a trace: the linears "gemm", flash_atten "attention", the norms "norm",
 *  the losses and softmaxes "reduction", maps and gathers "elementwise", the optimizer stages and
 *  master copies "other" (fused multi-tensor kernels no rule names). Never NULL. */
const char *kj_model_op_tier(const char *op);

#endif
