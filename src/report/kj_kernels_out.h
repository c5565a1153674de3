/* kjoule kernels' output: the rows chosen of a kernel report (kj_kernels_view.h) as an aligned
 * table, CSV with a header, or JSON lines (docs/cli.md, "kjoule kernels"). Formatting only. */
#ifndef KJ_KERNELS_OUT_H
#define KJ_KERNELS_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "kj_kernels_view.h"

/**
 * @brief rows[0..n) as an aligned table to f, names cut to namew columns (0: whole), then the
 * report's totals line (and its untimed line when some rows had no valid timestamps). Where x
 * holds kernel energies, two columns more: each kernel's energy per launch alone and in situ.
 */
void kj_kernels_print_table(FILE *f, const struct kj_kernel_report *r, struct kj_kernel_stat **rows,
			    size_t n, size_t namew, const struct kj_kernels_extras *x);

/** @brief rows[0..n) as CSV to f, header first, each kernel's energy per launch from x last; a
 *  value the run lacks is an empty field. */
void kj_kernels_print_csv(FILE *f, struct kj_kernel_stat **rows, size_t n, const struct kj_kernels_extras *x);

/**
 * @brief rows[0..n) as one compact JSON object per line to f, with each kernel's replay clock
 * state and energy per launch from x (null where x has none). @return 0 or KJ_ENOMEM.
 */
int kj_kernels_print_jsonl(FILE *f, struct kj_kernel_stat **rows, size_t n,
			   const struct kj_kernels_extras *x);

#endif
