/* Energy engine interfaces shared by run, replay and compare. Implementation: src/energy/.
 * Everything here is plain C with no GPU dependency (NVML is reached through dlopen), so the
 * estimators are tested on synthetic streams on machines without a GPU. */
#ifndef KJ_ENERGY_H
#define KJ_ENERGY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** One reading of one GPU, as stored in the power_sample table (t_ns: CLOCK_MONOTONIC).
 *  Fields that were not read are negative (-1). energy_mj is NVML's total-energy counter. */
struct kj_power_sample {
	int64_t t_ns;
	int64_t power_mw;      /* instantaneous power (NVML_FI_DEV_POWER_INSTANT), -1 if absent */
	int64_t power_avg_mw;  /* nvmlDeviceGetPowerUsage (averaged over the driver's window) */
	int64_t energy_mj;     /* total-energy counter, -1 if not read in this sample */
	int energy_updated;    /* 1: the counter changed since the previous read (an update edge) */
};

/** Energy of a window with its uncertainty. method names how it was obtained. */
struct kj_window_energy {
	double energy_j;        /* total energy in the window */
	double uncertainty_j;   /* stated bound on |error| (docs/energy.md: the uncertainty model) */
	double dynamic_j;       /* energy above idle power; NAN when idle power is unknown */
	double avg_power_w;
	const char *method;     /* "counter-edges", "counter-edges+power", "power-integration", "none" */
	int ok;                 /* 0: no usable samples cover the window (energy is not 0, it is unknown) */
	/* added by the energy engine (docs/energy.md): */
	int gaps;               /* sampling gaps inside the window (reads further apart than expected) */
	double gap_s;           /* their total length */
	int counter_periods;    /* whole counter update periods inside the window */
	int resets;             /* counter went backwards (driver restart) inside the window */
	double power_s;         /* part of the window integrated from power readings, not the counter */
	int steady;             /* 1: steady load around the window: energy = its counter power x length */
};

/**
 * @brief Energy of [t0_ns, t1_ns] from one device's samples (sorted by t_ns).
 * Uses the counter's update edges inside the window and power for the partial periods at both
 * ends; falls back to power integration when the device has no counter. idle_mw < 0: unknown.
 */
int kj_energy_window(const struct kj_power_sample *s, size_t n, int64_t t0_ns, int64_t t1_ns,
		     double idle_mw, struct kj_window_energy *out);

/**
 * @brief The first and the last update of the energy counter inside [t0_ns, t1_ns], placed as
 * kj_energy_window() places them (midway between the two reads that bracket each update, both
 * reads inside the interval). A window between the two holds whole counter periods only.
 * first_sig_ns / last_sig_ns (may be NULL) receive each update's bracket: the time between the two
 * reads, which bounds the update's true time to within half of it either side of the estimate.
 * @return the number of updates found (fewer than 2: no whole period inside), or KJ_EINVAL.
 */
int kj_energy_edges_inside(const struct kj_power_sample *s, size_t n, int64_t t0_ns, int64_t t1_ns,
			   int64_t *first_ns, int64_t *last_ns, int64_t *first_sig_ns, int64_t *last_sig_ns);

/**
 * @brief Load the power samples of one device of a run database, sorted by time.
 * @param out  receives a malloc'ed array (caller frees); *n its length (0 when none).
 */
int kj_energy_load_samples(sqlite3 *db, int64_t device_id, struct kj_power_sample **out, size_t *n);

/** @brief Idle power of a device stored in the run (idle_power table); -1 when unknown. */
double kj_energy_idle_mw(sqlite3 *db, int64_t device_id);

/* ---- amortised measurement of short repeated work (replay, pipeline) ---- */

/** Work enqueued by kj_amortize_measure(): enqueue() submits one unit (a CUDA graph of U
 *  launches, say) asynchronously; sync() waits for all submitted units. Both return 0 or <0. */
struct kj_amortize_work {
	void *ctx;
	int (*enqueue)(void *ctx);
	int (*sync)(void *ctx);
	int launches_per_unit;   /* U */
};

