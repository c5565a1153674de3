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

/* The device whose samples measure the iterations: the traced process's, else the only one. */
static int64_t iteration_device(sqlite3 *db)
{
	int64_t d = kj_db_one_i64(db, "SELECT pd.device_id FROM process_device pd JOIN iteration_mark m"
				  " ON m.pid = pd.pid WHERE pd.device_id IN (SELECT device_id FROM power_sample)"
				  " LIMIT 1", 0, -1);
	if (d >= 0)
		return d;
	if (kj_db_one_i64(db, "SELECT count(DISTINCT device_id) FROM power_sample", 0, 0) == 1)
		return kj_db_one_i64(db, "SELECT device_id FROM power_sample LIMIT 1", 0, -1);
	return -1;
}

static int iterations(sqlite3 *db, struct kj_capture_stats *out)
{
	struct kj_power_sample *s = NULL;
	size_t n = 0;
	sqlite3_stmt *st = NULL;
	struct acc all = {0}, cap = {0};
	int64_t dev = iteration_device(db);
	double idle = -1;
	if (dev < 0)
		out->energy_why = "no power samples of the traced GPU (--no-power, no NVML, or several GPUs "
				  "and none named by the run)";
	else if (kj_energy_load_samples(db, dev, &s, &n) != 0 || !n)
		out->energy_why = "the run has no power samples";
	else
		idle = kj_energy_idle_mw(db, dev);
	if (kj_db_prepare(db, "SELECT start_ns, end_ns, captured FROM iteration_mark WHERE end_ns IS NOT NULL"
			  " ORDER BY start_ns", &st)) {
		free(s);
		return KJ_EDB;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t t0 = sqlite3_column_int64(st, 0), t1 = sqlite3_column_int64(st, 1);
		struct acc *sets[2] = {&all, sqlite3_column_int(st, 2) ? &cap : NULL};
		struct kj_window_energy we;
		int ok = n && t1 > t0 && kj_energy_window(s, n, t0, t1, idle, &we) == 0 && we.ok &&
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
	}
	sqlite3_finalize(st);
	free(s);
	acc_done(&all, &out->all);
	acc_done(&cap, &out->captured);
	if (!out->energy_why && !all.measured)
		out->energy_why = "the power samples cover none of the iterations";
	return 0;
}

int kj_capture_stats_of(sqlite3 *db, const char *path, struct kj_capture_stats *out)
{
	struct stat sb;
	memset(out, 0, sizeof(*out));
	out->window_start_ns = out->window_end_ns = -1;
	out->db_bytes = path && stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
	out->launches = kj_db_one_i64(db, "SELECT count(*) FROM kernel", 0, 0);
	out->bytes_per_launch = out->launches > 0 && out->db_bytes >= 0
					? (double)out->db_bytes / (double)out->launches : NAN;
	out->all.wall_ms = out->all.energy_j = out->all.uncertainty_j = NAN;
	out->captured = out->all;
	if (!kj_db_has_row(db, "SELECT 1 FROM meta WHERE key = 'capture_status'"))
		return 0;
	out->active = 1;
	kj_db_meta_get(db, "capture_range", out->spec, sizeof(out->spec));
	kj_db_meta_get(db, "capture_status", out->status, sizeof(out->status));
	out->window_start_ns = kj_db_one_i64(db, "SELECT min(start_ns) FROM capture_window", 0, -1);
	out->window_end_ns = kj_db_one_i64(db, "SELECT max(end_ns) FROM capture_window", 0, -1);
	return iterations(db, out);
}
