/* The ways compare can credit each replayed launch with energy, summed per iteration; the summary
 * adds idle power over the time no kernel runs and says which one it predicts with
 * (docs/analysis-compare.md, "Predicted: how each launch is credited"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_compare_internal.h"
#include "kj_energy_window.h"
#include "kj_error.h"

/* Where between its warm and its cold replay time a launch's time t lies: 0 at warm, 1 at cold,
 * clamped; 0.5 where either replay time is missing or they do not differ. */
static double place(const struct cmp_group *gr, double t)
{
	if (gr->warm_ns < 0 || gr->cold_ns < 0 || gr->cold_ns <= gr->warm_ns * 1.001 || t < 0)
		return 0.5;
	double f = (t - gr->warm_ns) / (gr->cold_ns - gr->warm_ns);
	return f < 0 ? 0 : f > 1 ? 1 : f;
}

void cmp_energy_add_launch(struct cmp_iter *x, struct cmp_group *gr, int64_t d_ns)
{
	double e[KJ_CMP_E_CANDIDATES];
	double d = (double)d_ns;
	double ew = gr->energy_warm_mj >= 0 ? gr->energy_warm_mj : gr->energy_mj;
	int cold = gr->energy_cold_mj >= 0;
	double ec = cold ? gr->energy_cold_mj : ew;
	double f = place(gr, d), fs = place(gr, gr->seq_ns);
	/* powers in mW of the two energy loops; the mean power where a loop's time is unknown */
	double pm = gr->power_mw > 0 ? gr->power_mw : -1;
	double pw = gr->ew_ns > 0 ? ew / gr->ew_ns * 1e9 : pm;
	double pc = cold && gr->ec_ns > 0 ? ec / gr->ec_ns * 1e9 : pw;

	e[KJ_CMP_E_MEAN] = gr->energy_mj;
	e[KJ_CMP_E_PLACE] = ew + f * (ec - ew);
	e[KJ_CMP_E_PLACE_SEQ] = ew + fs * (ec - ew);
	/* without a power figure, the launch's replayed energy stands */
	e[KJ_CMP_E_POWER_TIME] = pm > 0 ? pm * d * 1e-9 : gr->energy_mj;
	e[KJ_CMP_E_PLACE_POWER] = pw > 0 && pc > 0 ? (pw + f * (pc - pw)) * d * 1e-9 : gr->energy_mj;
	e[KJ_CMP_E_WARM_POWER] = pw > 0 ? pw * d * 1e-9 : gr->energy_mj;
	for (int k = 0; k < KJ_CMP_E_CANDIDATES; k++) {
		x->e_cand_mj[k] += e[k];
		if (!x->skipped)
			gr->e_cand_mj[k] += e[k];
	}
	/* without a cold energy its cold figure is its warm one times the run's cold/warm ratio,
	 * known only once every launch is in: its placed share waits for it (cmp_energy_candidates) */
	if (!cold) {
		x->e_nocold_place_mj[0] += f * ew;
		x->e_nocold_place_mj[1] += fs * ew;
		if (!x->skipped) {
			gr->e_nocold_place_mj[0] += f * ew;
			gr->e_nocold_place_mj[1] += fs * ew;
		}
	}
	if (!x->skipped)
		gr->e_cand_launches++;
}

void cmp_energy_add_all(struct cmp_iter *x, struct cmp_group *gr, double mj)
{
	for (int k = 0; k < KJ_CMP_E_CANDIDATES; k++) {
		x->e_cand_mj[k] += mj;
		if (gr && !x->skipped)
			gr->e_cand_mj[k] += mj;
	}
	if (gr && !x->skipped)
		gr->e_cand_launches++;
}

const char *const kj_cmp_data_names[KJ_CMP_DATA_KINDS] = {"unknown", "saved", "other_saved", "fill"};

