/* kjoule api's text report: the story object of kj_api_story() as the tracing guide's answers. */
#include "kj_apistory_out.h"

#include <math.h>

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void pr_us(FILE *f, const char *label, const json_t *o, const char *k)
{
	double v = num(o, k);
	if (isnan(v))
		fprintf(f, "  %-40s %14s\n", label, "n/a");
	else
		fprintf(f, "  %-40s %14.1f us\n", label, v);
}

static void pr_bytes(FILE *f, const char *label, double b)
{
	if (isnan(b))
		fprintf(f, "  %-40s %14s\n", label, "n/a");
	else
		fprintf(f, "  %-40s %14.0f B (%.2f MiB)\n", label, b, b / 1048576.0);
}

void kj_api_print(const json_t *j, FILE *f)
{
	const json_t *x;
	size_t i;
	if (!json_is_true(json_object_get(j, "api_traced")))
		fprintf(f, "note: %s\n", json_string_value(json_object_get(j, "note")));
	fprintf(f, "run: %.1f us, %lld API calls\n", num(j, "run_duration_us"),
		(long long)json_integer_value(json_object_get(j, "api_calls")));

	x = json_object_get(j, "loading");
	fprintf(f, "\nModel loading (before the first iteration)\n");
	pr_us(f, "time before the first iteration", x, "before");
	if (!isnan(num(x, "api_calls")))
		fprintf(f, "  %-40s %14.0f (%.1f us inside them)\n", "CUDA API calls", num(x, "api_calls"),
			num(x, "api_time_us"));

	x = json_object_get(j, "kernels_per_iteration");
	fprintf(f, "\nKernels launched per iteration");
	if (json_is_string(json_object_get(x, "region")))
		fprintf(f, " (region '%s', %lld iterations, %lld skipped)",
			json_string_value(json_object_get(x, "region")),
			(long long)json_integer_value(json_object_get(x, "iterations")),
			(long long)json_integer_value(json_object_get(x, "skipped")));
	else
		fprintf(f, " (no NVTX iterations: the whole run)");
	fprintf(f, "\n  mean %.1f, min %.0f, max %.0f; %.0f kernels in the run\n", num(x, "mean"),
		num(x, "min"), num(x, "max"), num(x, "kernels_total"));

	x = json_object_get(j, "bytes");
	fprintf(f, "\nBytes copied\n");
	pr_bytes(f, "host to device", num(x, "h2d"));
	pr_bytes(f, "device to host", num(x, "d2h"));
	pr_bytes(f, "device to device", num(x, "d2d"));
	pr_bytes(f, "host to device before the first iteration", num(x, "h2d_before_first_iteration"));
	pr_bytes(f, "host to device per measured iteration", num(x, "h2d_per_iteration"));
	pr_bytes(f, "device to host per measured iteration", num(x, "d2h_per_iteration"));

	fprintf(f, "\nStages\n");
	x = json_object_get(j, "stages");
	for (i = 0; i < json_array_size(x); i++) {
		const json_t *s = json_array_get(x, i);
		double d = num(s, "duration_us");
		if (isnan(d))
			fprintf(f, "  %-18s %14s   (%s)\n", json_string_value(json_object_get(s, "stage")),
				"n/a", json_string_value(json_object_get(s, "defined_as")));
		else
			fprintf(f, "  %-18s %14.1f us (%s)\n",
				json_string_value(json_object_get(s, "stage")), d,
				json_string_value(json_object_get(s, "defined_as")));
		if (!isnan(num(s, "per_iteration_us")))
			fprintf(f, "  %-18s %14.1f us per measured iteration\n", "", num(s, "per_iteration_us"));
	}
	x = json_object_get(j, "per_token");
	if (num(x, "ranges") > 0)
		fprintf(f, "  per token ('%s'..., %.0f ranges): mean %.1f us, min %.1f, max %.1f\n",
			json_string_value(json_object_get(x, "first_name")), num(x, "ranges"),
			num(x, "mean_us"), num(x, "min_us"), num(x, "max_us"));
	else
		fprintf(f, "  per token: no NVTX ranges named like token/decode\n");

	x = json_object_get(j, "synchronization");
	fprintf(f, "\nBlocked in synchronisation (calls named *Synchronize*)\n");
	if (isnan(num(x, "calls")))
		fprintf(f, "  unknown without an API trace\n");
	else
		fprintf(f, "  %.0f calls, %.1f us (%.1f%% of the run)\n", num(x, "calls"),
			num(x, "time_us"), 100 * num(x, "fraction_of_run"));

	x = json_object_get(j, "gpu_idle");
	fprintf(f, "\nGPU idle: %.1f us in %.0f gaps inside the GPU span of %.1f us (busy %.1f us)\n",
		num(x, "idle_us"), num(x, "gaps"), num(x, "gpu_span_us"), num(x, "gpu_busy_us"));
	const json_t *lg = json_object_get(x, "longest");
	for (i = 0; i < json_array_size(lg); i++) {
		const json_t *g = json_array_get(lg, i), *cpu = json_object_get(g, "cpu");
		fprintf(f, "  %10.1f us at %.1f us: %s", num(g, "duration_us"), num(g, "start_us"),
			json_string_value(json_object_get(g, "cpu_summary")));
		for (size_t k = 0; k < json_array_size(cpu); k++) {
			const json_t *c = json_array_get(cpu, k);
			fprintf(f, "%s%s x%.0f (%.1f us)", k ? ", " : " ", json_string_value(json_object_get(c, "name")),
				num(c, "calls"), num(c, "overlap_us"));
		}
		fputc('\n', f);
	}

	x = json_object_get(j, "allocations");
	fprintf(f, "\nAllocations: %.0f (%.0f freed), %.2f MiB allocated, peak live %.2f MiB",
		num(x, "allocations"), num(x, "frees"), num(x, "bytes_allocated") / 1048576.0,
		num(x, "peak_live_bytes") / 1048576.0);
	if (!isnan(num(x, "peak_at_us")))
		fprintf(f, " at %.1f us", num(x, "peak_at_us"));
	fputc('\n', f);
	const json_t *tl = json_object_get(x, "timeline");
	for (i = 0; i < json_array_size(tl); i++) {
		const json_t *p = json_array_get(tl, i);
		fprintf(f, "  %12.1f us  %12.2f MiB live\n", num(p, "t_us"), num(p, "live_bytes") / 1048576.0);
	}

	x = json_object_get(j, "per_api");
	if (json_is_array(x)) {
		fprintf(f, "\nCalls per API (by total time)\n  %10s %14s %12s %12s  %s\n", "count",
			"total_us", "mean_us", "max_us", "name");
		for (i = 0; i < json_array_size(x); i++) {
			const json_t *a = json_array_get(x, i);
			fprintf(f, "  %10.0f %14.1f %12.2f %12.1f  %s\n", num(a, "count"), num(a, "total_us"),
				num(a, "mean_us"), num(a, "max_us"), json_string_value(json_object_get(a, "name")));
		}
	}
}
