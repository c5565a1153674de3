/* Whole-iteration replay, CPU side: which iteration, its traced times, storage and report. */
#include "kj_replay.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_store_r_results.h"
#include "kj_store_r_seq.h"

int kj_replay_seq_info_load(sqlite3 *db, const char *run, int64_t iteration,
			    struct kj_replay_seq_info *out)
{
	struct kj_store_r_seq_ops ops;
	memset(out, 0, sizeof(*out));
	if (!kj_store_r_seq_tables(db)) {
		kj_errorf("%s: unknown schema: no sequence_op/replay_sequence tables", run);
		return KJ_ESCHEMA;
	}
	if (kj_store_r_seq_op_count(db) == 0) {
		kj_errorf("%s: no whole iteration was captured (kjoule run keeps the middle one of a "
			  "repeated top-level NVTX range); mark iterations with NVTX ranges, or name one with "
			  "`kjoule run --iteration-range NAME --params-iteration N`, to replay it with --sequence",
			  run);
		return KJ_ENOTFOUND;
	}
	if (iteration < 0)
		iteration = kj_store_r_seq_first_iteration(db);
	out->iteration = iteration;
	kj_store_r_seq_iteration_ops(db, iteration, &ops);
	out->ops = ops.ops;
	if (!out->ops) {
		kj_errorf("%s: iteration %" PRId64 " was not captured (sequence_op has other iterations)",
			  run, iteration);
		return KJ_ENOTFOUND;
	}
	out->kernels = ops.kernels;
	out->copies = ops.copies;
	out->memsets = ops.memsets;
	out->events = ops.events;
	kj_store_r_seq_traced(db, iteration, &out->traced_busy_ns, &out->traced_span_ns);
	return 0;
}

int kj_replay_seq_store(sqlite3 *db, const struct kj_replay_seq *s, size_t n,
			const struct kj_replay_seq_kernel *k, size_t nk)
{
	struct kj_store_r_seq *rows = calloc(n ? n : 1, sizeof(*rows));
	struct kj_store_r_seq_kernel *kr = calloc(nk ? nk : 1, sizeof(*kr));
	char when[32];
	int rc = KJ_ENOMEM;

	if (!rows || !kr)
		goto out;
	kj_replay_now(when);
	for (size_t i = 0; i < n; i++) {
		/* a mode not timed stores no times; energy and its clocks only beside times */
		int ok = s[i].runs > 0 && strcmp(s[i].status, "failed"), e = ok && s[i].has_energy;
		rows[i] = (struct kj_store_r_seq){
			.iteration = s[i].iteration, .mode = s[i].mode, .runs = ok ? s[i].runs : 0,
			.launches = s[i].launches, .has_times = ok, .median_ns = s[i].median_ns,
			.min_ns = s[i].min_ns, .max_ns = s[i].max_ns, .has_energy = e,
			.energy_mj = s[i].energy_mj, .energy_unc_mj = s[i].energy_unc_mj, .data = s[i].data,
			.pace_ns = e ? s[i].pace_ns : 0,
			.clocks = e ? (struct kj_store_r_clocks){s[i].sm_clock_mean_mhz, s[i].sm_clock_min_mhz,
								 s[i].sm_clock_max_mhz, s[i].throttle_reasons}
				    : (struct kj_store_r_clocks){-1, -1, -1, -1}};
	}
	for (size_t i = 0; i < nk; i++)
		kr[i] = (struct kj_store_r_seq_kernel){k[i].unique_id, {k[i].t.runs, k[i].t.min_ns, k[i].t.median_ns,
									 k[i].t.max_ns, k[i].t.mean_ns, k[i].t.stdev_ns}};
	rc = kj_store_r_seq_put(db, when, rows, n, kr, nk);
out:
	free(rows);
	free(kr);
	return rc;
}

static const struct kj_replay_seq *mode_of(const struct kj_replay_seq *s, size_t n, const char *m)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].mode, m) && s[i].runs > 0 && strcmp(s[i].status, "failed"))
			return &s[i];
	return NULL;
}

