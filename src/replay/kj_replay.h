/* kjoule replay, CPU side: parameter blocks rebuilt from the tracer's layout, pointer words
 * classified against recorded allocation ranges, relocation, the worker's result protocol,
 * the plan (which unique kernels can be replayed, and why not) and the report.
 * No CUDA here: the GPU side is src/replay/worker (kjoule-replay-worker). docs/replay.md. */
#ifndef KJ_REPLAY_H
#define KJ_REPLAY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- parameter blocks ---- */

/** One kernel parameter: its byte offset and size in the parameter block. */
struct kj_replay_param {
	uint32_t offset;
	uint32_t size;
};

/**
 * @brief Parse a launch_params.layout text "off:size,off:size,..." (parameter order).
 * @param layout  the text; NULL or "" is a kernel without parameters (*n = 0, *out = NULL)
 * @param blob_len length of the parameter block the layout describes; every parameter must lie
 *                 inside it (pass SIZE_MAX to skip the check)
 * @param out     receives a malloc'ed array (caller frees)
 * @return 0, KJ_EINVAL (bad text, overlapping or out-of-block parameters; errbuf says where),
 *         KJ_ENOMEM.
 */
int kj_replay_layout_parse(const char *layout, size_t blob_len, struct kj_replay_param **out,
			   size_t *n, char *errbuf, size_t errlen);

/* ---- allocation ranges and pointer words ---- */

/** A recorded device allocation [address, address + bytes). id: allocation.id. */
struct kj_replay_range {
	uint64_t address;
	uint64_t bytes;
	int64_t id;
};

/**
 * @brief Sort ranges by address and drop those that overlap a later-listed one (the caller lists
 *        them in allocation order, so an address reused after a free keeps its newest owner).
 * @return the new count.
 */
size_t kj_replay_ranges_normalize(struct kj_replay_range *r, size_t n);

/**
 * @brief Index of the range holding addr in sorted, non-overlapping ranges, or -1.
 *        An address one past the end of a range (an end pointer) belongs to it unless another
 *        range starts there.
 */
ssize_t kj_replay_range_find(const struct kj_replay_range *r, size_t n, uint64_t addr);

/** A pointer found in a parameter block: the word at offset holds value, inside range. */
struct kj_replay_ptr {
	uint32_t offset;
	uint32_t range;
	uint64_t value;
};

/**
 * @brief Find the device pointers of a parameter block: every 8-byte-aligned 8-byte word that
 *        lies wholly inside one parameter of at least 8 bytes (top-level pointers, pointers inside
 *        by-value structs, the global address in a TMA descriptor) and whose value falls in a
 *        recorded range. With no layout (np == 0) the whole block is scanned.
 * @param out receives a malloc'ed array (NULL when none; caller frees)
 * @return 0 or KJ_ENOMEM.
 */
int kj_replay_scan_pointers(const uint8_t *blob, size_t len, const struct kj_replay_param *p,
			    size_t np, const struct kj_replay_range *r, size_t nr,
			    struct kj_replay_ptr **out, size_t *nout);

/**
 * @brief Rewrite pointer words for ranges that moved: new_base[range] != 0 means the range now
 *        starts there; the word becomes new_base + (value - old address).
 * @return the number of words rewritten.
 */
size_t kj_replay_relocate(uint8_t *blob, size_t len, const struct kj_replay_ptr *ptrs, size_t n,
			  const struct kj_replay_range *r, const uint64_t *new_base);

/** A granularity-aligned virtual-address region to re-create; ranges [first, last] map into it. */
struct kj_replay_region {
	uint64_t base;
	uint64_t bytes;
};

/**
 * @brief Merge the used ranges (used[i] != 0) of sorted ranges into regions aligned to gran
 *        (a power of two), touching or overlapping regions joined.
 * @param region_of receives, per range, the index of its region (-1 when unused)
 * @return 0, KJ_EINVAL (gran not a power of two), KJ_ENOMEM.
 */
int kj_replay_regions(const struct kj_replay_range *r, const int *used, size_t nr, uint64_t gran,
		      struct kj_replay_region **out, size_t *nout, int *region_of);

/* ---- timing statistics ---- */

struct kj_replay_timing {
	int runs; /* 0: not measured */
	int64_t min_ns, median_ns, max_ns;
	double mean_ns, stdev_ns;
};

