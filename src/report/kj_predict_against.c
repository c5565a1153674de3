/* kjoule predict --model MODEL.yml --run RUN.kjdb: the operator sum against the step a traced run
 * measured (kjoule compare's iterations), in time and energy, and per kernel tier what the sum
 * holds against what the run's kernels took, so what the operators miss can be named. */
#include "kj_predict_against.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_store_w_run.h"
#include "kj_sweep.h"

/* (pred - meas) / meas in %, or null when either is unknown */
static json_t *err_pct(double pred, int pred_ok, const json_t *meas)
{
	if (!pred_ok || !json_is_number(meas) || !(json_number_value(meas) > 0))
		return json_null();
	double m = json_number_value(meas);
	return json_real(100.0 * (pred - m) / m);
}

/* key k of obj set to v, or to null where v is absent (a field compare did not write) */
static void set_or_null(json_t *obj, const char *k, json_t *v)
{
	json_object_set_new(obj, k, v ? json_incref(v) : json_null());
}

static const char *tier_of(const json_t *t)
{
	const char *s = json_string_value(json_object_get(t, "tier"));
	return s ? s : "";
}

/* One row of the per-tier table: the operators' sum in tier ts against the run's tier run_tier
 * (NULL: the run ran no kernel there, measured 0). */
static json_t *tier_row(const struct kj_tier_sum *ts, const json_t *run_tier)
{
	const json_t *meas = json_object_get(run_tier, "measured_us");
	const json_t *launches = json_object_get(run_tier, "launches_per_iteration");
	double mu = json_is_number(meas) ? json_number_value(meas) : 0.0;
	json_t *r = json_pack("{s:s,s:s}", "tier", ts->tier, "operators", ts->ops);
	json_object_set_new(r, "predicted_us", kj_predict_num_or_null(ts->time_us, ts->time_ok));
	json_object_set_new(r, "predicted_j", kj_predict_num_or_null(ts->energy_uj / 1e6, ts->energy_ok));
	json_object_set_new(r, "measured_us", json_real(mu));
	json_object_set_new(r, "launches_per_iteration", launches ? json_deep_copy(launches) : json_real(0.0));
	json_object_set_new(r, "predicted_minus_measured_us", kj_predict_num_or_null(ts->time_us - mu, ts->time_ok));
	return r;
}

/* The measured step of compare's JSON c (new references, json null where unknown): for one
 * process, its iterations' wall, energy, kernel sum and the energy's uncertainty; for a job of
 * several ranks, which the model predicts one rank of, the job's time per iteration (the slowest
 * rank's), its energy per GPU (the GPUs' sum over their count) and the ranks' mean kernel sum. */
static void measured_step(const json_t *c, json_t **wall, json_t **energy, json_t **ksum, json_t **unc,
			  json_t **basis)
{
	const json_t *job = json_object_get(c, "job");
	const json_t *ranks = json_object_get(job, "ranks"), *r;
	size_t n = json_array_size(ranks), i;
	if (n < 2) {
		*wall = json_incref(json_object_get(c, "wall_us"));
		*energy = json_incref(json_object_get(c, "energy_measured_j"));
		*ksum = json_incref(json_object_get(c, "kernel_sum_us"));
		*unc = json_incref(json_object_get(c, "energy_measured_mean_unc_pct"));
		*basis = json_string("the iterations' mean wall and energy (kjoule compare)");
		return;
	}
	const json_t *t = json_object_get(job, "time_per_iteration_us");
	const json_t *e = json_object_get(job, "energy_per_iteration_mj");
	const json_t *u = json_object_get(job, "energy_unc_mj");
	double ks = 0;
	int ks_ok = 1;
	json_array_foreach(ranks, i, r) {
		const json_t *k = json_object_get(r, "kernel_sum_us");
		ks_ok &= json_is_number(k);
		ks += json_number_value(k);
	}
	*wall = json_is_number(t) ? json_real(json_number_value(t)) : json_null();
	*energy = json_is_number(e) ? json_real(json_number_value(e) / 1e3 / (double)n) : json_null();
	*unc = json_is_number(e) && json_is_number(u) && json_number_value(e) > 0
		? json_real(100.0 * json_number_value(u) / json_number_value(e)) : json_null();
	*ksum = ks_ok ? json_real(ks / (double)n) : json_null();
	char b[200];
	snprintf(b, sizeof(b), "a job of %zu ranks, the model one rank: time per iteration of the slowest rank, "
		 "energy per GPU (the job's over its %zu GPUs), kernel sum the ranks' mean", n, n);
	*basis = json_string(b);
}

