/* kjoule compare: the text report. */
#include "kj_compare_out_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- text ---- */

static void row(FILE *f, const char *label, struct stat3 st, const char *note)
{
	if (st.n == 0) {
		fprintf(f, "  %-34s %12s\n", label, "-");
		return;
	}
	fprintf(f, "  %-34s %12.1f %12.1f %12.1f  %s\n", label, st.mean * NS_US, st.min * NS_US,
		st.max * NS_US, note ? note : "");
}

static void line_us(FILE *f, const char *label, double v_ns, int known, const char *note)
{
	if (!known)
		fprintf(f, "  %-34s %12s  %s\n", label, "n/a", note ? note : "");
	else
		fprintf(f, "  %-34s %12.1f  %s\n", label, v_ns * NS_US, note ? note : "");
}

/* how far a replayed sum is off the in-situ one, in percent */
static double off_pct(double replayed, double in_situ)
{
	return in_situ > 0 ? 100.0 * (replayed - in_situ) / in_situ : 0.0;
}

/* The graph launches replayed as recorded (kjoule replay --sequence --graph on a graph-launched
 * iteration), or why they were not. */
static void print_topology(FILE *f, const struct kj_compare *c, const struct cmp_summary *s)
{
	char note[160];
	if (s->have_topo && strcmp(c->topo_status, "fallback") && strcmp(c->topo_status, "failed")) {
		snprintf(note, sizeof(note), "%+6.1f%% vs traced busy (nodes and edges as recorded)",
			 s->busy.mean > 0 ? off_pct(s->seq_topo, s->busy.mean) : 0.0);
		line_us(f, "graph launches as recorded", s->seq_topo, 1, note);
	} else if (!strcmp(c->topo_status, "fallback")) {
		fprintf(f, "  %-34s %12s  not rebuilt: %s\n", "graph launches as recorded", "n/a",
			c->topo_unbuilt[0] ? c->topo_unbuilt : c->topo_reason);
	} else if (!strcmp(c->topo_status, "failed")) {
		fprintf(f, "  %-34s %12s  failed: %.120s\n", "graph launches as recorded", "n/a", c->topo_reason);
	} else {
		line_us(f, "graph launches as recorded", 0, 0, "(none: kjoule replay --sequence --graph)");
	}
}

static double pct(double a, double b)
{
	return b != 0 ? 100.0 * a / b : 0.0;
}

