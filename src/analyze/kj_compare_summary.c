/* kjoule compare: the figures derived from the per-iteration ones (means over kept iterations,
 * the prediction, the energy terms) and the selections the reports share (top kernels, replay
 * disagreements). */
#include "kj_compare_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

double cmp_safe_div(double a, double b, int *ok)
{
	if (b == 0.0 || !isfinite(a) || !isfinite(b)) {
		*ok = 0;
		return 0.0;
	}
	*ok = 1;
	return a / b;
}

/* mean/min/max of get(x) over kept iterations (and, with need_energy, those with energy) */
typedef double (*iter_get)(const struct cmp_iter *x);

/* No iteration inside the loop's span shared the GPU with another process. */
static int loop_clean(const struct kj_compare *c)
{
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		if (x->foreign && x->start_ns >= c->loop_start_ns && x->end_ns <= c->loop_start_ns + c->loop_span_ns)
			return 0;
	}
	return 1;
}

static struct stat3 iter_stat(const struct kj_compare *c, iter_get get, int need_energy)
{
	struct stat3 s = {0, 0, 0, 0};
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		if (x->skipped || (need_energy && (!x->energy_ok || x->energy_excluded)))
			continue;
		double v = get(x);
		if (!s.n || v < s.min)
			s.min = v;
		if (!s.n || v > s.max)
			s.max = v;
		s.mean += v;
		s.n++;
	}
	if (s.n)
		s.mean /= (double)s.n;
	return s;
}

#define GETTER(field)                                                                    \
	static double get_##field(const struct cmp_iter *x)                              \
	{                                                                                \
		return (double)x->field;                                                 \
	}
GETTER(wall)
GETTER(span)
GETTER(busy)
GETTER(kernel_busy)
GETTER(kernel_sum)
GETTER(copy_sum)
GETTER(overlap)
GETTER(idle)
GETTER(host_only)
GETTER(outside)
GETTER(inherited)
GETTER(n_kernels)
GETTER(n_copies)
GETTER(n_memsets)
GETTER(bytes_h2d)
GETTER(bytes_d2h)
GETTER(n_graph_launches)
GETTER(standin_ns)
GETTER(replay_warm)
GETTER(replay_cold)
GETTER(insitu_warm)
GETTER(insitu_cold)
GETTER(replay_iso)
GETTER(cov_warm)
GETTER(cov_cold)
GETTER(cov_energy)
GETTER(replay_seq)
GETTER(insitu_seq)
GETTER(cov_seq)
GETTER(energy_kernels_mj)
GETTER(e_cold_cov_warm_mj)
GETTER(e_cold_cov_cold_mj)
GETTER(e_nocold_warm_mj)
GETTER(cold_energy_ns)
GETTER(insitu_energy_ns)
GETTER(energy_measured_mj)
GETTER(energy_unc_mj)

/* ---- derived figures (means over kept iterations, ns) ---- */

