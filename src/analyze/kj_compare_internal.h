/* Internals of kjoule compare shared by its files: the per-iteration figures, the groups of
 * launches, the derived summary and the selections the writers share. Report's compare writers
 * (kj_compare_out_internal.h) read these structures; nothing here writes them out. */
#ifndef KJ_COMPARE_INTERNAL_H
#define KJ_COMPARE_INTERNAL_H

#include "kj_compare.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "kj_acts.h"
#include "kj_compare_clocks.h"
#include "kj_ranks.h"
#include "kj_shared.h"

#define NS_US 1e-3

/* Per-iteration figures, all in ns (energy in mJ). */
/* the loop's counter energy is the measured figure when this much of its span is between windows */
#define KJ_CMP_LOOP_OUTSIDE_FRAC 0.01

/* candidate ways to credit each replayed launch with energy (kj_compare_energy.c) */
enum {
	KJ_CMP_E_MEAN,        /* the mean of its warm and cold-L2 replayed energies */
	KJ_CMP_E_PLACE,       /* between them, where its in-situ time lies between its warm and cold times */
	KJ_CMP_E_PLACE_SEQ,   /* the same placed by its in-sequence replay time */
	KJ_CMP_E_POWER_TIME,  /* its replayed power (mean of warm and cold) × its in-situ time */
	KJ_CMP_E_PLACE_POWER, /* its power placed between warm and cold power × its in-situ time */
	KJ_CMP_E_WARM_POWER,  /* its warm replayed power × its in-situ time */
	KJ_CMP_E_CANDIDATES
};

struct cmp_iter {
	int64_t start_ns, end_ns;
	int skipped, closed;
	int64_t wall, span, busy, kernel_busy, kernel_sum, copy_sum, clipped_sum, overlap, idle,
		host_only, outside, inherited;
	int64_t n_kernels, n_copies, n_memsets, bytes_h2d, bytes_d2h;
	int64_t n_graph_launches;          /* cuGraphLaunch calls made inside the iteration */
	double replay_warm, replay_cold;     /* Σ over covered launches */
	double insitu_warm, insitu_cold;     /* in-situ Σ of the same launches */
	double replay_seq, insitu_seq;       /* in-sequence replay (replay --sequence), same */
	double replay_iso;                   /* the isolated estimate over the warm replays' launches:
						each at the mean of its warm and cold replays (warm
						where it has no cold) */
	int64_t cov_warm, cov_cold, cov_energy, cov_seq;
	double energy_kernels_mj;            /* each launch at the mean of its warm and cold-L2 replayed
						energies (warm where it has no cold one) */
	double e_cold_cov_warm_mj, e_cold_cov_cold_mj; /* launches with a cold energy: Σ warm, Σ cold */
	double e_nocold_warm_mj;             /* replayed launches without one: Σ warm */
	int64_t cold_energy_ns;              /* in-situ time of the launches with a cold energy */
	int64_t waits_ns, n_waits;           /* launches of kernels that wait (kept at in-situ time) */
	int64_t standin_ns;                  /* in-situ time of kernels replayed only on stand-in data */
	int64_t insitu_energy_ns;            /* in-situ time of the launches with an energy figure */
	double e_cand_mj[KJ_CMP_E_CANDIDATES]; /* the replayed launches by each candidate way to
						   credit a launch's energy (kj_compare_energy.c) */
	double e_nocold_place_mj[2];         /* as cmp_group's, over this iteration's launches */
	double energy_measured_mj;
	int energy_ok;
	double energy_unc_mj;
	int foreign;         /* another process was on a GPU during the iteration */
	int energy_excluded; /* left out of the energy figures: foreign, and enough clean ones */
};