void kj_compare_print(const struct kj_compare *c, FILE *f)
{
	struct cmp_summary s;
	cmp_summarize(c, &s);
	if (c->it.whole_run)
		fprintf(f, "iterations: no NVTX iteration ranges; the whole run is one iteration\n");
	else
		fprintf(f, "iterations: region '%s', %zu instance(s), %d skipped as warm-up, %zu measured%s%s\n",
			c->it.region, c->it.n, c->it.skip, c->it.n_kept,
			c->it.unclosed ? " (some never closed)" : "",
			c->it.overlaps ? " (some overlap)" : "");
	fprintf(f, "\nTime per iteration (us)                    mean          min          max\n");
	row(f, "wall", s.wall, NULL);
	row(f, "GPU span (first start..last end)", s.span, NULL);
	row(f, "GPU busy (union of kernels+copies)", s.busy, NULL);
	row(f, "  kernel sum (overlap counted)", s.kernel_sum, NULL);
	row(f, "  copy+memset sum", s.copy_sum, NULL);
	row(f, "  overlap", s.overlap, NULL);
	row(f, "idle inside the span", s.idle, NULL);
	row(f, "host-only (outside the span)", s.host_only, NULL);
	if (s.outside.max > 0)
		row(f, "own GPU work after the range ended", s.outside, "(not in this wall)");
	if (s.inherited.max > 0)
		row(f, "earlier work running in this window", s.inherited, "(in busy)");
	if (s.n_graph_launches.mean > 0)
		fprintf(f, "  graph launches %.1f per iteration: the GPU work of an iteration is what its launches"
			   " issued, wherever it ran\n", s.n_graph_launches.mean);
	fprintf(f, "  kernels %.1f, copies %.1f, memsets %.1f per iteration\n", s.n_kernels.mean,
		s.n_copies.mean, s.n_memsets.mean);

	fprintf(f, "\nDecomposition (mean): wall = busy + idle-in-span + host-only\n");
	fprintf(f, "  %.1f = %.1f (%.1f%%) + %.1f (%.1f%%) + %.1f (%.1f%%) us\n", s.wall.mean * NS_US,
		s.busy.mean * NS_US, pct(s.busy.mean, s.wall.mean), s.idle.mean * NS_US,
		pct(s.idle.mean, s.wall.mean), s.host_only.mean * NS_US,
		pct(s.host_only.mean, s.wall.mean));

	fprintf(f, "\nReplay (Σ count × median per iteration, us; off the in-situ Σ)\n");
	if (!s.have_warm) {
		fprintf(f, "  no kernel replays in this run yet: run 'kjoule replay RUN' for the"
			   " predicted figures\n");
	} else {
		char note[96];
		line_us(f, "in-situ Σ of the replayed launches", s.insitu_warm, 1, NULL);
		snprintf(note, sizeof(note), "%+6.1f%%  coverage %.1f%% of launches", off_pct(s.replay_warm, s.insitu_warm),
			 100 * s.cov_warm);
		line_us(f, "Σ alone, warm L2 (same buffers)", s.replay_warm, 1, note);
		snprintf(note, sizeof(note), "%+6.1f%%  coverage %.1f%% of launches", off_pct(s.replay_cold, s.insitu_warm),
			 100 * s.cov_cold);
		line_us(f, "Σ alone, cold L2 (flushed)", s.replay_cold, s.have_cold, s.have_cold ? note : "(no cold replays)");
		if (s.have_cold) {
			snprintf(note, sizeof(note), "%+6.1f%%  per kernel: the estimate explained_fraction uses",
				 off_pct(s.replay_iso, s.insitu_warm));
			line_us(f, "Σ alone, mean of warm and cold", s.replay_iso, 1, note);
		}
		if (s.have_seq) {
			snprintf(note, sizeof(note), "%+6.1f%%  coverage %.1f%% (in situ %.1f us)",
				 off_pct(s.replay_seq, s.insitu_seq), 100 * s.cov_seq, s.insitu_seq * NS_US);
			line_us(f, "Σ in sequence (where it ran)", s.replay_seq, 1, note);
		} else if (c->seq_failed_rows > 0) {
			fprintf(f, "  %-34s %12s  (the kept iteration's replay failed: `kjoule replay RUN --sequence`"
				   " says why)\n", "Σ in sequence (where it ran)", "n/a");
		} else {
			fprintf(f, "  %-34s %12s  (no iteration replayed: kjoule replay RUN replays the one kjoule run"
				   " keeps)\n", "Σ in sequence (where it ran)", "n/a");
		}
		if (!s.have_explained) {
			fprintf(f, "  naive prediction and explained_fraction: n/a (the iterations have no wall time)\n");
		} else {
			fprintf(f, "  naive prediction Σ warm = %.1f%% of wall (error %+.1f%%)\n",
				100 * s.naive_fraction, s.naive_error_pct);
			fprintf(f, "  explained_fraction = %.4f  (wall with each replayed kernel's in-situ time replaced by"
				   " %s; idle and host-only measured; with warm replays alone %.4f)\n",
				s.explained_fraction, s.have_cold ? "the mean of its warm and cold replays" : "its warm replay",
				s.explained_fraction_warm);
		}
		if (s.have_seq && s.explained_fraction_seq > 0)
			fprintf(f, "  explained_fraction_sequence = %.4f  (the same with in-sequence replay times)\n",
				s.explained_fraction_seq);
		if (s.have_explained)
			cmp_clocks_time_note(c, &s, f); /* kj_compare_clocks_out.c */
		if (s.kernel_overlap_frac > KJ_CMP_OVERLAP_FRAC)
			fprintf(f, "  ! kernels of several streams ran at once for %.0f%% of their time (Σ kernels %.1f us in"
				   " %.1f us of GPU busy time): each in-situ time includes that sharing, which a kernel"
				   " replayed alone lacks, so explained_fraction lays the replayed kernels one after"
				   " another (what the iteration would take if running them together bought nothing) and"
				   " is first-order only; the iteration replays below measure the whole\n",
				100 * s.kernel_overlap_frac, s.kernel_sum.mean * NS_US, s.busy.mean * NS_US);
		if (cmp_sequence_overlapped(&s))
			fprintf(f, "  Σ in sequence exceeds the iteration replayed whole (%.1f against %.1f us): kernels of"
				   " its streams ran at once in the replay, each one's time counting that sharing (so no"
				   " explained_fraction_sequence); the iteration replays below are the figure for the"
				   " whole\n",
				s.replay_seq * NS_US, s.seq_eager * NS_US);
		/* warm short and cold long of the in-situ time: the program's L2 held some of each
		 * kernel's data, which neither isolated replay reproduces */
		double w = off_pct(s.replay_warm, s.insitu_warm), c = off_pct(s.replay_cold, s.insitu_warm);
		if (s.have_cold && s.cov_warm > 0.9 && s.cov_cold > 0.9 && w < -5 && c > 5)
			fprintf(f, "  the isolated replays bracket the in-situ time (warm %+.1f%%, cold %+.1f%%): in the"
				   " program each kernel found part of its data in L2, as neither replay has it (explained_fraction takes"
				   " the mean of the two);%s\n", w, c,
				s.have_seq ? " the in-sequence times keep that state" : " kjoule replay --sequence keeps that"
				" state");
	}
	fprintf(f, "\nSequence replay of one iteration\n");
	line_us(f, "eager (stream of launches)", s.seq_eager, s.have_eager,
		s.have_eager ? "" : c->seq_failed_rows > 0 ? "(failed: `kjoule replay RUN --sequence` says why)"
							   : "(none: run kjoule replay --sequence)");
	if (s.n_graph_launches.mean > 0) {
		/* the program launched graphs: the linear-chain graph and the launches as recorded,
		 * each against the traced busy time of an iteration */
		char note[96] = "(none)";
		if (s.have_graph && s.busy.mean > 0)
			snprintf(note, sizeof(note), "%+6.1f%% vs traced busy (one linear chain)",
				 off_pct(s.seq_graph, s.busy.mean));
		line_us(f, "one CUDA graph", s.seq_graph, s.have_graph, note);
		if (s.have_graph && c->seq_left_out > 0)
			fprintf(f, "  (the chain left out %lld kernel launch(es) of the iteration that set a CUDA graph"
				   " conditional node's condition: they run only inside their graph; its time lacks"
				   " theirs)\n", (long long)c->seq_left_out);
		print_topology(f, c, &s);
	} else {
		line_us(f, "one CUDA graph", s.seq_graph, s.have_graph, s.have_graph ? "" : "(none)");
	}
	if (s.have_eager && s.n_graph_launches.mean > 0) {
		/* the program itself launched graphs: 'eager' is kjoule's replay one launch at a time,
		 * not the program's way; the graph replay is the one to hold against the wall */
		line_us(f, "host + graph launch (wall - graph)", s.wall.mean - s.seq_graph, s.have_graph, NULL);
		fprintf(f, "  (the program launched this iteration as %.1f graph launch(es); the eager replay"
			   " shows what launching its kernels one by one would cost", s.n_graph_launches.mean);
		if (s.have_graph)
			fprintf(f, ": %.1f us more than the graph", s.launch_cost * NS_US);
		fprintf(f, ")\n");
	} else if (s.have_eager) {
		line_us(f, "framework/host cost (wall - eager)", s.framework_host, 1, NULL);
		line_us(f, "launch cost (eager - graph)", s.launch_cost, s.have_graph, NULL);
		fprintf(f, "  eager sequence = %.1f%% of wall\n", 100 * s.sequence_fraction);
	}

	fprintf(f, "\nEnergy per iteration (J)\n");
	cmp_shared_print(c, f);
	cmp_clocks_print(c, f);
	if (c->n_power_samples == 0)
		fprintf(f, "  no power samples in this run: measured energy unknown\n");
	else if (!s.have_meas)
		fprintf(f, "  power samples (%lld) do not cover the iterations\n",
			(long long)c->n_power_samples);
	else if (s.e_meas_from_loop)
		fprintf(f, "  measured                            %12.6f  ± %.6f (%.2f%%) the mean: the loop of %lld"
			   " iterations as one window, the energy counter over %.3f s of whole update periods"
			   " (%.1f iterations)%s; each iteration's own window: %.6f on average\n",
			s.e_meas.mean / 1000, s.e_unc_mean / 1000, s.e_unc_mean_pct, (long long)c->loop_n,
			(double)c->loop_window_ns * 1e-9, c->loop_window_iters,
			s.loop_outside_frac >= 0.001 ? ", idle power over the time between iterations taken off" : "",
			s.e_meas_windows / 1000);
	else
		fprintf(f, "  measured                            %12.6f  ± %.6f per iteration, ± %.6f the mean"
			   " (min %.6f, max %.6f)\n",
			s.e_meas.mean / 1000, s.e_unc / 1000, s.e_unc_mean / 1000, s.e_meas.min / 1000,
			s.e_meas.max / 1000);
	if (s.have_meas && s.e_meas_short)
		fprintf(f, "  ! the measured iterations span %.1f ms, under two updates of the energy counter (~100 ms):"
			   " each window's figure rests on power readings that average over longer than the loop,"
			   " so all carry the same error and their mean is no measurement to judge by; about %.0f"
			   " iterations would span 250 ms\n",
			s.e_short_span_ms, s.e_iters_for_span);
	else if (s.have_meas && s.e_meas.mean > 0 && s.e_unc_mean_pct > KJ_CMP_ENERGY_JUDGE_PCT)
		fprintf(f, "  ! the measured mean is known only to ±%.1f%% (%lld iterations%s): no prediction is judged"
			   " against it; about %.0f iterations would bring it to ±%.0f%%\n",
			s.e_unc_mean_pct, (long long)(s.e_meas_from_loop ? c->loop_n : s.e_meas.n),
			s.e_meas_from_loop ? " in one window" : ", a few updates of the energy counter",
			s.e_iters_for_judge, KJ_CMP_ENERGY_JUDGE_PCT);
	if (s.have_kernels_e && s.e_extrapolated)
		fprintf(f, "  Σ count × replayed energy/launch    %12.6f  (extrapolated: replayed kernels hold %.1f%%"
			   " of kernel time, %.1f%% of launches)\n",
			s.e_kernels / 1000, 100 * s.e_kernels_time_cov, 100 * s.cov_energy);
	else if (s.have_kernels_e)
		fprintf(f, "  Σ count × replayed energy/launch    %12.6f  (coverage %.1f%%)\n",
			s.e_kernels / 1000, 100 * s.cov_energy);
	else
		fprintf(f, "  no replayed energy per launch yet\n");
	const char *data = s.have_kernels_e ? cmp_energy_data_label(c) : "";
	double dsh[KJ_CMP_DATA_KINDS];
	if (!strcmp(data, "random_fill"))
		fprintf(f, "    (replayed on kjoule's random fill, not the program's data: operand values move a kernel's"
			   " power by tens of percent; trace with --snapshot to replay on the program's own buffers,"
			   " docs/replay.md \"Data\")\n");
	else if (!strcmp(data, "mixed") && cmp_energy_data_shares(c, dsh))
		fprintf(f, "    (replayed partly on the program's data: %.1f%% of the replayed kernels' time on their own"
			   " launches' saved buffers, %.1f%% on other launches' saved buffers over kjoule's fill, %.1f%% on"
			   " kjoule's fill alone%s; a --snapshot budget that ran out leaves launches unsaved: raise it"
			   " with --snapshot=MB)\n",
			100 * dsh[KJ_CMP_DATA_SAVED], 100 * dsh[KJ_CMP_DATA_OTHER_SAVED], 100 * dsh[KJ_CMP_DATA_FILL],
			dsh[KJ_CMP_DATA_UNKNOWN] > 0 ? ", the rest unknown" : "");
	if (s.have_kernels_e && s.have_cold_e) {
		fprintf(f, "    each kernel at the mean of its energies with warm and cold L2, as its time:\n");
		fprintf(f, "    warm L2 (same buffers)            %12.6f\n", s.e_kernels_warm / 1000);
		fprintf(f, "    cold L2 (flushed)                 %12.6f  (", s.e_kernels_cold / 1000);
		if (s.e_cold_time_cov < 0.999 * s.e_kernels_time_cov)
			fprintf(f, "measured for kernels holding %.1f%% of kernel time, the rest at their warm energy"
				   " × %.3f, the ratio of those; ", 100 * s.e_cold_time_cov, s.e_cold_ratio);
		fprintf(f, "cold/warm %.3f)\n", s.e_cold_ratio);
	}
	if (s.have_idle_e)
		fprintf(f, "  %s idle %.1f W × non-kernel time  %12.6f\n",
			c->awake_idle_w >= 0 ? "awake" : "deep", c->idle_w, s.e_idle / 1000);
	if (c->awake_idle_w >= 0 || c->deep_idle_w >= 0) {
		fprintf(f, "    (awake idle: ");
		if (c->awake_idle_w >= 0)
			fprintf(f, "%.1f W, median of %lld quiet readings at full SM clock", c->awake_idle_w,
				(long long)c->n_awake_samples);
		else
			fprintf(f, "unknown, too few quiet readings at full clock");
		if (c->deep_idle_w >= 0)
			fprintf(f, "; deep idle: %.1f W", c->deep_idle_w);
		fprintf(f, ")\n");
	}
	else
		fprintf(f, "  idle power unknown (kjoule power --idle)\n");
	/* the parts' figures: the prediction, or beside it where the iteration replayed whole is */
	double parts_pred = s.e_basis_iter ? s.e_parts_pred : s.e_pred;
	double parts_err = s.e_basis_iter ? s.e_parts_err_pct : s.e_err_pct;
	int parts_have_err = s.e_basis_iter ? s.have_parts_err : s.have_err;
	char offpace[400];
	if (s.have_pred) {
		fprintf(f, "  predicted (kernels + idle)          %12.6f%s\n", parts_pred / 1000,
			parts_have_err ? "" : "  (no measurement to compare)");
		fprintf(f, "    = kernels %.6f + idle %.6f; %s\n", s.e_kernels_pred / 1000, s.e_idle / 1000,
			s.e_method == KJ_CMP_E_PLACE_SEQ
				? "each kernel's energy placed between its warm- and cold-L2 replays where its"
				  " in-sequence replay time lies (that replay keeps the iteration's L2 state)"
				: "each kernel at the mean of its warm- and cold-L2 replayed energies (no in-sequence"
				  " replay, or no cold-L2 energy, to place it by)");
		if (s.e_kernels_unc >= 0)
			fprintf(f, "    the replayed energies' own uncertainty: ± %.6f (%.2f%% of the prediction; each"
				   " kernel's warm and cold-L2 windows, weighted as above; idle power's not counted)\n",
				s.e_kernels_unc / 1000, parts_pred > 0 ? 100 * s.e_kernels_unc / parts_pred : 0.0);
		else
			fprintf(f, "    the replayed energies' own uncertainty: unknown (a replayed energy was stored"
				   " without its uncertainty)\n");
	}
	if (parts_have_err && s.e_meas_short)
		fprintf(f, "  error vs measured                   not judged (%+.2f%% against a figure the loop is too"
			   " short to measure: see above)\n", parts_err);
	else if (parts_have_err && s.e_standin)
		fprintf(f, "  error vs measured                   not judged (%+.2f%%: %.0f%% of the kernel time replayed"
			   " only on stand-in data, whose power is not the program's; trace with --snapshot)\n",
			parts_err, 100 * s.e_standin_share);
	else if (parts_have_err && c->clocks.mismatch == 1) /* kj_compare_clocks.c */
		fprintf(f, "  error vs measured                   not judged (%+.2f%%: %s)\n", parts_err, c->clocks.why[0]);
	else if (parts_have_err && s.e_sparse)
		fprintf(f, "  error vs measured                   not judged (%+.2f%%: the kernels with a replayed energy hold"
			   " %.1f%% of the kernel time, under %.0f%%; the rest is scaled up from them, so the error"
			   " does not test the parts: replay with a larger --budget, or --all)\n", parts_err,
			100 * s.e_kernels_time_cov, 100 * KJ_CMP_ENERGY_COVER_JUDGE_FRAC);
	else if (parts_have_err && s.e_offpace)
		fprintf(f, "  error vs measured                   not judged (%+.2f%%: %s)\n", parts_err, cmp_energy_off_pace_why(c, &s, offpace, sizeof(offpace)));
	else if (parts_have_err && s.e_basis_iter)
		fprintf(f, "  error vs measured                   %+11.2f%%  (the parts; the iteration replayed whole"
			   " predicts this graph-launched iteration: below)\n", parts_err);
	else if (parts_have_err)
		fprintf(f, "  error vs measured                   %+11.2f%%\n", parts_err);
	if (s.have_cand) { /* their errors only where the measured figure can judge them */
		int judged = parts_have_err && s.e_parts_judgeable, first = 1;
		fprintf(f, "    the same parts credited other ways (kernels + idle%s):",
			judged ? "; off the measured" : parts_have_err ? "; not judged either" : "");
		for (int k = 0; k < KJ_CMP_E_CANDIDATES; k++) {
			if (k == s.e_method)
				continue;
			fprintf(f, "%s %s %.6f", first ? "" : ";", kj_cmp_e_candidate_names[k], s.e_cand_pred[k] / 1000);
			if (judged)
				fprintf(f, " (%+.2f%%)", s.e_cand_err_pct[k]);
			first = 0;
		}
		fprintf(f, "\n");
	}
	if (s.have_pred_insitu) {
		/* the gap split in two: time (isolated replays run faster or slower than in situ) and
		 * power (what is left with each kernel at its replayed power over its in-situ time) */
		fprintf(f, "  replayed power × in-situ time + idle %11.6f", s.e_pred_insitu / 1000);
		if (s.have_insitu_err && s.have_err)
			fprintf(f, "  (%+.2f%%: %+.1f points of the gap are time, %+.1f power)",
				s.e_insitu_err_pct, s.e_err_pct - s.e_insitu_err_pct, s.e_insitu_err_pct);
		fprintf(f, "\n");
	}
	if (s.have_seq_e && s.e_seq_paced)
		fprintf(f, "  iteration replayed as one graph     %12.6f  (%s replay paced as the program ran: one"
			   " launch every %.1f us, each waited for; %s idle over the period's part outside the wall ="
			   " %.6f)\n",
			s.e_seq / 1000, s.e_seq_mode, s.e_seq_time * NS_US,
			s.e_seq_time > s.wall.mean ? "less" : "plus", s.e_seq_pred / 1000);
	else if (s.have_seq_e)
		fprintf(f, "  iteration replayed as one graph     %12.6f  (%s replay, %.1f us; + idle over the rest"
			   " of the wall = %.6f)\n",
			s.e_seq / 1000, s.e_seq_mode, s.e_seq_time * NS_US, s.e_seq_pred / 1000);
	if (s.have_seq_e) {
		const char *saved = strstr(s.e_seq_data, "snapshot") ? "  (on the program's saved buffers)" : "";
		if (s.e_seq_synthetic)
			fprintf(f, "  error vs measured                   not judged: replayed on %s data (random data"
				   " faulted: an index read out of bounds); operands of few set bits draw less power."
				   " Trace with --snapshot-graphs (or --snapshot) to replay on the program's buffers\n",
				s.e_seq_data);
		else if (s.have_seq_err && s.e_meas_short)
			fprintf(f, "  error vs measured                   not judged (%+.2f%%: the loop is too short to"
				   " measure)%s\n", s.e_seq_err_pct, saved);
		else if (s.have_seq_err && c->clocks.sequence_mismatch == 1) /* kj_compare_clocks.c */
			fprintf(f, "  error vs measured                   not judged (%+.2f%%: %s)\n", s.e_seq_err_pct, c->clocks.why[1]);
		else if (s.have_seq_err && s.e_basis_iter && !s.e_judgeable)
			fprintf(f, "  error vs measured                   %+11.2f%%%s  the prediction, not judged (see"
				   " above)\n", s.e_seq_err_pct, saved);
		else if (s.have_seq_err && s.e_basis_iter)
			fprintf(f, "  error vs measured                   %+11.2f%%%s  the prediction: the iteration was"
				   " launched as CUDA graphs and replayed whole, as the program ran it%s\n",
				s.e_seq_err_pct, saved, strcmp(s.e_seq_mode, "graph") ? "" : " (one linear chain, its topology"
				" not rebuilt; its time off the traced GPU busy time carries under 1% of the energy)");
		else if (s.have_seq_err)
			fprintf(f, "  error vs measured                   %+11.2f%%%s\n", s.e_seq_err_pct, saved);
		if (!strncmp(s.e_seq_data, "random", 6) && !strstr(s.e_seq_data, "snapshot"))
			fprintf(f, "    (on random data: a chain of kernels on it computes other values than the program's and"
				   " drew 11-20 %% less energy in kjoule's measurements; trace with --snapshot-graphs to"
				   " replay on the program's buffers: docs/replay.md, \"Data\")\n");
	}

	/* tiers */
	fprintf(f, "\nTiers (per iteration)\n  %-16s %8s %10s %12s %8s %12s %12s\n", "tier", "unique",
		"launches", "measured_us", "share", "replay_us", "energy_J");
	double n = (double)(s.n ? s.n : 1);
	for (size_t t = 0; t < c->tiers.n; t++) {
		const struct cmp_tier *ti = &c->tier_v[t];
		if (!ti->launches)
			continue;
		char rep[32] = "-", en[32] = "-";
		if (ti->cov_warm)
			snprintf(rep, sizeof(rep), "%.1f", ti->replay_warm_ns / n * NS_US);
		if (ti->cov_energy)
			snprintf(en, sizeof(en), "%.6f", ti->energy_mj / n / 1000);
		fprintf(f, "  %-16s %8lld %10.1f %12.1f %7.1f%% %12s %12s\n", c->tiers.names[t],
			(long long)ti->unique, (double)ti->launches / n,
			(double)ti->measured_ns / n * NS_US,
			pct((double)ti->measured_ns / n, s.kernel_sum.mean + s.copy_sum.mean), rep, en);
	}
	/* top kernels */
	size_t ng = 0, *ix = cmp_top_groups(c, &ng);
	fprintf(f, "\nTop %d kernels by measured time per iteration\n  %10s %8s %10s %10s %10s %10s  %s\n",
		c->top, "measured", "count", "mean_us", "warm_us", "in_seq_us", "tier", "name");
	for (size_t k = 0; k < ng && k < (size_t)c->top; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		char w[32] = "-", q[32] = "-";
		if (g->warm_ns >= 0)
			snprintf(w, sizeof(w), "%.2f", g->warm_ns * NS_US);
		if (g->seq_ns >= 0)
			snprintf(q, sizeof(q), "%.2f", g->seq_ns * NS_US);
		fprintf(f, "  %10.1f %8.1f %10.2f %10s %10s %10s  %.100s\n", (double)g->measured_ns / n * NS_US,
			(double)g->launches / n, (double)g->measured_ns / (double)g->launches * NS_US, w, q,
			c->tiers.names[g->tier], cmp_group_name(c, g));
	}
	free(ix);
	cmp_energy_print_top(c, &s, f);
	{
		size_t nd = 0, *dx = cmp_disagreements(c, &s, &nd);
		if (nd) {
			fprintf(f, "\nReplay disagreements (in-sequence time off the in-situ mean by > 25 %%; the"
				   " replay likely did other work%s)\n  %10s %10s  %s\n",
				cmp_sequence_overlapped(&s) ? ", or ran it beside other streams' kernels" : "",
				"in_situ_us", "in_seq_us", "name");
			for (size_t k = 0; k < nd; k++) {
				const struct cmp_group *g = &c->groups[dx[k]];
				fprintf(f, "  %10.2f %10.2f  %.100s\n",
					(double)g->measured_ns / (double)g->launches * NS_US, g->seq_ns * NS_US,
					cmp_group_name(c, g));
			}
		}
		free(dx);
	}
	{
		int header = 0;
		size_t outside = 0; /* ran only outside the measured iterations (warm-up, autotuning) */
		for (size_t k = 0; k < c->n_groups; k++) {
			const struct cmp_group *g = &c->groups[k];
			if (!g->waits)
				continue;
			if (g->launches == 0) {
				outside++;
				continue;
			}
			if (!header++)
				fprintf(f, "\nNot replayable alone (kept in the sums at their in-situ time; energy: that"
					   " time at idle power, or at its replayed power when it ran on stand-in data; extrapolated\n"
					   "  from the other kernels' when it did other work alone)\n"
					   "  %10s %8s  %s\n", "in_situ_us", "count", "name: why");
			fprintf(f, "  %10.2f %8.1f  %.80s: %s\n",
				(g->launches > 0 ? (double)g->measured_ns / (double)g->launches : g->traced_mean_ns) *
					NS_US, (double)g->launches / n,
				cmp_group_name(c, g), g->waits_why ? g->waits_why : "waits on something outside itself");
		}
		if (outside)
			fprintf(f, "%s  (and %zu kernel(s) of that kind that ran only outside the measured iterations:"
				   " compare --json lists them)\n", header ? "" : "\nNot replayable alone\n", outside);
	}
	if (c->region_names.n) {
		fprintf(f, "\nNVTX ranges inside the iteration (per iteration)\n  %12s %12s %10s  %s\n",
			"time_us", "gpu_busy_us", "count", "name");
		int any_captured = 0;
		for (size_t r = 0; r < c->region_names.n; r++) {
			const struct cmp_region *g = &c->region_v[r];
			char t[32] = "-";
			if (g->timed)
				snprintf(t, sizeof(t), "%.1f", (double)g->time_ns / n * NS_US);
			any_captured |= g->captured;
			fprintf(f, "  %12s %12.1f %10.1f  %s%s%s\n", t, (double)g->busy_ns / n * NS_US,
				(double)g->instances / n, g->min_depth > 1 ? "  " : "", c->region_names.names[r],
				g->captured ? " *" : "");
		}
		if (any_captured)
			fprintf(f, "  * holds graph kernels whose nodes were captured inside the range (it fired at"
				   " capture time; '-': no host time of its own in the iteration)\n");
	}
	json_t *miss = cmp_missing_json(c, &s);
	if (json_array_size(miss)) {
		fprintf(f, "\nWhat this run lacks:\n");
		for (size_t i = 0; i < json_array_size(miss); i++)
			fprintf(f, "  - %s\n", json_string_value(json_array_get(miss, i)));
	}
	json_decref(miss);
	cmp_ranks_print(c, f);
}

