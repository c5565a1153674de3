/* kjoule compare: the NVTX ranges inside the measured iterations, and the graph kernels whose
 * nodes were captured inside ranges. */
#include "kj_compare_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_store_a_iter.h"

/* The region of a name, created with depth when new; (size_t)-1 out of memory. */
static size_t region_of(struct kj_compare *c, const char *name, int64_t depth)
{
	size_t before = c->region_names.n;
	size_t r = kj_smap_intern(&c->region_names, name);
	if (r == (size_t)-1)
		return r;
	if (c->region_names.n > before) {
		struct cmp_region *nr = kj_grow(c->region_v, &c->region_cap, r, sizeof(*nr), 32);
		if (!nr)
			return (size_t)-1;
		c->region_v = nr;
		c->region_v[r] = (struct cmp_region){.min_depth = depth};
	}
	return r;
}

/* captured_regions' state: the region being summed, its launches' intervals, and the last
 * instance counted. */
struct captured {
	struct kj_compare *c;
	struct kj_ival *iv;
	size_t n, cap, cur;
	int64_t last_owner, last_range;
};

/* Counts one captured kernel for one range around it (rows come grouped by range name). */
static int add_captured(void *ud, const struct kj_store_a_captured *k)
{
	struct captured *C = ud;
	struct kj_compare *c = C->c;
	const char *name = k->name;
	int64_t depth = k->depth;
	long owner = kj_iters_owner_of(&c->it, k->key_ns, k->pid);
	int64_t range = k->range_id;
	if (owner < 0 || c->it.v[owner].skipped || (!c->it.whole_run && !strcmp(name, c->it.region)))
		return 0;
	size_t r = region_of(c, name, depth);
	if (r == (size_t)-1)
		return KJ_ENOMEM;
	if (r != C->cur) { /* a new name: close the previous one's busy time */
		if (C->cur != (size_t)-1)
			c->region_v[C->cur].busy_ns += kj_ival_union(C->iv, C->n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
		C->n = 0;
		C->cur = r;
		C->last_owner = C->last_range = -1;
	}
	struct cmp_region *g = &c->region_v[r];
	g->captured = 1;
	if (depth < g->min_depth)
		g->min_depth = depth;
	if (owner != C->last_owner || range != C->last_range) /* one instance per range per launch */
		g->instances++;
	C->last_owner = owner;
	C->last_range = range;
	g->launches++;
	struct kj_ival *nv = kj_grow(C->iv, &C->cap, C->n, sizeof(*nv), 1024);
	if (!nv)
		return KJ_ENOMEM;
	C->iv = nv;
	C->iv[C->n++] = (struct kj_ival){k->start_ns, k->end_ns};
	return 0;
}

/* Graph kernels of the measured iterations whose nodes were captured inside NVTX ranges
 * (kernel.capture_range_id): each counts for that range and the ranges around it, by name, as
 * they would in an eager iteration; a captured instance has GPU time but no host time of its own
 * in the iteration. Runs recorded before capture ranges were have none. */
static int captured_regions(sqlite3 *db, struct kj_compare *c)
{
	struct captured C = {c, NULL, 0, 0, (size_t)-1, -1, -1};
	int rc;
	if (!kj_db_caps(db)->kernel_capture_range_id)
		return 0;
	rc = kj_store_a_captured_each(db, add_captured, &C);
	if ((!rc || rc == KJ_EDB) && C.cur != (size_t)-1)
		c->region_v[C.cur].busy_ns += kj_ival_union(C.iv, C.n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
	free(C.iv);
	return rc;
}

/* cmp_compute_regions' state: a scratch array of intervals. */
struct regions {
	struct kj_compare *c;
	struct kj_ival *scratch;
	size_t scap;
};

/* Counts one range instance inside a measured iteration, with the GPU work launched inside it. */
static int add_region(void *ud, const struct kj_store_a_region_range *rr)
{
	struct regions *R = ud;
	struct kj_compare *c = R->c;
	const char *name = rr->name;
	int64_t rs = rr->start_ns, re = rr->end_ns;
	int64_t pid = rr->pid;
	int64_t depth = rr->depth;
	if (!c->it.whole_run && !strcmp(name, c->it.region))
		return 0;
	long owner = kj_iters_owner(&c->it, rs);
	if (owner < 0 || c->it.v[owner].skipped || re > c->it.v[owner].end_ns)
		return 0;
	if (!c->it.whole_run && c->it.v[owner].pid != pid)
		return 0;
	size_t r = region_of(c, name, depth);
	if (r == (size_t)-1)
		return KJ_ENOMEM;
	struct cmp_region *g = &c->region_v[r];
	g->instances++;
	g->timed = 1;
	g->time_ns += re - rs;
	if (depth < g->min_depth)
		g->min_depth = depth;
	/* GPU work launched inside this instance: a slice of the key-sorted activity */
	size_t lo = 0, hi = c->acts.n, n = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->acts.v[mid].key_ns < rs)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < c->acts.n && c->acts.v[k].key_ns < re; k++) {
		const struct kj_act *a = &c->acts.v[k];
		if (a->pid != pid)
			continue;
		if (n == R->scap) {
			size_t nc = R->scap ? R->scap * 2 : 1024;
			struct kj_ival *ns = realloc(R->scratch, nc * sizeof(*ns));
			if (!ns)
				return KJ_ENOMEM;
			R->scratch = ns;
			R->scap = nc;
		}
		R->scratch[n++] = (struct kj_ival){a->start_ns, a->end_ns};
		if (a->type == KJ_ACT_KERNEL)
			g->launches++;
	}
	g->busy_ns += kj_ival_union(R->scratch, n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
	return 0;
}

int cmp_compute_regions(sqlite3 *db, struct kj_compare *c)
{
	struct regions R = {c, NULL, 0};
	int rc = kj_store_a_region_ranges_each(db, add_region, &R);
	free(R.scratch);
	if (rc)
		return rc;
	return captured_regions(db, c);
}