json_t *kj_predict_against_run(const char *run, const char *region, int skip, const struct kj_tier_sum *tiers,
			       int ntiers, double time_us, int time_ok, double energy_uj, int energy_ok,
			       const char *gpu)
{
	sqlite3 *db = NULL;
	struct kj_compare *cmp = NULL;
	struct kj_compare_opts o = {.region = region, .skip = skip, .top = 1, .quiet = 1};
	if (kj_db_open(run, 0, &db))
		return NULL;
	if (kj_compare_compute(db, &o, &cmp)) {
		kj_db_close(db);
		return NULL;
	}
	char devices[512], a[256], b[256];
	kj_store_device_names(db, devices, sizeof(devices));
	json_t *c = kj_compare_json(cmp);
	kj_compare_free(cmp);
	kj_db_close(db);
	if (!c) {
		fprintf(stderr, "kjoule: predict: %s: out of memory comparing the run\n", run);
		return NULL;
	}

	json_t *wall, *energy, *ksum, *unc, *basis;
	measured_step(c, &wall, &energy, &ksum, &unc, &basis);
	double e_j = energy_uj / 1e6;
	json_t *out = json_object();
	json_object_set_new(out, "run", json_string(run));
	json_object_set_new(out, "device", devices[0] ? json_string(devices) : json_null());
	kj_sweep_gpu_tag(devices, a, sizeof(a)); /* as kjoule fit keys its models ("NVIDIAH200") */
	kj_sweep_gpu_tag(gpu ? gpu : "", b, sizeof(b));
	json_object_set_new(out, "gpu_matches", devices[0] && !strchr(devices, ',') ? json_boolean(!strcmp(a, b))
										 : json_null());
	set_or_null(out, "iterations", json_object_get(c, "iterations"));

	json_t *m = json_object();
	set_or_null(m, "step_time_us", wall);
	set_or_null(m, "step_energy_j", energy);
	set_or_null(m, "step_energy_mean_unc_pct", unc);
	set_or_null(m, "basis", basis);
	set_or_null(m, "energy_too_short", json_object_get(c, "energy_measured_too_short"));
	set_or_null(m, "kernel_sum_us", ksum);
	set_or_null(m, "idle_us", json_object_get(c, "idle_us"));
	set_or_null(m, "kernels_per_iteration", json_object_get(c, "kernels_per_iteration"));
	json_object_set_new(out, "measured", m);

	json_t *p = json_pack("{s:s}", "gpu", gpu ? gpu : "");
	json_object_set_new(p, "time_us", kj_predict_num_or_null(time_us, time_ok));
	json_object_set_new(p, "energy_j", kj_predict_num_or_null(e_j, energy_ok));
	json_object_set_new(out, "predicted", p);
	json_t *e = json_object();
	json_object_set_new(e, "time", err_pct(time_us, time_ok, wall));
	/* a loop under two counter updates has no measured energy to judge by (compare's
	 * energy_measured_too_short): no error from it */
	int too_short = json_is_true(json_object_get(c, "energy_measured_too_short"));
	json_object_set_new(e, "energy", too_short ? json_null() : err_pct(e_j, energy_ok, energy));
	json_object_set_new(e, "time_vs_kernel_sum", err_pct(time_us, time_ok, ksum));
	json_object_set_new(out, "errors_pct", e);
	const char *why = NULL;
	if (!time_ok || !energy_ok)
		why = "the prediction is partial (operators without a model): no error is taken from it";
	else if (!json_is_number(energy))
		why = "the run measured no energy per iteration (compare says why): no energy error";
	else if (too_short)
		why = "the run's measured iterations span under two updates of the energy counter (~100 ms): "
		      "their energy is no measurement to judge by, so no energy error (run more iterations)";
	json_object_set_new(out, "errors_not_taken", why ? json_string(why) : json_null());

	/* per tier: the operators' predicted time beside what the run's kernels of the tier took; then
	 * the tiers no operator lands in (copies, memsets, communication), predicted at 0 */
	json_t *rows = json_array(), *ct = json_object_get(c, "tiers"), *t;
	size_t k;
	for (int i = 0; i < ntiers; i++) {
		const json_t *run_tier = NULL;
		json_array_foreach(ct, k, t)
			if (!strcmp(tier_of(t), tiers[i].tier))
				run_tier = t;
		json_array_append_new(rows, tier_row(&tiers[i], run_tier));
	}
	json_array_foreach(ct, k, t) {
		int i = 0;
		while (i < ntiers && strcmp(tier_of(t), tiers[i].tier))
			i++;
		if (i == ntiers) {
			struct kj_tier_sum none = {.tier = tier_of(t), .time_ok = 1, .energy_ok = 1};
			json_array_append_new(rows, tier_row(&none, t));
		}
	}
	json_object_set_new(out, "tiers", rows);
	json_decref(wall);
	json_decref(energy);
	json_decref(ksum);
	json_decref(unc);
	json_decref(basis);
	json_decref(c);
	return out;
}

