/* Iterations of a run (kj_acts.h): the instances of the iteration range, each process's warm-up
 * left out, and which instance owns a piece of work. */
#include "kj_acts.h"

#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_iterations.h"
#include "kj_store_a_run.h"

/* ---- iterations ---- */

static int iter_cmp(const void *a, const void *b)
{
	const struct kj_iter *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return 0;
}

/* Instances from several processes (torchrun ranks): each process's first skip instances
 * (skip < 0: kj_iter_default_skip of its own count) are its warm-up; out->skip counts them all. */
static int skip_per_process(struct kj_iters *out, int skip)
{
	struct kj_imap slot = {0};
	size_t skipped = 0, np = 0;
	size_t *count = calloc(out->n, sizeof(*count)), *seen = calloc(out->n, sizeof(*seen));
	if (!count || !seen)
		goto nomem;
	for (size_t i = 0; i < out->n; i++) {
		size_t k = kj_imap_get(&slot, out->v[i].pid);
		if (k == (size_t)-1 && kj_imap_put(&slot, out->v[i].pid, k = np++))
			goto nomem;
		count[k]++;
	}
	for (size_t i = 0; i < out->n; i++) {
		size_t k = kj_imap_get(&slot, out->v[i].pid);
		size_t sk = skip >= 0 ? (size_t)skip : (size_t)kj_iter_default_skip(count[k]);
		out->v[i].skipped = seen[k]++ < sk;
		skipped += out->v[i].skipped;
	}
	kj_imap_free(&slot);
	free(count);
	free(seen);
	if (skipped >= out->n) {
		kj_errorf("--skip %d leaves no iteration: region '%s' has %zu instance(s) over its"
			  " processes", skip, out->region, out->n);
		return KJ_EINVAL;
	}
	out->skip = (int)skipped;
	out->n_kept = out->n - skipped;
	return 0;
nomem:
	kj_imap_free(&slot);
	free(count);
	free(seen);
	return KJ_ENOMEM;
}

/* kj_iters_find's state while it reads a region's instances. */
struct iters_load {
	struct kj_iters *out;
	size_t cap;
	int quiet;
};

/* Appends one instance of the region (an instance ending before its start is warned of and left
 * out). */
static int add_instance(void *ud, const struct kj_store_a_range *r)
{
	struct iters_load *L = ud;
	struct kj_iters *out = L->out;
	struct kj_iter it = {0};
	it.start_ns = r->start_ns;
	it.closed = r->has_end;
	it.end_ns = it.closed ? r->end_ns : INT64_MAX;
	if (it.closed && it.end_ns < it.start_ns) {
		if (!L->quiet)
			kj_warnf("region '%s': an instance ends before it starts"
				 " (start %lld, end %lld ns); ignored",
				 out->region, (long long)it.start_ns, (long long)it.end_ns);
		return 0;
	}
	it.pid = r->pid;
	it.tid = r->tid;
	if (out->n == L->cap) {
		struct kj_iter *nv = realloc(out->v, 2 * L->cap * sizeof(*nv));
		if (!nv)
			return KJ_ENOMEM;
		out->v = nv;
		L->cap *= 2;
	}
	out->v[out->n++] = it;
	return 0;
}

