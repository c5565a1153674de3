/* explained_fraction at the program's clocks. A program that ran against its power cap ran its
 * kernels at the clocks the cap left them, while their timing replays (a few launches each) ran
 * at the clock a short burst gets: the replayed times are short of the program's, and
 * explained_fraction reads low by as much. A kernel whose energy window drew the GPU into its
 * cap has a second measured point, its back-to-back window at the capped clock
 * (replay_energy_b2b). Through the two points, (f_t, warm time) and (f_c, capped time), its time
 * goes as t(f) = a + b/f; taken at the mean of 1/f over the program's readings, that is its time
 * at the program's clocks. Kernels without a capped window keep their replayed time: the figure
 * says how much of the replayed kernel time it moved (docs/analysis-compare.md, "Clock state"). */
#include <math.h>

#include "kj_clock_state.h"
#include "kj_compare_internal.h"

void cmp_explained_at_program_clocks(const struct kj_compare *c, struct cmp_summary *s)
{
	const struct kj_clock_state *p = &c->clocks.program;
	/* the timing replays' clock: the highest any replay window read (short bursts run there) */
	double f_t = c->clocks.kernels.sm_clock_max_mhz;
	double inv_prog = p->sm_clock_inv_mean;
	s->have_explained_clocks = 0;
	s->clocks_adjusted_kernels = 0;
	s->clocks_adjusted_share = 0;
	if (!s->have_explained || !p->recorded || kj_clock_verdict_of(p) < KJ_CLOCK_PARTLY || !(inv_prog > 0) ||
	    !(f_t > 0) || s->n <= 0)
		return;
	double adj_ns = 0, moved_ns = 0, all_ns = 0;
	for (size_t g = 0; g < c->n_groups; g++) {
		const struct cmp_group *gr = &c->groups[g];
		if (gr->warm_ns < 0 || gr->launches <= 0 || gr->waits)
			continue;
		double iso = gr->cold_ns >= 0 ? (gr->warm_ns + gr->cold_ns) / 2 : gr->warm_ns;
		double n = (double)gr->launches;
		all_ns += n * iso;
		if (!(gr->b2b_ns > 0) || !(gr->b2b_mhz > 0) || gr->b2b_mhz >= f_t)
			continue;
		/* slope in ns per 1/MHz: none where the capped window was not slower */
		double b = (gr->b2b_ns - gr->warm_ns) / (1.0 / gr->b2b_mhz - 1.0 / f_t);
		if (!(b > 0) || !isfinite(b))
			continue;
		adj_ns += n * b * (inv_prog - 1.0 / f_t);
		moved_ns += n * iso;
		s->clocks_adjusted_kernels++;
	}
	if (!s->clocks_adjusted_kernels || !(all_ns > 0) || !(s->wall.mean > 0))
		return;
	double v = (s->predicted_wall + adj_ns / (double)s->n) / s->wall.mean;
	if (!isfinite(v))
		return;
	s->explained_fraction_clocks = v;
	s->clocks_adjusted_share = moved_ns / all_ns;
	s->have_explained_clocks = 1;
}
