/* The one rule for what an iteration is (kj_iterations.h). */
#include "kj_iterations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"

int kj_range_is_internal(const char *domain, const char *name)
{
	static const char *const domains[] = {"TSL", "XLA", "NCCL", "cuBLAS", "cuDNN", "cublas",
					      "cudnn", "nccl", "PyTorch"};
	static const char *const prefixes[] = {"XlaModule", "XlaPass", "Xla", "Thunk", "xla::",
					       "aten::", "autograd::", "ProfilerStep", "nccl",
					       "NCCL", "cublas", "cuBLAS", "cudnn", "cuDNN",
					       "cudaGraph", "Torch-Compiled Region"};
	if (domain)
		for (size_t i = 0; i < sizeof(domains) / sizeof(domains[0]); i++)
			if (!strcmp(domain, domains[i]))
				return 1;
	if (name)
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
			if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
				return 1;
	return 0;
}

int kj_iter_default_skip(size_t instances)
{
	return instances > 3 ? 1 : 0;
}

/* first index with items[i].key_ns >= t */
static size_t lower_bound(const struct kj_gpu_item *items, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (items[mid].key_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void kj_ranges_gpu_time(const struct kj_range_inst *r, size_t nr, const struct kj_gpu_item *items,
			size_t nitems, int64_t *gpu_ns)
{
	int64_t *prefix = malloc((nitems + 1) * sizeof(*prefix));
	if (prefix) {
		prefix[0] = 0;
		for (size_t i = 0; i < nitems; i++)
			prefix[i + 1] = prefix[i] + items[i].dur_ns;
	}
	for (size_t i = 0; i < nr; i++) {
		size_t a = lower_bound(items, nitems, r[i].start_ns);
		size_t b = r[i].end_ns == INT64_MAX ? nitems : lower_bound(items, nitems, r[i].end_ns + 1);
		if (prefix) {
			gpu_ns[r[i].name] += prefix[b] - prefix[a];
		} else {
			for (size_t j = a; j < b; j++)
				gpu_ns[r[i].name] += items[j].dur_ns;
		}
	}
	free(prefix);
}

static int item_cmp(const void *a, const void *b)
{
	const struct kj_gpu_item *x = a, *y = b;
	return x->key_ns < y->key_ns ? -1 : x->key_ns > y->key_ns;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct kj_iter_candidate *x = a, *y = b;
	if (x->internal != y->internal)
		return x->internal ? 1 : -1;
	if (x->gpu_ns != y->gpu_ns)
		return x->gpu_ns > y->gpu_ns ? -1 : 1;
	if (x->instances != y->instances)
		return x->instances > y->instances ? -1 : 1;
	return 0; /* qsort is not stable: names come in first-start order and ties are rare */
}

/* GPU work of the run (of pid when >= 0), keyed by the time of the call that issued it. */
static int load_items(sqlite3 *db, int64_t pid, struct kj_gpu_item **out, size_t *n)
{
	char sql[640];
	const char *cl = kj_db_caps(db)->memcpy_launch_ns ? "launch_ns" : "NULL";
	const char *sl = kj_db_caps(db)->memset_launch_ns ? "launch_ns" : "NULL";
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc;
	snprintf(sql, sizeof(sql),
		 "SELECT launch_ns, start_ns, end_ns FROM kernel WHERE ?1 < 0 OR pid = ?1"
		 " UNION ALL SELECT %s, start_ns, end_ns FROM memcpy WHERE ?1 < 0 OR pid = ?1"
		 " UNION ALL SELECT %s, start_ns, end_ns FROM memset WHERE ?1 < 0 OR pid = ?1",
		 cl, sl);
	*out = NULL;
	*n = 0;
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_gpu_item it;
		if (sqlite3_column_type(st, 1) == SQLITE_NULL || sqlite3_column_type(st, 2) == SQLITE_NULL)
			continue;
		int64_t s = sqlite3_column_int64(st, 1), e = sqlite3_column_int64(st, 2);
		if (e < s)
			continue;
		it.key_ns = s;
		if (sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_int64(st, 0) <= s)
			it.key_ns = sqlite3_column_int64(st, 0);
		it.dur_ns = e - s;
		struct kj_gpu_item *v = kj_grow(*out, &cap, *n, sizeof(*v), 4096);
		if (!v) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
		*out = v;
		(*out)[(*n)++] = it;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return KJ_EDB;
	qsort(*out, *n, sizeof(**out), item_cmp);
	return 0;
}

int kj_iter_candidates(sqlite3 *db, int64_t pid, struct kj_iter_candidate **out, size_t *n)
{
	struct kj_iter_candidate *c = NULL;
	struct kj_range_inst *r = NULL;
	struct kj_gpu_item *items = NULL;
	int64_t *gpu = NULL;
	size_t nc = 0, capc = 0, nr = 0, capr = 0, nitems = 0;
	sqlite3_stmt *st = NULL;
	int rc;

	*out = NULL;
	*n = 0;
	/* top level: depth 0, or every range above it never closed (it is on the thread's stack
	 * from its start to the end of the run: an init range a library or a crashed step left
	 * open would otherwise push every later range of the thread one level down) */
	if (kj_db_prepare(db, "WITH u AS (SELECT pid, tid, start_ns FROM nvtx_range WHERE end_ns IS NULL"
			      " AND start_ns IS NOT NULL) SELECT coalesce(domain, ''), name, start_ns, end_ns"
			      " FROM nvtx_range r WHERE name IS NOT NULL AND name <> '' AND start_ns IS NOT NULL"
			      " AND end_ns IS NOT NULL AND end_ns >= start_ns AND (?1 < 0 OR pid = ?1) AND"
			      " (depth = 0 OR depth = (SELECT count(*) FROM u WHERE u.pid IS r.pid AND"
			      " u.tid IS r.tid AND u.start_ns <= r.start_ns)) ORDER BY start_ns", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *dom = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		size_t k;
		for (k = 0; k < nc; k++) /* few distinct names at depth 0; a linear look-up is fine */
			if (!strcmp(c[k].name, name) && !strcmp(c[k].domain, dom))
				break;
		if (k == nc) {
			struct kj_iter_candidate *v = kj_grow(c, &capc, nc, sizeof(*v), 16);
			if (!v)
				goto nomem;
			c = v;
			memset(&c[nc], 0, sizeof(c[nc]));
			snprintf(c[nc].name, sizeof(c[nc].name), "%s", name);
			snprintf(c[nc].domain, sizeof(c[nc].domain), "%s", dom);
			c[nc].internal = kj_range_is_internal(dom, name);
			nc++;
		}
		c[k].instances++;
		struct kj_range_inst *vr = kj_grow(r, &capr, nr, sizeof(*vr), 256);
		if (!vr)
			goto nomem;
		r = vr;
		r[nr++] = (struct kj_range_inst){sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), k};
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading NVTX ranges: %s", sqlite3_errmsg(db));
		rc = KJ_EDB;
		goto out;
	}
	if (nc) {
		if ((rc = load_items(db, pid, &items, &nitems)) != 0)
			goto out;
		gpu = calloc(nc, sizeof(*gpu));
		if (!gpu)
			goto nomem;
		kj_ranges_gpu_time(r, nr, items, nitems, gpu);
		for (size_t k = 0; k < nc; k++)
			c[k].gpu_ns = gpu[k];
		qsort(c, nc, sizeof(*c), cand_cmp);
	}
	*out = c;
	*n = nc;
	c = NULL;
	rc = 0;
	goto out;
nomem:
	rc = KJ_ENOMEM;
out:
	sqlite3_finalize(st);
	free(c);
	free(r);
	free(items);
	free(gpu);
	return rc;
}

int kj_iter_default_range(sqlite3 *db, int64_t pid, char *name, size_t len, const char **why)
{
	struct kj_iter_candidate *c = NULL;
	size_t n = 0, best = (size_t)-1;
	char told[256];
	const char *w = "none";
	int rc;

	name[0] = 0;
	told[0] = 0;
	if (kj_db_meta_get(db, "iteration_range", told, sizeof(told)) == 0 && told[0]) {
		sqlite3_stmt *st = NULL;
		int found = 0;
		if (kj_db_prepare(db, "SELECT 1 FROM nvtx_range WHERE name = ?1 AND (?2 < 0 OR pid = ?2)"
				      " LIMIT 1", &st) == 0) {
			sqlite3_bind_text(st, 1, told, -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 2, pid);
			found = sqlite3_step(st) == SQLITE_ROW;
			sqlite3_finalize(st);
		}
		if (found) {
			snprintf(name, len, "%s", told);
			if (why)
				*why = "named at run";
			return 0;
		}
	}
	if ((rc = kj_iter_candidates(db, pid, &c, &n)) != 0)
		return rc;
	for (int want_repeat = 1; want_repeat >= 0 && best == (size_t)-1; want_repeat--)
		for (size_t i = 0; i < n; i++)
			if (!c[i].internal && (!want_repeat || c[i].instances >= 2)) {
				best = i;
				break;
			}
	if (best != (size_t)-1) {
		snprintf(name, len, "%s", c[best].name);
		w = told[0] ? "most GPU work (the range named at run is absent)" : "most GPU work";
	} else if (told[0]) {
		w = "none (the range named at run is absent)";
	}
	if (why)
		*why = w;
	free(c);
	return 0;
}
