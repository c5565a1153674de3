/* compare on a shared GPU: which measured iterations had another process's work on a GPU, and the
 * choice of iterations the energy figures come from (report's kj_compare_shared_out.c says so in
 * the text and the JSON). */
#include <stdlib.h>
#include <string.h>

#include "kj_compare_internal.h"
#include "kj_error.h"

/* Loads the run's watch, marks the iterations with foreign work and, when enough are clean,
 * leaves the foreign ones out of the energy figures. A run without the watch is left as it was. */
int cmp_shared_apply(sqlite3 *db, struct kj_compare *c)
{
	int64_t *a = NULL, *b = NULL;
	unsigned char *use = NULL, *foreign = NULL;
	size_t n = c->it.n;
	int rc = kj_shared_load(db, &c->shared);
	memset(&c->shared_choice, 0, sizeof(c->shared_choice));
	if (rc || c->shared.watch == KJ_SHARED_NOT_WATCHED || n == 0)
		return rc;
	a = malloc(n * sizeof(*a));
	b = malloc(n * sizeof(*b));
	use = malloc(n);
	foreign = malloc(n);
	if (!a || !b || !use || !foreign) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		a[i] = c->iv[i].start_ns;
		b[i] = c->iv[i].end_ns;
		use[i] = !c->iv[i].skipped; /* the measured (kept) iterations */
	}
	kj_shared_choose(&c->shared, a, b, use, n, foreign, &c->shared_choice);
	for (size_t i = 0; i < n; i++) {
		c->iv[i].foreign = foreign[i];
		c->iv[i].energy_excluded = foreign[i] && c->shared_choice.use_clean;
	}
out:
	free(a);
	free(b);
	free(use);
	free(foreign);
	return rc;
}