/** @brief min/median/mean/max/sample stdev of n durations (the array is sorted in place). */
void kj_replay_stats(int64_t *ns, size_t n, struct kj_replay_timing *out);

/* ---- one unique kernel's result (what the worker reports, what the database stores) ---- */

struct kj_replay_result {
	int64_t unique_id;
	char status[16];   /* ok | relocated | failed | skipped */
	char reason[16];   /* why not measured, as a code (KJ_REASON_* in kj_schema.h); "" none */
	char error[512];   /* why failed/skipped; for relocated, which allocations moved */
	struct kj_replay_timing warm, cold;
	char timer[16];    /* "cupti" (kernel start..end) or "events" */
	int has_energy;
	int unroll;
	int64_t energy_launches;
	double seconds, energy_mj_per_launch, energy_unc_mj, power_mw, idle_mw;
	double dynamic_mj_per_launch; /* NAN when idle power is unknown */
	char method[32];
	/* the data the kernel ran on: "saved" (its own launch's --snapshot buffers), "other_saved"
	 * (only other launches' saved buffers fell inside its regions; the rest kjoule's fill),
	 * "fill" (kjoule's random fill: no saved buffer there); "" unknown */
	char data[16];
	/* the clock state over the energy window: the SM clock's mean/min/max (MHz) and NVML's
	 * clocks-event reason bits ORed (kj_clock_state.h); each -1 when not read */
	double sm_clock_mean_mhz;
	int sm_clock_min_mhz, sm_clock_max_mhz;
	int64_t throttle_reasons;
	/* where a paced window replaced the back-to-back figures (the kernel drew the GPU into its
	 * power cap back to back): the back-to-back window's time and energy per launch and its mean
	 * SM clock, the kernel at the clock the cap left it */
	int has_b2b;
	double b2b_ns_per_launch, b2b_mj_per_launch, b2b_sm_clock_mhz;
	/* energy with the kernel's data out of L2 (with the cold cache and --energy): a graph of
	 * L2-flush and launch pairs less one of the flushes alone; flush_mj: the flush's own */
	int has_energy_cold;
	int64_t energy_cold_launches;
	double energy_cold_seconds, energy_cold_mj_per_launch, energy_cold_unc_mj, energy_cold_ns_per_launch;
	double flush_mj, flush_unc_mj;
	/* --verify: outputs against the run's after-launch snapshot. verify: "" (not asked),
	 * identical | differs | no-snapshot (no before+after snapshot of the replayed launch) */
	char verify[16];
	int64_t verify_buffers, verify_bytes, verify_diff_bytes;
};

