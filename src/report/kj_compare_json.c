/* kjoule compare: the JSON report (docs/analysis-compare.md lists every field). */
#include "kj_compare_out_internal.h"

#include <math.h>
#include <stdlib.h>

json_t *cmp_num_or_null(double v, int known)
{
	if (!known || !isfinite(v))
		return json_null();
	return json_real(round(v * 1000.0) / 1000.0);
}

json_t *cmp_ratio_or_null(double v, int known)
{
	if (!known || !isfinite(v))
		return json_null();
	return json_real(round(v * 1e6) / 1e6);
}

static json_t *stat_json(struct stat3 st, double scale)
{
	json_t *o = json_object();
	json_object_set_new(o, "mean", cmp_num_or_null(st.mean * scale, st.n > 0));
	json_object_set_new(o, "min", cmp_num_or_null(st.min * scale, st.n > 0));
	json_object_set_new(o, "max", cmp_num_or_null(st.max * scale, st.n > 0));
	return o;
}

static json_t *tiers_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	double n = (double)(s->n ? s->n : 1);
	for (size_t t = 0; t < c->tiers.n; t++) {
		const struct cmp_tier *ti = &c->tier_v[t];
		int ok;
		if (!ti->launches)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "tier", json_string(c->tiers.names[t]));
		json_object_set_new(o, "unique_kernels", json_integer(ti->unique));
		json_object_set_new(o, "launches_per_iteration", json_real(round((double)ti->launches / n * 1000) / 1000));
		json_object_set_new(o, "measured_us", cmp_num_or_null((double)ti->measured_ns / n * NS_US, 1));
		double pct = cmp_safe_div(100.0 * (double)ti->measured_ns / n, s->kernel_sum.mean + s->copy_sum.mean, &ok);
		json_object_set_new(o, "measured_pct", cmp_num_or_null(pct, ok));
		json_object_set_new(o, "replay_warm_us", cmp_num_or_null(ti->replay_warm_ns / n * NS_US, ti->cov_warm > 0));
		json_object_set_new(o, "replay_coverage", cmp_ratio_or_null((double)ti->cov_warm / (double)ti->launches, 1));
		json_object_set_new(o, "energy_j", cmp_num_or_null(ti->energy_mj / n / 1000.0, ti->cov_energy > 0));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *top_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	size_t n = 0, *ix = cmp_top_groups(c, &n);
	double ni = (double)(s->n ? s->n : 1);
	for (size_t k = 0; k < n && k < (size_t)c->top; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		int ok;
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(cmp_group_name(c, g)));
		json_object_set_new(o, "unique_id", g->unique_id >= 0 ? json_integer(g->unique_id) : json_null());
		json_object_set_new(o, "tier", json_string(c->tiers.names[g->tier]));
		json_object_set_new(o, "count_per_iteration", json_real(round((double)g->launches / ni * 1000) / 1000));
		json_object_set_new(o, "measured_us", cmp_num_or_null((double)g->measured_ns / ni * NS_US, 1));
		json_object_set_new(o, "measured_mean_us", cmp_num_or_null((double)g->measured_ns / (double)g->launches * NS_US, 1));
		json_object_set_new(o, "replay_warm_us", cmp_num_or_null(g->warm_ns * NS_US, g->warm_ns >= 0));
		json_object_set_new(o, "replay_cold_us", cmp_num_or_null(g->cold_ns * NS_US, g->cold_ns >= 0));
		json_object_set_new(o, "replay_sequence_us", cmp_num_or_null(g->seq_ns * NS_US, g->seq_ns >= 0));
		json_object_set_new(o, "predicted_us", cmp_num_or_null(g->warm_ns * (double)g->launches / ni * NS_US, g->warm_ns >= 0));
		json_object_set_new(o, "energy_mj_per_launch", cmp_num_or_null(g->energy_mj, g->energy_mj >= 0));
		json_object_set_new(o, "energy_warm_mj_per_launch", cmp_num_or_null(g->energy_warm_mj >= 0 ? g->energy_warm_mj
												   : g->energy_mj,
										  g->energy_mj >= 0));
		json_object_set_new(o, "energy_cold_mj_per_launch", cmp_num_or_null(g->energy_cold_mj, g->energy_cold_mj >= 0));
		/* its energy per iteration as predicted, and as it ran in the program: the prediction
		 * scaled so that the kernels' in-situ energies sum to the measured energy less idle */
		double pe = cmp_energy_group_mj(c, s, g), sc = cmp_energy_insitu_scale(s);
		json_object_set_new(o, "energy_predicted_mj", cmp_num_or_null(pe, pe >= 0));
		json_object_set_new(o, "energy_in_situ_mj", cmp_num_or_null(pe * sc, pe >= 0 && sc > 0));
		json_object_set_new(o, "energy_in_situ_mj_per_launch",
				    cmp_num_or_null(pe * sc / ((double)g->launches / ni), pe >= 0 && sc > 0));
		double share = cmp_safe_div(100.0 * (double)g->measured_ns / ni, s->kernel_sum.mean, &ok);
		json_object_set_new(o, "share_of_kernel_sum_pct", cmp_num_or_null(share, ok));
		json_array_append_new(arr, o);
	}
	free(ix);
	return arr;
}

