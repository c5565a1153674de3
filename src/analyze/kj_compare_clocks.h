/* compare's clock state: the program's throttle reasons and SM clock over the measured iterations
 * against its replays' (kj_clock_state.h), and whether they ran in opposite states — then an
 * energy error between them is not judged. docs/analysis-compare.md, "Clock state"; report's
 * kj_compare_clocks_out.c writes it. */
#ifndef KJ_COMPARE_CLOCKS_H
#define KJ_COMPARE_CLOCKS_H

#include <sqlite3.h>

#include "kj_clock_state.h"

struct kj_compare;

struct cmp_clocks {
	struct kj_clock_state program;  /* slow power samples over the kept iterations' span */
	struct kj_clock_state kernels;  /* replay_energy windows (the kernel-sum prediction) */
	struct kj_clock_state sequence; /* replay_sequence windows with an energy (the graph one) */
	int mismatch;          /* program vs per-kernel replays: 1 opposite, 0 not, -1 unknown */
	int sequence_mismatch; /* program vs the iteration replayed as one graph: the same */
	char why[2][512];      /* per-kernel [0], sequence [1]: why its energy error is not judged ("" unless mismatched) */
};

/** @brief Read both sides' clock state into c->clocks over the kept iterations; 0 or KJ_EDB/KJ_ENOMEM. */
int cmp_clocks_apply(sqlite3 *db, struct kj_compare *c);

#endif
