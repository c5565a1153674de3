/* The run as the analyses (compare, diff, the API story) and the report's timelines read it: GPU
 * activity loaded from a run database, iterations found from NVTX ranges, interval arithmetic,
 * small maps, kernel names. Plain C, no GPU. */
#ifndef KJ_ACTS_H
#define KJ_ACTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- GPU activity ---- */

enum kj_act_type { KJ_ACT_KERNEL = 0, KJ_ACT_MEMCPY = 1, KJ_ACT_MEMSET = 2 };
enum kj_copy_dir { KJ_COPY_OTHER = 0, KJ_COPY_H2D = 1, KJ_COPY_D2H = 2, KJ_COPY_D2D = 3 };

/** One kernel, copy or memset. key_ns is the time that assigns it to an iteration: the CPU
 *  launch time when recorded and sane (launch_ns <= start_ns), else start_ns. */
struct kj_act {
	int64_t start_ns, end_ns, key_ns;
	int64_t pid, device_id, stream_id, correlation_id;
	int64_t bytes;      /* copies and memsets; 0 for kernels */
	int64_t unique_id;  /* kernels: unique_kernel.id, -1 when NULL */
	int64_t name_id;    /* kernels: kernel_name.id, -1 when NULL */
	uint8_t type;       /* enum kj_act_type */
	uint8_t dir;        /* memcpy: enum kj_copy_dir */
	uint8_t has_launch; /* launch_ns recorded and used as key */
};

/** All GPU activity of a run, sorted by key_ns (then start_ns). */
struct kj_acts {
	struct kj_act *v;
	size_t n;
	size_t n_kernels, n_copies, n_memsets;
	size_t dropped;       /* rows without start/end or with end < start */
	size_t launch_after;  /* kernels whose launch_ns > start_ns (clock mapping problem) */
};

/**
 * @brief Load kernels, memcpys and memsets of a run into *out (caller frees with
 *        kj_acts_free). Rows missing times or with end < start are dropped and counted.
 * @return 0, KJ_ENOMEM or KJ_EDB.
 */
int kj_acts_load(sqlite3 *db, struct kj_acts *out);
void kj_acts_free(struct kj_acts *a);

/** @brief First start and last end over GPU activity, API calls, NVTX ranges and allocations.
 *  @return 0, or KJ_ENOTFOUND when the run holds no timed row at all. */
int kj_run_extent(sqlite3 *db, int64_t *t0_ns, int64_t *t1_ns);

/* ---- iterations ---- */

struct kj_iter {
	int64_t start_ns, end_ns;
	int64_t pid, tid;
	int closed;    /* 0: the range never closed; end_ns was inferred */
	int skipped;   /* warm-up instance excluded from statistics */
};

struct kj_iters {
	struct kj_iter *v;   /* sorted by start_ns */
	size_t n;            /* all instances, skipped ones included */
	size_t n_kept;
	int skip;            /* instances skipped at the front */
	int whole_run;       /* 1: no usable NVTX region, the whole run is one iteration */
	int unclosed;        /* instances whose range never closed */
	int overlaps;        /* instances starting before the previous one ended */
	char region[256];    /* region name ("" for the whole run) */
	const char *chosen_by; /* "named", or kj_iter_default_range's reason */
	int multi_pid;       /* instances come from more than one process (torchrun ranks, workers) */
};

/**
 * @brief Find the iterations of a run. region NULL: kj_iter_default_range's choice (the range
 *        named at run, else the top-level user range holding the most GPU work), else the whole
 *        run [t0, t1] as one iteration. skip < 0: default
 *        (1 when more than 3 instances, else 0). Unclosed ranges end at the next instance's
 *        start (or t1); overlaps are counted. Warnings go to stderr unless quiet.
 * @return 0; KJ_ENOTFOUND when region is named but absent; KJ_EINVAL when skip removes every
 *         instance; KJ_EDB, KJ_ENOMEM.
 */
int kj_iters_find(sqlite3 *db, const char *region, int skip, int64_t t0, int64_t t1, int quiet,
		  struct kj_iters *out);
void kj_iters_free(struct kj_iters *it);

/** @brief Index of the iteration that owns time t (the last one starting at or before t, if t
 *  is before its end), or -1. */
long kj_iters_owner(const struct kj_iters *it, int64_t t);

/** @brief The iteration that owns work issued at time t by process pid: as kj_iters_owner, but
 *  when the instances come from several processes and pid has instances of its own, only those
 *  count (each rank's work goes to its own iteration, never to another rank's overlapping one);
 *  -1 when none of them contains t. pid <= 0: unknown, time alone decides. */
long kj_iters_owner_of(const struct kj_iters *it, int64_t t, int64_t pid);

/* ---- intervals ---- */

/** A half-open interval [s, e). */
struct kj_ival {
	int64_t s, e;
};

/**
 * @brief Sort v in place and return the length of the union of the intervals clipped to
 *        [lo, hi) (pass INT64_MIN/INT64_MAX for no clipping). Optional outputs: *span_s, *span_e
 *        the first start and last end after clipping (both 0 when nothing is left), *sum the sum
 *        of clipped lengths (overlap counted).
 */
int64_t kj_ival_union(struct kj_ival *v, size_t n, int64_t lo, int64_t hi, int64_t *span_s,
		      int64_t *span_e, int64_t *sum);

/** Idle gaps inside the span of a sorted, clipped set: callback per gap (s, e). */
void kj_ival_gaps(const struct kj_ival *sorted, size_t n, int64_t lo, int64_t hi,
		  void (*fn)(void *ctx, int64_t s, int64_t e), void *ctx);

/* ---- small maps ---- */

/** int64 -> index map (open addressing). */
struct kj_imap {
	int64_t *keys;
	size_t *vals;
	size_t cap, n;
};
/** @brief Index stored for key, or (size_t)-1. */
size_t kj_imap_get(const struct kj_imap *m, int64_t key);
/** @brief Store key -> val. @return 0 or KJ_ENOMEM. */
int kj_imap_put(struct kj_imap *m, int64_t key, size_t val);
void kj_imap_free(struct kj_imap *m);

/** string -> index map, owning copies of the strings, in insertion order. */
struct kj_smap {
	char **names;
	size_t n, cap;
	size_t *slots; /* hash table of index+1, 0 empty */
	size_t nslots;
};
/** @brief Index of name, adding it when absent; (size_t)-1 on allocation failure. */
size_t kj_smap_intern(struct kj_smap *m, const char *name);
void kj_smap_free(struct kj_smap *m);

/* ---- names and text ---- */

/** Kernel names by kernel_name.id: demangled when recorded, else mangled. */
struct kj_names {
	char **v;
	size_t n; /* v has n slots (max id + 1); missing ids are NULL */
};
int kj_names_load(sqlite3 *db, struct kj_names *out);
void kj_names_free(struct kj_names *nm);
/** @brief Name for id, or a fixed "kernel?" text. */
const char *kj_names_get(const struct kj_names *nm, int64_t id);

/** @brief Parse a time like "1500", "1500us", "1.5ms", "2s", "100ns" into ns. @return 0 or
 *  KJ_EINVAL. */
int kj_parse_time_ns(const char *s, int64_t *out_ns);

#endif