static json_t *disagreements_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	size_t n = 0, *ix = cmp_disagreements(c, s, &n);
	for (size_t k = 0; k < n; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		double situ = (double)g->measured_ns / (double)g->launches;
		json_array_append_new(arr, json_pack("{s:s, s:o, s:f, s:f, s:o}", "name", cmp_group_name(c, g),
			"unique_id", g->unique_id >= 0 ? json_integer(g->unique_id) : json_null(),
			"in_situ_mean_us", situ * NS_US, "replay_sequence_us", g->seq_ns * NS_US,
			"replay_warm_us", cmp_num_or_null(g->warm_ns * NS_US, g->warm_ns >= 0)));
	}
	free(ix);
	return arr;
}

/* Kernels not replayable alone (they wait on something outside themselves): kept at their in-situ
 * time in every sum, with the reason. */
static json_t *waiters_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	double ni = (double)(s->n ? s->n : 1);
	for (size_t k = 0; k < c->n_groups; k++) {
		const struct cmp_group *g = &c->groups[k];
		if (!g->waits)
			continue;
		json_array_append_new(arr, json_pack("{s:s, s:o, s:f, s:f, s:s, s:s}", "name", cmp_group_name(c, g),
			"unique_id", g->unique_id >= 0 ? json_integer(g->unique_id) : json_null(),
			"launches_per_iteration", (double)g->launches / ni,
			"in_situ_mean_us", (g->launches > 0 ? (double)g->measured_ns / (double)g->launches
							     : g->traced_mean_ns) * NS_US,
			"reason", g->waits_why ? g->waits_why : "waits on something outside itself",
			"counted_as", !g->standin ? "its in-situ time (energy: that time at idle power)"
				      : g->standin_mw > 0 ? "its in-situ time (energy: that time at its replayed power)"
							  : "its in-situ time (energy: not replayed; extrapolated)"));
	}
	return arr;
}

static json_t *regions_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	double ni = (double)(s->n ? s->n : 1);
	for (size_t r = 0; r < c->region_names.n; r++) {
		const struct cmp_region *g = &c->region_v[r];
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(c->region_names.names[r]));
		json_object_set_new(o, "depth", json_integer(g->min_depth));
		json_object_set_new(o, "instances_per_iteration", json_real(round((double)g->instances / ni * 1000) / 1000));
		/* a range that only fired at graph capture has no host time inside the iteration */
		json_object_set_new(o, "time_us", cmp_num_or_null((double)g->time_ns / ni * NS_US, g->timed));
		json_object_set_new(o, "captured_in_graph", json_boolean(g->captured));
		json_object_set_new(o, "gpu_busy_us", cmp_num_or_null((double)g->busy_ns / ni * NS_US, 1));
		json_object_set_new(o, "kernels_per_iteration", json_real(round((double)g->launches / ni * 1000) / 1000));
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *cmp_missing_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	if (c->acts.n_kernels == 0)
		json_array_append_new(arr, json_string("no kernels in the run"));
	if (!s->have_warm)
		json_array_append_new(arr, json_string("no warm kernel replays (run kjoule replay)"));
	else if (!s->full_warm)
		json_array_append_new(arr, json_string("warm replays cover only part of the launches (replay_coverage_warm)"));
	if (!s->have_cold)
		json_array_append_new(arr, json_string("no cold-cache kernel replays"));
	if (!s->have_eager)
		json_array_append_new(arr, json_string("no eager sequence replay"));
	if (!s->have_graph)
		json_array_append_new(arr, json_string("no CUDA-graph sequence replay"));
	if (c->n_power_samples == 0)
		json_array_append_new(arr, json_string("no power samples: measured energy unknown"));
	else if (!s->have_meas)
		json_array_append_new(arr, json_string("power samples do not cover the iterations"));
	if (c->idle_w < 0)
		json_array_append_new(arr, json_string("no idle power (run kjoule power --idle)"));
	if (!s->have_kernels_e)
		json_array_append_new(arr, json_string("no replayed energy per launch"));
	if (c->it.whole_run)
		json_array_append_new(arr, json_string("no NVTX iteration ranges: the whole run is one iteration"));
	if (s->n_graph_launches.mean > 0 && !c->have_snapshot)
		json_array_append_new(arr, json_string("no saved buffers (kjoule run --snapshot-graphs): its replays run on"
							" random data, on which a chain of kernels draws less energy"
							" than on the program's"));
	return arr;
}

