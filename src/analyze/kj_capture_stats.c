/* The whole run's iterations beside the captured ones (kj_capture_stats.h). */
#include "kj_capture_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kj_db.h"
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_iterations.h"
#include "kj_quantile.h"
#include "kj_store_a_run.h"

/* One set of iterations as it is read: count, summed wall time, first start and last end. */
struct acc {
	int64_t n;
	double wall_ns;
	int64_t first_ns, last_ns;
};

static void acc_add(struct acc *a, int64_t t0, int64_t t1)
{
	if (!a->n || t0 < a->first_ns)
		a->first_ns = t0;
	if (!a->n || t1 > a->last_ns)
		a->last_ns = t1;
	a->n++;
	a->wall_ns += (double)(t1 - t0);
}

/* The set's figures: its energy is the span's (first start to last end) shared by its instances,
 * so the counter's whole periods inside the span measure it, not each instance's short window. */
static void acc_done(const struct acc *a, const struct kj_power_sample *s, size_t n, double idle,
		     struct kj_iter_set *out)
{
	struct kj_window_energy we;
	out->instances = a->n;
	out->wall_ms = a->n ? a->wall_ns / (double)a->n / 1e6 : NAN;
	out->span_s = a->n ? (double)(a->last_ns - a->first_ns) / 1e9 : NAN;
	out->measured = 0;
	out->energy_j = out->uncertainty_j = NAN;
	if (!a->n || !n || a->last_ns <= a->first_ns ||
	    kj_energy_window(s, n, a->first_ns, a->last_ns, idle, &we) || !we.ok || !isfinite(we.energy_j) ||
	    !isfinite(we.uncertainty_j))
		return;
	out->measured = a->n;
	out->energy_j = we.energy_j / (double)a->n;
	out->uncertainty_j = we.uncertainty_j / (double)a->n;
}

/* The closed iteration marks, read once in start order. */
struct marks {
	struct mark {
		int64_t t0, t1;
		int captured;
	} *v;
	size_t n, cap;
	int64_t pid;     /* the first mark's process */
	int one_process; /* every mark is that process's */
};

static int keep_mark(void *ud, int64_t pid, int64_t t0, int64_t t1, int captured)
{
	struct marks *M = ud;
	if (t1 < t0)
		return 0;
	if (!M->n)
		M->pid = pid, M->one_process = 1;
	else if (pid != M->pid)
		M->one_process = 0;
	if (M->n == M->cap) {
		size_t cap = M->cap ? 2 * M->cap : 256;
		struct mark *v = realloc(M->v, cap * sizeof(*v));
		if (!v)
			return KJ_ENOMEM;
		M->v = v, M->cap = cap;
	}
	M->v[M->n++] = (struct mark){t0, t1, captured};
	return 0;
}

size_t kj_capture_warmup(const double *wall_ns, size_t n)
{
	size_t k = (size_t)kj_iter_default_skip(n);
	if (k >= n / 10) /* a tenth leaves no room for more */
		return k;
	double *sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return k;
	memcpy(sorted, wall_ns, n * sizeof(*sorted));
	kj_sort_doubles(sorted, n);
	double median = kj_quantile_sorted(sorted, n, 0.5);
	free(sorted);
	while (k < n / 10 && wall_ns[k] > KJ_CAPTURE_WARMUP_X_MEDIAN * median)
		k++;
	return k;
}

/* kj_capture_warmup of the marks' wall times where they are one process's; else (several
 * processes' steps interleave in start order, and one's steady steps may be another's slow ones),
 * or where they cannot be copied, the default skip. */
static size_t warmup_of(const struct marks *M)
{
	double *wall = M->one_process ? malloc((M->n ? M->n : 1) * sizeof(*wall)) : NULL;
	if (!wall)
		return (size_t)kj_iter_default_skip(M->n);
	for (size_t i = 0; i < M->n; i++)
		wall[i] = (double)(M->v[i].t1 - M->v[i].t0);
	size_t k = kj_capture_warmup(wall, M->n);
	free(wall);
	return k;
}

/* The captured mean against the whole run's, within their stated bounds or not (a steady program
 * gives the same energy per iteration inside the window and over the run). */
