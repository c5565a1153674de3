/* Graph work that CUPTI reports without a correlation id: the launch it belongs to.
 *
 * Kernels, memsets and copies inside a conditional node's body (WHILE, IF, SWITCH) come with
 * correlation 0 (measured on an H200, CUDA 13.0): nothing ties them to the cuGraphLaunch that ran
 * them, so they would belong to no iteration. Their graph (exec) id is known (the kernel record's
 * graphId, the upper half of every record's graph node id), and one exec's launches run one after
 * another on the GPU. So each such record is given the correlation of the launch whose other,
 * correlated records surround it in time:
 * - between two records of one launch: that launch;
 * - between the last record of launch a and the first of launch b: split the run where the GPU
 *   waited longest (between launches it waits for the next one; inside one it runs node after
 *   node), and never give a record to a launch whose host call began after the record started;
 * - an exec none of whose records is correlated (a graph that is one WHILE node): its records split
 *   into one run per launch at the longest waits, the runs given to the launches in order. */
#include "kj_ingest_internal.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"

struct gitem {
	int64_t start, end;
	uint64_t offset; /* of its record in the spool file */
	uint32_t exec, corr;
};

static int by_exec_start(const void *a, const void *b)
{
	const struct gitem *x = a, *y = b;
	if (x->exec != y->exec)
		return x->exec < y->exec ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void ing_orphan_note(struct ingest *in, uint64_t node, uint32_t corr)
{
	in->norphans += node && !corr;
}

int ing_orphan_collect(struct ingest *in, uint64_t offset, int64_t start, int64_t end, uint64_t node,
		       uint32_t graph_id, uint32_t corr)
{
	if (!node)
		return 0;
	struct gitem *n = kj_grow(in->gitems, &in->cap_gitems, in->ngitems, sizeof(*n), 256);
	if (!n)
		return KJ_ENOMEM;
	in->gitems = n;
	in->gitems[in->ngitems++] = (struct gitem){start, end, offset,
						   graph_id ? graph_id : (uint32_t)(node >> 32), corr};
	return 0;
}

/* The graph launches of the file, sorted by exec and host start, so each exec's are one range. */
struct glaunch {
	uint32_t exec, corr;
	int64_t start;
};

static int by_exec_host(const void *a, const void *b)
{
	const struct glaunch *x = a, *y = b;
	if (x->exec != y->exec)
		return x->exec < y->exec ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct launches {
	struct glaunch *v;
	size_t n;
};

/* The range [*a, *b) of exec's launches in L. */
static void exec_range(const struct launches *L, uint32_t exec, size_t *a, size_t *b)
{
	size_t lo = 0, hi = L->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (L->v[mid].exec < exec)
			lo = mid + 1;
		else
			hi = mid;
	}
	*a = lo;
	for (*b = lo; *b < L->n && L->v[*b].exec == exec; (*b)++)
		;
}

/* The host start of the launch of correlation c (INT64_MAX when it is unknown). */
static int64_t host_start(const struct ingest *in, uint32_t c)
{
	const struct kj_rec_issue *g = ing_issue(in, c);
	return g ? g->start_ns : INT64_MAX;
}

/* The latest of launches v[a..b) (one exec's, host order) that began at or before t: its
 * correlation, or 0. */
static uint32_t latest_launch(const struct glaunch *v, size_t a, size_t b, int64_t t)
{
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (v[mid].start <= t)
			a = mid + 1;
		else
			b = mid;
	}
	return a > 0 && v[a - 1].start <= t ? v[a - 1].corr : 0;
}

struct gap {
	int64_t gap;
	size_t at;
};