void cmp_summarize(const struct kj_compare *c, struct cmp_summary *s)
{
	int ok;
	memset(s, 0, sizeof(*s));
	s->n = (int64_t)c->it.n_kept;
	s->wall = iter_stat(c, get_wall, 0);
	s->span = iter_stat(c, get_span, 0);
	s->busy = iter_stat(c, get_busy, 0);
	s->kernel_busy = iter_stat(c, get_kernel_busy, 0);
	s->kernel_sum = iter_stat(c, get_kernel_sum, 0);
	s->copy_sum = iter_stat(c, get_copy_sum, 0);
	s->overlap = iter_stat(c, get_overlap, 0);
	s->idle = iter_stat(c, get_idle, 0);
	s->host_only = iter_stat(c, get_host_only, 0);
	s->outside = iter_stat(c, get_outside, 0);
	s->inherited = iter_stat(c, get_inherited, 0);
	s->n_kernels = iter_stat(c, get_n_kernels, 0);
	s->n_copies = iter_stat(c, get_n_copies, 0);
	s->n_memsets = iter_stat(c, get_n_memsets, 0);
	s->bytes_h2d = iter_stat(c, get_bytes_h2d, 0);
	s->bytes_d2h = iter_stat(c, get_bytes_d2h, 0);
	s->n_graph_launches = iter_stat(c, get_n_graph_launches, 0);
	s->replay_warm = iter_stat(c, get_replay_warm, 0).mean;
	s->replay_cold = iter_stat(c, get_replay_cold, 0).mean;
	s->insitu_warm = iter_stat(c, get_insitu_warm, 0).mean;
	s->insitu_cold = iter_stat(c, get_insitu_cold, 0).mean;
	s->replay_iso = iter_stat(c, get_replay_iso, 0).mean;
	double kl = s->n_kernels.mean;
	double cw = iter_stat(c, get_cov_warm, 0).mean, cc = iter_stat(c, get_cov_cold, 0).mean;
	double ce = iter_stat(c, get_cov_energy, 0).mean;
	s->cov_warm = kl > 0 ? cw / kl : 0;
	s->cov_cold = kl > 0 ? cc / kl : 0;
	s->cov_energy = kl > 0 ? ce / kl : 0;
	s->replay_seq = iter_stat(c, get_replay_seq, 0).mean;
	s->insitu_seq = iter_stat(c, get_insitu_seq, 0).mean;
	double cs = iter_stat(c, get_cov_seq, 0).mean;
	s->cov_seq = kl > 0 ? cs / kl : 0;
	s->have_seq = cs > 0;
	s->have_warm = cw > 0;
	s->have_cold = cc > 0;
	s->full_warm = kl > 0 && cw >= kl;
	s->full_cold = kl > 0 && cc >= kl;
	/* predicted wall: the measured wall with every replayed kernel's in-situ time replaced by
	 * its isolated replay time, the mean of its warm and cold replays: in the program part of its
	 * data was in L2, which the two replays bracket (docs/analysis-compare.md,
	 * "explained_fraction"). Where kernels
	 * overlapped, the isolated times are laid one after another (the overlap goes back into the
	 * wall): a replay alone has no sharing to take out. In-sequence times carry the replay's own
	 * sharing, so their difference counts at the wall's share of the kernel sum. */
	if (s->have_warm) {
		double ov = s->overlap.mean > 0 ? s->overlap.mean : 0;
		double wall_share = s->kernel_sum.mean > 0 && ov < s->kernel_sum.mean
			? (s->kernel_sum.mean - ov) / s->kernel_sum.mean : 1;
		s->predicted_wall = s->wall.mean + ov + (s->replay_iso - s->insitu_warm);
		s->explained_fraction = cmp_safe_div(s->predicted_wall, s->wall.mean, &ok);
		int ok_warm;
		s->explained_fraction_warm =
			cmp_safe_div(s->wall.mean + ov + (s->replay_warm - s->insitu_warm), s->wall.mean, &ok_warm);
		s->kernel_overlap_frac = s->kernel_sum.mean > 0 ? ov / s->kernel_sum.mean : 0;
		s->explained_fraction_seq =
			s->have_seq ? (s->wall.mean + (s->replay_seq - s->insitu_seq) * wall_share) / s->wall.mean
				    : -1;
		s->have_explained = ok;
		cmp_explained_at_program_clocks(c, s);
		s->naive_fraction = cmp_safe_div(s->replay_warm, s->wall.mean, &ok);
		s->naive_error_pct = cmp_safe_div(100.0 * (s->replay_warm - s->wall.mean), s->wall.mean,
					      &ok);
	}
	s->have_eager = c->seq_eager_ns >= 0;
	s->have_graph = c->seq_graph_ns >= 0;
	s->seq_eager = c->seq_eager_ns;
	s->seq_graph = c->seq_graph_ns;
	s->have_topo = c->seq_topo_ns >= 0;
	s->seq_topo = c->seq_topo_ns;
	if (s->have_eager) {
		s->framework_host = s->wall.mean - s->seq_eager;
		s->sequence_fraction = cmp_safe_div(s->seq_eager, s->wall.mean, &ok);
	}
	if (s->have_eager && s->have_graph)
		s->launch_cost = s->seq_eager - s->seq_graph;
	/* kernels that ran at once in the replayed iteration count another sharing than the
	 * program's: no per-kernel substitution with their times (the iteration replays stand) */
	if (cmp_sequence_overlapped(s))
		s->explained_fraction_seq = -1;
	/* energy */
	s->e_meas = iter_stat(c, get_energy_measured_mj, 1);
	s->have_meas = s->e_meas.n > 0;
	s->e_unc = iter_stat(c, get_energy_unc_mj, 1).mean;
	/* the mean of n windows: their stated uncertainties in quadrature / n (independent edges) */
	{
		double q = 0;
		for (size_t i = 0; i < c->it.n; i++)
			if (!c->iv[i].skipped && c->iv[i].energy_ok && !c->iv[i].energy_excluded)
				q += c->iv[i].energy_unc_mj * c->iv[i].energy_unc_mj;
		s->e_unc_mean = s->e_meas.n ? sqrt(q) / (double)s->e_meas.n : 0;
	}
	/* The measured iterations are contiguous: their mean is best measured as one window, the
	 * counter between its first and last update inside the loop, less idle power over the time
	 * between iterations, per iteration (add_loop_energy). Its error is the window's, far smaller
	 * than the spread of per-iteration windows each shorter than the counter's ~100 ms update;
	 * those stay for the spread (docs/analysis-compare.md, "Measured energy"). Without idle power
	 * the time between iterations cannot be taken off: the loop stands only where it is < 1 %. */
	s->e_meas_windows = s->e_meas.mean;
	if (s->have_meas && c->have_loop && c->loop_counter_periods >= 2 && loop_clean(c)) {
		double outside_ns = (double)(c->loop_span_ns - c->loop_inside_ns);
		s->loop_outside_frac = outside_ns / (double)c->loop_span_ns;
		s->e_loop = c->loop_iter_mj;
		s->e_loop_unc = c->loop_iter_unc_mj;
		/* between iterations the GPU must wait: work there (no iteration's) is not idle */
		s->loop_gap_busy = (double)c->loop_gap_busy_ns > 0.01 * outside_ns && c->loop_gap_busy_ns > 0;
		s->have_loop = s->e_loop > 0 && isfinite(s->e_loop) && isfinite(s->e_loop_unc) && !s->loop_gap_busy &&
			       (c->idle_w >= 0 || s->loop_outside_frac < KJ_CMP_LOOP_OUTSIDE_FRAC);
		s->win_power_frac = c->win_s > 0 ? c->win_power_s / c->win_s : 0;
		if (s->have_loop) {
			s->e_meas.mean = s->e_loop;
			s->e_unc_mean = s->e_loop_unc;
			s->e_meas_from_loop = 1;
		}
	}
	/* All measured iterations within fewer than two counter updates, their windows' energy mostly
	 * from power readings: the readings average over longer than the loop, so every window
	 * carries the same error (a Triton loop of 44 steps in 20 ms: 0.033 J a step by its windows,
	 * 0.11 J by its kernels' replays). The windows are not independent: no mean to judge by. */
	if (s->have_meas && !s->e_meas_from_loop && c->have_loop && c->loop_counter_periods < 2 && c->win_s > 0 &&
	    c->win_power_s / c->win_s > 0.5) {
		s->e_meas_short = 1;
		s->e_short_span_ms = (double)c->loop_span_ns * 1e-6;
	}
	/* a short run's mean is known only to a few counter updates: its errors say nothing below
	 * that; the mean's uncertainty falls as 1/sqrt(n) with independent edges */
	if (s->have_meas && s->e_meas.mean > 0) {
		s->e_unc_mean_pct = 100.0 * s->e_unc_mean / s->e_meas.mean;
		s->e_standin_share =
			s->kernel_sum.mean > 0 ? iter_stat(c, get_standin_ns, 0).mean / s->kernel_sum.mean : 0;
		s->e_standin = s->e_standin_share > KJ_CMP_STANDIN_JUDGE_FRAC;
		s->e_judgeable_data = s->e_unc_mean_pct <= KJ_CMP_ENERGY_JUDGE_PCT && !s->e_meas_short && !s->e_standin;
		cmp_energy_off_pace(c, s);
		s->e_judgeable = s->e_judgeable_data && c->clocks.mismatch != 1 /* kj_compare_clocks.c */ &&
				 !s->e_offpace;
		double r = s->e_unc_mean_pct / KJ_CMP_ENERGY_JUDGE_PCT;
		/* one window: its error is about fixed in joules, so its share falls as 1/n; windows
		 * with independent edges: as 1/sqrt(n) */
		s->e_iters_for_judge = s->e_meas_from_loop ? ceil((double)c->loop_n * r * 1.1)
							    : ceil((double)s->e_meas.n * r * r);
		if (s->e_meas_short && c->loop_n > 0) { /* a loop over >= 2.5 counter periods (250 ms) */
			double per_iter_ms = s->e_short_span_ms / (double)c->loop_n;
			s->e_iters_for_span = per_iter_ms > 0 ? ceil(250.0 / per_iter_ms) : 0;
		}
	}
	if (ce > 0) {
		double covered_ns = iter_stat(c, get_insitu_energy_ns, 0).mean;
		s->e_kernels = iter_stat(c, get_energy_kernels_mj, 0).mean;
		s->e_kernels_time_cov = s->kernel_sum.mean > 0 ? covered_ns / s->kernel_sum.mean : 1;
		/* the launches with a cold-L2 energy count at the mean of warm and cold in e_kernels:
		 * with their warm energies alone it is less by half their cold-warm difference */
		double wc = iter_stat(c, get_e_cold_cov_warm_mj, 0).mean, cc = iter_stat(c, get_e_cold_cov_cold_mj, 0).mean;
		s->e_kernels_warm = s->e_kernels_cold = s->e_kernels - (cc - wc) / 2;
		/* the launches without one count at their warm energy times the ratio of those with one,
		 * so the cold sum and the mean of the two cover the same launches */
		if (wc > 0 && cc > 0) {
			double wn = iter_stat(c, get_e_nocold_warm_mj, 0).mean;
			s->have_cold_e = 1;
			s->e_cold_ratio = cc / wc;
			s->e_cold_time_cov = s->kernel_sum.mean > 0
						     ? iter_stat(c, get_cold_energy_ns, 0).mean / s->kernel_sum.mean : 0;
			s->e_kernels_cold = s->e_kernels_warm + (wc + wn) * (s->e_cold_ratio - 1);
			s->e_kernels += wn * (s->e_cold_ratio - 1) / 2;
		}
		/* kernels without an energy figure (not replayed, or replayed for latency only) count at
		 * the energy per ns of those with one, and the report says so */
		if (covered_ns > 0 && s->e_kernels_time_cov < 0.999) {
			double up = s->kernel_sum.mean / covered_ns;
			s->e_kernels *= up;
			s->e_kernels_warm *= up;
			s->e_kernels_cold *= up;
			s->e_extrapolated = 1;
		}
		s->have_kernels_e = 1;
		s->e_sparse = s->e_kernels_time_cov < KJ_CMP_ENERGY_COVER_JUDGE_FRAC;
		if (s->e_sparse)
			s->e_judgeable = 0;
	}
	if (c->idle_w >= 0) {
		/* idle power over the time no kernel runs (copies count as idle here) */
		s->e_idle = c->idle_w * (s->wall.mean - s->kernel_busy.mean) * 1e-6; /* W*ns->mJ */
		s->have_idle_e = 1;
	}
	/* the sequence replayed as one graph: its energy per replay, idle power for the rest of the wall */
	if (c->idle_w >= 0 && (c->seq_topo_mj >= 0 || c->seq_graph_mj >= 0)) {
		int topo = c->seq_topo_mj >= 0 && c->seq_topo_ns > 0;
		s->e_seq_mode = topo ? "topology" : "graph";
		s->e_seq_data = topo ? c->seq_topo_data : c->seq_graph_data;
		s->e_seq_synthetic = !strncmp(s->e_seq_data, "smallint", 8) || !strncmp(s->e_seq_data, "zero", 4);
		s->e_seq = topo ? c->seq_topo_mj : c->seq_graph_mj;
		s->e_seq_time = topo ? c->seq_topo_ns : c->seq_graph_ns;
		double pace_ns = topo ? c->seq_topo_pace_ns : c->seq_graph_pace_ns;
		s->e_seq_paced = pace_ns > 0;
		if (s->e_seq_paced)
			s->e_seq_time = pace_ns;
		/* idle power over the rest of the wall; paced, the energy is per period, and the part of
		 * the period outside the iteration's window (the GPU idle) comes off */
		double rest_ns = s->wall.mean - s->e_seq_time;
		s->e_seq_pred = s->e_seq + c->idle_w * (s->e_seq_paced || rest_ns > 0 ? rest_ns : 0) * 1e-6; /* W*ns->mJ */
		s->have_seq_e = s->e_seq_time > 0 && s->e_seq_pred > 0;
		if (s->have_seq_e && s->have_meas) {
			s->e_seq_err_pct = cmp_safe_div(100.0 * (s->e_seq_pred - s->e_meas.mean), s->e_meas.mean, &ok);
			s->have_seq_err = ok && !s->e_seq_synthetic;
		}
	}
	if (s->have_kernels_e && s->have_idle_e) {
		s->e_pred = s->e_kernels + s->e_idle;
		s->have_pred = 1;
		if (s->have_meas) {
			s->e_err_pct = cmp_safe_div(100.0 * (s->e_pred - s->e_meas.mean), s->e_meas.mean,
						&ok);
			s->have_err = ok;
		}
	}
	/* the prediction: each kernel placed between its warm and cold-L2 energies where its
	 * in-sequence replay time lies (the sequence replay keeps the iteration's L2 state); the
	 * mean of the two where the run has no in-sequence replay (docs/analysis-compare.md) */
	cmp_energy_candidates(c, s);
	s->e_method = KJ_CMP_E_MEAN;
	if (s->have_cand && s->have_pred) {
		if (c->n_replay_seq_rows > 0 && s->have_cold_e)
			s->e_method = KJ_CMP_E_PLACE_SEQ;
		s->e_pred = s->e_cand_pred[s->e_method];
		s->e_kernels_pred = s->e_pred - s->e_idle;
		if (s->have_meas)
			s->e_err_pct = cmp_safe_div(100.0 * (s->e_pred - s->e_meas.mean), s->e_meas.mean, &s->have_err);
	} else {
		s->e_kernels_pred = s->e_kernels;
	}
	cmp_energy_parts_unc(c, s);
	cmp_energy_basis(c, s);
	/* each kernel at its replayed power over its in-situ time: one of the ways to credit it */
	s->e_kernels_insitu = s->have_cand ? s->e_cand_kernels[KJ_CMP_E_POWER_TIME] : NAN;
	if (s->have_pred && isfinite(s->e_kernels_insitu) && s->e_kernels_insitu > 0) {
		s->e_pred_insitu = s->e_kernels_insitu + s->e_idle;
		s->have_pred_insitu = 1;
		if (s->have_meas) {
			s->e_insitu_err_pct = cmp_safe_div(100.0 * (s->e_pred_insitu - s->e_meas.mean),
							   s->e_meas.mean, &ok);
			s->have_insitu_err = ok;
		}
	}
}

