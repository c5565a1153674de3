/* kjoule compare -o DIR: the seed's report files and CSV tables. */
#include "kj_compare_out_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kj_error.h"
#include "kj_escape.h"

/* ---- files ---- */

static void fmt_realtime(const struct kj_compare *c, int64_t mono_ns, char *buf, size_t len)
{
	time_t secs;
	struct tm tm;
	int64_t rt = mono_ns + c->realtime_offset_ns;
	secs = (time_t)(rt / 1000000000);
	gmtime_r(&secs, &tm);
	size_t k = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + k, len - k, ".%03d", (int)((rt / 1000000) % 1000));
}

static int dump(json_t *o, const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (json_dump_file(o, p, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) != 0) {
		kj_errorf("%s: cannot write", p);
		return KJ_EIO;
	}
	return 0;
}

static FILE *open_csv(const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f)
		kj_errorf("%s: %s", p, strerror(errno));
	return f;
}

static void csv_num(FILE *f, json_t *v)
{
	if (json_is_null(v) || !v)
		fputs("", f);
	else if (json_is_integer(v))
		fprintf(f, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fprintf(f, "%.6g", json_real_value(v));
	else if (json_is_string(v))
		kj_csv_put_str(f, json_string_value(v));
	else if (json_is_boolean(v))
		fputs(json_is_true(v) ? "1" : "0", f);
}

/* write an array of flat objects as CSV with the given columns */
static int write_table(const char *dir, const char *name, json_t *arr, const char *const *cols)
{
	FILE *f = open_csv(dir, name);
	if (!f)
		return KJ_EIO;
	for (size_t k = 0; cols[k]; k++)
		fprintf(f, "%s%s", k ? "," : "", cols[k]);
	fputc('\n', f);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *o = json_array_get(arr, i);
		for (size_t k = 0; cols[k]; k++) {
			if (k)
				fputc(',', f);
			csv_num(f, json_object_get(o, cols[k]));
		}
		fputc('\n', f);
	}
	return fclose(f) ? KJ_EIO : 0;
}

static json_t *iterations_json(const struct kj_compare *c)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		json_t *o = json_object();
		json_object_set_new(o, "index", json_integer((json_int_t)i));
		json_object_set_new(o, "skipped", json_boolean(x->skipped));
		json_object_set_new(o, "closed", json_boolean(x->closed));
		json_object_set_new(o, "start_ns", json_integer(x->start_ns));
		json_object_set_new(o, "end_ns", json_integer(x->end_ns));
		json_object_set_new(o, "wall_us", cmp_num_or_null(x->wall * NS_US, 1));
		json_object_set_new(o, "span_us", cmp_num_or_null(x->span * NS_US, 1));
		json_object_set_new(o, "busy_us", cmp_num_or_null(x->busy * NS_US, 1));
		json_object_set_new(o, "kernel_sum_us", cmp_num_or_null(x->kernel_sum * NS_US, 1));
		json_object_set_new(o, "copy_sum_us", cmp_num_or_null(x->copy_sum * NS_US, 1));
		json_object_set_new(o, "overlap_us", cmp_num_or_null(x->overlap * NS_US, 1));
		json_object_set_new(o, "idle_us", cmp_num_or_null(x->idle * NS_US, 1));
		json_object_set_new(o, "host_only_us", cmp_num_or_null(x->host_only * NS_US, 1));
		json_object_set_new(o, "kernels", json_integer(x->n_kernels));
		json_object_set_new(o, "replay_sum_warm_us", cmp_num_or_null(x->replay_warm * NS_US, x->cov_warm > 0));
		json_object_set_new(o, "replay_sum_cold_us", cmp_num_or_null(x->replay_cold * NS_US, x->cov_cold > 0));
		json_object_set_new(o, "energy_measured_j", cmp_num_or_null(x->energy_measured_mj / 1000, x->energy_ok));
		json_object_set_new(o, "energy_kernels_j", cmp_num_or_null(x->energy_kernels_mj / 1000, x->cov_energy > 0));
		json_array_append_new(arr, o);
	}
	return arr;
}