struct kj_amortize_opts {
	int nvml_index;          /* GPU to read */
	double min_seconds;      /* run at least this long after warm-up (default 3) */
	int min_updates;         /* and at least this many counter updates (default 20) */
	double warmup_max_s;     /* give up waiting for a steady SM clock after this (default 5) */
	double warmup_min_s;     /* warm up at least this long (default 0.5; less when the GPU has
				  * just been busy, as between two kernels of one replay worker) */
};

struct kj_amortize_result {
	double seconds;            /* measured span */
	int64_t launches;          /* launches in the measured span */
	double time_per_launch_ns;
	double energy_per_launch_mj;
	double energy_unc_mj;      /* uncertainty of energy_per_launch_mj */
	double avg_power_w;
	int counter_updates;
	const char *method;
	/* the SM clock read every ~50 ms over the measured span (MHz; -1: never read): a mean below
	 * the clock the warm-up settled at, or a low minimum, says the work ran against a power or
	 * thermal limit */
	double sm_clock_mean_mhz;
	int sm_clock_min_mhz, sm_clock_max_mhz;
	/* NVML's clocks-event (throttle) reason bits read with the SM clock over the measured span,
	 * ORed together (kj_clock_throttled() in kj_clock_state.h tells capping from idle and
	 * settings bits); -1: never read (no NVML call for them, or no reading) */
	int64_t throttle_reasons;
};

/** @brief Warm up until the SM clock is steady, then run work for the requested span and return
 *  time, energy and power per launch. Returns KJ_ENODEV without NVML. */
int kj_amortize_measure(const struct kj_amortize_work *w, const struct kj_amortize_opts *o,
			struct kj_amortize_result *r);

/** @brief Bytes of a buffer whose memset evicts an L2 cache of l2_bytes: twice it, 4 KiB aligned
 *  (twice 64 MiB where l2_bytes is not positive). */
size_t kj_l2_flush_bytes(int l2_bytes);

/** @brief The energy per launch that measurement `with` holds beyond `alone` (a graph of launches
 *  each beside an L2 flush, less a graph of the flushes alone: the launches with their data out
 *  of L2): *mj, its uncertainty *unc_mj (the two in quadrature) and *ns, the time per launch.
 *  Returns 1 when the difference stands above its uncertainty and took time, 0 when it is lost in
 *  the flush's (the figures are set either way). */
int kj_amortize_difference(const struct kj_amortize_result *with, const struct kj_amortize_result *alone,
			   double *mj, double *unc_mj, double *ns);

/** @brief Run work until the SM clock is steady (5 readings 50 ms apart within 1 %), at least
 *  warm_min_s (default 0.25) and at most warm_max_s (default 5) seconds, the warm-up of
 *  kj_amortize_measure alone: a timing taken next runs at the clock a sustained load settles at
 *  (below the top clock where the power limit holds it). *mhz: the last reading, -1 when none.
 *  Returns KJ_ENODEV without NVML. */
int kj_amortize_settle(const struct kj_amortize_work *w, int nvml_index, double warm_min_s, double warm_max_s,
		       int *mhz);

/* ---- the sampler that `kjoule run` and `kjoule power` use ---- */
struct kj_sampler;

struct kj_sampler_opts {
	int interval_us;         /* power sampling period (default 5000) */
	const int *nvml_indices; /* GPUs to sample; NULL with n_indices 0: all */
	int n_indices;
	/* added by the energy engine: */
	int slow_every;          /* read clocks/temperature/utilisation every Nth power read (default 20) */
	int no_counter;          /* 1: do not read the energy counter (power only) */
	/* added for shared GPUs: */
	int watch_interval_ms;   /* list the processes on each GPU this often (0: do not watch) */
};

/** @brief Start sampling threads (power at interval_us; energy counter continuously). */
int kj_sampler_start(const struct kj_sampler_opts *o, struct kj_sampler **out);
/** @brief Stop the threads; samples stay in memory until kj_sampler_close(). */
int kj_sampler_stop(struct kj_sampler *s);
/** @brief Write devices (by UUID, creating device rows that are missing) and their samples into
 *  a run database inside the caller's transaction; errors seen while sampling become problems. */
int kj_sampler_write_db(struct kj_sampler *s, sqlite3 *db);
/** @brief Free; accepts NULL. */
void kj_sampler_close(struct kj_sampler *s);

#endif
