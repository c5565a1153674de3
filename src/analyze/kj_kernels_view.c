/* The rows `kjoule kernels` shows and the per-kernel facts of its JSON lines (kj_kernels_view.h). */
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_kernels_view.h"
#include "kj_store_a_replay.h"

int kj_kernels_select(const struct kj_kernel_report *r, const char *tier, long top,
		      struct kj_kernel_stat ***rows, size_t *n)
{
	struct kj_kernel_stat **v = malloc((r->n ? r->n : 1) * sizeof(*v));
	size_t k = 0;
	*rows = NULL;
	*n = 0;
	if (!v)
		return KJ_ENOMEM;
	for (size_t i = 0; i < r->n; i++)
		if (!tier || r->rows[i].tier == tier)
			v[k++] = &r->rows[i];
	if (top > 0 && (size_t)top < k)
		k = (size_t)top;
	*rows = v;
	*n = k;
	return 0;
}

int kj_kernels_extras_read(sqlite3 *db, struct kj_kernels_extras *x)
{
	int recorded = 0, rc;
	memset(x, 0, sizeof(*x));
	rc = kj_clock_replay_windows(db, KJ_CLOCK_REPLAY_KERNELS, &x->windows, &x->n_windows,
				     &recorded);
	if (rc) {
		kj_kernels_extras_free(x);
		return rc;
	}
	/* compare only where some kernel was replayed with energy: on a large run it costs
	 * several times the kernel table itself */
	if (!kj_store_a_has_replay_energy(db))
		return 0;
	struct kj_compare_opts co = {.skip = -1, .top = 10, .quiet = 1};
	struct kj_compare *cmp = NULL;
	if (kj_compare_compute(db, &co, &cmp) == 0 &&
	    kj_compare_kernel_energies(cmp, &x->energies, &x->n_energies) != 0)
		x->energies = NULL, x->n_energies = 0;
	kj_compare_free(cmp);
	return 0;
}

void kj_kernels_extras_free(struct kj_kernels_extras *x)
{
	free(x->windows);
	free(x->energies);
	memset(x, 0, sizeof(*x));
}