/* One group of launches: a unique kernel (or a kernel name without a unique id). */
struct cmp_group {
	int64_t unique_id, name_id;
	size_t tier;                 /* index into tiers smap */
	double warm_ns, cold_ns;     /* < 0: no replay */
	double seq_ns;               /* < 0: no in-sequence replay */
	double energy_mj;            /* < 0: no replay energy; the mean of warm and cold where both */
	double energy_warm_mj;       /* the warm replay's energy per launch; < 0: none */
	double energy_cold_mj;       /* with the kernel's data out of L2 (replay_energy_cold); < 0: none */
	double warm_unc_mj, cold_unc_mj; /* their uncertainties per launch; < 0: unknown */
	double b2b_ns, b2b_mhz;      /* its back-to-back energy window under the power cap (time per
				      * launch, mean SM clock: replay_energy_b2b); < 0: none */
	double power_mw;             /* mean power while it was replayed for energy; < 0: unknown */
	int data;                    /* what its energy replay ran on: a KJ_CMP_DATA_* */
	int64_t launches;            /* in kept iterations */
	int64_t measured_ns;
	int waits;                   /* waits on something outside itself: not replayable alone */
	double traced_mean_ns;       /* mean traced duration over the whole run (waiters only) */
	char *waits_why;             /* why (malloc'ed), when waits */
	double ew_ns, ec_ns;         /* ns per launch of the warm and the cold energy loops; < 0: none */
	int e_paced;                 /* its warm energy was measured spaced out by idle (a difference of
				      * two windows: ew_ns is no window's pace) */
	double e_cand_mj[KJ_CMP_E_CANDIDATES]; /* its launches in kept iterations, credited each way */
	int64_t e_cand_launches;     /* those launches */
	double e_nocold_place_mj[2]; /* without a cold energy: Σ place × warm energy, by in-situ and
					in-sequence time (the cold/warm ratio applies later) */
	int standin;                 /* not replayable alone because replayed only on stand-in data */
	double standin_mw;           /* then its replayed power (energy = that power x in-situ
					time); < 0: unknown */
};

struct cmp_tier {
	int64_t launches, unique, measured_ns;
	double replay_warm_ns, energy_mj;
	int64_t cov_warm, cov_energy;
};

struct cmp_region {
	int64_t instances, time_ns, busy_ns, launches;
	int64_t min_depth;
	int timed;    /* some instance ran inside an iteration (time_ns is meaningful) */
	int captured; /* graph kernels whose nodes were captured inside this range count here */
};

struct kj_compare {
	char path[512];
	struct kj_iters it;
	struct cmp_iter *iv;
	struct kj_acts acts;
	struct kj_names names;
	struct cmp_group *groups;
	size_t n_groups;
	struct kj_smap tiers;
	struct cmp_tier *tier_v;
	struct kj_smap region_names;
	struct cmp_region *region_v;
	size_t region_cap;
	int top;
	/* what the run holds */
	int64_t n_replay_warm_rows, n_replay_cold_rows, n_replay_energy_rows, n_replay_seq_rows;
	double seq_eager_ns, seq_graph_ns, seq_eager_mj, seq_graph_mj; /* < 0: absent */
	int64_t seq_failed_rows; /* replay_sequence rows stored without a time: the replay faulted */
	int64_t seq_left_out;    /* kernel launches of the kept iteration its graph replay left out
				  * (they set a graph conditional's condition); -1 unknown */
	int64_t seq_eager_rows, seq_graph_rows;
	/* the graph launches replayed with their recorded topology (mode 'topology'); < 0: absent */
	double seq_topo_ns, seq_topo_mj;
	double seq_topo_pace_ns, seq_graph_pace_ns; /* > 0: that energy is per paced period (replay_sequence.pace_ns) */
	int64_t seq_topo_rows;
	char seq_graph_data[32], seq_topo_data[32]; /* replay_sequence.data: what the buffers held ("" unknown) */
	int have_snapshot;      /* the run saved device buffers (--snapshot, --snapshot-graphs) */
	char topo_status[16];   /* replay_topology: rebuilt | fallback | failed; "" none stored */
	char topo_unbuilt[256]; /* the node kinds not rebuilt, with counts */
	char topo_reason[400];
	int64_t n_power_samples, n_power_in_windows;
	/* the kept iterations as one loop: the energy counter over their whole span (many counter
	 * periods: exact), its time outside the iteration windows, and the windows inside it */
	double loop_mj, loop_unc_mj;
	/* per iteration over the window between the first and the last counter update inside the
	 * loop (loop_aligned; else over the whole span), idle between iterations taken off, summed
	 * over the devices; the window's length, the iterations it holds (fractions at its ends) and
	 * their time inside it (the first device's) */
	double loop_iter_mj, loop_iter_unc_mj, loop_window_iters, loop_window_inside_ns;
	int64_t loop_window_ns;
	int64_t loop_gap_busy_ns; /* GPU work between the loop's iterations (owned by none of them) */
	int loop_aligned;
	int64_t loop_start_ns, loop_span_ns, loop_inside_ns, loop_n;
	int loop_counter_periods, have_loop;
	double win_power_s, win_s; /* kept windows: their time no whole counter period covers (energy from power readings or the counter's average power), and all of it */
	double power_avg_w, power_min_w, power_max_w; /* < 0: absent */
	double idle_w;                                 /* < 0: unknown; the idle term's power */
	double deep_idle_w;                            /* idle_power table (kjoule power --idle) */
	double awake_idle_w;                           /* quiet GPU with clocks up, from the run */
	int64_t n_awake_samples;
	int64_t n_devices_power;
	int have_energy_engine;
	int64_t n_api_calls;
	int64_t realtime_offset_ns; /* realtime - monotonic; valid when have_realtime */
	int have_host_calls;        /* the run records graph launches (host_call) */
	int have_realtime;
	struct kj_shared shared;               /* the run's watch for other processes */
	struct kj_shared_choice shared_choice; /* over the measured iterations */
	struct cmp_clocks clocks;              /* clock state of the program and its replays (kj_compare_clocks.c) */
	struct kj_job job;                     /* the ranks of a multi-GPU run (n < 2: none) */
};


