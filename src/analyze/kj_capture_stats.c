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
#include "kj_store_a_run.h"

/* Running sums of one set. */
struct acc {
	int64_t n, measured;
	double wall_ns, energy_j, unc_j;
};

static void acc_done(const struct acc *a, struct kj_iter_set *s)
{
	s->instances = a->n;
	s->measured = a->measured;
	s->wall_ms = a->n ? a->wall_ns / (double)a->n / 1e6 : NAN;
	s->energy_j = a->measured ? a->energy_j / (double)a->measured : NAN;
	s->uncertainty_j = a->measured ? a->unc_j / (double)a->measured : NAN;
}

/* iterations()'s state: the power samples, idle power and the two sets' sums. */
struct marks {
	const struct kj_power_sample *s;
	size_t n;
	double idle;
	struct acc *all, *cap;
};

/* Adds one closed iteration to the whole run's set and, when captured, to the captured set. */
static int add_mark(void *ud, int64_t t0, int64_t t1, int captured)
{
	const struct marks *M = ud;
	struct acc *sets[2] = {M->all, captured ? M->cap : NULL};
	struct kj_window_energy we;
	int ok = M->n && t1 > t0 && kj_energy_window(M->s, M->n, t0, t1, M->idle, &we) == 0 && we.ok &&
		 isfinite(we.energy_j);
	for (int i = 0; i < 2; i++) {
		if (!sets[i])
			continue;
		sets[i]->n++;
		sets[i]->wall_ns += (double)(t1 - t0);
		if (ok) {
			sets[i]->measured++;
			sets[i]->energy_j += we.energy_j;
			sets[i]->unc_j += isfinite(we.uncertainty_j) ? we.uncertainty_j : 0;
		}
	}
	return 0;
}

/* The captured mean against the whole run's, within their stated bounds or not (a steady program
 * gives the same energy per iteration inside the window and over the run). */
void kj_capture_agreement(struct kj_capture_stats *out)
{
	const struct kj_iter_set *a = &out->all, *c = &out->captured;
	out->agreement_known = 0;
	if (!a->measured || !c->measured || !(a->energy_j > 0) || !(c->energy_j > 0) ||
	    !isfinite(a->uncertainty_j) || !isfinite(c->uncertainty_j))
		return;
	out->agreement_apart_pct = 100 * (c->energy_j - a->energy_j) / a->energy_j;
	out->agreement_bound_pct = 100 * (a->uncertainty_j / a->energy_j + c->uncertainty_j / c->energy_j);
	out->agreement_within = out->agreement_bound_pct > KJ_CAPTURE_AGREE_BOUND_PCT ? -1
				: fabs(out->agreement_apart_pct) <= out->agreement_bound_pct;
	out->agreement_known = isfinite(out->agreement_apart_pct) && isfinite(out->agreement_bound_pct);
}

static int iterations(sqlite3 *db, struct kj_capture_stats *out)
{
	struct kj_power_sample *s = NULL;
	size_t n = 0;
	struct acc all = {0}, cap = {0};
	int64_t dev = kj_store_a_iteration_device(db);
	double idle = -1;
	if (dev < 0)
		out->energy_why = "no power samples of the traced GPU (--no-power, no NVML, or several GPUs "
				  "and none named by the run)";
	else if (kj_energy_load_samples(db, dev, &s, &n) != 0 || !n)
		out->energy_why = "the run has no power samples";
	else
		idle = kj_energy_idle_mw(db, dev);
	struct marks M = {s, n, idle, &all, &cap};
	if (kj_store_a_iteration_marks_each(db, add_mark, &M)) {
		free(s);
		return KJ_EDB;
	}
	free(s);
	acc_done(&all, &out->all);
	acc_done(&cap, &out->captured);
	if (!out->energy_why && !all.measured)
		out->energy_why = "the power samples cover none of the iterations";
	kj_capture_agreement(out);
	return 0;
}

int kj_capture_stats_of(sqlite3 *db, const char *path, struct kj_capture_stats *out)
{
	struct stat sb;
	memset(out, 0, sizeof(*out));
	out->window_start_ns = out->window_end_ns = -1;
	out->db_bytes = path && stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
	out->launches = kj_store_a_kernel_count(db);
	out->bytes_per_launch = out->launches > 0 && out->db_bytes >= 0
					? (double)out->db_bytes / (double)out->launches : NAN;
	out->all.wall_ms = out->all.energy_j = out->all.uncertainty_j = NAN;
	out->captured = out->all;
	if (!kj_store_a_has_capture_status(db))
		return 0;
	out->active = 1;
	kj_db_meta_get(db, "capture_range", out->spec, sizeof(out->spec));
	kj_db_meta_get(db, "capture_status", out->status, sizeof(out->status));
	kj_store_a_capture_window(db, &out->window_start_ns, &out->window_end_ns);
	return iterations(db, out);
}