json_t *kj_compare_json(const struct kj_compare *c)
{
	struct cmp_summary s;
	json_t *o = json_object(), *it = json_object(), *st = json_object();
	cmp_summarize(c, &s);
	int ok;

	json_object_set_new(it, "region", c->it.whole_run ? json_null() : json_string(c->it.region));
	json_object_set_new(it, "instances", json_integer((json_int_t)c->it.n));
	json_object_set_new(it, "skipped", json_integer(c->it.skip));
	json_object_set_new(it, "measured", json_integer((json_int_t)c->it.n_kept));
	json_object_set_new(it, "unclosed", json_integer(c->it.unclosed));
	json_object_set_new(it, "overlapping", json_integer(c->it.overlaps));
	json_object_set_new(it, "whole_run", json_boolean(c->it.whole_run));
	json_object_set_new(o, "iterations", it);

	json_object_set_new(o, "wall_us", cmp_num_or_null(s.wall.mean * NS_US, s.n > 0));
	json_object_set_new(o, "span_us", cmp_num_or_null(s.span.mean * NS_US, s.n > 0));
	json_object_set_new(o, "busy_us", cmp_num_or_null(s.busy.mean * NS_US, s.n > 0));
	json_object_set_new(o, "kernel_busy_us", cmp_num_or_null(s.kernel_busy.mean * NS_US, s.n > 0));
	json_object_set_new(o, "kernel_sum_us", cmp_num_or_null(s.kernel_sum.mean * NS_US, s.n > 0));
	json_object_set_new(o, "copy_sum_us", cmp_num_or_null(s.copy_sum.mean * NS_US, s.n > 0));
	json_object_set_new(o, "overlap_us", cmp_num_or_null(s.overlap.mean * NS_US, s.n > 0));
	json_object_set_new(o, "idle_us", cmp_num_or_null(s.idle.mean * NS_US, s.n > 0));
	json_object_set_new(o, "host_only_us", cmp_num_or_null(s.host_only.mean * NS_US, s.n > 0));
	json_object_set_new(o, "outside_us", cmp_num_or_null(s.outside.mean * NS_US, s.n > 0));
	json_object_set_new(o, "inherited_us", cmp_num_or_null(s.inherited.mean * NS_US, s.n > 0));
	json_object_set_new(o, "kernels_per_iteration", cmp_num_or_null(s.n_kernels.mean, s.n > 0));
	json_object_set_new(o, "graph_launches_per_iteration",
			    cmp_num_or_null(s.n_graph_launches.mean, s.n > 0 && c->have_host_calls));
	json_object_set_new(o, "copies_per_iteration", cmp_num_or_null(s.n_copies.mean, s.n > 0));
	json_object_set_new(o, "memsets_per_iteration", cmp_num_or_null(s.n_memsets.mean, s.n > 0));
	json_object_set_new(o, "bytes_h2d_per_iteration", cmp_num_or_null(s.bytes_h2d.mean, s.n > 0));
	json_object_set_new(o, "bytes_d2h_per_iteration", cmp_num_or_null(s.bytes_d2h.mean, s.n > 0));
	json_object_set_new(o, "replay_sum_warm_us", cmp_num_or_null(s.replay_warm * NS_US, s.have_warm));
	json_object_set_new(o, "replay_sum_cold_us", cmp_num_or_null(s.replay_cold * NS_US, s.have_cold));
	json_object_set_new(o, "replay_sum_isolated_us", cmp_num_or_null(s.replay_iso * NS_US, s.have_warm));
	json_object_set_new(o, "replay_coverage_warm", cmp_ratio_or_null(s.cov_warm, s.n_kernels.mean > 0));
	json_object_set_new(o, "replay_coverage_cold", cmp_ratio_or_null(s.cov_cold, s.n_kernels.mean > 0));
	json_object_set_new(o, "replay_sum_sequence_us", cmp_num_or_null(s.replay_seq * NS_US, s.have_seq));
	json_object_set_new(o, "replay_coverage_sequence", cmp_ratio_or_null(s.cov_seq, s.n_kernels.mean > 0));
	json_object_set_new(o, "insitu_sum_sequence_covered_us", cmp_num_or_null(s.insitu_seq * NS_US, s.have_seq));
	json_object_set_new(o, "insitu_sum_replayed_us", cmp_num_or_null(s.insitu_warm * NS_US, s.have_warm));
	/* true: the kept iteration's replay was tried and stored no eager or graph time (it faulted) */
	json_object_set_new(o, "sequence_replay_failed",
			    json_boolean(c->seq_failed_rows > 0 && c->seq_eager_ns < 0 && c->seq_graph_ns < 0));
	json_object_set_new(o, "sequence_launches_left_out",
			    c->seq_left_out >= 0 ? json_integer(c->seq_left_out) : json_null());
	json_object_set_new(o, "sequence_eager_us", cmp_num_or_null(s.seq_eager * NS_US, s.have_eager));
	json_object_set_new(o, "sequence_graph_us", cmp_num_or_null(s.seq_graph * NS_US, s.have_graph));
	json_object_set_new(o, "sequence_topology_us", cmp_num_or_null(s.seq_topo * NS_US, s.have_topo));
	json_object_set_new(o, "sequence_graph_vs_busy_pct",
			    cmp_num_or_null(100.0 * (s.seq_graph - s.busy.mean) / s.busy.mean, s.have_graph && s.busy.mean > 0));
	json_object_set_new(o, "sequence_topology_vs_busy_pct",
			    cmp_num_or_null(100.0 * (s.seq_topo - s.busy.mean) / s.busy.mean, s.have_topo && s.busy.mean > 0));
	json_object_set_new(o, "topology_replay", !c->topo_status[0] ? json_null() :
			    json_pack("{s:s, s:s?, s:s?}", "status", c->topo_status, "not_rebuilt",
				      c->topo_unbuilt[0] ? c->topo_unbuilt : NULL, "reason",
				      c->topo_reason[0] ? c->topo_reason : NULL));
	json_object_set_new(o, "framework_host_us", cmp_num_or_null(s.framework_host * NS_US, s.have_eager));
	json_object_set_new(o, "launch_cost_us", cmp_num_or_null(s.launch_cost * NS_US, s.have_eager && s.have_graph));
	json_object_set_new(o, "sequence_fraction", cmp_ratio_or_null(s.sequence_fraction, s.have_eager));
	json_object_set_new(o, "naive_error_pct", cmp_num_or_null(s.naive_error_pct, s.have_warm && s.wall.mean > 0));
	json_object_set_new(o, "naive_fraction", cmp_ratio_or_null(s.naive_fraction, s.have_warm && s.wall.mean > 0));
	json_object_set_new(o, "predicted_wall_us", cmp_num_or_null(s.predicted_wall * NS_US, s.have_explained));
	json_object_set_new(o, "explained_fraction", cmp_ratio_or_null(s.explained_fraction, s.have_explained));
	{ /* the program ran capped: its kernels slower than their short timing replays */
		int capped = cmp_clocks_program_capped(c);
		json_object_set_new(o, "explained_program_capped", capped < 0 ? json_null() : json_boolean(capped));
		json_object_set_new(o, "explained_fraction_program_clocks",
				    cmp_ratio_or_null(s.explained_fraction_clocks, s.have_explained_clocks));
		json_object_set_new(o, "explained_program_clocks_kernel_share",
				    cmp_ratio_or_null(s.clocks_adjusted_share, s.have_explained_clocks));
	}
	json_object_set_new(o, "explained_fraction_warm", cmp_ratio_or_null(s.explained_fraction_warm, s.have_explained));
	json_object_set_new(o, "kernel_overlap_fraction", cmp_ratio_or_null(s.kernel_overlap_frac, s.have_explained));
	json_object_set_new(o, "explained_fraction_sequence",
			    cmp_ratio_or_null(s.explained_fraction_seq,
					      s.have_explained && s.have_seq && s.explained_fraction_seq > 0));

	json_object_set_new(o, "energy_measured_j", cmp_num_or_null(s.e_meas.mean / 1000.0, s.have_meas));
	json_object_set_new(o, "energy_measured_unc_j", cmp_num_or_null(s.e_unc / 1000.0, s.have_meas));
	json_object_set_new(o, "energy_measured_basis", s.have_meas ? json_string(s.e_meas_from_loop ? "loop" : "windows")
								 : json_null());
	json_object_set_new(o, "energy_measured_windows_j", cmp_num_or_null(s.e_meas_windows / 1000.0, s.have_meas));
	json_object_set_new(o, "energy_measured_loop_j", cmp_num_or_null(s.e_loop / 1000.0, s.have_meas && s.have_loop));
	json_object_set_new(o, "energy_loop_outside_pct",
			    cmp_num_or_null(100.0 * s.loop_outside_frac, s.have_meas && s.have_loop));
	json_object_set_new(o, "energy_measured_mean_unc_j", cmp_num_or_null(s.e_unc_mean / 1000.0, s.have_meas));
	int have_pct = s.have_meas && s.e_meas.mean > 0;
	json_object_set_new(o, "energy_measured_mean_unc_pct", cmp_num_or_null(s.e_unc_mean_pct, have_pct));
	/* false: the measured mean is too uncertain for the energy errors to judge a prediction */
	json_object_set_new(o, "energy_error_judgeable", have_pct ? json_boolean(s.e_judgeable) : json_null());
	json_object_set_new(o, "energy_measured_too_short", s.have_meas ? json_boolean(s.e_meas_short) : json_null());
	json_object_set_new(o, "sequence_kernels_overlapped", s.have_seq && s.have_eager
				? json_boolean(cmp_sequence_overlapped(&s)) : json_null());
	json_object_set_new(o, "energy_standin_share", s.have_meas ? json_real(s.e_standin_share) : json_null());
	/* energy windows off their kernels' timed pace (their replays did other work) */
	if (s.have_meas && s.have_kernels_e) {
		json_t *op = json_object();
		char why[400];
		json_object_set_new(op, "kernels", json_integer(s.e_offpace_kernels));
		json_object_set_new(op, "energy_share", json_real(s.e_offpace_share));
		json_object_set_new(op, "worst_kernel", s.e_offpace_worst ? json_string(cmp_group_name(c, s.e_offpace_worst))
									  : json_null());
		json_object_set_new(op, "worst_ratio", cmp_num_or_null(s.e_offpace_ratio, s.e_offpace_worst != NULL));
		json_object_set_new(op, "stops_judging", json_boolean(s.e_offpace));
		json_object_set_new(op, "why", s.e_offpace ? json_string(cmp_energy_off_pace_why(c, &s, why, sizeof(why)))
							   : json_null());
		json_object_set_new(o, "energy_windows_off_pace", op);
	} else {
		json_object_set_new(o, "energy_windows_off_pace", json_null());
	}
	json_object_set_new(o, "energy_measured_span_ms", s.e_meas_short ? json_real(s.e_short_span_ms) : json_null());
	json_object_set_new(o, "energy_kernels_j", cmp_num_or_null(s.e_kernels / 1000.0, s.have_kernels_e));
	json_object_set_new(o, "energy_kernels_warm_j", cmp_num_or_null(s.e_kernels_warm / 1000.0, s.have_kernels_e));
	json_object_set_new(o, "energy_kernels_cold_j", cmp_num_or_null(s.e_kernels_cold / 1000.0, s.have_kernels_e && s.have_cold_e));
	json_object_set_new(o, "energy_cold_time_coverage", cmp_ratio_or_null(s.e_cold_time_cov, s.have_kernels_e && s.have_cold_e));
	json_object_set_new(o, "energy_cold_ratio", cmp_num_or_null(s.e_cold_ratio, s.have_kernels_e && s.have_cold_e));
	json_object_set_new(o, "energy_kernels_coverage", cmp_ratio_or_null(s.cov_energy, s.n_kernels.mean > 0));
	json_object_set_new(o, "energy_kernels_time_coverage", cmp_ratio_or_null(s.e_kernels_time_cov, s.have_kernels_e));
	/* the replayed energies' own uncertainty in the kernels' part of the parts' prediction */
	json_object_set_new(o, "energy_kernels_predicted_unc_j", cmp_num_or_null(s.e_kernels_unc / 1000.0,
										  s.have_cand && s.e_kernels_unc >= 0));
	/* true: that coverage is too low for the parts' energy error to be judged */
	json_object_set_new(o, "energy_coverage_stops_judging", s.have_kernels_e ? json_boolean(s.e_sparse) : json_null());
	json_object_set_new(o, "energy_kernels_extrapolated", json_boolean(s.e_extrapolated));
	json_object_set_new(o, "energy_idle_j", cmp_num_or_null(s.e_idle / 1000.0, s.have_idle_e));
	json_object_set_new(o, "energy_predicted_j", cmp_num_or_null(s.e_pred / 1000.0, s.have_pred));
	json_object_set_new(o, "energy_error_pct", cmp_num_or_null(s.e_err_pct, s.have_err));
	json_object_set_new(o, "energy_prediction_method",
			    !s.have_pred ? json_null() : json_string(s.e_basis_iter ? "iteration_replay"
									     : kj_cmp_e_candidate_names[s.e_method]));
	/* the parts' own prediction and error, also where the iteration replayed whole predicts */
	json_object_set_new(o, "energy_predicted_parts_j", cmp_num_or_null(s.e_parts_pred / 1000.0, s.have_pred));
	json_object_set_new(o, "energy_error_parts_pct", cmp_num_or_null(s.e_parts_err_pct, s.have_pred && s.have_parts_err));
	json_object_set_new(o, "energy_parts_method",
			    s.have_pred ? json_string(kj_cmp_e_candidate_names[s.e_method]) : json_null());
	json_object_set_new(o, "energy_kernels_predicted_j", cmp_num_or_null(s.e_kernels_pred / 1000.0, s.have_pred));
	{ /* every way to credit the parts, with its prediction and error */
		json_t *cand = json_object();
		for (int k = 0; s.have_cand && k < KJ_CMP_E_CANDIDATES; k++) {
			json_t *e = json_object();
			json_object_set_new(e, "predicted_j", cmp_num_or_null(s.e_cand_pred[k] / 1000.0, 1));
			json_object_set_new(e, "error_pct", cmp_num_or_null(s.e_cand_err_pct[k], s.have_meas && isfinite(s.e_cand_err_pct[k])));
			json_object_set_new(cand, kj_cmp_e_candidate_names[k], e);
		}
		json_object_set_new(o, "energy_candidates", s.have_cand ? cand : (json_decref(cand), json_null()));
	}
	/* the gap split: replayed power over in-situ time (docs/analysis-compare.md) */
	json_object_set_new(o, "energy_predicted_insitu_time_j",
			    cmp_num_or_null(s.e_pred_insitu / 1000.0, s.have_pred_insitu));
	json_object_set_new(o, "energy_error_insitu_time_pct", cmp_num_or_null(s.e_insitu_err_pct, s.have_insitu_err));
	json_object_set_new(o, "energy_predicted_sequence_j", cmp_num_or_null(s.e_seq_pred / 1000.0, s.have_seq_e));
	json_object_set_new(o, "energy_error_sequence_pct", cmp_num_or_null(s.e_seq_err_pct, s.have_seq_err));
	json_object_set_new(o, "energy_sequence_mode", s.have_seq_e ? json_string(s.e_seq_mode) : json_null());
	json_object_set_new(o, "energy_sequence_pace_us",
			    cmp_num_or_null(s.e_seq_time * NS_US, s.have_seq_e && s.e_seq_paced));
	/* what the per-kernel energy replays ran on: the program's saved buffers or kjoule's fill */
	json_object_set_new(o, "energy_replay_data", !s.have_kernels_e ? json_null()
				  : json_string(cmp_energy_data_label(c)));
	/* the shares of the replayed kernels' time on each kind of data, where the replay said */
	double dsh[KJ_CMP_DATA_KINDS];
	if (s.have_kernels_e && cmp_energy_data_shares(c, dsh) && dsh[KJ_CMP_DATA_UNKNOWN] < 1) {
		json_t *d = json_object();
		for (int k = 0; k < KJ_CMP_DATA_KINDS; k++)
			json_object_set_new(d, kj_cmp_data_names[k], json_real(round(dsh[k] * 1e4) / 1e4));
		json_object_set_new(o, "energy_replay_data_shares", d);
	} else {
		json_object_set_new(o, "energy_replay_data_shares", json_null());
	}
	json_object_set_new(o, "energy_sequence_data",
			    s.have_seq_e && s.e_seq_data && s.e_seq_data[0] ? json_string(s.e_seq_data) : json_null());
	json_object_set_new(o, "idle_power_w", cmp_num_or_null(c->idle_w, c->idle_w >= 0));
	json_object_set_new(o, "idle_power_basis", c->idle_w < 0 ? json_null()
				  : json_string(c->awake_idle_w >= 0 ? "awake" : "deep"));
	json_object_set_new(o, "awake_idle_power_w", cmp_num_or_null(c->awake_idle_w, c->awake_idle_w >= 0));
	json_object_set_new(o, "awake_idle_readings", json_integer(c->n_awake_samples));
	json_object_set_new(o, "deep_idle_power_w", cmp_num_or_null(c->deep_idle_w, c->deep_idle_w >= 0));
	json_object_set_new(o, "sequence_eager_energy_j", cmp_num_or_null(c->seq_eager_mj / 1000.0, c->seq_eager_mj >= 0));
	json_object_set_new(o, "sequence_graph_energy_j", cmp_num_or_null(c->seq_graph_mj / 1000.0, c->seq_graph_mj >= 0));
	json_object_set_new(o, "sequence_topology_energy_j", cmp_num_or_null(c->seq_topo_mj / 1000.0, c->seq_topo_mj >= 0));
	double pavg = cmp_safe_div(s.e_meas.mean, s.wall.mean * 1e-6, &ok); /* mJ/ns*1e6 = W */
	json_object_set_new(o, "power_avg_w", cmp_num_or_null(pavg, ok && s.have_meas));
	json_object_set_new(o, "shared_gpu", cmp_shared_json(c));
	json_object_set_new(o, "energy_clock_state", cmp_clocks_json(c));

	json_object_set_new(st, "wall_us", stat_json(s.wall, NS_US));
	json_object_set_new(st, "span_us", stat_json(s.span, NS_US));
	json_object_set_new(st, "busy_us", stat_json(s.busy, NS_US));
	json_object_set_new(st, "kernel_sum_us", stat_json(s.kernel_sum, NS_US));
	json_object_set_new(st, "idle_us", stat_json(s.idle, NS_US));
	json_object_set_new(st, "host_only_us", stat_json(s.host_only, NS_US));
	json_object_set_new(st, "energy_measured_j", stat_json(s.e_meas, 1e-3));
	json_object_set_new(o, "stats", st);

	json_object_set_new(o, "tiers", tiers_json(c, &s));
	json_object_set_new(o, "top_kernels", top_json(c, &s));
	json_object_set_new(o, "replay_disagreements", disagreements_json(c, &s));
	json_object_set_new(o, "not_replayable_alone", waiters_json(c, &s));
	json_object_set_new(o, "regions", regions_json(c, &s));
	json_object_set_new(o, "missing", cmp_missing_json(c, &s));
	if (c->job.n >= 2)
		json_object_set_new(o, "job", cmp_ranks_json(c));
	return o;
}

