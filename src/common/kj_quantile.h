/* Quantiles of a sample of doubles: sort once, then read any quantile. */
#ifndef KJ_QUANTILE_H
#define KJ_QUANTILE_H

#include <stddef.h>

/** @brief Sorts v[0..n) ascending (qsort). */
void kj_sort_doubles(double *v, size_t n);

/**
 * @brief The p-quantile (0..1) of sorted v[0..n), interpolated linearly between neighbours
 *        (p = 0.5 is the median: the middle value, or the mean of the two middle ones). n > 0.
 */
double kj_quantile_sorted(const double *v, size_t n, double p);

#endif