/* "%.3f" of x / scale into buf, "-" for null */
static const char *cell(const json_t *x, double scale, char *buf, size_t len)
{
	if (json_is_number(x))
		snprintf(buf, len, "%.3f", json_number_value(x) / scale);
	else
		snprintf(buf, len, "-");
	return buf;
}

static const char *pct_cell(const json_t *x, char *buf, size_t len)
{
	if (json_is_number(x))
		snprintf(buf, len, "%+.1f %%", json_number_value(x));
	else
		snprintf(buf, len, "-");
	return buf;
}

void kj_predict_against_print(const json_t *a, FILE *f)
{
	const json_t *it = json_object_get(a, "iterations"), *m = json_object_get(a, "measured"),
		     *e = json_object_get(a, "errors_pct"), *pred = json_object_get(a, "predicted");
	char x[32], y[32], z[32];
	const char *dev = json_string_value(json_object_get(a, "device"));
	const char *region = json_string_value(json_object_get(it, "region"));
	fprintf(f, "\nagainst %s (region '%s': %lld iteration(s) measured, %lld skipped; %s)\n",
		json_string_value(json_object_get(a, "run")), region ? region : "?",
		(long long)json_integer_value(json_object_get(it, "measured")),
		(long long)json_integer_value(json_object_get(it, "skipped")), dev ? dev : "GPU not recorded");
	const char *basis = json_string_value(json_object_get(m, "basis"));
	if (basis && !strncmp(basis, "a job", 5))
		fprintf(f, "  measured: %s\n", basis);
	fprintf(f, "  %-22s %12s %12s %10s\n", "", "predicted", "measured", "error");
	fprintf(f, "  %-22s %12s %12s %10s\n", "time a step (ms)", cell(json_object_get(pred, "time_us"), 1e3, x, sizeof(x)),
		cell(json_object_get(m, "step_time_us"), 1e3, y, sizeof(y)), pct_cell(json_object_get(e, "time"), z, sizeof(z)));
	fprintf(f, "  %-22s %12s %12s %10s", "energy a step (J)", cell(json_object_get(pred, "energy_j"), 1, x, sizeof(x)),
		cell(json_object_get(m, "step_energy_j"), 1, y, sizeof(y)), pct_cell(json_object_get(e, "energy"), z, sizeof(z)));
	if (json_is_number(json_object_get(m, "step_energy_mean_unc_pct")))
		fprintf(f, "   (the measured mean known to ±%.1f %%)",
			json_number_value(json_object_get(m, "step_energy_mean_unc_pct")));
	fprintf(f, "\n  %-22s %12s %12s %10s\n", "kernel sum (ms)", cell(json_object_get(pred, "time_us"), 1e3, x, sizeof(x)),
		cell(json_object_get(m, "kernel_sum_us"), 1e3, y, sizeof(y)),
		pct_cell(json_object_get(e, "time_vs_kernel_sum"), z, sizeof(z)));
	const char *why = json_string_value(json_object_get(a, "errors_not_taken"));
	if (why)
		fprintf(f, "  ! %s\n", why);
	const char *outside = json_string_value(json_object_get(a, "outside_grid"));
	if (outside && *outside)
		fprintf(f, "  ! operators predicted outside their measured grid, where the models' error is unknown: "
			   "%s\n", outside);
	const json_t *unc = json_object_get(m, "step_energy_mean_unc_pct");
	if (json_is_number(unc) && json_number_value(unc) > 5.0)
		fprintf(f, "  ! the measured energy a step is known only to ±%.1f %%: an energy error below that says"
			   " nothing (more iterations narrow it)\n", json_number_value(unc));
	if (json_is_false(json_object_get(a, "gpu_matches")))
		fprintf(f, "  ! the run's GPU (%s) is not the one the models were fitted on (%s)\n", dev ? dev : "?",
			json_string_value(json_object_get(pred, "gpu")) ? json_string_value(json_object_get(pred, "gpu"))
									  : "?");
	fprintf(f, "By kernel tier, ms a step (how kjoule names the run's kernels; an operator's work can land\n"
		   "in another tier, so only a tier's total reads as its operators' error)\n");
	fprintf(f, "  %-12s %10s %10s %10s  %s\n", "tier", "predicted", "measured", "pred-meas", "operators");
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(a, "tiers"), i, t) {
		const char *ops = json_string_value(json_object_get(t, "operators"));
		json_t *d = json_object_get(t, "predicted_minus_measured_us");
		if (json_is_number(d))
			snprintf(z, sizeof(z), "%+.3f", json_number_value(d) / 1e3);
		else
			snprintf(z, sizeof(z), "-");
		fprintf(f, "  %-12s %10s %10s %10s  %s\n", tier_of(t),
			cell(json_object_get(t, "predicted_us"), 1e3, x, sizeof(x)),
			cell(json_object_get(t, "measured_us"), 1e3, y, sizeof(y)), z, ops && *ops ? ops : "(none)");
	}
}