/* mean/min/max of a per-iteration double over kept iterations */
struct stat3 {
	double mean, min, max;
	int64_t n;
};

struct cmp_summary {
	int64_t n;
	struct stat3 wall, span, busy, kernel_busy, kernel_sum, copy_sum, overlap, idle, host_only,
		outside, inherited, n_kernels, n_copies, n_memsets, bytes_h2d, bytes_d2h, n_graph_launches;
	double replay_warm, replay_cold, insitu_warm, insitu_cold, replay_seq, insitu_seq;
	double replay_iso;              /* mean of warm and cold per launch (warm without cold) */
	double explained_fraction_warm; /* explained_fraction with the warm replays alone */
	double cov_warm, cov_cold, cov_energy, cov_seq; /* fractions of kernel launches */
	int have_warm, have_cold, full_warm, full_cold, have_seq;
	double predicted_wall, explained_fraction, naive_fraction, naive_error_pct;
	double explained_fraction_seq; /* the same with in-sequence replay times */
	/* explained_fraction with each kernel that was also measured under the power cap timed at
	 * the program's SM clocks (kj_compare_clock_time.c); have_explained_clocks 0: not computed */
	double explained_fraction_clocks, clocks_adjusted_share;
	int have_explained_clocks, clocks_adjusted_kernels;
	double kernel_overlap_frac;    /* kernel time that overlapped other kernels, of the kernel sum */
	int have_explained;
	double seq_eager, seq_graph, framework_host, launch_cost, sequence_fraction;
	int have_eager, have_graph;
	double seq_topo;  /* the graph launches as recorded (topology replay) */
	int have_topo;
	/* an energy error means something only when the measured mean is known better than this (%) */
#define KJ_CMP_ENERGY_JUDGE_PCT 1.0
/* More of the kernel time than this replayed only on stand-in data (its power is not the
 * program's: small integers draw a fraction of real data's power): the energy error is not judged. */
#define KJ_CMP_STANDIN_JUDGE_FRAC 0.05
/* More of the replayed kernels' energy than this from windows off their kernels' timed pace: the
 * parts' energy error is not judged. */
#define KJ_CMP_OFFPACE_JUDGE_FRAC 0.01
/* Less of the kernel time than this with a replayed energy (the rest scaled up from it): the
 * parts' energy error is not judged, since it no longer tests the parts. bench/energy_fidelity's
 * judged programs had 0.83-1.0; replays a budget stopped at 0.40-0.49 read +7.6 to +12.1 %. */
#define KJ_CMP_ENERGY_COVER_JUDGE_FRAC 0.80
	/* energy, mJ per iteration */
	struct stat3 e_meas;
	int have_meas;
	double e_meas_windows;      /* the mean of the windows' own energies */
	double e_loop, e_loop_unc;  /* per iteration from the counter over the loop (have_loop) */
	double loop_outside_frac;   /* the loop's time outside the iteration windows */
	double win_power_frac;      /* the windows' time whose energy came from power readings */
	int have_loop, e_meas_from_loop; /* e_meas.mean is e_loop (time between iterations) */
	int loop_gap_busy;         /* GPU work between the iterations: the loop is no window for them */
	double e_unc, e_unc_mean, e_kernels, e_idle, e_pred, e_err_pct;
	double e_unc_mean_pct;     /* e_unc_mean as a share of the measured mean */
	int e_judgeable;           /* that share is within KJ_CMP_ENERGY_JUDGE_PCT, and e_standin is 0 */
	double e_standin_share;    /* share of the kernel time replayed only on stand-in data */
	int e_standin;             /* that share is above KJ_CMP_STANDIN_JUDGE_FRAC */
	double e_iters_for_judge;  /* about how many iterations would bring it there */
	int e_meas_short;          /* the measured iterations lie within fewer than two counter updates
				    * and their windows rest on power readings: no figure to judge by */
	double e_short_span_ms;    /* then: the measured iterations' span */
	double e_iters_for_span;   /* and about how many iterations would span 250 ms */
	double e_kernels_time_cov; /* share of kernel time whose energy was replayed */
	double e_kernels_warm, e_kernels_cold; /* Σ kernels at the warm, the cold-L2 energies alone */
	double e_cold_time_cov;    /* share of kernel time with a cold-L2 energy */
	double e_cold_ratio;       /* Σ cold / Σ warm over those launches; the others' cold is their
				    * warm × this */
	int have_cold_e;
	int e_extrapolated;        /* e_kernels scaled up from that share (< 99.9 %) */
	int e_sparse;              /* that share is under KJ_CMP_ENERGY_COVER_JUDGE_FRAC: the parts
				    * are not judged (the iteration replayed whole still can be) */
	int have_kernels_e, have_idle_e, have_pred, have_err;
	/* the gap split: each kernel at its replayed power over its in-situ time (the time part of
	 * the gap removed, the power part left), plus the same idle term */
	double e_cand_kernels[KJ_CMP_E_CANDIDATES]; /* each way's kernels, extrapolated as e_kernels */
	double e_cand_pred[KJ_CMP_E_CANDIDATES], e_cand_err_pct[KJ_CMP_E_CANDIDATES]; /* + idle; vs measured */
	int have_cand;
	int e_method;              /* the candidate e_pred uses (KJ_CMP_E_*) */
	double e_kernels_pred;     /* its kernels' part (e_pred less idle) */
	double e_kernels_unc;      /* the replayed energies' own uncertainty in that part (mJ per
				    * iteration, cmp_energy_parts_unc); < 0: unknown */
	double e_kernels_insitu, e_pred_insitu, e_insitu_err_pct;
	int have_pred_insitu, have_insitu_err;
	/* the iteration replayed as one graph (topology replay where there is one, else the linear
	 * chain), plus idle power over the rest of the wall: a second energy prediction */
	double e_seq, e_seq_pred, e_seq_err_pct, e_seq_time;
	const char *e_seq_mode; /* "topology" or "graph" */
	int e_seq_paced;        /* its energy ran paced: e_seq per period of e_seq_time */
	const char *e_seq_data; /* what its buffers held; "" unknown */
	int e_seq_synthetic;    /* on small integers or zeros (random data faulted): not comparable */
	int have_seq_e, have_seq_err;
	/* the prediction's basis: 0 the parts (e_pred as above), 1 the iteration replayed whole
	 * (e_pred, e_err_pct and have_err are then e_seq_pred's; the parts' own in e_parts_*) */
	int e_basis_iter;
	double e_parts_pred, e_parts_err_pct;
	int have_parts_err;
	int e_parts_judgeable;     /* the parts' error is judged (e_judgeable before the basis moved) */
	int e_judgeable_data;      /* e_judgeable without the clock-state condition */
	/* kernels whose energy window ran off the pace of their timed launches (kj_energy_window.h):
	 * their energies are not theirs; above KJ_CMP_OFFPACE_JUDGE_FRAC of the kernels' energy the
	 * parts are not judged (the iteration replayed whole still can be) */
	int e_offpace_kernels;
	double e_offpace_share;    /* their share of the replayed kernels' energy in kept iterations */
	double e_offpace_ratio;    /* the window's time per launch over the timed, of the largest */
	const struct cmp_group *e_offpace_worst; /* that kernel (the most energy among them) */
	int e_offpace;             /* e_offpace_share > KJ_CMP_OFFPACE_JUDGE_FRAC */
};

