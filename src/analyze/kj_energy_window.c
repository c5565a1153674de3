/* An energy window's pace against the kernel's timed launches (kj_energy_window.h). */
#include "kj_energy_window.h"

#include <math.h>

int kj_energy_window_off_pace(double window_ns, double timed_ns, double *ratio)
{
	int known = isfinite(window_ns) && isfinite(timed_ns) && window_ns > 0 && timed_ns > 0;
	if (ratio)
		*ratio = known ? window_ns / timed_ns : -1;
	if (!known)
		return 0;
	return window_ns > KJ_WINDOW_PACE_MAX_RATIO * timed_ns + KJ_WINDOW_GAP_ALLOWANCE_NS ||
	       window_ns < timed_ns / KJ_WINDOW_PACE_MAX_RATIO - KJ_WINDOW_GAP_ALLOWANCE_NS;
}
