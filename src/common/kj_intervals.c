#include "kj_intervals.h"

#include <stdlib.h>

#include "kj_error.h"

int kj_interval_cmp(const void *a, const void *b)
{
	const struct kj_interval *x = a, *y = b;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return 0;
}

int64_t kj_intervals_union_sorted_ns(const struct kj_interval *iv, size_t n)
{
	int64_t busy = 0, cur_s = 0, cur_e = 0;
	int open = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t s = iv[i].start_ns, e = iv[i].end_ns;
		if (e <= s)
			continue;
		if (open && s <= cur_e) {
			if (e > cur_e)
				cur_e = e;
			continue;
		}
		if (open)
			busy += cur_e - cur_s;
		cur_s = s;
		cur_e = e;
		open = 1;
	}
	if (open)
		busy += cur_e - cur_s;
	return busy;
}

size_t kj_intervals_merge(struct kj_interval *iv, size_t n)
{
	size_t out = 0;

	if (!iv || n == 0)
		return 0;
	qsort(iv, n, sizeof(*iv), kj_interval_cmp);
	for (size_t i = 0; i < n; i++) {
		if (iv[i].end_ns < iv[i].start_ns)
			continue;
		if (out > 0 && iv[i].start_ns <= iv[out - 1].end_ns) {
			if (iv[i].end_ns > iv[out - 1].end_ns)
				iv[out - 1].end_ns = iv[i].end_ns;
			continue;
		}
		iv[out++] = iv[i];
	}
	return out;
}

int kj_intervals_union_ns(const int64_t *start, const int64_t *end, size_t n, int64_t *busy_ns)
{
	struct kj_interval *iv;

	if (!busy_ns || (n > 0 && (!start || !end)))
		return KJ_EINVAL;
	*busy_ns = 0;
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (end[i] < start[i])
			return KJ_EINVAL;
	iv = malloc(n * sizeof(*iv));
	if (!iv)
		return KJ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		iv[i].start_ns = start[i];
		iv[i].end_ns = end[i];
	}
	qsort(iv, n, sizeof(*iv), kj_interval_cmp);
	*busy_ns = kj_intervals_union_sorted_ns(iv, n);
	free(iv);
	return 0;
}

int64_t kj_intervals_overlap_ns(const struct kj_interval *a, size_t na,
				const struct kj_interval *b, size_t nb)
{
	size_t i = 0, j = 0;
	int64_t both = 0;

	while (i < na && j < nb) {
		int64_t s = a[i].start_ns > b[j].start_ns ? a[i].start_ns : b[j].start_ns;
		int64_t e = a[i].end_ns < b[j].end_ns ? a[i].end_ns : b[j].end_ns;
		if (e > s)
			both += e - s;
		if (a[i].end_ns < b[j].end_ns)
			i++;
		else
			j++;
	}
	return both;
}

size_t kj_intervals_started_by(const struct kj_interval *iv, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (iv[mid].start_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long kj_intervals_holding(const struct kj_interval *iv, size_t n, int64_t t, size_t lookback)
{
	size_t lo = kj_intervals_started_by(iv, n, t);
	for (size_t i = lo; i > 0 && lo - i < lookback; i--)
		if (t <= iv[i - 1].end_ns)
			return (long)(i - 1);
	return -1;
}
