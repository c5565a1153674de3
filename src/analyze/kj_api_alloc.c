/* kjoule api's allocations: how much device memory the run allocated and freed, its peak and
 * the live bytes over time (kj_api_alloc.h). */
#include "kj_api_alloc.h"

#include <math.h>
#include <stdlib.h>

#include "kj_store_a2_api.h"

json_t *kj_api_us_json(double ns)
{
	if (!isfinite(ns))
		return json_null();
	return json_real(round(ns) / 1e3);
}

static int alloc_cmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1]; /* frees (negative) before allocations */
}

/* The allocation and free events being gathered: (time, +bytes or -bytes) pairs. */
struct alloc_events {
	int64_t *ev;
	size_t n, cap;
	int64_t count, frees, total;
};

static int add_allocation(void *ud, int64_t a, int has_free, int64_t free_ns, int64_t b)
{
	struct alloc_events *x = ud;
	if (x->n + 2 > x->cap) {
		size_t nc = x->cap ? x->cap * 2 : 256;
		int64_t *ne = realloc(x->ev, nc * 2 * sizeof(*ne));
		if (!ne)
			return 1; /* out of memory: what was read so far is reported */
		x->ev = ne;
		x->cap = nc;
	}
	x->ev[2 * x->n] = a;
	x->ev[2 * x->n + 1] = b;
	x->n++;
	x->count++;
	x->total += b;
	if (has_free) {
		x->ev[2 * x->n] = free_ns;
		x->ev[2 * x->n + 1] = -b;
		x->n++;
		x->frees++;
	}
	return 0;
}

json_t *kj_api_allocations_json(sqlite3 *db, int64_t t0, int64_t load_end)
{
	json_t *o = json_object();
	struct alloc_events x = {0};
	if (kj_store_a2_allocations_each(db, add_allocation, &x) < 0) {
		free(x.ev);
		return o;
	}
	int64_t *ev = x.ev;
	size_t n = x.n;
	int64_t count = x.count, frees = x.frees, total = x.total, at_load = -1;
	if (n)
		qsort(ev, n, 2 * sizeof(*ev), alloc_cmp);
	int64_t live = 0, peak = 0, peak_t = 0;
	json_t *tl = json_array();
	int64_t first = n ? ev[0] : 0, last = n ? ev[2 * (n - 1)] : 0;
	int64_t span = last - first > 0 ? last - first : 1;
	int next_pt = 0;
	for (size_t i = 0; i < n; i++) {
		live += ev[2 * i + 1];
		if (live > peak) {
			peak = live;
			peak_t = ev[2 * i];
		}
		if (load_end >= 0 && ev[2 * i] <= load_end)
			at_load = live;
		/* up to 20 points of the live-bytes curve, evenly spaced in time */
		int pt = (int)((double)(ev[2 * i] - first) * 19.0 / (double)span);
		if (pt >= next_pt && (i + 1 == n || ev[2 * (i + 1)] != ev[2 * i])) {
			json_t *p = json_object();
			json_object_set_new(p, "t_us", kj_api_us_json((double)(ev[2 * i] - t0)));
			json_object_set_new(p, "live_bytes", json_integer(live));
			json_array_append_new(tl, p);
			next_pt = pt + 1;
		}
	}
	free(ev);
	json_object_set_new(o, "allocations", json_integer(count));
	json_object_set_new(o, "frees", json_integer(frees));
	json_object_set_new(o, "bytes_allocated", json_integer(total));
	json_object_set_new(o, "peak_live_bytes", json_integer(peak));
	json_object_set_new(o, "peak_at_us", count ? kj_api_us_json((double)(peak_t - t0)) : json_null());
	json_object_set_new(o, "live_bytes_after_loading", at_load >= 0 ? json_integer(at_load) : json_null());
	json_object_set_new(o, "live_bytes_at_end", json_integer(live));
	json_object_set_new(o, "timeline", tl);
	return o;
}

