/* Pipelines of layers (phases) with their shapes: parsing (YAML), shape checks, FLOP and byte
 * counts, the sequential and pipeline-parallel arithmetic and the report writers of
 * `kjoule pipeline`. Plain C with no GPU dependency; the GPU side is kjoule-pipeline-worker. */
#ifndef KJ_PIPELINE_H
#define KJ_PIPELINE_H

#include <stdint.h>
#include <stdio.h>

enum kj_phase_kind {
	KJ_PHASE_CONV,
	KJ_PHASE_MATMUL,
	KJ_PHASE_POOL,
	KJ_PHASE_NORM,
	KJ_PHASE_ACT,
	KJ_PHASE_ATTN,
	KJ_PHASE_CUSTOM,
	KJ_PHASE_SEQ,     /* --from: a range of a run's kept iteration (ordinals first..last) */
};

/** One layer with its shapes, all sizes resolved (no parameters left). Fields a kind does not
 *  use are 0. Conv: input N x C x H x W, M filters of C/groups x R x S, output N x M x P x Q.
 *  Matmul: C[M x N] = A[M x K] B[K x N], count independent products (batched). Pool: N C H W,
 *  window R x S. Norm and act: N x C x H x W elements (layer/rms norm over C). Attention: N
 *  sequences, heads, seq_q queries against seq_kv keys of head_dim (= K). */
struct kj_phase {
	char name[96];
	enum kj_phase_kind kind;
	char op[32];        /* pool: max|avg; norm: batch|layer|rms; act: relu|gelu|silu|...;
			     * custom: the registered kernel's name */
	char precision[8];  /* fp16 | bf16 | fp32 */
	int64_t N, C, H, W, M, K, R, S, P, Q;
	int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
	int64_t count, heads, seq_q, seq_kv, causal;
	int64_t first, last; /* KJ_PHASE_SEQ: ordinals of the kept iteration's sequence */
	int64_t repeat;     /* times the layer occurs in the model (default 1) */
	int64_t nhwc;       /* conv, norm, pool, act: channels-last tensors (layout: nhwc); 0: NCHW */
	int64_t conv_fastest; /* conv: the fastest algorithm timed on the phase's buffers (conv_algo:
			       * fastest); 0: cuDNN's heuristic first choice (conv_algo: heuristic) */
	int64_t bn_plane;   /* batch norm, NCHW: one block per channel plane and batch chunk, one element
			     * a load (bn_kernel: plane, the kernel PyTorch's NCHW eval batch norm runs);
			     * 0: 16-byte loads over the flat tensor (bn_kernel: vector) */
};

/** One pipeline of a file. params hold the names usable in expressions (batch, tp, ...). */
struct kj_pipeline {
	char file[256];
	char name[96];
	char precision[8];
	char layout[8];     /* nchw (default) | nhwc: the default of its conv, norm, pool, act phases */
	char conv_algo[12]; /* heuristic (default) | fastest: the default of its conv phases */
	char bn_kernel[8];  /* vector (default) | plane: the default of its NCHW batch-norm phases */
	char description[160];
	int nparams;
	char param_name[16][24];
	int64_t param_value[16];
	struct kj_phase *phases;
	int nphases;
	char error[768];    /* non-empty: this pipeline could not be read (file/pipeline/phase/field) */
	unsigned set_used;  /* bit i: the overrides' set_name[i] is one of its params (it took the value) */
};

struct kj_pipeline_set {
	struct kj_pipeline *p;
	int n;
};

/** Overrides from the command line, applied while the file is read. */
struct kj_pipeline_overrides {
	int64_t batch;          /* > 0: the parameter "batch" */
	const char *precision;  /* NULL: the file's */
	const char *layout;     /* NULL: the file's; "nchw" | "nhwc" */
	const char *conv_algo;  /* NULL: the file's; "heuristic" | "fastest" */
	const char *bn_kernel;  /* NULL: the file's; "vector" | "plane" */
	int nset;               /* --set NAME=VALUE: applied to the pipelines that declare NAME in params */
	char set_name[8][24];
	int64_t set_value[8];
};

/**
 * @brief Read a pipeline file (YAML). Pipelines with an error keep their error text (naming the
 *        file, pipeline, phase with its line, and field) and no phases; the others are complete.
 *        Refused: unknown keys (top level, pipeline, phase), a key given twice, an integer field
 *        that is no integer expression, a size given as 0 or less (anything but pad and causal),
 *        causal other than 0/1/true/false.
 * @param out  receives the pipelines; free with kj_pipeline_set_free().
 * @param err  a YAML syntax error or unreadable file, when the whole file fails
 * @return 0 (even when some pipelines have errors), KJ_EIO, KJ_EINVAL (file-level error in err).
 */
int kj_pipeline_file_read(const char *path, const struct kj_pipeline_overrides *ov,
			  struct kj_pipeline_set *out, char *err, size_t errlen);
/** @brief Same from text in memory (path names it in messages). */
int kj_pipeline_text_read(const char *path, const char *text, size_t len,
			  const struct kj_pipeline_overrides *ov, struct kj_pipeline_set *out,
			  char *err, size_t errlen);
void kj_pipeline_set_free(struct kj_pipeline_set *s);

/**
 * @brief Evaluate an integer expression (+ - * / % parentheses, names from the pipeline's params).
 * @return 0, or KJ_EINVAL with the reason in err.
 */
int kj_pipeline_expr_eval(const char *text, const struct kj_pipeline *p, int64_t *out, char *err,
			  size_t errlen);

/**
 * @brief Check a phase's shapes and fill derived sizes (conv/pool output P x Q from H x W, or
 *        H x W from P x Q when only those were given). Message names the field at fault.
 * @return 0 or KJ_EINVAL with err filled ("field: reason").
 */
