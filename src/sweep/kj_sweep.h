/* `kjoule sweep`: its config (the seed's YAML), the shape grid it walks, the CSV it writes and
 * the driver that feeds shapes to kjoule-sweep-worker processes. Host code, no GPU. */
#ifndef KJ_SWEEP_H
#define KJ_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kj_sweep_op.h"

#define KJ_SWEEP_MAX_CSV_COLS 24
#define KJ_SWEEP_MAX_RANKS 16 /* most GPUs in one collective's communicator */

enum kj_sweep_run { KJ_RUN_GET_ALL, KJ_RUN_GET_ONE, KJ_RUN_GET_PROFILER, KJ_RUN_FUNCTION };

/** A parsed sweep config. Lists hold first_n_column values, in the operator's column order. */
struct kj_sweep_config {
	char path[1024];
	char module_name[128], kernel_name[128], function_name[128];
	const struct kj_sweep_op *op;
	int ncols;                         /* first_n_column */
	int64_t starts[KJ_SWEEP_MAX_COLS], steps[KJ_SWEEP_MAX_COLS], ends[KJ_SWEEP_MAX_COLS];
	int mul[KJ_SWEEP_MAX_COLS];        /* 1: 'mul', 0: 'add' */
	int64_t warmup_shapes[KJ_SWEEP_MAX_COLS], shapes[KJ_SWEEP_MAX_COLS];
	int wait, warmup, active;
	int run;                           /* enum kj_sweep_run */
};

/**
 * @brief Read and check a config; nothing is left allocated.
 * @param err receives "FILE:LINE: key 'K': what is wrong" on failure
 * @return 0, KJ_EIO (unreadable) or KJ_EINVAL (bad content).
 */
int kj_sweep_config_load(const char *path, struct kj_sweep_config *cfg, char *err, size_t errlen);
const char *kj_sweep_run_name(int run);

/** The values one column takes (start, then start*step or start+step, while <= end). */
int kj_sweep_axis_values(const struct kj_sweep_config *cfg, int col, int64_t *out, int cap);
/** @brief Number of grid points (product of the axes), before the divisibility filter. */
int64_t kj_sweep_grid_size(const struct kj_sweep_config *cfg);
/** @brief Grid point idx (last column fastest, as itertools.product) into v. */
void kj_sweep_grid_at(const struct kj_sweep_config *cfg, int64_t idx, int64_t *v);
/**
 * @brief Whether shape v splits as Megatron splits it (mp divides heads, hidden, FFN, vocab and
 * experts' width; heads divide hidden). why gets the failing rule when not. 1 valid, 0 not.
 */
int kj_sweep_shape_valid(const struct kj_sweep_op *op, const int64_t *v, char *why, size_t len);
/**
 * @brief The shapes of part `part` (1..parts) of the valid grid: the valid shapes whose position
 * among the valid ones is part-1 modulo parts. Caller frees *out (n * op->ncolumns values).
 * *invalid receives the count dropped by kj_sweep_shape_valid().
 */
int kj_sweep_shapes(const struct kj_sweep_config *cfg, int parts, int part, int64_t **out,
		    int64_t *n, int64_t *invalid);

/** @brief "1,4,2048" into v (ncols values); -1 on a malformed or non-positive list. */
int kj_sweep_shape_parse(const char *text, int ncols, int64_t *v);
/** @brief v as "1,4,2048". */
void kj_sweep_shape_format(const int64_t *v, int ncols, char *buf, size_t len);

/* ---- CSV -------------------------------------------------------------------------------- */
/** One sweep CSV in memory: its header and rows of text fields. */
struct kj_sweep_csv {
	int ncols;
	char *cols[KJ_SWEEP_MAX_CSV_COLS];
	int64_t nrows;
	char ***rows;      /* rows[i][j] */
	int64_t *lines;    /* file line of each row */
};

/** @brief The header the sweep writes for op: shape columns, F_dur(us), B_dur(us), with energy
 *  F_energy(uJ), F_energy_unc(uJ), B_energy(uJ), B_energy_unc(uJ), then status. */
void kj_sweep_csv_header(const struct kj_sweep_op *op, int energy, char *buf, size_t len);
/**
 * @brief Read a sweep CSV. Refuses (KJ_EINVAL, err "FILE:LINE: ...") a header whose first
 * columns are not a known operator's shape columns or whose other columns are foreign, rows of
 * the wrong width, shape fields that are not positive integers, figures that are neither numbers
 * nor '-'. op (optional) receives the operator the header names when kernel is given, else the
 * first whose columns match.
 */
