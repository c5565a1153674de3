/* kjoule compare: end-to-end time and energy per iteration against the sum of the kernels, computed
 * from a run (report's kj_compare_out.h writes it as text, JSON and files). */
#ifndef KJ_COMPARE_H
#define KJ_COMPARE_H

#include <stdint.h>
#include <sqlite3.h>
#include <stddef.h>

struct kj_compare_opts {
	const char *region; /* NVTX range name of an iteration; NULL: most repeated top-level */
	int skip;           /* warm-up instances to skip; < 0: default (1 when more than 3) */
	int top;            /* top kernels to list (default 10) */
	int quiet;          /* 1: no warnings on stderr */
};

struct kj_compare;

/**
 * @brief Compute the whole comparison of a run database.
 * @param out receives the result; free it with kj_compare_free().
 * @return 0, KJ_ENOTFOUND (region absent, empty run), KJ_EINVAL (skip), KJ_EDB, KJ_ENOMEM.
 *         A message saying why is printed on failure.
 */
int kj_compare_compute(sqlite3 *db, const struct kj_compare_opts *o, struct kj_compare **out);

/** @brief Free; accepts NULL. */
void kj_compare_free(struct kj_compare *c);

/** One unique kernel's energy per launch over the measured iterations (mJ; < 0: unknown). */
struct kj_kernel_energy {
	int64_t unique_id;
	double predicted_mj;   /* from its replays, as compare's prediction credits it */
	double in_situ_mj;     /* as it ran in the program: predicted x (measured - idle) / kernels predicted */
};

/**
 * @brief Every replayed unique kernel's energy per launch, predicted and in situ, sorted by
 * unique_id (docs/analysis-compare.md, "In situ").
 * @param out receives a malloc'ed array (caller frees), *n its length.
 * @return 0 or KJ_ENOMEM.
 */
int kj_compare_kernel_energies(const struct kj_compare *c, struct kj_kernel_energy **out, size_t *n);

#endif