/* kj_compare_load.c: one group per unique_kernel row (gmap: unique_id -> index into c->groups),
 * with its isolated, energy and cold-L2 replay figures; the kernels that wait marked (their
 * replay figures dropped, the reason kept); the sequence and topology replays' figures. 0, or
 * KJ_EDB / KJ_ENOMEM. */
int cmp_load_groups(sqlite3 *db, struct kj_compare *c, struct kj_imap *gmap);
/* The group of a kernel launch, a new one (tier by name) for a kernel without a unique_kernel
 * row; (size_t)-1 out of memory. */
size_t cmp_group_of(struct kj_compare *c, struct kj_imap *gmap, const struct kj_act *a);
/* kj_compare_measure.c: each iteration's measured energy from every device's power samples, the
 * kept iterations as one loop (c->loop_*, have_loop), power statistics inside the kept windows,
 * and the idle terms (deep, awake, idle_w). 0, or a negative code. */
int cmp_compute_energy(sqlite3 *db, struct kj_compare *c);
/* kj_compare_regions.c: the NVTX ranges inside the kept iterations (c->region_names, region_v),
 * by name: instances, host time, GPU busy time and kernel launches; graph kernels captured inside
 * ranges counted there too. 0, or KJ_EDB / KJ_ENOMEM. */
