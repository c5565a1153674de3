/* What a run captured and what the whole run did around it: a --capture run traces a few
 * iterations, and its iteration marks and power samples cover every iteration. */
#ifndef KJ_CAPTURE_STATS_H
#define KJ_CAPTURE_STATS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** One set of iterations: how many, their mean wall time, their energy per instance. The energy
 *  is the set's span's (first start to last end, the time between instances included) over its
 *  instances: a span holds many of the energy counter's periods where one short instance holds
 *  none, so its bound is the span's, not a sum of per-instance guesses. */
struct kj_iter_set {
	int64_t instances;       /* iteration marks (ended ones) */
	double wall_ms;          /* mean wall time per instance; NAN when none */
	double span_s;           /* first start to last end; NAN when none */
	int64_t measured;        /* instances the power samples cover: all of them (span measured) or 0 */
	double energy_j;         /* the span's energy / instances; NAN when not measured */
	double uncertainty_j;    /* the span's stated bound / instances; NAN when not measured */
};

/* Bounds (the two added, %) wider than this cannot tell a typical window from an atypical one. */
#define KJ_CAPTURE_AGREE_BOUND_PCT 5.0
/* a whole run's leading instance longer than this many median instances is warm-up */
#define KJ_CAPTURE_WARMUP_X_MEDIAN 2.0

struct kj_capture_stats {
	int active;              /* 0: not a --capture run (the capture fields are unset) */
	char spec[300];          /* meta.capture_range ("" when not recorded) */
	char status[32];         /* meta.capture_status */
	int64_t window_start_ns, window_end_ns; /* -1: none */
	int64_t detaches;        /* periods CUPTI was out of the processes outside the window; -1:
				  * not recorded (a run of an older tracer) */
	double detached_s;       /* their length summed over the processes; NAN when not recorded */
	struct kj_iter_set all;  /* every instance of the run past the warm-up */
	int64_t all_skipped;     /* the warm-up instances left out of all (first ones by start) */
	struct kj_iter_set captured; /* the instances inside the window */
	const char *energy_why;  /* when energy_j is NAN: why it was not measured */
	/* the captured iterations' mean energy against the whole run's: apart (%, of the whole
	 * run's), the two stated bounds added (%), and whether the difference lies within them;
	 * agreement_known 0 where either set has no energy */
	int agreement_known, agreement_within; /* within: -1 not judged (bounds wider than
						* KJ_CAPTURE_AGREE_BOUND_PCT) */
	double agreement_apart_pct, agreement_bound_pct;
	/* the captured iterations' mean wall time against the whole run's (%, of the whole run's):
	 * tracing's cost on the program's threads inside the window; NAN when either set is empty */
	double captured_slower_pct;
	/* the trace's size, for every run */
	int64_t db_bytes;        /* the run database's file size; -1 unknown */
	int64_t launches;        /* kernel records */
	double bytes_per_launch; /* db_bytes / launches; NAN without launches */
};

/**
 * @brief Fill out for the run db (read from path, whose size is the trace's size). Each set's
 *        energy is its span's (kj_energy_window) on the device of the traced process (the one
 *        device with samples when the run names none), over the iterations of the processes on that
 *        device. The whole run's set leaves out the first skip instances (< 0: kj_capture_warmup
 *        where the instances are one process's, else kj_iter_default_skip), never all of them; the
 *        captured set keeps every captured instance.
 * @return 0, KJ_EDB, or KJ_ENOMEM.
 */
int kj_capture_stats_of(sqlite3 *db, const char *path, int skip, struct kj_capture_stats *out);

/** The whole run's skip of compare and report: --whole-skip where given (>= 0), else --skip's
 *  (< 0 when neither: kj_capture_stats_of's warm-up rule). */
static inline int kj_capture_whole_skip(int whole_skip, int skip)
{
	return whole_skip >= 0 ? whole_skip : skip;
}

/**
 * @brief The whole run's warm-up among n instances in start order of these wall times: as compare
 *        (kj_iter_default_skip), then every instance straight after it that took over
 *        KJ_CAPTURE_WARMUP_X_MEDIAN times the median instance (the program's first steps:
 *        compilation, autotuning, allocation), while that leaves out at most a tenth of them. A
 *        set's energy is its span's, so one such step would weigh as many steady ones.
 */
size_t kj_capture_warmup(const double *wall_ns, size_t n);

/**
 * @brief The agreement_* fields and captured_slower_pct of out from its two sets: the captured
 *        iterations' mean wall time against the whole run's, and their mean energy against the
 *        whole run's (apart, % of the whole run's), their stated bounds added (%), within 1 or 0,
 *        -1 (not judged) where that sum is over KJ_CAPTURE_AGREE_BOUND_PCT; agreement_known 0
 *        where either set has no energy.
 */
void kj_capture_agreement(struct kj_capture_stats *out);

#endif