void kj_replay_seq_print(FILE *f, const struct kj_replay_seq_info *info,
			 const struct kj_replay_seq *s, size_t n)
{
	fprintf(f, "iteration %" PRId64 ": %" PRId64 " operations (%" PRId64 " kernel launches, %" PRId64
		   " copies, %" PRId64 " memsets, %" PRId64 " event operations)\n",
		info->iteration, info->ops, info->kernels, info->copies, info->memsets, info->events);
	if (n)
		fprintf(f, "%-8s %-9s %5s %11s %11s %11s %12s\n", "mode", "status", "runs", "median_ms",
			"min_ms", "max_ms", "energy_mJ");
	for (size_t i = 0; i < n; i++) {
		char e[40] = "-";
		if (s[i].has_energy)
			snprintf(e, sizeof(e), "%.4g±%.2g", s[i].energy_mj, s[i].energy_unc_mj);
		if (s[i].runs > 0 && strcmp(s[i].status, "failed"))
			fprintf(f, "%-8s %-9s %5d %11.4f %11.4f %11.4f %12s\n", s[i].mode, s[i].status, s[i].runs,
				s[i].median_ns / 1e6, s[i].min_ns / 1e6, s[i].max_ns / 1e6, e);
		else /* nothing was timed: no figure that could be read as one */
			fprintf(f, "%-8s %-9s %5d %11s %11s %11s %12s\n", s[i].mode, s[i].status, s[i].runs, "-", "-",
				"-", "-");
		if (s[i].error[0])
			fprintf(f, "       %s\n", s[i].error);
		if (s[i].has_energy && s[i].pace_ns > 0)
			fprintf(f, "       energy per launch paced at %.1f µs, host-synchronised as the program ran"
				   " (the GPU idle between launches included)\n", s[i].pace_ns / 1e3);
	}
	const struct kj_replay_seq *eager = mode_of(s, n, "eager"), *graph = mode_of(s, n, "graph");
	if (info->traced_span_ns > 0)
		fprintf(f, "traced: span %.4f ms, GPU busy %.4f ms\n", info->traced_span_ns / 1e6,
			info->traced_busy_ns / 1e6);
	if (eager && info->traced_span_ns > 0)
		fprintf(f, "framework/host cost (traced span - eager): %.4f ms\n",
			(info->traced_span_ns - eager->median_ns) / 1e6);
	if (eager && graph)
		fprintf(f, "launch cost (eager - graph): %.4f ms\n", (eager->median_ns - graph->median_ns) / 1e6);
	if (graph && info->traced_busy_ns > 0)
		fprintf(f, "graph vs traced GPU busy: %+.1f%%\n",
			100.0 * (double)(graph->median_ns - info->traced_busy_ns) / (double)info->traced_busy_ns);
	const struct kj_replay_seq *topo = mode_of(s, n, "topology");
	if (topo && info->traced_busy_ns > 0 && info->traced_span_ns > 0)
		fprintf(f, "topology (the graph launches as recorded) vs traced GPU busy: %+.1f%%, vs traced "
			   "span: %+.1f%%\n",
			100.0 * (double)(topo->median_ns - info->traced_busy_ns) / (double)info->traced_busy_ns,
			100.0 * (double)(topo->median_ns - info->traced_span_ns) / (double)info->traced_span_ns);
	const struct kj_replay_seq_fidelity *q = &info->fidelity;
	if (info->have_fidelity && q->kernels > 0) {
		fprintf(f, "in-sequence kernel times (%" PRId64 " unique kernels, each timed inside the eager "
			   "iteration, stored as replay_kernel cache 'sequence'):\n", q->kernels);
		if (q->iter_sum_ns > 0 && q->iter_traced_ns > 0)
			fprintf(f, "  iteration: Σ medians %.4f ms vs traced GPU busy %.4f ms (%+.1f%%)\n",
				q->iter_sum_ns / 1e6, q->iter_traced_ns / 1e6,
				100.0 * (q->iter_sum_ns - q->iter_traced_ns) / q->iter_traced_ns);
		if (q->run_sum_ns > 0 && q->run_traced_ns > 0)
			fprintf(f, "  whole run: Σ(count × median) %.3f ms vs traced %.3f ms of the same kernels "
				   "(%+.1f%%; they are %.1f%% of the run's kernel time)\n",
				q->run_sum_ns / 1e6, q->run_traced_ns / 1e6,
				100.0 * (q->run_sum_ns - q->run_traced_ns) / q->run_traced_ns,
				q->run_traced_all_ns > 0 ? 100.0 * q->run_traced_ns / q->run_traced_all_ns : 0.0);
	}
}

