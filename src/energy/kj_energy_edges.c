/* Counter update edges inside an interval: the window between the first and the last holds whole
 * counter periods only, so its energy needs no estimate of a cut period's share (docs/energy.md,
 * "A loop as one window"). Edges are placed as kj_energy_window() places them. */
#include "kj_energy.h"
#include "kj_error.h"

int kj_energy_edges_inside(const struct kj_power_sample *s, size_t n, int64_t t0_ns, int64_t t1_ns,
			   int64_t *first_ns, int64_t *last_ns, int64_t *first_sig_ns, int64_t *last_sig_ns)
{
	int64_t sig0 = -1, sig1 = -1;
	int64_t prev_t = -1;
	uint64_t prev_e = 0;
	int found = 0;

	if (!s || !first_ns || !last_ns || t1_ns <= t0_ns)
		return KJ_EINVAL;
	*first_ns = *last_ns = -1;
	for (size_t i = 0; i < n && s[i].t_ns <= t1_ns; i++) {
		if (s[i].energy_mj < 0)
			continue;
		uint64_t v = (uint64_t)s[i].energy_mj;
		/* an update bracketed by two reads that both lie inside the interval */
		if (prev_t >= t0_ns && v != prev_e) {
			int64_t t = prev_t + (s[i].t_ns - prev_t) / 2;
			if (!found) {
				*first_ns = t;
				sig0 = s[i].t_ns - prev_t;
			}
			*last_ns = t;
			sig1 = s[i].t_ns - prev_t;
			found++;
		}
		prev_t = s[i].t_ns;
		prev_e = v;
	}
	if (first_sig_ns)
		*first_sig_ns = sig0;
	if (last_sig_ns)
		*last_sig_ns = sig1;
	return found;
}