int cmp_energy_data_shares(const struct kj_compare *c, double share[KJ_CMP_DATA_KINDS])
{
	double total = 0;
	for (int k = 0; k < KJ_CMP_DATA_KINDS; k++)
		share[k] = 0;
	for (size_t g = 0; g < c->n_groups; g++) {
		const struct cmp_group *gr = &c->groups[g];
		if (gr->energy_mj < 0 || gr->measured_ns <= 0)
			continue;
		share[gr->data] += (double)gr->measured_ns;
		total += (double)gr->measured_ns;
	}
	if (total <= 0)
		return 0;
	for (int k = 0; k < KJ_CMP_DATA_KINDS; k++)
		share[k] /= total;
	return 1;
}

const char *cmp_energy_data_label(const struct kj_compare *c)
{
	double sh[KJ_CMP_DATA_KINDS];
	if (!cmp_energy_data_shares(c, sh) || sh[KJ_CMP_DATA_UNKNOWN] > 0.99)
		return c->have_snapshot ? "saved_buffers" : "random_fill";
	return sh[KJ_CMP_DATA_SAVED] >= 0.99 ? "saved_buffers" : sh[KJ_CMP_DATA_FILL] >= 0.99 ? "random_fill" : "mixed";
}

const char *const kj_cmp_e_candidate_names[KJ_CMP_E_CANDIDATES] = {
	"mean_warm_cold", "placed_in_situ", "placed_in_sequence", "power_x_in_situ_time",
	"placed_power_x_in_situ_time", "warm_power_x_in_situ_time"};

void cmp_energy_candidates(const struct kj_compare *c, struct cmp_summary *s)
{
	double sum[KJ_CMP_E_CANDIDATES] = {0}, covered_ns = 0, kernel_ns = 0;
	int64_t n = 0;
	s->have_cand = 0;
	if (!s->have_kernels_e || !s->have_idle_e)
		return;
	double r1 = s->have_cold_e ? s->e_cold_ratio - 1 : 0; /* the run's cold/warm ratio less one */
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		if (x->skipped)
			continue;
		for (int k = 0; k < KJ_CMP_E_CANDIDATES; k++)
			sum[k] += x->e_cand_mj[k];
		sum[KJ_CMP_E_MEAN] += 0.5 * r1 * x->e_nocold_warm_mj;
		sum[KJ_CMP_E_PLACE] += r1 * x->e_nocold_place_mj[0];
		sum[KJ_CMP_E_PLACE_SEQ] += r1 * x->e_nocold_place_mj[1];
		covered_ns += (double)x->insitu_energy_ns;
		kernel_ns += (double)x->kernel_sum;
		n++;
	}
	if (n == 0 || covered_ns <= 0)
		return;
	/* launches without an energy figure count at the energy per ns of those with one */
	double up = s->e_kernels_time_cov < 0.999 ? kernel_ns / covered_ns : 1; /* as e_kernels is */
	for (int k = 0; k < KJ_CMP_E_CANDIDATES; k++) {
		s->e_cand_kernels[k] = sum[k] / (double)n * up;
		s->e_cand_pred[k] = s->e_cand_kernels[k] + s->e_idle;
		s->e_cand_err_pct[k] = s->have_meas && s->e_meas.mean > 0
					       ? 100.0 * (s->e_cand_pred[k] - s->e_meas.mean) / s->e_meas.mean : NAN;
	}
	s->have_cand = 1;
}

