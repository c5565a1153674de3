/* What `kjoule kernels` shows of a kernel report: the rows chosen (tier, top N) and, for JSON
 * lines, each kernel's energy replay clock state and its energy per launch (compare's). */
#ifndef KJ_KERNELS_VIEW_H
#define KJ_KERNELS_VIEW_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_clock_state.h"
#include "kj_compare.h"
#include "kj_kernels.h"

/**
 * @brief The rows of r (in r's order) of tier (a canonical tier string, compared by pointer;
 * NULL: all), the first top of them (top <= 0: all). *rows is malloc'ed (caller frees; it points
 * into r, which must outlive it), *n its length. @return 0 or KJ_ENOMEM.
 */
int kj_kernels_select(const struct kj_kernel_report *r, const char *tier, long top,
		      struct kj_kernel_stat ***rows, size_t *n);

/** Per-kernel facts beyond the report, each array in unique-id order (owned; see _free). */
struct kj_kernels_extras {
	struct kj_clock_window *windows; /* each kernel's energy replay window (none: not replayed) */
	size_t n_windows;
	struct kj_kernel_energy *energies; /* predicted and in situ energy per launch (none: the
					    * run has no measured iterations) */
	size_t n_energies;
};

/**
 * @brief Fill x from db: the stored kernel energy-replay windows, and compare's energy per
 * launch over the measured iterations (left empty where compare cannot be computed).
 * @return 0, or the clock windows' KJ_EDB / KJ_ENOMEM (x then holds nothing).
 */
int kj_kernels_extras_read(sqlite3 *db, struct kj_kernels_extras *x);

/** @brief Free what x holds and zero it. */
void kj_kernels_extras_free(struct kj_kernels_extras *x);

#endif
