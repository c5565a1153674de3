/* kjoule diff: two runs of the same program side by side, changes judged against each run's own
 * iteration-to-iteration spread, computed as one JSON object; report's kj_diff_out.h writes it. */
#ifndef KJ_DIFF_H
#define KJ_DIFF_H

#include <jansson.h>
#include <sqlite3.h>

struct kj_diff_opts {
	const char *region; /* iteration region of both runs (NULL: compare's default per run) */
	int skip;           /* warm-up instances (< 0: compare's default) */
	double sigma;       /* a change must exceed sigma × its standard error (<= 0: 4) */
	double min_rel;     /* ... and this fraction of A's value (<= 0: 0.02) */
	double min_abs_us;  /* ... and this many µs per iteration for kernel times (<= 0: 0.5) */
	int quiet;
};

/**
 * @brief Compare run B against run A: per-iteration wall, busy, idle, host-only, Σ kernels and
 *        measured energy (mean, standard deviation, n, delta, significant), and per unique kernel
 *        (matched by name + grid + block, then by name among the rest) launches, time and energy
 *        per iteration with their deltas; kernels only in A or only in B. Different GPUs or
 *        programs are named in "warnings" first. docs/report.md lists every field.
 * @param out receives the JSON object; caller owns it.
 * @return 0, or compare's error for either run (message printed), KJ_ENOMEM, KJ_EDB.
 */
int kj_diff_compute(sqlite3 *a, const char *path_a, sqlite3 *b, const char *path_b,
		    const struct kj_diff_opts *o, json_t **out);

#endif
