/* Interval arithmetic on GPU activity: the union ("busy time") of possibly overlapping
 * [start_ns, end_ns) intervals, computed by one sort and one sweep (O(n log n)). */
#ifndef KJ_INTERVALS_H
#define KJ_INTERVALS_H

#include <stddef.h>
#include <stdint.h>

/** @brief One half-open interval [start_ns, end_ns). */
struct kj_interval {
	int64_t start_ns;
	int64_t end_ns;
};

/**
 * @brief Length of the union of n intervals given as two parallel arrays, in any order.
 * Overlapping, nested, touching and empty (start == end) intervals are all fine.
 * The input is not modified (a sorted copy is made).
 * @param start    n start times
 * @param end      n end times, end[i] >= start[i]
 * @param n        number of intervals; 0 gives *busy_ns = 0
 * @param busy_ns  receives the total time covered by at least one interval
 * @return 0, KJ_EINVAL (NULL arrays with n > 0, NULL busy_ns, or some end[i] < start[i]),
 *         KJ_ENOMEM.
 */
int kj_intervals_union_ns(const int64_t *start, const int64_t *end, size_t n, int64_t *busy_ns);

/**
 * @brief Sort iv in place by start (then end) and merge it into disjoint, non-touching intervals
 * in ascending order, written over the front of iv.
 * Intervals with end_ns < start_ns are dropped.
 * @return the number of disjoint intervals now at the front of iv (0..n).
 */
size_t kj_intervals_merge(struct kj_interval *iv, size_t n);

/**
 * @brief Length of the union of intervals already sorted by start_ns (as kj_intervals_merge
 * or qsort with kj_interval_cmp leave them); intervals with end_ns < start_ns count as empty.
 */
int64_t kj_intervals_union_sorted_ns(const struct kj_interval *iv, size_t n);

/** @brief qsort comparator: by start_ns, then end_ns. */
int kj_interval_cmp(const void *a, const void *b);

/**
 * @brief Time covered by both of two merged interval lists (outputs of kj_intervals_merge),
 * e.g. how much of an NVTX range's time the GPU was busy. O(na + nb).
 */
int64_t kj_intervals_overlap_ns(const struct kj_interval *a, size_t na,
				const struct kj_interval *b, size_t nb);

/** @brief How many of the intervals sorted by start_ns start at or before t (binary search). */
size_t kj_intervals_started_by(const struct kj_interval *iv, size_t n, int64_t t);

/**
 * @brief The latest of intervals sorted by start_ns that starts at or before t and still holds it
 * (t <= end_ns), looking back at most `lookback` intervals (overlapping ones); -1 when none.
 * O(log n + lookback).
 */
long kj_intervals_holding(const struct kj_interval *iv, size_t n, int64_t t, size_t lookback);

#endif