int kj_iters_find(sqlite3 *db, const char *region, int skip, int64_t t0, int64_t t1, int quiet,
		  struct kj_iters *out)
{
	size_t cap = 64;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!region) {
		if ((rc = kj_iter_default_range(db, -1, out->region, sizeof(out->region),
						&out->chosen_by)) != 0)
			return rc;
	} else {
		snprintf(out->region, sizeof(out->region), "%s", region);
		out->chosen_by = "named";
	}

	out->v = malloc(cap * sizeof(*out->v));
	if (!out->v)
		return KJ_ENOMEM;
	if (out->region[0]) {
		struct iters_load L = {out, cap, quiet};
		rc = kj_store_a_ranges_named_each(db, out->region, add_instance, &L);
		if (rc)
			return rc;
		if (out->n == 0 && region) {
			kj_errorf("no NVTX range named '%s' in this run", region);
			return KJ_ENOTFOUND;
		}
	}
	if (out->n == 0) {
		out->whole_run = 1;
		out->region[0] = 0;
		out->v[0] = (struct kj_iter){.start_ns = t0, .end_ns = t1, .closed = 1};
		out->n = 1;
		if (skip > 0 && !quiet)
			kj_warnf("--skip %d ignored: the whole run is one iteration", skip);
		skip = 0;
	}
	qsort(out->v, out->n, sizeof(*out->v), iter_cmp);
	for (size_t i = 1; i < out->n; i++)
		if (out->v[i].pid != out->v[0].pid)
			out->multi_pid = 1;
	/* the next and the previous instance are the same process's (ranks run side by side);
	 * a few ranks interleave, so the scan is short */
	for (size_t i = 0; i < out->n; i++) {
		struct kj_iter *it = &out->v[i];
		size_t nx = i + 1, pv = i;
		while (out->multi_pid && nx < out->n && out->v[nx].pid != it->pid)
			nx++;
		while (pv > 0 && out->multi_pid && out->v[pv - 1].pid != it->pid)
			pv--;
		if (!it->closed) {
			int64_t e = nx < out->n ? out->v[nx].start_ns : t1;
			it->end_ns = e > it->start_ns ? e : it->start_ns;
			out->unclosed++;
		}
		if (pv > 0 && it->start_ns < out->v[pv - 1].end_ns)
			out->overlaps++;
	}
	if (!quiet && out->unclosed)
		kj_warnf("region '%s': %d instance(s) never closed; each is taken to end where the"
			 " next instance starts (or at the end of the run)",
			 out->region, out->unclosed);
	if (!quiet && out->overlaps)
		kj_warnf("region '%s': %d instance(s) start before the previous one ended"
			 " (overlapping iterations); GPU work goes to the latest instance that"
			 " started before its launch",
			 out->region, out->overlaps);
	if (out->multi_pid)
		return skip_per_process(out, skip);
	if (skip < 0)
		skip = kj_iter_default_skip(out->n);
	if ((size_t)skip >= out->n) {
		kj_errorf("--skip %d leaves no iteration: region '%s' has %zu instance(s)", skip,
			  out->region, out->n);
		return KJ_EINVAL;
	}
	out->skip = skip;
	for (size_t i = 0; i < out->n; i++)
		out->v[i].skipped = i < (size_t)skip;
	out->n_kept = out->n - (size_t)skip;
	return 0;
}

void kj_iters_free(struct kj_iters *it)
{
	if (!it)
		return;
	free(it->v);
	it->v = NULL;
	it->n = 0;
}

/* index of the first instance that starts after t (instances are sorted by start) */
static size_t first_after(const struct kj_iters *it, int64_t t)
{
	size_t lo = 0, hi = it->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (it->v[mid].start_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* t inside instance x (an empty instance holds its own instant) */
static int holds(const struct kj_iter *x, int64_t t)
{
	return t < x->end_ns || (t == x->end_ns && x->end_ns == x->start_ns);
}

long kj_iters_owner(const struct kj_iters *it, int64_t t)
{
	size_t lo = first_after(it, t);
	/* the latest-starting instance that still contains t; with overlaps, look back a little */
	for (size_t i = lo; i > 0 && lo - i < 4; i--)
		if (holds(&it->v[i - 1], t))
			return (long)(i - 1);
	return -1;
}

long kj_iters_owner_of(const struct kj_iters *it, int64_t t, int64_t pid)
{
	long i = kj_iters_owner(it, t);
	if (!it->multi_pid || pid <= 0 || (i >= 0 && it->v[i].pid == pid))
		return i;
	/* the latest-starting instance of this process that contains t, among the 256 before t */
	size_t lo = first_after(it, t);
	int own = 0;
	for (size_t k = lo; k > 0 && lo - k < 256; k--) {
		const struct kj_iter *x = &it->v[k - 1];
		if (x->pid != pid)
			continue;
		own = 1;
		if (holds(x, t))
			return (long)(k - 1);
	}
	if (own)
		return -1;
	for (size_t k = 0; k < it->n; k++) /* does pid have instances at all? */
		if (it->v[k].pid == pid)
			return -1;
	return i; /* a process without instances of its own: time decides, as before */
}