int kj_phase_check(struct kj_phase *ph, char *err, size_t errlen);

/** @brief Bytes per element of a precision name (2 fp16/bf16, 4 fp32), 0 when unknown. */
int kj_pipeline_elem_bytes(const char *precision);
/** 1 if s names a convolution algorithm choice (fastest, heuristic), else 0. */
int kj_pipeline_conv_algo_ok(const char *s);

/** 1 if s names a batch-norm kernel (vector, plane), else 0. */
int kj_pipeline_bn_kernel_ok(const char *s);
/** 1 if s names a layout (nchw, nhwc), else 0. */
int kj_pipeline_layout_ok(const char *s);

/** @brief Floating-point operations (multiply-add = 2) and the fewest bytes moved (each input
 *  read once, each output written once) by one call of the phase. */
void kj_phase_cost(const struct kj_phase *ph, double *flops, double *bytes);

/** @brief Name of a kind ("conv", ...) and back (-1 unknown). */
const char *kj_phase_kind_name(enum kj_phase_kind k);
int kj_phase_kind_parse(const char *s);

/** @brief One line "key=value ..." describing the phase (the worker's request), and back.
 *  @return format: chars written (truncated text is an error: KJ_EINVAL); parse: 0 or KJ_EINVAL. */
int kj_phase_format(const struct kj_phase *ph, char *buf, size_t len);
int kj_phase_parse(const char *line, struct kj_phase *ph);

/* ---- measured phases and the arithmetic over them ---- */

/** Measured (or failed) phase: per call of the layer. */
struct kj_phase_result {
	char status[16];        /* ok | failed | skipped */
	char error[320];
	double latency_ms;      /* average per call (unrolled graph replays) */
	double single_ms;       /* event timing of single launches on the GPU (median), 0 when absent */
	double host_ms;         /* host time to enqueue one single launch (median), 0 when absent */
	double power_w;         /* average power while running */
	double sm_clock_mhz;    /* mean SM clock over the energy window; 0 when not read */
	double energy_j;        /* total energy per call */
	double energy_unc_j;
	double dynamic_j;       /* energy_j - idle_w x latency; NAN without idle power */
	double flops, bytes;    /* per call */
	int64_t launches;       /* calls measured */
	int has_energy;
};

/** @brief Worker side: one "KJ_PHASE status=... latency_ns=... error=..." line (error last). */
void kj_phase_result_emit(FILE *f, const struct kj_phase_result *r);
/** @brief Parse a "KJ_PHASE" line into r (energy in J from the line's mJ, flops/bytes kept).
 *  @return 1 parsed, 0 another line, KJ_EINVAL malformed. */
int kj_phase_result_parse(const char *line, struct kj_phase_result *r);

/** Sequential and pipeline-parallel figures of one pipeline (per item, batch items per call). */
struct kj_pipeline_totals {
	int phases, failed;
	int64_t stages;          /* Σ repeat of the measured phases */
	double seq_latency_ms;   /* Σ repeat x latency */
	double seq_energy_j;     /* Σ repeat x energy */
	double seq_dynamic_j;
	double pp_period_ms;     /* slowest stage */
	double pp_energy_j;      /* per call of the pipeline in steady state: Σ repeat x (energy +
				  * (period - latency) x idle) */
	int bottleneck;          /* index of the slowest phase, -1 none */
	double idle_w;           /* < 0 unknown: pp_energy_j is then NAN */
	int energy_unmeasured;   /* measured phases without an energy (--no-energy, no counter): the
				  * energy sums are then NAN, never a partial sum or 0 */
};

/**
 * @brief Totals over the phases whose result is ok. Failed phases are counted in failed and left
 *        out of the sums (the summary marks the pipeline partial).
 */
void kj_pipeline_totals(const struct kj_pipeline *p, const struct kj_phase_result *r,
			double idle_w, struct kj_pipeline_totals *t);

/* ---- writers ---- */

/** Row of summary.csv: one pipeline. status: ok | partial | failed; note: error text or "". */
struct kj_summary_row {
	const char *name;
	int64_t batch;
	const char *precision;
	const char *status;
	const char *note;
	const char *bottleneck;
	const char *idle_source;
	struct kj_pipeline_totals t;
};

/** @brief The header line of summary.csv (with its newline). */
void kj_summary_header_write(FILE *f);
/** @brief One row of summary.csv (fields quoted where they hold commas or quotes). */
void kj_summary_row_write(FILE *f, const struct kj_summary_row *row);
/** @brief Per-phase CSV of one pipeline (header and one row per phase). */
void kj_phases_csv_write(FILE *f, const struct kj_pipeline *p, const struct kj_phase_result *r,
			 double peak_tflops, double peak_gbs);
/** @brief SVG of one pipeline: latency and energy bars per phase, the bottleneck marked. */
void kj_phases_svg_write(FILE *f, const struct kj_pipeline *p, const struct kj_phase_result *r,
			 const struct kj_pipeline_totals *t);

/* ---- --from: phases of a traced run ---- */

/**
 * @brief Phases of a run's kept iteration: the NVTX ranges at depth (relative to the kept
 *        iteration's own range: 1 = its children) or, with region non-NULL, every range so named
 *        inside it. Each phase is KJ_PHASE_SEQ with the ordinal range of its operations in
 *        sequence_op; kernels between ranges (depth mode) become phases named "(between A and
 *        B)". Sets p->name to the iteration ("forward#28") and *iteration to its number.
 * @return 0, KJ_ENOTFOUND (no kept iteration, no such ranges: err says which), KJ_EDB.
 */
int kj_pipeline_from_run(const char *run, int depth, const char *region, struct kj_pipeline *p,
			 int64_t *iteration, char *err, size_t errlen);

#endif
