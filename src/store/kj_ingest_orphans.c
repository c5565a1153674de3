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

int ing_orphan_note(struct ingest *in, uint64_t offset, int64_t start, int64_t end, uint64_t node,
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
	in->norphans += corr == 0;
	return 0;
}

/* The host start of the launch of correlation c (INT64_MAX when it is unknown). */
static int64_t host_start(const struct ingest *in, uint32_t c)
{
	const struct kj_rec_issue *g = ing_issue(in, c);
	return g ? g->start_ns : INT64_MAX;
}

/* The latest launch of exec that began at or before t: its correlation, or 0. */
static uint32_t latest_launch(const struct ingest *in, uint32_t exec, int64_t t)
{
	uint32_t best = 0;
	int64_t at = INT64_MIN;
	for (size_t i = 0; i < in->nissues; i++) {
		const struct kj_rec_issue *g = &in->issues[i];
		if (g->op == KJ_ISSUE_GRAPH_LAUNCH && g->exec_id == exec && g->start_ns <= t && g->start_ns >= at)
			best = g->correlation, at = g->start_ns;
	}
	return best;
}

/* An exec none of whose records is correlated: its launches (host order) ran one after another,
 * so its records split into as many runs as it had launches, at the longest waits, each run to the
 * next launch in order; a run that would start before its launch's host call (or records fewer
 * than launches) falls back to the latest launch made before each record started. */
static void settle_unanchored(const struct ingest *in, struct gitem *it, size_t lo, size_t hi)
{
	uint32_t exec = it[lo].exec;
	size_t n = 0, m = hi - lo;
	for (size_t i = 0; i < in->nissues; i++)
		n += in->issues[i].op == KJ_ISSUE_GRAPH_LAUNCH && in->issues[i].exec_id == exec;
	const struct kj_rec_issue **l = n && m >= n ? calloc(n, sizeof(*l)) : NULL;
	size_t *cut = l ? calloc(n, sizeof(*cut)) : NULL;
	int ok = cut != NULL;
	if (ok) {
		size_t k = 0;
		for (size_t i = 0; i < in->nissues; i++)
			if (in->issues[i].op == KJ_ISSUE_GRAPH_LAUNCH && in->issues[i].exec_id == exec)
				l[k++] = &in->issues[i];
		for (size_t a = 1; a < n; a++) /* host order: insertion sort, launches are few */
			for (size_t b = a; b > 0 && l[b]->start_ns < l[b - 1]->start_ns; b--) {
				const struct kj_rec_issue *t = l[b];
				l[b] = l[b - 1];
				l[b - 1] = t;
			}
		/* the n-1 longest waits between consecutive records start runs 2..n */
		cut[0] = lo;
		for (size_t c = 1; c < n && ok; c++) {
			int64_t best = INT64_MIN;
			size_t at = 0;
			for (size_t i = lo + 1; i < hi; i++) {
				int64_t gap = it[i].start - it[i - 1].end;
				int taken = 0;
				for (size_t j = 1; j < c && !taken; j++)
					taken = cut[j] == i;
				if (!taken && gap > best)
					best = gap, at = i;
			}
			cut[c] = at;
			ok = at > lo;
		}
		for (size_t a = 2; a < n; a++) /* cuts in time order */
			for (size_t b = a; b > 1 && cut[b] < cut[b - 1]; b--) {
				size_t t = cut[b];
				cut[b] = cut[b - 1];
				cut[b - 1] = t;
			}
		for (size_t r = 0; r < n && ok; r++)
			ok = it[cut[r]].start >= l[r]->start_ns;
		for (size_t r = 0; r < n && ok; r++)
			for (size_t i = cut[r]; i < (r + 1 < n ? cut[r + 1] : hi); i++)
				it[i].corr = l[r]->correlation;
	}
	if (!ok)
		for (size_t i = lo; i < hi; i++)
			it[i].corr = latest_launch(in, it[i].exec, it[i].start);
	free(l);
	free(cut);
}

/* Orphans it[lo..hi) lie between correlated records prev (or none) and next (or none). */
static void settle_run(const struct ingest *in, struct gitem *it, size_t lo, size_t hi,
		       const struct gitem *prev, const struct gitem *next, size_t *split_runs)
{
	if (!prev && !next) {
		settle_unanchored(in, it, lo, hi);
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
			it[i].corr = it[i].start >= h ? next->corr : latest_launch(in, it[i].exec, it[i].start);
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
	struct gitem *it = in->gitems;
	size_t n = in->ngitems, split_runs = 0, resolved = 0;
	if (!in->norphans)
		return 0;
	qsort(it, n, sizeof(*it), by_exec_start);
	for (size_t a = 0; a < n;) {
		size_t b = a;
		while (b < n && it[b].exec == it[a].exec)
			b++;
		const struct gitem *prev = NULL;
		for (size_t i = a; i < b;) {
			if (it[i].corr) {
				prev = &it[i++];
				continue;
			}
			size_t j = i;
			while (j < b && !it[j].corr)
				j++;
			settle_run(in, it, i, j, prev, j < b ? &it[j] : NULL, &split_runs);
			for (size_t k = i; k < j; k++) {
				if (it[k].corr) {
					resolved++;
					if (kj_map_put(in->orphans, it[k].offset, it[k].corr))
						return KJ_ENOMEM;
				}
			}
			/* the run's correlations are now set: the next run must not take them as anchors */
			i = j;
		}
		a = b;
	}
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