static int by_gap_desc(const void *a, const void *b)
{
	const struct gap *x = a, *y = b;
	if (x->gap != y->gap)
		return x->gap > y->gap ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static int by_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* An exec none of whose records is correlated: its launches v[a..b) (host order) ran one after
 * another, so its records it[lo..hi) split into as many runs as it had launches, at the longest
 * waits, each run to the next launch in order; a run that would start before its launch's host
 * call (or records fewer than launches) falls back to the latest launch made before each record
 * started. */
static void settle_unanchored(const struct glaunch *v, size_t a, size_t b, struct gitem *it, size_t lo,
			      size_t hi)
{
	size_t n = b - a, m = hi - lo;
	struct gap *g = n > 1 && m >= n ? malloc((m - 1) * sizeof(*g)) : NULL;
	size_t *cut = n && m >= n ? malloc(n * sizeof(*cut)) : NULL;
	int ok = cut && (n == 1 || g);
	if (ok) {
		for (size_t i = lo + 1; n > 1 && i < hi; i++)
			g[i - lo - 1] = (struct gap){it[i].start - it[i - 1].end, i};
		if (n > 1)
			qsort(g, m - 1, sizeof(*g), by_gap_desc);
		cut[0] = lo;
		for (size_t c = 1; c < n; c++)
			cut[c] = g[c - 1].at;
		qsort(cut, n, sizeof(*cut), by_size);
		for (size_t r = 0; r < n && ok; r++)
			ok = it[cut[r]].start >= v[a + r].start;
		for (size_t r = 0; r < n && ok; r++)
			for (size_t i = cut[r]; i < (r + 1 < n ? cut[r + 1] : hi); i++)
				it[i].corr = v[a + r].corr;
	}
	if (!ok)
		for (size_t i = lo; i < hi; i++)
			it[i].corr = latest_launch(v, a, b, it[i].start);
	free(g);
	free(cut);
}

/* Orphans it[lo..hi) lie between correlated records prev (or none) and next (or none). */
static void settle_run(const struct ingest *in, const struct glaunch *v, size_t a, size_t b,
		       struct gitem *it, size_t lo, size_t hi, const struct gitem *prev,
		       const struct gitem *next, size_t *split_runs)
{
	if (!prev && !next) {
		settle_unanchored(v, a, b, it, lo, hi);
		return;
	}
	if (!next || (prev && prev->corr == next->corr)) {
		for (size_t i = lo; i < hi; i++)
			it[i].corr = prev->corr;
		return;
	}
	if (!prev) {
		/* before the exec's first correlated record: its launch, or an earlier one */
		int64_t h = host_start(in, next->corr);
		for (size_t i = lo; i < hi; i++)
			it[i].corr = it[i].start >= h ? next->corr : latest_launch(v, a, b, it[i].start);
		return;
	}
	/* the tail of launch prev or the head of launch next: split at the longest wait */
	size_t split = lo;
	int64_t longest = it[lo].start - prev->end;
	for (size_t i = lo + 1; i <= hi; i++) {
		int64_t gap = (i < hi ? it[i].start : next->start) - it[i - 1].end;
		if (gap > longest)
			longest = gap, split = i;
	}
	int64_t h = host_start(in, next->corr);
	for (size_t i = lo; i < hi; i++)
		it[i].corr = i >= split && it[i].start >= h ? next->corr : prev->corr;
	(*split_runs)++;
}

int ing_orphans_resolve(struct ingest *in)
{
	size_t split_runs = 0, resolved = 0;
	struct launches L = {NULL, 0};
	if (!in->norphans)
		return 0;
	struct gitem *it = in->gitems;
	size_t n = in->ngitems;
	L.v = malloc((in->nissues + 1) * sizeof(*L.v));
	if (!L.v)
		return KJ_ENOMEM;
	for (size_t i = 0; i < in->nissues; i++)
		if (in->issues[i].op == KJ_ISSUE_GRAPH_LAUNCH)
			L.v[L.n++] = (struct glaunch){in->issues[i].exec_id, in->issues[i].correlation,
						      in->issues[i].start_ns};
	if (L.n) /* an empty list may be NULL, which qsort must not get */
		qsort(L.v, L.n, sizeof(*L.v), by_exec_host);
	if (n)
		qsort(it, n, sizeof(*it), by_exec_start);
	for (size_t a = 0; a < n;) {
		size_t b = a, la, lb;
		while (b < n && it[b].exec == it[a].exec)
			b++;
		exec_range(&L, it[a].exec, &la, &lb);
		const struct gitem *prev = NULL;
		for (size_t i = a; i < b;) {
			if (it[i].corr) {
				prev = &it[i++];
				continue;
			}
			size_t j = i;
			while (j < b && !it[j].corr)
				j++;
			settle_run(in, L.v, la, lb, it, i, j, prev, j < b ? &it[j] : NULL, &split_runs);
			for (size_t k = i; k < j; k++) {
				if (it[k].corr) {
					resolved++;
					if (kj_map_put(in->orphans, it[k].offset, it[k].corr)) {
						free(L.v);
						return KJ_ENOMEM;
					}
				}
			}
			/* the run's correlations are now set: the next run must not take them as anchors */
			i = j;
		}
		a = b;
	}
	free(L.v);
	char what[400];
	snprintf(what, sizeof(what),
		 "%zu graph record(s) ran with no correlation id (kernels, memsets or copies inside "
		 "conditional nodes' bodies); %zu tied to the graph launch that ran them by their graph "
		 "and time (%zu run(s) between two launches split where the GPU waited longest), %zu "
		 "left to no launch",
		 in->norphans, resolved, split_runs, in->norphans - resolved);
	return kj_db_problem(in->db, in->pid, -1, resolved == in->norphans ? "info" : "warning", what);
}

uint32_t ing_orphan_correlation(const struct ingest *in, uint64_t offset, uint32_t corr)
{
	uint64_t v;
	if (corr || !in->norphans || !kj_map_get(in->orphans, offset, &v))
		return corr;
	return (uint32_t)v;
}