static int group_cmp_desc(const void *a, const void *b, void *ctx)
{
	const struct kj_compare *c = ctx;
	const struct cmp_group *x = &c->groups[*(const size_t *)a], *y = &c->groups[*(const size_t *)b];
	if (x->measured_ns != y->measured_ns)
		return x->measured_ns > y->measured_ns ? -1 : 1;
	return x->launches > y->launches ? -1 : x->launches < y->launches;
}

/* sorted indices of groups with launches, by measured time (caller frees) */
size_t *cmp_top_groups(const struct kj_compare *c, size_t *n_out)
{
	size_t *ix = malloc((c->n_groups + 1) * sizeof(*ix)), n = 0;
	if (!ix) {
		*n_out = 0;
		return NULL;
	}
	for (size_t g = 0; g < c->n_groups; g++)
		if (c->groups[g].launches > 0)
			ix[n++] = g;
	/* binary insertion sort: groups are unique kernels (hundreds), and qsort has no context */
	for (size_t i = 1; i < n; i++) {
		size_t v = ix[i], j = i;
		/* n is the number of unique kernels (small): a binary insertion keeps it simple */
		size_t lo = 0, hi = i;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (group_cmp_desc(&ix[mid], &v, (void *)c) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (j = i; j > lo; j--)
			ix[j] = ix[j - 1];
		ix[lo] = v;
	}
	*n_out = n;
	return ix;
}

const char *cmp_group_name(const struct kj_compare *c, const struct cmp_group *g)
{
	return kj_names_get(&c->names, g->name_id);
}

/* Kernels whose replay disagrees with the trace where it should not: timed inside the replayed
 * iteration (same order, same L2) a kernel should take its in-situ time. A disagreement of more
 * than 25 % on a kernel with at least 1 % of the kernel time points at a replay that did other
 * work (data-dependent kernels on random data, semaphores not zeroed). Indices into groups,
 * largest share first; *n_out entries. */
size_t *cmp_disagreements(const struct kj_compare *c, const struct cmp_summary *s, size_t *n_out)
{
	size_t n = 0, nt = 0, *ix = cmp_top_groups(c, &nt), *out = malloc((nt + 1) * sizeof(*out));
	double ni = (double)(s->n ? s->n : 1);
	*n_out = 0;
	if (!ix || !out) {
		free(ix);
		free(out);
		return NULL;
	}
	for (size_t k = 0; k < nt; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		if (g->seq_ns < 0 || g->launches <= 0)
			continue;
		double situ = (double)g->measured_ns / (double)g->launches;
		double share = (double)g->measured_ns / ni / (s->kernel_sum.mean > 0 ? s->kernel_sum.mean : 1);
		if (situ > 0 && share >= 0.01 && fabs(g->seq_ns / situ - 1.0) > 0.25)
			out[n++] = ix[k];
	}
	free(ix);
	*n_out = n;
	return out;
}

int cmp_sequence_overlapped(const struct cmp_summary *s)
{
	return s->have_seq && s->have_eager && s->cov_seq > 0.9 && s->seq_eager > 0 &&
	       s->replay_seq > 1.05 * s->seq_eager;
}