int cmp_compute_regions(sqlite3 *db, struct kj_compare *c);
/* kj_compare.c: 1 when some kernel's replayed energy is the mean of warm and cold L2 */
int cmp_groups_have_cold_energy(const struct kj_compare *c);
/* kj_compare_summary.c: 1 when the in-sequence kernel times (covering > 90 % of launches) sum
 * more than 5 % past the whole iteration replayed eagerly: kernels overlapped in the replay. */
int cmp_sequence_overlapped(const struct cmp_summary *s);
/* Above this share of their time overlapping (streams running at once), kernels' in-situ times
 * include the sharing that isolated replays lack: the substitution behind explained_fraction is
 * first-order only, and compare says so. */
#define KJ_CMP_OVERLAP_FRAC 0.05
/* kj_compare_shared.c */
int cmp_shared_apply(sqlite3 *db, struct kj_compare *c);
/* kj_compare_summary.c */
size_t *cmp_disagreements(const struct kj_compare *c, const struct cmp_summary *s, size_t *n_out);
const char *cmp_group_name(const struct kj_compare *c, const struct cmp_group *g);
double cmp_safe_div(double a, double b, int *ok);
void cmp_summarize(const struct kj_compare *c, struct cmp_summary *s);
size_t *cmp_top_groups(const struct kj_compare *c, size_t *n_out);

/* Adds one replayed launch of in-situ duration d_ns to each candidate sum of x (kj_compare_energy.c). */
void cmp_energy_add_launch(struct cmp_iter *x, struct cmp_group *gr, int64_t d_ns);
/* Each candidate's prediction (kernels, extrapolated as e_kernels is, + idle) and its error. */
void cmp_energy_candidates(const struct kj_compare *c, struct cmp_summary *s);
/* s->e_kernels_unc: each replayed kernel's warm and cold-L2 uncertainties, weighted as
 * s->e_method weights its two energies; a kernel's launches err together (one measurement),
 * kernels independently; scaled up as the kernels' part is. -1 where one is unknown. */