void cmp_energy_parts_unc(const struct kj_compare *c, struct cmp_summary *s)
{
	double sum = 0, n = (double)(s->n ? s->n : 1), r1 = s->have_cold_e ? s->e_cold_ratio - 1 : 0;
	s->e_kernels_unc = -1;
	if (!s->have_cand)
		return;
	for (size_t g = 0; g < c->n_groups; g++) {
		const struct cmp_group *gr = &c->groups[g];
		if (gr->e_cand_launches <= 0 || gr->energy_mj < 0)
			continue;
		double f = s->e_method == KJ_CMP_E_PLACE_SEQ ? place(gr, gr->seq_ns) : 0.5, u;
		if (gr->warm_unc_mj < 0 || (gr->energy_cold_mj >= 0 && gr->cold_unc_mj < 0))
			return; /* a replayed energy without its uncertainty */
		if (gr->energy_cold_mj >= 0)
			u = hypot((1 - f) * gr->warm_unc_mj, f * gr->cold_unc_mj);
		else /* its cold figure is its warm one times the run's cold/warm ratio */
			u = gr->warm_unc_mj * (1 + f * r1);
		sum = hypot(sum, u * (double)gr->launches / n); /* per iteration */
	}
	double cov = s->e_kernels_time_cov;
	s->e_kernels_unc = sum * (cov > 0 && cov < 0.999 ? 1 / cov : 1);
}

double cmp_energy_group_mj(const struct kj_compare *c, const struct cmp_summary *s, const struct cmp_group *g)
{
	double n = (double)(s->n ? s->n : 1);
	if (!s->have_cand || g->launches <= 0)
		return -1;
	if (g->e_cand_launches > 0) { /* the launches without a figure at the mean of those with one */
		double r1 = s->have_cold_e ? s->e_cold_ratio - 1 : 0, mj = g->e_cand_mj[s->e_method];
		if (s->e_method == KJ_CMP_E_PLACE_SEQ)
			mj += r1 * g->e_nocold_place_mj[1];
		else if (s->e_method == KJ_CMP_E_MEAN && g->energy_cold_mj < 0 && g->energy_mj >= 0)
			mj += 0.5 * r1 * g->energy_mj * (double)g->e_cand_launches;
		return mj / (double)g->e_cand_launches * (double)g->launches / n;
	}
	/* none replayed with energy: its in-situ time at the energy per ns of the kernels that were */
	double covered_ns = 0, covered_mj = 0;
	for (size_t i = 0; i < c->it.n; i++)
		if (!c->iv[i].skipped) {
			covered_ns += (double)c->iv[i].insitu_energy_ns;
			covered_mj += c->iv[i].e_cand_mj[s->e_method];
		}
	return covered_ns > 0 ? covered_mj / covered_ns * (double)g->measured_ns / n : -1;
}

double cmp_energy_insitu_scale(const struct cmp_summary *s)
{
	if (!s->have_cand || !s->have_meas || s->e_kernels_pred <= 0 || !s->have_idle_e)
		return -1;
	double v = (s->e_meas.mean - s->e_idle) / s->e_kernels_pred;
	return v > 0 && isfinite(v) ? v : -1;
}

static int by_unique_id(const void *a, const void *b)
{
	int64_t x = ((const struct kj_kernel_energy *)a)->unique_id, y = ((const struct kj_kernel_energy *)b)->unique_id;
	return x < y ? -1 : x > y;
}

int kj_compare_kernel_energies(const struct kj_compare *c, struct kj_kernel_energy **out, size_t *n)
{
	struct cmp_summary s;
	struct kj_kernel_energy *v = malloc((c->n_groups ? c->n_groups : 1) * sizeof(*v));
	size_t k = 0;
	*out = NULL;
	*n = 0;
	if (!v)
		return KJ_ENOMEM;
	cmp_summarize(c, &s);
	double sc = cmp_energy_insitu_scale(&s), ni = (double)(s.n ? s.n : 1);
	for (size_t g = 0; g < c->n_groups; g++) {
		const struct cmp_group *gr = &c->groups[g];
		double mj = gr->unique_id >= 0 ? cmp_energy_group_mj(c, &s, gr) : -1;
		if (mj < 0 || gr->launches <= 0)
			continue;
		double per_launch = mj / ((double)gr->launches / ni);
		v[k++] = (struct kj_kernel_energy){gr->unique_id, per_launch, sc > 0 ? per_launch * sc : -1};
	}
	qsort(v, k, sizeof(*v), by_unique_id);
	*out = v;
	*n = k;
	return 0;
}

