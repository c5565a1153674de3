/* The replay report: what was replayed, what was not and why, text and JSON. See kj_replay.h. */
#include "kj_replay.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int replayed(const struct kj_replay_item *it)
{
	return !strcmp(it->res.status, "ok") || !strcmp(it->res.status, "relocated");
}

static const struct kj_replay_timing *main_timing(const struct kj_replay_item *it)
{
	if (it->res.warm.runs > 0)
		return &it->res.warm;
	if (it->res.cold.runs > 0)
		return &it->res.cold;
	return NULL;
}

static double contribution_ns(const struct kj_replay_item *it)
{
	const struct kj_replay_timing *t = main_timing(it);
	return t ? (double)it->launches * (double)t->median_ns : -1.0;
}

static int by_contribution(const void *a, const void *b)
{
	double x = contribution_ns(*(const struct kj_replay_item *const *)a);
	double y = contribution_ns(*(const struct kj_replay_item *const *)b);
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Items sorted by contribution (malloc'ed array of pointers), NULL on allocation failure. */
static const struct kj_replay_item **sorted_items(const struct kj_replay_plan *plan)
{
	const struct kj_replay_item **v = malloc((plan->n ? plan->n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < plan->n; i++)
		v[i] = &plan->items[i];
	qsort(v, plan->n, sizeof(*v), by_contribution);
	return v;
}

struct coverage {
	int64_t launches, l_exact, l_reloc, l_not;
	size_t kernels, k_exact, k_reloc, k_not;
	double warm_sum_ns, cold_sum_ns;
	int any_warm, any_cold;
};

static void coverage_of(const struct kj_replay_plan *plan, struct coverage *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_item *it = &plan->items[i];
		c->launches += it->launches;
		c->kernels++;
		if (!strcmp(it->res.status, "ok")) {
			c->l_exact += it->launches;
			c->k_exact++;
		} else if (!strcmp(it->res.status, "relocated")) {
			c->l_reloc += it->launches;
			c->k_reloc++;
		} else {
			c->l_not += it->launches;
			c->k_not++;
		}
		if (replayed(it) && it->res.warm.runs > 0) {
			c->warm_sum_ns += (double)it->launches * (double)it->res.warm.median_ns;
			c->any_warm = 1;
		}
		if (replayed(it) && it->res.cold.runs > 0) {
			c->cold_sum_ns += (double)it->launches * (double)it->res.cold.median_ns;
			c->any_cold = 1;
		}
	}
}

static double pct(int64_t a, int64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

void kj_replay_report_print(FILE *f, const struct kj_replay_plan *plan)
{
	const struct kj_replay_item **v = sorted_items(plan);
	struct coverage c;
	double total = 0;
	if (!v)
		return;
	coverage_of(plan, &c);
	total = c.any_warm ? c.warm_sum_ns : c.cold_sum_ns;
	fprintf(f, "%-9s %9s %11s %11s %10s %6s %11s %11s %-9s %s\n", "unique", "launches", "warm_med_us",
		"cold_med_us", "total_ms", "share", "mJ/launch", "cold_mJ", "status", "kernel");
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_item *it = v[i];
		const char *name = it->demangled ? it->demangled : it->mangled ? it->mangled : "?";
		double contrib = contribution_ns(it);
		char warm[24] = "-", cold[24] = "-", tot[24] = "-", share[16] = "-", mj[24] = "-", cmj[24] = "-";
		if (it->res.warm.runs > 0)
			snprintf(warm, sizeof(warm), "%.2f", (double)it->res.warm.median_ns / 1e3);
		if (it->res.cold.runs > 0)
			snprintf(cold, sizeof(cold), "%.2f", (double)it->res.cold.median_ns / 1e3);
		if (contrib >= 0) {
			snprintf(tot, sizeof(tot), "%.3f", contrib / 1e6);
			if (total > 0)
				snprintf(share, sizeof(share), "%.1f%%", 100.0 * contrib / total);
		}
		if (it->res.has_energy)
			snprintf(mj, sizeof(mj), "%.4g", it->res.energy_mj_per_launch);
		if (it->res.has_energy_cold)
			snprintf(cmj, sizeof(cmj), "%.4g", it->res.energy_cold_mj_per_launch);
		fprintf(f, "%-9" PRId64 " %9" PRId64 " %11s %11s %10s %6s %11s %11s %-9s %.70s\n",
			it->unique_id, it->launches, warm, cold, tot, share, mj, cmj,
			it->res.status[0] ? it->res.status : "failed", name);
	}
	fprintf(f, "\ncoverage: launches %" PRId64 "/%" PRId64 " replayed (%.1f%%: exact %" PRId64
		   ", relocated %" PRId64 "); unique kernels %zu/%zu (exact %zu, relocated %zu)\n",
		c.l_exact + c.l_reloc, c.launches, pct(c.l_exact + c.l_reloc, c.launches), c.l_exact,
		c.l_reloc, c.k_exact + c.k_reloc, c.kernels, c.k_exact, c.k_reloc);
	if (c.launches != plan->total_launches && plan->total_launches > 0)
		fprintf(f, "          (selection: %" PRId64 " of the run's %" PRId64 " launches)\n",
			c.launches, plan->total_launches);
	if (c.k_reloc) {
		fprintf(f, "relocated (pointers rewritten; original addresses unavailable):\n");
		for (size_t i = 0; i < plan->n; i++)
			if (!strcmp(plan->items[i].res.status, "relocated") &&
			    strncmp(plan->items[i].res.error, "data:", 5))
				fprintf(f, "  %" PRId64 " %.60s: %s\n", plan->items[i].unique_id,
					plan->items[i].mangled ? plan->items[i].mangled : "?",
					plan->items[i].res.error);
	}
	size_t fallback = 0;
	for (size_t i = 0; i < plan->n; i++)
		if (replayed(&plan->items[i]) && !strncmp(plan->items[i].res.error, "data:", 5)) {
			if (!fallback++)
				fprintf(f, "replayed on fallback data (random data faulted or hung):\n");
			fprintf(f, "  %" PRId64 " %.60s: %.160s\n", plan->items[i].unique_id,
				plan->items[i].mangled ? plan->items[i].mangled : "?", plan->items[i].res.error);
		}
	if (c.k_not) {
		fprintf(f, "not replayed: %zu kernels, %" PRId64 " launches\n", c.k_not, c.l_not);
		for (size_t i = 0; i < plan->n; i++)
			if (!replayed(&plan->items[i]))
				fprintf(f, "  %" PRId64 " %.60s: %s: %s\n", plan->items[i].unique_id,
					plan->items[i].mangled ? plan->items[i].mangled : "?",
					plan->items[i].res.status[0] ? plan->items[i].res.status : "failed",
					plan->items[i].res.error[0] ? plan->items[i].res.error : "no result");
	}
	size_t nver = 0, vcount[4] = {0};
	static const char *const vname[4] = {"identical", "differs", "partial", "no-snapshot"};
	for (size_t i = 0; i < plan->n; i++)
		for (int j = 0; j < 4 && plan->items[i].res.verify[0]; j++)
			if (!strcmp(plan->items[i].res.verify, vname[j]))
				vcount[j]++, nver++;
	if (nver) {
		fprintf(f, "verify (outputs vs the run's after-launch snapshot): identical %zu, differs %zu, "
			   "partial %zu, no snapshot %zu\n", vcount[0], vcount[1], vcount[2], vcount[3]);
		for (size_t i = 0; i < plan->n; i++)
			if (!strcmp(plan->items[i].res.verify, "differs"))
				fprintf(f, "  %" PRId64 " %.60s: %" PRId64 " of %" PRId64 " bytes differ in %" PRId64
					   " buffers\n", plan->items[i].unique_id,
					plan->items[i].mangled ? plan->items[i].mangled : "?",
					plan->items[i].res.verify_diff_bytes, plan->items[i].res.verify_bytes,
					plan->items[i].res.verify_buffers);
	}
	if (plan->traced_busy_ns > 0) {
		fprintf(f, "traced GPU busy (sum of kernel durations): %.3f ms", plan->traced_busy_ns / 1e6);
		if (c.any_warm)
			fprintf(f, "; replay sum(count x warm median): %.3f ms (%+.1f%%)", c.warm_sum_ns / 1e6,
				100.0 * (c.warm_sum_ns - (double)plan->traced_busy_ns) / (double)plan->traced_busy_ns);
		if (c.any_cold)
			fprintf(f, "; cold: %.3f ms (%+.1f%%)", c.cold_sum_ns / 1e6,
				100.0 * (c.cold_sum_ns - (double)plan->traced_busy_ns) / (double)plan->traced_busy_ns);
		fputc('\n', f);
	} else if (c.any_warm || c.any_cold) {
		fprintf(f, "replay sum(count x median): warm %.3f ms, cold %.3f ms\n", c.warm_sum_ns / 1e6,
			c.cold_sum_ns / 1e6);
	}
	free(v);
}

static json_t *timing_json(const struct kj_replay_timing *t)
{
	if (t->runs <= 0)
		return json_null();
	return json_pack("{s:i, s:I, s:I, s:f, s:I, s:f}", "runs", t->runs, "min_ns",
			 (json_int_t)t->min_ns, "median_ns", (json_int_t)t->median_ns, "mean_ns",
			 t->mean_ns, "max_ns", (json_int_t)t->max_ns, "stdev_ns", t->stdev_ns);
}

static json_t *num_or_null(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

char *kj_replay_report_json(const struct kj_replay_plan *plan)
{
	const struct kj_replay_item **v = sorted_items(plan);
	struct coverage c;
	char *text = NULL;
	if (!v)
		return NULL;
	coverage_of(plan, &c);
	json_t *root = json_object(), *arr = json_array();
	if (!root || !arr)
		goto out;
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_item *it = v[i];
		const struct kj_replay_result *r = &it->res;
		double contrib = contribution_ns(it);
		json_t *k = json_object();
		json_object_set_new(k, "unique_id", json_integer(it->unique_id));
		json_object_set_new(k, "mangled", it->mangled ? json_string(it->mangled) : json_null());
		json_object_set_new(k, "name", json_string(it->demangled ? it->demangled
							       : it->mangled ? it->mangled : "?"));
		json_object_set_new(k, "launches", json_integer(it->launches));
		json_object_set_new(k, "status", json_string(r->status[0] ? r->status : "failed"));
		json_object_set_new(k, "error", r->error[0] ? json_string(r->error) : json_null());
		json_object_set_new(k, "timer", r->timer[0] ? json_string(r->timer) : json_null());
		json_object_set_new(k, "warm", timing_json(&r->warm));
		json_object_set_new(k, "cold", timing_json(&r->cold));
		json_object_set_new(k, "total_ns", contrib >= 0 ? json_real(contrib) : json_null());
		json_object_set_new(k, "traced_ns", json_integer(it->traced_ns));
		if (r->has_energy)
			json_object_set_new(k, "energy",
					    json_pack("{s:i, s:I, s:o, s:o, s:o, s:o, s:o, s:s}", "unroll", r->unroll,
						      "launches", (json_int_t)r->energy_launches, "seconds",
						      num_or_null(r->seconds), "energy_mj_per_launch",
						      num_or_null(r->energy_mj_per_launch), "energy_unc_mj",
						      num_or_null(r->energy_unc_mj), "power_mw", num_or_null(r->power_mw),
						      "dynamic_mj_per_launch", num_or_null(r->dynamic_mj_per_launch),
						      "method", r->method));
		else
			json_object_set_new(k, "energy", json_null());
		if (r->has_energy_cold)
			json_object_set_new(k, "energy_cold",
					    json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "launches",
						      (json_int_t)r->energy_cold_launches, "seconds",
						      num_or_null(r->energy_cold_seconds), "energy_mj_per_launch",
						      num_or_null(r->energy_cold_mj_per_launch), "energy_unc_mj",
						      num_or_null(r->energy_cold_unc_mj), "ns_per_launch",
						      num_or_null(r->energy_cold_ns_per_launch), "flush_mj",
						      num_or_null(r->flush_mj), "flush_unc_mj", num_or_null(r->flush_unc_mj)));
		else
			json_object_set_new(k, "energy_cold", json_null());
		if (r->verify[0])
			json_object_set_new(k, "verify",
					    json_pack("{s:s, s:I, s:I, s:I}", "result", r->verify, "buffers",
						      (json_int_t)r->verify_buffers, "bytes", (json_int_t)r->verify_bytes,
						      "differing_bytes", (json_int_t)r->verify_diff_bytes));
		json_array_append_new(arr, k);
	}
	json_object_set_new(root, "kernels", arr);
	json_object_set_new(root, "coverage",
			    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "launches",
				      (json_int_t)c.launches, "launches_exact", (json_int_t)c.l_exact,
				      "launches_relocated", (json_int_t)c.l_reloc, "launches_not_replayed",
				      (json_int_t)c.l_not, "unique_kernels", (json_int_t)c.kernels,
				      "unique_exact", (json_int_t)c.k_exact, "unique_relocated",
				      (json_int_t)c.k_reloc, "unique_not_replayed", (json_int_t)c.k_not,
				      "run_launches", (json_int_t)plan->total_launches));
	json_object_set_new(root, "traced_busy_ns", json_integer(plan->traced_busy_ns));
	json_object_set_new(root, "replay_warm_sum_ns", c.any_warm ? json_real(c.warm_sum_ns) : json_null());
	json_object_set_new(root, "replay_cold_sum_ns", c.any_cold ? json_real(c.cold_sum_ns) : json_null());
	json_object_set_new(root, "captured_gpu", json_string(plan->captured_gpu));
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
out:
	json_decref(root);
	free(v);
	return text;
}