void kj_capture_agreement(struct kj_capture_stats *out)
{
	const struct kj_iter_set *a = &out->all, *c = &out->captured;
	out->agreement_known = 0;
	out->captured_slower_pct = a->instances && c->instances && a->wall_ms > 0
					   ? 100 * (c->wall_ms - a->wall_ms) / a->wall_ms : NAN;
	if (!a->measured || !c->measured || !(a->energy_j > 0) || !(c->energy_j > 0) ||
	    !isfinite(a->uncertainty_j) || !isfinite(c->uncertainty_j))
		return;
	out->agreement_apart_pct = 100 * (c->energy_j - a->energy_j) / a->energy_j;
	out->agreement_bound_pct = 100 * (a->uncertainty_j / a->energy_j + c->uncertainty_j / c->energy_j);
	out->agreement_within = out->agreement_bound_pct > KJ_CAPTURE_AGREE_BOUND_PCT ? -1
				: fabs(out->agreement_apart_pct) <= out->agreement_bound_pct;
	out->agreement_known = isfinite(out->agreement_apart_pct) && isfinite(out->agreement_bound_pct);
}

static int iterations(sqlite3 *db, int skip, struct kj_capture_stats *out)
{
	struct kj_power_sample *s = NULL;
	size_t n = 0;
	int64_t dev = kj_store_a_iteration_device(db);
	double idle = -1;
	if (dev < 0)
		out->energy_why = "no power samples of the traced GPU (--no-power, no NVML, or several GPUs "
				  "and none named by the run)";
	else if (kj_energy_load_samples(db, dev, &s, &n) != 0 || !n)
		out->energy_why = "the run has no power samples";
	else
		idle = kj_energy_idle_mw(db, dev);
	struct marks M = {0};
	struct acc all = {0}, cap = {0};
	int rc = kj_store_a_iteration_marks_each(db, dev, keep_mark, &M);
	if (rc) {
		free(M.v);
		free(s);
		return rc;
	}
	size_t skip_n = skip >= 0 ? (size_t)skip : warmup_of(&M);
	if (skip_n >= M.n && M.n)
		skip_n = M.n - 1; /* the whole run keeps its last instance at least */
	out->all_skipped = (int64_t)skip_n;
	for (size_t i = 0; i < M.n; i++) { /* the whole run past its warm-up; the captured ones */
		if (i >= skip_n)
			acc_add(&all, M.v[i].t0, M.v[i].t1);
		if (M.v[i].captured)
			acc_add(&cap, M.v[i].t0, M.v[i].t1);
	}
	free(M.v);
	acc_done(&all, s, n, idle, &out->all);
	acc_done(&cap, s, n, idle, &out->captured);
	free(s);
	if (!out->energy_why && !out->all.measured)
		out->energy_why = "the power samples do not cover the iterations";
	kj_capture_agreement(out);
	return 0;
}

int kj_capture_stats_of(sqlite3 *db, const char *path, int skip, struct kj_capture_stats *out)
{
	struct stat sb;
	memset(out, 0, sizeof(*out));
	out->window_start_ns = out->window_end_ns = -1;
	out->db_bytes = path && stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
	out->launches = kj_store_a_kernel_count(db);
	out->bytes_per_launch = out->launches > 0 && out->db_bytes >= 0
					? (double)out->db_bytes / (double)out->launches : NAN;
	out->all.wall_ms = out->all.span_s = out->all.energy_j = out->all.uncertainty_j = NAN;
	out->captured = out->all;
	if (!kj_store_a_has_capture_status(db))
		return 0;
	out->active = 1;
	kj_db_meta_get(db, "capture_range", out->spec, sizeof(out->spec));
	kj_db_meta_get(db, "capture_status", out->status, sizeof(out->status));
	kj_store_a_capture_window(db, &out->window_start_ns, &out->window_end_ns);
	char n[32] = "", ns[32] = ""; /* absent: a run of a tracer that never took CUPTI out */
	out->detaches = -1;
	out->detached_s = NAN;
	if (kj_db_meta_get(db, "capture_detaches", n, sizeof(n)) == 0 && n[0] &&
	    kj_db_meta_get(db, "capture_detached_ns", ns, sizeof(ns)) == 0 && ns[0]) {
		out->detaches = strtoll(n, NULL, 10);
		out->detached_s = (double)strtoll(ns, NULL, 10) / 1e9;
	}
	return iterations(db, skip, out);
}
