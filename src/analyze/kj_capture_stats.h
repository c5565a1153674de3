/* What a run captured and what the whole run did around it: a --capture run traces a few
 * iterations, and its iteration marks and power samples cover every iteration. */
#ifndef KJ_CAPTURE_STATS_H
#define KJ_CAPTURE_STATS_H

#include <sqlite3.h>
#include <stdint.h>

/** One set of iterations: how many, their mean wall time, their mean energy. */
struct kj_iter_set {
	int64_t instances;       /* iteration marks (ended ones) */
	double wall_ms;          /* mean wall time per instance; NAN when none */
	int64_t measured;        /* instances whose energy the power samples cover */
	double energy_j;         /* mean energy per instance over those; NAN when none */
	double uncertainty_j;    /* mean stated bound per instance; NAN when none */
};

/* Bounds (the two added, %) wider than this cannot tell a typical window from an atypical one. */
#define KJ_CAPTURE_AGREE_BOUND_PCT 5.0

struct kj_capture_stats {
	int active;              /* 0: not a --capture run (the capture fields are unset) */
	char spec[300];          /* meta.capture_range ("" when not recorded) */
	char status[32];         /* meta.capture_status */
	int64_t window_start_ns, window_end_ns; /* -1: none */
	struct kj_iter_set all;  /* every instance of the run */
	struct kj_iter_set captured; /* the instances inside the window */
	const char *energy_why;  /* when energy_j is NAN: why it was not measured */
	/* the captured iterations' mean energy against the whole run's: apart (%, of the whole
	 * run's), the two stated bounds added (%), and whether the difference lies within them;
	 * agreement_known 0 where either set has no energy */
	int agreement_known, agreement_within; /* within: -1 not judged (bounds wider than
						* KJ_CAPTURE_AGREE_BOUND_PCT) */
	double agreement_apart_pct, agreement_bound_pct;
	/* the trace's size, for every run */
	int64_t db_bytes;        /* the run database's file size; -1 unknown */
	int64_t launches;        /* kernel records */
	double bytes_per_launch; /* db_bytes / launches; NAN without launches */
};

/**
 * @brief Fill out for the run db (read from path, whose size is the trace's size). The energy of
 *        each instance is its window's (kj_energy_window) on the device its process used (the one
 *        device with samples when the run names none); the means are over the instances measured.
 * @return 0, or KJ_EDB.
 */
int kj_capture_stats_of(sqlite3 *db, const char *path, struct kj_capture_stats *out);

/**
 * @brief The agreement_* fields of out from its two sets: the captured mean energy against the
 *        whole run's (apart, % of the whole run's), their stated bounds added (%), within 1 or 0,
 *        -1 (not judged) where that sum is over KJ_CAPTURE_AGREE_BOUND_PCT; agreement_known 0
 *        where either set has no energy.
 */
void kj_capture_agreement(struct kj_capture_stats *out);

#endif