void cmp_energy_off_pace(const struct kj_compare *c, struct cmp_summary *s)
{
	double all = 0, off = 0, worst_mj = -1;
	s->e_offpace_kernels = 0;
	s->e_offpace_worst = NULL;
	s->e_offpace_ratio = -1;
	for (size_t g = 0; g < c->n_groups; g++) {
		const struct cmp_group *gr = &c->groups[g];
		double ratio, mj = gr->energy_mj >= 0 ? gr->energy_mj * (double)gr->launches : 0;
		all += mj;
		if (gr->e_paced || !kj_energy_window_off_pace(gr->ew_ns, gr->warm_ns, &ratio))
			continue;
		s->e_offpace_kernels++;
		off += mj;
		if (mj > worst_mj) {
			worst_mj = mj;
			s->e_offpace_worst = gr;
			s->e_offpace_ratio = ratio;
		}
	}
	s->e_offpace_share = all > 0 ? off / all : 0;
	s->e_offpace = s->e_offpace_share > KJ_CMP_OFFPACE_JUDGE_FRAC;
}

const char *cmp_energy_off_pace_why(const struct kj_compare *c, const struct cmp_summary *s, char *buf, size_t len)
{
	if (!s->e_offpace_worst) {
		snprintf(buf, len, "every energy window ran at its kernel's timed pace");
		return buf;
	}
	int many = s->e_offpace_kernels > 1;
	snprintf(buf, len, "the energy window%s of %d kernel%s (%.1f%% of the replayed kernels' energy) ran off "
		 "%s timed launches (%s: %.2fx its timed latency): %s did other work; measure again "
		 "with kjoule replay RUN --energy --kernel NAME", many ? "s" : "", s->e_offpace_kernels,
		 many ? "s" : "", 100 * s->e_offpace_share, many ? "their" : "its",
		 cmp_group_name(c, s->e_offpace_worst), s->e_offpace_ratio, many ? "those replays" : "that replay");
	return buf;
}

int cmp_chain_as_program(const struct cmp_summary *s)
{
	if (!s->e_seq_mode || strcmp(s->e_seq_mode, "graph") || s->n_graph_launches.mean <= 0 || !s->have_graph ||
	    !(s->busy.mean > 0) || !(s->seq_graph > 0) || !(s->e_seq > 0) || !(s->e_seq_pred > 0))
		return 0;
	/* the energy the chain's time error can carry: its kernels' energy in that proportion */
	return fabs(s->seq_graph / s->busy.mean - 1) * s->e_seq <= KJ_CMP_CHAIN_AS_PROGRAM * s->e_seq_pred;
}

void cmp_energy_basis(const struct kj_compare *c, struct cmp_summary *s)
{
	s->e_basis_iter = 0;
	s->e_parts_pred = s->e_pred;
	s->e_parts_err_pct = s->e_err_pct;
	s->have_parts_err = s->have_err;
	s->e_parts_judgeable = s->e_judgeable;
	if (!s->have_pred || !s->have_seq_e || !s->have_seq_err || !s->e_seq_mode)
		return;
	/* the recorded topology, or, where it could not be rebuilt (graph memory nodes), the linear
	 * chain when the program launched graphs and the chain ran close enough to the time the
	 * iteration's kernels took in the program that its time error cannot move the energy by
	 * more than 1 % of the prediction */
	if (strcmp(s->e_seq_mode, "topology") && !cmp_chain_as_program(s))
		return;
	if (!s->e_seq_data || !strstr(s->e_seq_data, "snapshot") || c->clocks.sequence_mismatch == 1)
		return;
	s->e_basis_iter = 1;
	s->e_pred = s->e_seq_pred;
	s->e_err_pct = s->e_seq_err_pct;
	s->have_err = s->have_seq_err;
	s->e_judgeable = s->have_meas && s->e_meas.mean > 0 && s->e_judgeable_data;
}