void cmp_energy_parts_unc(const struct kj_compare *c, struct cmp_summary *s);
/* explained_fraction at the program's clocks (s->explained_fraction_clocks and the rest), where the
 * program ran capped or throttled and kernels have a back-to-back window under the cap: each such
 * kernel's time t(f) = a + b/f through its warm replay at the timing replays' clock and its
 * capped window, taken at the mean of 1/f over the program's readings. Call after the
 * explained_fraction of cmp_summarize. */
void cmp_explained_at_program_clocks(const struct kj_compare *c, struct cmp_summary *s);
/* kj_compare_energy.c: the kernels whose energy window ran off their timed pace, their share of
 * the replayed kernels' energy, the worst of them, and whether that share stops judging the parts
 * (s->e_offpace_*). */
void cmp_energy_off_pace(const struct kj_compare *c, struct cmp_summary *s);
/* Why those kernels stop the parts being judged, in words, into buf; buf returned. */
const char *cmp_energy_off_pace_why(const struct kj_compare *c, const struct cmp_summary *s, char *buf, size_t len);
/* The prediction's basis (docs/analysis-compare.md, "Which prediction"): where the kept
 * iteration was launched as CUDA graphs and replayed whole with its recorded topology on the
 * program's saved buffers, clocks matching the program's, that replay predicts the iteration
 * (s->e_basis_iter 1: e_pred, e_err_pct, have_err and e_judgeable become its); else the parts
 * do. Either way e_parts_* keep the parts' figures. Call after cmp_energy_candidates. */
void cmp_energy_basis(const struct kj_compare *c, struct cmp_summary *s);
/* A graph-launched iteration whose topology was not rebuilt is predicted by its linear chain when
 * the chain's time error (its replayed time against the traced GPU busy time) can carry at most
 * this share of the prediction's energy: |time off| × the chain's kernel energy. */
#define KJ_CMP_CHAIN_AS_PROGRAM 0.01
/* 1 when the iteration replay is that linear chain (the program launched graphs) and its time
 * error carries at most KJ_CMP_CHAIN_AS_PROGRAM of the predicted energy; else 0. */
int cmp_chain_as_program(const struct cmp_summary *s);

/* What a kernel's energy replay ran on (replay_energy.data): unknown (runs replayed before it was
 * stored), its own launch's saved buffers, other launches' saved buffers over kjoule's fill, or
 * kjoule's fill alone. */
enum { KJ_CMP_DATA_UNKNOWN, KJ_CMP_DATA_SAVED, KJ_CMP_DATA_OTHER_SAVED, KJ_CMP_DATA_FILL, KJ_CMP_DATA_KINDS };
extern const char *const kj_cmp_data_names[KJ_CMP_DATA_KINDS];

/* The shares of the kept iterations' kernel time whose energy was replayed on each kind of data,
 * over the kernels replayed with energy (they sum to 1), into share[]; 0 when none was. */
int cmp_energy_data_shares(const struct kj_compare *c, double share[KJ_CMP_DATA_KINDS]);

/* What the per-kernel energy replays ran on, in one word: "saved_buffers" (99 % or more of the
 * replayed kernels' time on their own launches' saved buffers), "random_fill" (as much on kjoule's
 * fill alone), "mixed"; by the run's snapshot alone where the replay did not say (older runs). */
const char *cmp_energy_data_label(const struct kj_compare *c);
/* Their names, as the text and the JSON say them. */
extern const char *const kj_cmp_e_candidate_names[KJ_CMP_E_CANDIDATES];
/* Adds energy that every candidate credits alike (a kernel kept at its in-situ time); gr may be
 * NULL (idle power over kernels that wait). */
void cmp_energy_add_all(struct cmp_iter *x, struct cmp_group *gr, double mj);
/* A group's energy per iteration as the prediction credits it (mJ); < 0 when it has no figure.
 * Launches without a replayed energy count at the energy per ns of those with one. */
double cmp_energy_group_mj(const struct kj_compare *c, const struct cmp_summary *s, const struct cmp_group *g);
/* The factor that turns predicted kernel energy into in-situ energy: (measured - idle) / kernels
 * predicted, so that the kernels' in-situ energies sum to the measured energy less idle; < 0
 * when either is unknown or not positive. */
double cmp_energy_insitu_scale(const struct cmp_summary *s);

#endif
