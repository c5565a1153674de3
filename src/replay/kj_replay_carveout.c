/* The carveout a replayed function is asked for (kj_replay_carveout.h). */
#include "kj_replay_carveout.h"

#include <stdlib.h>

int kj_replay_carveout(const char *override, int requested, long executed, int uses_shared, long per_sm)
{
	if (override && *override) {
		long v = strtol(override, NULL, 10);
		return v < 0 ? -1 : v > 100 ? 100 : (int)v;
	}
	if (requested >= 0 && requested <= 100)
		return requested;
	if (executed < 0 || (executed == 0 && uses_shared) || per_sm <= 0)
		return -1;
	long pct = executed * 100 / per_sm;
	return pct > 100 ? 100 : (int)pct;
}
