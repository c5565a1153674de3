/* How the program spaced its graph launches, so that a whole-iteration energy replay can run them
 * the same way. A program that waits on the host after each forward (a serving loop, a benchmark
 * that synchronises) leaves its GPU idle between iterations; back-to-back replays of the same
 * work draw more energy per iteration (GPT graph program on an H100, untraced: 0.924 J per forward
 * back to back against 0.899 J host-synchronised, gap included). docs/replay.md, "Pacing". */
#ifndef KJ_REPLAY_PACE_H
#define KJ_REPLAY_PACE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct kj_pace {
	int64_t period_ns;  /* launch-to-launch period to replay at; 0: replay back to back */
	int64_t gap_ns;     /* median GPU idle from one launch's last kernel to the next one's first */
	int64_t span_ns;    /* median GPU span of one launch (first kernel start to last kernel end) */
	int64_t launches;   /* launches of the graph the decision rests on */
	char why[200];      /* the decision in words, for the log */
};

/** One graph launch: when the host called it, its first kernel's start and last kernel's end on
 *  the GPU (one clock for the two GPU times). */
struct kj_pace_launch {
	int64_t host_ns, first_ns, last_ns;
};

/**
 * @brief Decide from n consecutive launches of one graph. Paced when at least 4 launches, the
 *        median GPU gap between them is over 20 µs and over 1 % of the median span, and under 4
 *        spans (longer waits are not a loop's cadence). Always fills p->why. 0, or KJ_EINVAL for
 *        n > 0 with a NULL array, KJ_ENOMEM.
 */
int kj_pace_decide(const struct kj_pace_launch *l, size_t n, struct kj_pace *p);

/**
 * @brief Read the run's launches of the graph the kept iteration `iteration` launched and decide
 *        (kj_pace_decide). Not paced, with the reason in p->why, when the iteration launched no
 *        graph or more than one graph launch. 0, or KJ_EDB / KJ_ENOMEM.
 */
int kj_pace_load(sqlite3 *db, int64_t iteration, struct kj_pace *p);

/* A kernel that drew the GPU into its power cap back to back is measured again spaced out
 * (docs/energy.md, "Paced energy under the power cap"): the spacings tried, in order, as idle
 * time per unit of the kernel's time, until one leaves the cap. KJOULE_REPLAY_PACE_RATIOS=R[,R]
 * in replay's environment sets another list (each 0.25 to 16, at most 4), for a study of how
 * the spacing moves the energy; the default is 1, then 3. */
#define KJ_PACE_RATIOS_ENV "KJOULE_REPLAY_PACE_RATIOS"
#define KJ_PACE_RATIOS_MAX 4

/**
 * @brief The spacings to try: KJOULE_REPLAY_PACE_RATIOS's list, or 1 then 3 where it is unset.
 * @return 0 (out[0..*n) filled), or KJ_EINVAL with the reason in why when the variable is set but
 *         malformed (out and *n untouched).
 */
int kj_pace_ratios(double out[KJ_PACE_RATIOS_MAX], size_t *n, char *why, size_t whylen);

#endif
