/* Quantiles of a sample of doubles. */
#include "kj_quantile.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void kj_sort_doubles(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double kj_quantile_sorted(const double *v, size_t n, double p)
{
	double k = p * (double)(n - 1);
	size_t i = (size_t)k;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (k - (double)i) * (v[i + 1] - v[i]);
}
