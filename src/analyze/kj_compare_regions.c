/* kjoule compare: the NVTX ranges inside the measured iterations, and the graph kernels whose
 * nodes were captured inside ranges. */
#include "kj_compare_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"

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

/* Graph kernels of the measured iterations whose nodes were captured inside NVTX ranges
 * (kernel.capture_range_id): each counts for that range and the ranges around it, by name, as
 * they would in an eager iteration; a captured instance has GPU time but no host time of its own
 * in the iteration. Runs recorded before capture ranges were have none. */
static int captured_regions(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	struct kj_ival *iv = NULL;
	size_t n = 0, cap = 0, cur = (size_t)-1;
	int64_t last_owner = -1, last_range = -1;
	int rc;
	if (!kj_db_caps(db)->kernel_capture_range_id)
		return 0;
	if (kj_db_prepare(db,
			  "WITH RECURSIVE anc(kid, rid) AS (SELECT id, capture_range_id FROM kernel"
			  " WHERE capture_range_id IS NOT NULL UNION ALL SELECT a.kid, r.parent_id FROM anc a"
			  " JOIN nvtx_range r ON r.id = a.rid WHERE r.parent_id IS NOT NULL)"
			  " SELECT r.name, r.depth, k.pid, coalesce(k.launch_ns, k.start_ns), k.start_ns, k.end_ns, r.id"
			  " FROM anc a JOIN kernel k ON k.id = a.kid JOIN nvtx_range r ON r.id = a.rid"
			  " WHERE r.name IS NOT NULL AND k.end_ns >= k.start_ns ORDER BY r.name, k.start_ns",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int64_t depth = sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 1);
		long owner = kj_iters_owner_of(&c->it, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 2));
		int64_t range = sqlite3_column_int64(st, 6);
		if (owner < 0 || c->it.v[owner].skipped || (!c->it.whole_run && !strcmp(name, c->it.region)))
			continue;
		size_t r = region_of(c, name, depth);
		if (r == (size_t)-1)
			goto nomem;
		if (r != cur) { /* a new name: close the previous one's busy time */
			if (cur != (size_t)-1)
				c->region_v[cur].busy_ns += kj_ival_union(iv, n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
			n = 0;
			cur = r;
			last_owner = last_range = -1;
		}
		struct cmp_region *g = &c->region_v[r];
		g->captured = 1;
		if (depth < g->min_depth)
			g->min_depth = depth;
		if (owner != last_owner || range != last_range) /* one instance per range per launch */
			g->instances++;
		last_owner = owner;
		last_range = range;
		g->launches++;
		struct kj_ival *nv = kj_grow(iv, &cap, n, sizeof(*nv), 1024);
		if (!nv)
			goto nomem;
		iv = nv;
		iv[n++] = (struct kj_ival){sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5)};
	}
	if (cur != (size_t)-1)
		c->region_v[cur].busy_ns += kj_ival_union(iv, n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
	sqlite3_finalize(st);
	free(iv);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
nomem:
	sqlite3_finalize(st);
	free(iv);
	return KJ_ENOMEM;
}

int cmp_compute_regions(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	struct kj_ival *scratch = NULL;
	size_t scap = 0;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT name, start_ns, end_ns, pid, depth FROM nvtx_range WHERE name IS"
			  " NOT NULL AND start_ns IS NOT NULL AND end_ns IS NOT NULL"
			  " AND end_ns >= start_ns ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int64_t rs = sqlite3_column_int64(st, 1), re = sqlite3_column_int64(st, 2);
		int64_t pid = sqlite3_column_int64(st, 3);
		int64_t depth = sqlite3_column_type(st, 4) == SQLITE_NULL ? 0
									  : sqlite3_column_int64(st, 4);
		if (!c->it.whole_run && !strcmp(name, c->it.region))
			continue;
		long owner = kj_iters_owner(&c->it, rs);
		if (owner < 0 || c->it.v[owner].skipped || re > c->it.v[owner].end_ns)
			continue;
		if (!c->it.whole_run && c->it.v[owner].pid != pid)
			continue;
		size_t r = region_of(c, name, depth);
		if (r == (size_t)-1)
			goto nomem;
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
			if (n == scap) {
				size_t nc = scap ? scap * 2 : 1024;
				struct kj_ival *ns = realloc(scratch, nc * sizeof(*ns));
				if (!ns)
					goto nomem;
				scratch = ns;
				scap = nc;
			}
			scratch[n++] = (struct kj_ival){a->start_ns, a->end_ns};
			if (a->type == KJ_ACT_KERNEL)
				g->launches++;
		}
		g->busy_ns += kj_ival_union(scratch, n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
	}
	sqlite3_finalize(st);
	free(scratch);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading NVTX ranges: %s", sqlite3_errmsg(db));
		return KJ_EDB;
	}
	return captured_regions(db, c);
nomem:
	sqlite3_finalize(st);
	free(scratch);
	return KJ_ENOMEM;
}