int kj_sweep_csv_read(const char *path, const char *kernel, struct kj_sweep_csv *csv, char *err,
		      size_t errlen);
void kj_sweep_csv_free(struct kj_sweep_csv *csv);
/** @brief 1 when s is a whole finite number (strtod, nothing after it), else 0. */
int kj_sweep_is_number(const char *s);
/** @brief Column index by name, or -1. */
int kj_sweep_csv_col(const struct kj_sweep_csv *csv, const char *name);
/** @brief 1 when s can be an impl column's value: '-' or forward/backward implementation names
 *  (letters, digits, '.', '+', '-', '_', '/'), e.g. "cudnn-sdpa.e2/cudnn-sdpa.e2". */
int kj_sweep_impl_ok(const char *s);
/** @brief An impl value's family: its first word up to '.' or '/' ("cudnn-sdpa", "kjoule-flash2"). */
void kj_sweep_impl_family(const char *impl, char *out, size_t len);

/* ---- driver ------------------------------------------------------------------------------- */
struct kj_sweep_opts {
	int precision;
	int parts, part;
	int device;         /* first device; with gpus > 1, workers use device .. device+gpus-1 */
	int gpus;
	int energy;
	const char *out_dir;
	const char *worker; /* path of kjoule-sweep-worker or a stand-in */
	const char *gpu_name; /* for file names; NULL: asked from NVML, else "GPU" */
	int timeout_s;      /* a request unanswered this long kills its worker; <= 0: none */
	int quiet;
};

/**
 * @brief Run the sweep: shapes not yet in the CSV go to workers, one answer a row appended and
 * fsynced. Progress goes to stderr and to the log. Returns 0 when every shape got an answer (ok
 * or recorded skip), else a negative code with the reason on stderr.
 */
int kj_sweep_run(const struct kj_sweep_config *cfg, const struct kj_sweep_opts *opts);

/** @brief "{GPU}_{op}_{precision}_{parts}_{part}", the name of a sweep's CSV and log. */
void kj_sweep_file_base(const struct kj_sweep_config *cfg, const struct kj_sweep_opts *opts,
			char *buf, size_t len);
/** @brief The request line (with newline) the worker gets for shape v. */
void kj_sweep_request(const struct kj_sweep_config *cfg, int precision, const int64_t *v,
		      int energy, int check, char *buf, size_t len);

/** @brief Local GPUs: the entries of CUDA_VISIBLE_DEVICES when set, else NVML's count; 0 when
 *  neither says. */
int kj_sweep_local_gpus(void);
/**
 * @brief A collective's sweep runs one communicator of n ranks (given: --gpus was) over the
 * grid's points of gpus = n: n must be given, be 2..KJ_SWEEP_MAX_RANKS and lie on cfg's gpus
 * axis, and cfg must not be run get_profiler. @return 0, or KJ_EINVAL after saying why.
 */
int kj_sweep_collective_check(const struct kj_sweep_config *cfg, int given, int n);
/**
 * @brief --dry-run: the shapes of part of parts as CSV (columns, then one shape a line) to out,
 * and a line to stderr counting them; a config of one shape (not run get_all) lists that one.
 * @return 0 or KJ_ENOMEM (nothing written).
 */
int kj_sweep_list_shapes(FILE *out, const struct kj_sweep_config *cfg, int parts, int part);

/** @brief GPU name made file-safe (spaces and slashes dropped, as the seed's names are). */
void kj_sweep_gpu_tag(const char *name, char *out, size_t len);

/* ---- file names and merge ----------------------------------------------------------------- */
/** The parts of a sweep file name: {GPU}_{op}_{precision}_{parts}_{part}.csv (a part) or
 *  {GPU}_{op}_{precision}.csv (merged; parts = part = 0). */
struct kj_sweep_name {
	char gpu[128], op[128];
	int precision, parts, part;
};
/** @brief Parse a file name (directories ignored); -1 when it is not a sweep CSV's name. */
int kj_sweep_name_parse(const char *path, struct kj_sweep_name *out);
/**
 * @brief Join CSVs of one operator into out: same header required, rows with a shape seen
 * before dropped (a measured row is kept over a skipped one), sorted by the shape columns.
 * Written to a temporary file and renamed. *rows and *dups receive the counts.
 */
int kj_sweep_merge(const char *const *paths, int n, const char *out, int64_t *rows, int64_t *dups,
		   char *err, size_t errlen);

#endif