/** @brief A result with status "failed"/"skipped" and its reason (printf-style). */
void kj_replay_result_set(struct kj_replay_result *r, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * @brief The worker's stdout protocol: one line per record, tab-separated key=value fields after a
 *        tag: "KJ_RESULT", "KJ_TIMING" (cache=warm|cold), "KJ_ENERGY", "KJ_ENERGY_COLD", "KJ_VERIFY", "KJ_DEVICE". Values never
 *        hold tabs or newlines (kj_replay_emit replaces them).
 */
void kj_replay_emit(FILE *f, const struct kj_replay_result *r);
/** @brief One KJ_TIMING line: a unique kernel's timing in one cache mode ("warm", "cold", or
 *         "sequence": timed where the replayed iteration runs it), measured by `timer`. */
void kj_replay_emit_timing(FILE *f, int64_t unique_id, const char *cache, const char *timer,
			   const struct kj_replay_timing *t);

/**
 * @brief Fold one protocol line into r (lines of other tags are ignored).
 * @return 1 if the line was a result line, 0 if ignored, KJ_EINVAL if malformed.
 */
int kj_replay_parse_line(const char *line, struct kj_replay_result *r);

/** What the worker's --probe says about the current GPU. */
struct kj_replay_device {
	int cc_major, cc_minor;
	int64_t l2_bytes;
	int nvml_index; /* NVML's index of the same GPU (by PCI bus id); -1: not known */
	char name[128];
};
/** @brief Parse a "KJ_DEVICE ..." line. @return 1 if parsed, 0 if another line. */
int kj_replay_parse_device(const char *line, struct kj_replay_device *d);

/* ---- the plan: which unique kernels to replay ---- */

struct kj_replay_item {
	int64_t unique_id;
	char *mangled;
	char *demangled;
	int64_t launches;     /* launches of this unique kernel in the run */
	int64_t traced_ns;    /* Σ traced kernel durations (0 when the run has no kernel rows) */
	char skip[512];       /* non-empty: not replayed, and why */
	int64_t iter_ns;      /* traced time of its launches issued inside the run's iterations */
	int64_t iter_launches;
	int energy;           /* measure its energy (kj_replay_plan_rank decides); 2: with cold L2 too
			       * (kjoule replay decides, from the time its energy windows may take) */
	int stored;           /* its result is in the database already (kj_replay_plan_store_some) */
	struct kj_replay_result res;
};

struct kj_replay_plan {
	struct kj_replay_item *items;
	size_t n;
	int64_t total_launches;   /* all kernel launches of the run (selected or not) */
	int64_t traced_busy_ns;   /* Σ kernel durations of the run */
	int captured_cc_major, captured_cc_minor;  /* -1 when the run has no device row */
	char captured_gpu[128];
	int have_params;          /* the run has launch_params rows */
	int cache_warm, cache_cold; /* set by the caller: which cache modes were asked for */
	char run_path[256];       /* for messages */
	char iteration_range[256]; /* the run's iteration range (kj_iterations.h); "" when none */
	int64_t iter_ns;           /* Σ item iter_ns */
	/* the measured iterations (as compare counts them): Σ of their spans, the first one's start
	 * and the last one's end (traced clock); 0 when the run has none */
	int64_t iter_wall_ns, iter_first_ns, iter_last_ns;
};

/**
 * @brief Check that db is a run this build can replay and list its unique kernels, matching
 *        pattern (fnmatch glob on mangled or demangled name, or a substring; NULL: all), with a
 *        skip reason where replay cannot work (no parameters, unknown function, stripped module).
 * @return 0; KJ_ESCHEMA (tables missing: message printed); KJ_ENOTFOUND (no parameters captured
 *         at all, or nothing matches: message printed); KJ_EDB; KJ_ENOMEM.
 */
int kj_replay_plan_load(sqlite3 *db, const char *pattern, struct kj_replay_plan *plan);

/**
 * @brief Put the plan in the order that respects the user's time: kernels that ran inside the
 *        run's iterations (kj_iterations.h) first, largest share of their kernel time first, then
 *        the rest (warm-up, autotuning candidates) by traced time. With energy, only the former
 *        get energy (all = 1: every kernel). Kernels that wait on something outside themselves
 *        by name (kj_kernel_waits.h) are skipped with that reason.
 * @return 0, KJ_EDB, KJ_ENOMEM.
 */
/** Without --all, replay --energy measures the kernels that hold this share of the iterations'
 *  kernel time, largest first. */
#define KJ_REPLAY_ENERGY_SHARE 0.97

int kj_replay_plan_rank(sqlite3 *db, struct kj_replay_plan *plan, int energy, int all);

/** @brief How many kernels the next replay worker may take under a budget: at most chunk, and
 *  no more than the seconds left (budget_s - elapsed_s) hold at the mean time a kernel took so far
 *  (elapsed_s / done), at least 1. No budget (budget_s <= 0) or nothing done yet: chunk. */
size_t kj_replay_budget_chunk(size_t chunk, double budget_s, double elapsed_s, size_t done);

/** @brief Free what kj_replay_plan_load allocated; accepts a zeroed plan. */
void kj_replay_plan_free(struct kj_replay_plan *plan);

/** @brief The time now, UTC, ISO 8601 with a Z (the replayed_at columns). */
void kj_replay_now(char when[32]);

/** @brief Store results in replay_kernel / replay_energy / replay_verify, one transaction, INSERT
 * OR REPLACE; each item is marked stored. */
int kj_replay_plan_store(sqlite3 *db, struct kj_replay_plan *plan);
/** @brief The same for the items whose want[i] is set (want NULL: all): a replay stores each
 * batch's results as they come, so one killed midway keeps what it measured. */
int kj_replay_plan_store_some(sqlite3 *db, struct kj_replay_plan *plan, const unsigned char *want);

/** @brief Table sorted by count x median (warm, else cold), then coverage. */
void kj_replay_report_print(FILE *f, const struct kj_replay_plan *plan);

/** @brief The same as JSON (malloc'ed text, caller frees), NULL on allocation failure. */
char *kj_replay_report_json(const struct kj_replay_plan *plan);

/* ---- whole-iteration (sequence) replay ---- */

/** One mode of a replayed iteration: "eager" (stream launches), "graph" (one CUDA graph, a linear
 *  chain of the captured operations) or "topology" (the graph launches rebuilt with their recorded
 *  nodes and edges, kj_replay_topo.h). */
struct kj_replay_seq {
	int64_t iteration;
	char mode[16];
	char status[16];      /* ok | relocated | failed */
	char error[256];
	int runs;
	int64_t launches;     /* kernel launches per iteration */
	int64_t ops;          /* all operations per iteration */
	int64_t min_ns, median_ns, max_ns;
	int has_energy;
	double energy_mj, energy_unc_mj; /* per iteration */
	char data[32]; /* host side: what the buffers held ("random", "smallint", "zero", "+snapshot") */
	int64_t pace_ns; /* energy measured with one launch per pace_ns, host-synchronised as the
			    program ran them (kj_replay_pace.h): energy_mj is per period; 0 back to back */
	/* with the energy: the clock state over its window, as in kj_replay_result (-1 not read) */
	double sm_clock_mean_mhz;
	int sm_clock_min_mhz, sm_clock_max_mhz;
	int64_t throttle_reasons;
};

/** @brief Worker side: one "KJ_SEQ" line. */
void kj_replay_seq_emit(FILE *f, const struct kj_replay_seq *s);
/** @brief Parse a "KJ_SEQ" line. @return 1 parsed, 0 another line, KJ_EINVAL malformed. */
int kj_replay_parse_seq(const char *line, struct kj_replay_seq *s);

/** Per-kernel times inside the replayed iteration (the worker's KJ_TIMING cache=sequence). */
struct kj_replay_seq_kernel {
	int64_t unique_id;
	struct kj_replay_timing t;
};
/** @brief Parse a "KJ_TIMING ... cache=sequence" line. @return 1 parsed, 0 other line, KJ_EINVAL. */
int kj_replay_parse_seq_kernel(const char *line, struct kj_replay_seq_kernel *k);

/** What the stored in-sequence medians predict: for the iteration, Σ over its kernel launches of
 * their unique kernel's median vs its traced busy time; for the whole run, Σ(launches × median)
 * vs the traced Σ of the same unique kernels. -1 where unknown. */
struct kj_replay_seq_fidelity {
	double iter_sum_ns, iter_traced_ns, run_sum_ns, run_traced_ns, run_traced_all_ns;
	int64_t kernels;
};

/** What the run says about one captured iteration. */
struct kj_replay_seq_info {
	int64_t iteration;
	int64_t kernels, copies, memsets, events, ops;
	int64_t traced_span_ns;  /* first start .. last end of its GPU work as traced; 0 unknown */
	int64_t traced_busy_ns;  /* Σ of its kernel durations as traced; 0 unknown */
	int have_fidelity;       /* set by the caller after storing per-kernel in-sequence times */
	struct kj_replay_seq_fidelity fidelity;
};

/**
 * @brief The iteration to replay (iteration < 0: the first captured one) and its traced times.
 * @return 0; KJ_ENOTFOUND when the run holds no sequence_op rows (message says to re-run
 *         `kjoule run --params-iteration`); KJ_ESCHEMA; KJ_EDB.
 */
int kj_replay_seq_info_load(sqlite3 *db, const char *run, int64_t iteration,
			    struct kj_replay_seq_info *out);
/** @brief Store modes in replay_sequence and the in-sequence kernel times as replay_kernel rows
 *         with cache 'sequence', in one transaction (INSERT OR REPLACE). */
int kj_replay_seq_store(sqlite3 *db, const struct kj_replay_seq *s, size_t n,
			const struct kj_replay_seq_kernel *k, size_t nk);
/** @brief Fill f from the stored in-sequence times and info's traced figures. @return 0. */
int kj_replay_seq_fidelity(sqlite3 *db, const struct kj_replay_seq_info *info,
			   struct kj_replay_seq_fidelity *f);
/** @brief Text report: per mode time and energy, and the split of the traced span. */
void kj_replay_seq_print(FILE *f, const struct kj_replay_seq_info *info,
			 const struct kj_replay_seq *s, size_t n);
/** @brief JSON of the same (malloc'ed), NULL on allocation failure. */
char *kj_replay_seq_json(const struct kj_replay_seq_info *info, const struct kj_replay_seq *s,
			 size_t n);

#endif