struct by_energy {
	size_t g;
	double mj;
};

static int by_energy_desc(const void *a, const void *b)
{
	double x = ((const struct by_energy *)a)->mj, y = ((const struct by_energy *)b)->mj;
	return x > y ? -1 : x < y;
}

void cmp_energy_print_top(const struct kj_compare *c, const struct cmp_summary *s, FILE *f)
{
	double sc = cmp_energy_insitu_scale(s), n = (double)(s->n ? s->n : 1);
	struct by_energy *v;
	size_t nv = 0;
	if (!s->have_cand || !(v = malloc((c->n_groups ? c->n_groups : 1) * sizeof(*v))))
		return;
	for (size_t g = 0; g < c->n_groups; g++) {
		double mj = cmp_energy_group_mj(c, s, &c->groups[g]);
		if (mj >= 0)
			v[nv++] = (struct by_energy){g, mj};
	}
	qsort(v, nv, sizeof(*v), by_energy_desc);
	fprintf(f, "\nTop %d kernels by energy per iteration (mJ; in situ: as they ran in the program, the"
		   " predicted energies scaled by %s so that all kernels sum to the measured energy less idle)\n"
		   "  %10s %10s %8s %12s  %s\n", c->top, sc > 0 ? "one factor" : "- (no measured energy)",
		"predicted", "in_situ", "count", "in_situ/launch", "name");
	for (size_t k = 0; k < nv && k < (size_t)c->top; k++) {
		const struct cmp_group *g = &c->groups[v[k].g];
		double per_iter = (double)g->launches / n;
		char is[32] = "-", il[32] = "-";
		if (sc > 0) {
			snprintf(is, sizeof(is), "%.3f", v[k].mj * sc);
			snprintf(il, sizeof(il), "%.4f", v[k].mj * sc / per_iter);
		}
		fprintf(f, "  %10.3f %10s %8.1f %12s  %.100s\n", v[k].mj, is, per_iter, il, cmp_group_name(c, g));
	}
	if (sc > 0)
		fprintf(f, "  (factor %.4f: measured less idle over the kernels' predicted energy)\n", sc);
	free(v);
}