char *kj_replay_seq_json(const struct kj_replay_seq_info *info, const struct kj_replay_seq *s,
			 size_t n)
{
	json_t *root = json_object(), *modes = json_array();
	char *text = NULL;
	if (!root || !modes) {
		json_decref(root);
		json_decref(modes);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(modes, json_pack("{s:s, s:s, s:s?, s:i, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
			"mode", s[i].mode, "status", s[i].status, "error", s[i].error[0] ? s[i].error : NULL,
			"runs", s[i].runs, "launches", (json_int_t)s[i].launches, "ops", (json_int_t)s[i].ops,
			"median_ns", (json_int_t)s[i].median_ns, "min_ns", (json_int_t)s[i].min_ns,
			"max_ns", (json_int_t)s[i].max_ns,
			"energy_mj", s[i].has_energy ? json_real(s[i].energy_mj) : json_null(),
			"energy_unc_mj", s[i].has_energy ? json_real(s[i].energy_unc_mj) : json_null(),
			"energy_pace_ns", s[i].has_energy && s[i].pace_ns > 0 ? json_integer(s[i].pace_ns) : json_null()));
	json_object_set_new(root, "iteration", json_integer(info->iteration));
	json_object_set_new(root, "ops", json_integer(info->ops));
	json_object_set_new(root, "kernels", json_integer(info->kernels));
	json_object_set_new(root, "copies", json_integer(info->copies));
	json_object_set_new(root, "memsets", json_integer(info->memsets));
	json_object_set_new(root, "traced_span_ns", json_integer(info->traced_span_ns));
	json_object_set_new(root, "traced_busy_ns", json_integer(info->traced_busy_ns));
	json_object_set_new(root, "modes", modes);
	if (info->have_fidelity && info->fidelity.kernels > 0) {
		const struct kj_replay_seq_fidelity *q = &info->fidelity;
		json_object_set_new(root, "in_sequence",
			json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}", "unique_kernels", (json_int_t)q->kernels,
				  "iteration_sum_ns", q->iter_sum_ns >= 0 ? json_real(q->iter_sum_ns) : json_null(),
				  "iteration_traced_ns", q->iter_traced_ns >= 0 ? json_real(q->iter_traced_ns) : json_null(),
				  "run_sum_ns", q->run_sum_ns >= 0 ? json_real(q->run_sum_ns) : json_null(),
				  "run_traced_same_kernels_ns", q->run_traced_ns >= 0 ? json_real(q->run_traced_ns) : json_null(),
				  "run_traced_all_ns", q->run_traced_all_ns >= 0 ? json_real(q->run_traced_all_ns) : json_null()));
	}
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return text;
}

int kj_replay_seq_fidelity(sqlite3 *db, const struct kj_replay_seq_info *info,
			   struct kj_replay_seq_fidelity *f)
{
	struct kj_store_r_seq_sums q;
	kj_store_r_seq_sums(db, info->iteration, &q);
	f->kernels = (int64_t)q.kernels;
	f->iter_sum_ns = q.iter_sum_ns;
	f->iter_traced_ns = info->traced_busy_ns > 0 ? (double)info->traced_busy_ns : -1;
	f->run_sum_ns = q.run_sum_ns;
	f->run_traced_ns = q.run_traced_ns;
	f->run_traced_all_ns = q.run_traced_all_ns;
	return 0;
}
