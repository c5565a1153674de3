/* The one rule for what an iteration is (kj_iterations.h). */
#include "kj_iterations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_store_a_iter.h"

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

/* load_items' state: the array being filled and its capacity. */
struct items_load {
	struct kj_gpu_item **out;
	size_t *n, cap;
};

/* Keeps one piece of GPU work with times, keyed by its call where that came before its start. */
static int add_item(void *ud, const struct kj_store_a_item *r)
{
	struct items_load *L = ud;
	struct kj_gpu_item it;
	if (!r->has_times)
		return 0;
	int64_t s = r->start_ns, e = r->end_ns;
	if (e < s)
		return 0;
	it.key_ns = s;
	if (r->has_launch && r->launch_ns <= s)
		it.key_ns = r->launch_ns;
	it.dur_ns = e - s;
	struct kj_gpu_item *v = kj_grow(*L->out, &L->cap, *L->n, sizeof(*v), 4096);
	if (!v)
		return KJ_ENOMEM;
	*L->out = v;
	(*L->out)[(*L->n)++] = it;
	return 0;
}

/* GPU work of the run (of pid when >= 0), keyed by the time of the call that issued it. */
static int load_items(sqlite3 *db, int64_t pid, struct kj_gpu_item **out, size_t *n)
{
	struct items_load L = {out, n, 0};
	int rc;
	*out = NULL;
	*n = 0;
	if ((rc = kj_store_a_items_each(db, pid, add_item, &L)) != 0)
		return rc;
	qsort(*out, *n, sizeof(**out), item_cmp);
	return 0;
}

/* kj_iter_candidates' state: the candidates (distinct names) and every instance read. */
struct cand_load {
	struct kj_iter_candidate *c;
	struct kj_range_inst *r;
	size_t nc, capc, nr, capr;
};

/* Counts one top-level range instance under its (domain, name) candidate. */
static int add_candidate(void *ud, const struct kj_store_a_top_range *t)
{
	struct cand_load *L = ud;
	const char *dom = t->domain, *name = t->name;
	size_t k;
	for (k = 0; k < L->nc; k++) /* few distinct names at depth 0; a linear look-up is fine */
		if (!strcmp(L->c[k].name, name) && !strcmp(L->c[k].domain, dom))
			break;
	if (k == L->nc) {
		struct kj_iter_candidate *v = kj_grow(L->c, &L->capc, L->nc, sizeof(*v), 16);
		if (!v)
			return KJ_ENOMEM;
		L->c = v;
		memset(&L->c[L->nc], 0, sizeof(L->c[L->nc]));
		snprintf(L->c[L->nc].name, sizeof(L->c[L->nc].name), "%s", name);
		snprintf(L->c[L->nc].domain, sizeof(L->c[L->nc].domain), "%s", dom);
		L->c[L->nc].internal = kj_range_is_internal(dom, name);
		L->nc++;
	}
	L->c[k].instances++;
	struct kj_range_inst *vr = kj_grow(L->r, &L->capr, L->nr, sizeof(*vr), 256);
	if (!vr)
		return KJ_ENOMEM;
	L->r = vr;
	L->r[L->nr++] = (struct kj_range_inst){t->start_ns, t->end_ns, k};
	return 0;
}

int kj_iter_candidates(sqlite3 *db, int64_t pid, struct kj_iter_candidate **out, size_t *n)
{
	struct cand_load L = {0};
	struct kj_gpu_item *items = NULL;
	int64_t *gpu = NULL;
	size_t nitems = 0;
	int rc;

	*out = NULL;
	*n = 0;
	/* top level: depth 0, or every range above it never closed (it is on the thread's stack
	 * from its start to the end of the run: an init range a library or a crashed step left
	 * open would otherwise push every later range of the thread one level down) */
	if ((rc = kj_store_a_top_ranges_each(db, pid, add_candidate, &L)) != 0)
		goto out;
	if (L.nc) {
		if ((rc = load_items(db, pid, &items, &nitems)) != 0)
			goto out;
		gpu = calloc(L.nc, sizeof(*gpu));
		if (!gpu)
			goto nomem;
		kj_ranges_gpu_time(L.r, L.nr, items, nitems, gpu);
		for (size_t k = 0; k < L.nc; k++)
			L.c[k].gpu_ns = gpu[k];
		qsort(L.c, L.nc, sizeof(*L.c), cand_cmp);
	}
	*out = L.c;
	*n = L.nc;
	L.c = NULL;
	rc = 0;
	goto out;
nomem:
	rc = KJ_ENOMEM;
out:
	free(L.c);
	free(L.r);
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
		if (kj_store_a_range_present(db, told, pid)) {
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
