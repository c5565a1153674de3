/* Clock and throttle state beside the energy figures: NVML's clocks-event (throttle) reason bits
 * told apart into capping/throttling and benign ones, and summaries of what a run recorded — the
 * program's slow power samples over a window, and the replays' measurement windows
 * (replay_energy, replay_sequence). Plain C: the classification is pure, the readers take a run
 * database. docs/energy.md, "Clock and throttle state". */
#ifndef KJ_CLOCK_STATE_H
#define KJ_CLOCK_STATE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* NVML's clocks-event reason bits (nvml.h, nvmlClocksEventReason*; "throttle reasons" before) */
#define KJ_CLOCK_GPU_IDLE 0x1ULL            /* nothing runs: not throttling */
#define KJ_CLOCK_APP_CLOCKS 0x2ULL          /* applications-clocks setting: not throttling */
#define KJ_CLOCK_SW_POWER_CAP 0x4ULL
#define KJ_CLOCK_HW_SLOWDOWN 0x8ULL
#define KJ_CLOCK_SYNC_BOOST 0x10ULL
#define KJ_CLOCK_SW_THERMAL 0x20ULL
#define KJ_CLOCK_HW_THERMAL 0x40ULL
#define KJ_CLOCK_HW_POWER_BRAKE 0x80ULL
#define KJ_CLOCK_DISPLAY_CLOCKS 0x100ULL    /* display-clocks setting: not throttling */
/** The bits that say nothing held the clocks down against the load. */
#define KJ_CLOCK_BENIGN (KJ_CLOCK_GPU_IDLE | KJ_CLOCK_APP_CLOCKS | KJ_CLOCK_DISPLAY_CLOCKS)

/**
 * @brief Classify a clocks-event reason mask: 1 when it holds a reason that capped or throttled
 *        the clocks (SW power cap, HW slowdown, sync boost, SW/HW thermal slowdown, HW power brake,
 *        or a bit this kjoule does not know), 0 when it holds only the benign bits (GPU idle,
 *        applications- or display-clocks setting) or none.
 * @param words receives those reasons in words, in bit order, joined by ", " ("SW power cap,
 *        HW thermal slowdown"; an unknown bit as "reason 0x200"); "" when none. May be NULL.
 */
int kj_clock_throttled(uint64_t reasons, char *words, size_t len);

/** @brief The benign reasons of a mask in words ("GPU idle, applications clocks"); "" when none. */
void kj_clock_benign_words(uint64_t reasons, char *words, size_t len);

/** @brief The name of one reason bit (bit 0..63) as kj_clock_throttled() words it; NULL for a
 *  bit this kjoule does not know. */
const char *kj_clock_reason_name(int bit);

/** What one side (the program, or its replays) recorded about clocks. */
struct kj_clock_state {
	int recorded;              /* 1: the run has the columns read here (runs and replays of an
				    * older kjoule do not: then nothing below is known) */
	int64_t readings;          /* readings of the reason bits: slow power samples, or replay
				    * measurement windows (each the OR of its ~50 ms readings) */
	int64_t throttled;         /* of them, with a capping/throttling reason */
	uint64_t reasons;          /* every reason bit seen, ORed (benign ones included) */
	int64_t clock_readings;    /* readings of the SM clock (samples, or windows' means) */
	double sm_clock_median_mhz; /* their median; -1 when none */
	double sm_clock_inv_mean;  /* the mean of 1/MHz over them (a kernel's time goes as 1/f where
				    * the clock bounds it); -1 when none */
	int sm_clock_min_mhz, sm_clock_max_mhz; /* -1 when none */
};

/** A side ran throttled when at least this share of its readings carry a throttling reason ... */
#define KJ_CLOCK_THROTTLED_FRAC 0.20
/** ... and clean when at most this share do (between the two: partly). */
#define KJ_CLOCK_CLEAN_FRAC 0.05

enum kj_clock_verdict {
	KJ_CLOCK_UNKNOWN = -1, /* not recorded, or no reading of the reason bits */
	KJ_CLOCK_CLEAN = 0,
	KJ_CLOCK_PARTLY = 1,
	KJ_CLOCK_THROTTLED = 2,
};

/** Capped sides whose SM clock medians differ by more than this share of the higher are apart. */
#define KJ_CLOCK_CAPPED_APART 0.05

/** @brief The verdict on one side from its share of throttled readings (thresholds above). */
enum kj_clock_verdict kj_clock_verdict_of(const struct kj_clock_state *s);
/** @brief "clean", "partly", "throttled" or "unknown". */
const char *kj_clock_verdict_name(enum kj_clock_verdict v);

/**
 * @brief Whether the program and its replays ran in different clock states: 1 when one side ran
 *        throttled and the other clean, or when either side was capped (throttled or partly) and
 *        their SM clock medians lie more than KJ_CLOCK_CAPPED_APART apart (both capped, but to
 *        different clocks: a duty-cycled program and a replay running flat out settle apart); a
 *        figure of one then says little about the other. 0 when both are known and alike enough,
 *        -1 when either is unknown.
 */
int kj_clock_mismatch(const struct kj_clock_state *program, const struct kj_clock_state *replays);

/** One replay measurement window as stored (a replay_energy or replay_sequence row). */
struct kj_clock_window {
	int64_t id;             /* replay_energy: unique_id; replay_sequence: its row id */
	double sm_clock_mean_mhz; /* -1: not recorded */
	int sm_clock_min_mhz, sm_clock_max_mhz; /* -1: not recorded */
	int64_t reasons;        /* -1: not recorded */
};

/** @brief Summarise windows: readings and throttled count from their reasons, the median of their
 *  mean clocks, the least minimum and greatest maximum. Sets recorded = 1. Pure. */
void kj_clock_state_of_windows(const struct kj_clock_window *w, size_t n, struct kj_clock_state *out);

/**
 * @brief The program's clock state: the slow power samples (those that read the reason bits or
 *        the SM clock) of device_id (< 0: every device) with t_ns in [t0_ns, t1_ns].
 *        recorded is 0 for a run whose power_sample lacks the columns.
 * @return 0, KJ_EDB, KJ_ENOMEM.
 */
int kj_clock_state_program(sqlite3 *db, int64_t device_id, int64_t t0_ns, int64_t t1_ns,
			   struct kj_clock_state *out);

enum kj_clock_replays {
	KJ_CLOCK_REPLAY_KERNELS = 0,  /* replay_energy: each unique kernel's energy window */
	KJ_CLOCK_REPLAY_SEQUENCE = 1, /* replay_sequence rows with an energy: the iteration replayed */
};

/**
 * @brief The stored replay windows of one kind, in id order, with their clock state (reasons -1
 *        where a row has none). *out malloc'ed (caller frees; NULL when none). *recorded: 1 when the table
 *        has the clock columns (older replays: 0, and no windows are returned).
 * @return 0, KJ_EDB, KJ_ENOMEM.
 */
int kj_clock_replay_windows(sqlite3 *db, enum kj_clock_replays which, struct kj_clock_window **out,
			    size_t *n, int *recorded);

/** @brief kj_clock_replay_windows() summarised by kj_clock_state_of_windows(). */
int kj_clock_state_replays(sqlite3 *db, enum kj_clock_replays which, struct kj_clock_state *out);

#endif