int kj_compare_write_dir(const struct kj_compare *c, const char *dir)
{
	struct cmp_summary s;
	json_t *all, *o, *tb, *tk;
	int rc = 0;
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		kj_errorf("%s: cannot create directory: %s", dir, strerror(errno));
		return KJ_EIO;
	}
	cmp_summarize(c, &s);
	all = kj_compare_json(c);
	json_t *iters = iterations_json(c);

	/* full_model_timing.json (seed fields first) */
	o = json_object();
	json_object_set_new(o, "full_model_inference_us", json_object_get(all, "wall_us") ? json_incref(json_object_get(all, "wall_us")) : json_null());
	json_object_set_new(o, "full_model_inference_ms", cmp_num_or_null(s.wall.mean * 1e-6, s.n > 0));
	json_object_set_new(o, "min_time_us", cmp_num_or_null(s.wall.min * NS_US, s.n > 0));
	json_object_set_new(o, "max_time_us", cmp_num_or_null(s.wall.max * NS_US, s.n > 0));
	json_object_set_new(o, "num_runs", json_integer(s.n));
	{
		int64_t first_ns = 0, last_ns = 0;
		int any = 0;
		for (size_t i = 0; i < c->it.n; i++) {
			if (c->iv[i].skipped)
				continue;
			if (!any || c->iv[i].start_ns < first_ns)
				first_ns = c->iv[i].start_ns;
			if (!any || c->iv[i].end_ns > last_ns)
				last_ns = c->iv[i].end_ns;
			any = 1;
		}
		char b0[64], b1[64];
		if (any && c->have_realtime) {
			fmt_realtime(c, first_ns, b0, sizeof(b0));
			fmt_realtime(c, last_ns, b1, sizeof(b1));
			json_object_set_new(o, "start_timestamp", json_string(b0));
			json_object_set_new(o, "end_timestamp", json_string(b1));
		} else {
			json_object_set_new(o, "start_timestamp", json_null());
			json_object_set_new(o, "end_timestamp", json_null());
		}
		json_object_set_new(o, "start_ns", any ? json_integer(first_ns) : json_null());
		json_object_set_new(o, "end_ns", any ? json_integer(last_ns) : json_null());
	}
	json_object_set(o, "iterations_info", json_object_get(all, "iterations"));
	json_object_set(o, "iterations", iters);
	rc = dump(o, dir, "full_model_timing.json");
	json_decref(o);

	/* comparison_report.json */
	o = json_object();
	json_object_set(o, "full_model_inference_us", json_object_get(all, "wall_us"));
	json_object_set(o, "predicted_from_kernels_us", json_object_get(all, "replay_sum_warm_us"));
	json_object_set(o, "error_percent", json_object_get(all, "naive_error_pct"));
	tb = json_object();
	json_t *tiers = json_object_get(all, "tiers");
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		json_t *t = json_array_get(tiers, i), *e = json_object();
		json_t *rw = json_object_get(t, "replay_warm_us");
		int ok = 0;
		double p = json_is_number(rw) && json_is_number(json_object_get(all, "replay_sum_warm_us"))
				   ? cmp_safe_div(100.0 * json_number_value(rw),
					      json_number_value(json_object_get(all, "replay_sum_warm_us")), &ok)
				   : 0;
		json_object_set(e, "unique_kernels", json_object_get(t, "unique_kernels"));
		json_object_set(e, "total_us", json_is_number(rw) ? rw : json_object_get(t, "measured_us"));
		json_object_set_new(e, "total_source", json_string(json_is_number(rw) ? "replay_warm" : "measured"));
		json_object_set_new(e, "percentage_of_predicted", cmp_num_or_null(p, ok));
		json_object_set(e, "measured_us", json_object_get(t, "measured_us"));
		json_object_set(e, "launches_per_iteration", json_object_get(t, "launches_per_iteration"));
		json_object_set(e, "energy_j", json_object_get(t, "energy_j"));
		json_object_set_new(tb, json_string_value(json_object_get(t, "tier")), e);
	}
	json_object_set_new(o, "tier_breakdown", tb);
	tk = json_array();
	json_t *top = json_object_get(all, "top_kernels");
	for (size_t i = 0; i < json_array_size(top); i++) {
		json_t *t = json_array_get(top, i), *e = json_object();
		json_t *pred = json_object_get(t, "predicted_us");
		json_object_set(e, "name", json_object_get(t, "name"));
		json_object_set(e, "tier", json_object_get(t, "tier"));
		json_object_set(e, "count", json_object_get(t, "count_per_iteration"));
		json_object_set(e, "total_us", json_is_number(pred) ? pred : json_object_get(t, "measured_us"));
		json_object_set(e, "measured_us", json_object_get(t, "measured_us"));
		json_array_append_new(tk, e);
	}
	json_object_set_new(o, "top_kernels", tk);
	json_object_set(o, "kjoule", all);
	if (!rc)
		rc = dump(o, dir, "comparison_report.json");
	json_decref(o);

	/* energy_report.json */
	o = json_object();
	{
		double dur_s = 0;
		for (size_t i = 0; i < c->it.n; i++)
			if (!c->iv[i].skipped)
				dur_s += (double)c->iv[i].wall * 1e-9;
		double total_j = s.e_meas.mean / 1000.0 * (double)s.e_meas.n;
		json_t *pw = json_object(), *ej = json_object(), *ew = json_object();
		json_object_set_new(o, "duration_seconds", cmp_num_or_null(dur_s, 1));
		json_object_set_new(o, "num_power_samples", json_integer(c->n_power_in_windows));
		json_object_set_new(o, "num_runs", json_integer(s.n));
		json_object_set_new(pw, "average", cmp_num_or_null(c->power_avg_w, c->power_avg_w >= 0));
		json_object_set_new(pw, "peak", cmp_num_or_null(c->power_max_w, c->power_max_w >= 0));
		json_object_set_new(pw, "min", cmp_num_or_null(c->power_min_w, c->power_min_w >= 0));
		json_object_set_new(o, "power_watts", pw);
		json_object_set_new(ej, "total", cmp_num_or_null(total_j, s.have_meas));
		json_object_set_new(ej, "per_run", cmp_num_or_null(s.e_meas.mean / 1000.0, s.have_meas));
		json_object_set_new(o, "energy_joules", ej);
		json_object_set_new(ew, "total", cmp_num_or_null(total_j / 3600.0, s.have_meas));
		json_object_set_new(ew, "per_run", cmp_num_or_null(s.e_meas.mean / 1000.0 / 3600.0, s.have_meas));
		json_object_set_new(o, "energy_wh", ew);
		json_object_set_new(o, "shared_gpu", cmp_shared_json(c));
		json_object_set_new(o, "energy_clock_state", cmp_clocks_json(c));
		const char *keys[] = {"energy_measured_j", "energy_measured_unc_j", "energy_kernels_j",
				      "energy_kernels_coverage", "energy_idle_j", "energy_predicted_j",
				      "energy_error_pct", "idle_power_w", "sequence_eager_energy_j",
				      "sequence_graph_energy_j", NULL};
		for (size_t k = 0; keys[k]; k++)
			json_object_set(o, keys[k], json_object_get(all, keys[k]));
		json_object_set(o, "tiers", json_object_get(all, "tiers"));
	}
	if (!rc)
		rc = dump(o, dir, "energy_report.json");
	json_decref(o);

	static const char *const tier_cols[] = {"tier", "unique_kernels", "launches_per_iteration",
						"measured_us", "measured_pct", "replay_warm_us",
						"replay_coverage", "energy_j", NULL};
	static const char *const top_cols[] = {"name", "unique_id", "tier", "count_per_iteration",
					       "measured_us", "measured_mean_us", "replay_warm_us",
					       "replay_cold_us", "predicted_us",
					       "energy_mj_per_launch", "energy_warm_mj_per_launch",
					       "energy_cold_mj_per_launch", "share_of_kernel_sum_pct", NULL};
	static const char *const reg_cols[] = {"name", "depth", "instances_per_iteration", "time_us",
					       "gpu_busy_us", "kernels_per_iteration", NULL};
	static const char *const it_cols[] = {"index", "skipped", "closed", "start_ns", "end_ns",
					      "wall_us", "span_us", "busy_us", "kernel_sum_us",
					      "copy_sum_us", "overlap_us", "idle_us", "host_only_us",
					      "kernels", "replay_sum_warm_us", "replay_sum_cold_us",
					      "energy_measured_j", "energy_kernels_j", NULL};
	if (!rc)
		rc = write_table(dir, "tiers.csv", json_object_get(all, "tiers"), tier_cols);
	if (!rc)
		rc = write_table(dir, "top_kernels.csv", json_object_get(all, "top_kernels"), top_cols);
	if (!rc)
		rc = write_table(dir, "regions.csv", json_object_get(all, "regions"), reg_cols);
	if (!rc)
		rc = write_table(dir, "iterations.csv", iters, it_cols);
	json_decref(iters);
	json_decref(all);
	return rc;
}

