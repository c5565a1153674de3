/* `kjoule pipeline --from RUN`: which operations of a run's kept iteration belong to which NVTX
 * range (the phases), as ordinal ranges of sequence_op. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"
#include "kj_pipeline.h"
#include "kj_pipeline_from.h"
#include "kj_store_w_pipeline.h"

struct range {
	int64_t id, start_ns, end_ns;
	char name[96];
};

/* Records which operations' correlation ids belong to graph kernels (a graph launch's kernels,
 * copies and memsets share it) in ops[].in_graph. */
static int mark_in_graph(struct kj_from_op *ops, size_t n)
{
	struct kj_map *corrs = kj_map_new();
	uint64_t one;
	if (!corrs)
		return KJ_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (ops[i].graph && kj_map_put(corrs, (uint64_t)ops[i].corr, 1)) {
			kj_map_free(corrs);
			return KJ_ENOMEM;
		}
	for (size_t i = 0; i < n; i++)
		ops[i].in_graph = ops[i].graph || (!ops[i].kernel && kj_map_get(corrs, (uint64_t)ops[i].corr, &one));
	kj_map_free(corrs);
	return 0;
}

/* The operations of the iteration in order, each with a host time (a graph kernel: its graph
 * launch's), its correlation id and, for graph kernels, the range open at capture. */
static int ops_load(sqlite3 *db, int64_t it, struct kj_from_op **out, size_t *n)
{
	struct kj_store_iter_op *rows = NULL;
	int rc = kj_store_iter_ops(db, it, &rows, n);
	*out = NULL;
	if (rc)
		return rc;
	if (*n && !(*out = calloc(*n, sizeof(**out)))) {
		free(rows);
		*n = 0;
		return KJ_ENOMEM;
	}
	for (size_t i = 0; i < *n; i++) {
		struct kj_from_op *o = &(*out)[i];
		o->ordinal = rows[i].ordinal;
		o->t_ns = rows[i].t_ns;
		o->corr = rows[i].corr;
		o->kernel = rows[i].is_kernel;
		o->graph = rows[i].has_kernel_id;
		o->capture = rows[i].capture_range_id;
		o->key = KJ_FROM_PENDING;
	}
	free(rows);
	/* copies, memsets and events: the previous kernel's time (the next one's at the start) */
	int64_t last = -1;
	for (size_t i = 0; i < *n; i++) {
		if ((*out)[i].t_ns >= 0)
			last = (*out)[i].t_ns;
		else
			(*out)[i].t_ns = last;
	}
	for (size_t i = *n; i-- > 0;) {
		if ((*out)[i].t_ns >= 0)
			last = (*out)[i].t_ns;
		else
			(*out)[i].t_ns = last;
	}
	return mark_in_graph(*out, *n);
}

static int phase_add(struct kj_pipeline *p, size_t *cap, const char *name, int64_t first, int64_t last)
{
	struct kj_phase *np = kj_grow(p->phases, cap, (size_t)p->nphases, sizeof(*np), 16);
	if (!np)
		return KJ_ENOMEM;
	p->phases = np;
	struct kj_phase *ph = &np[p->nphases++];
	memset(ph, 0, sizeof(*ph));
	snprintf(ph->name, sizeof(ph->name), "%s", name);
	ph->kind = KJ_PHASE_SEQ;
	snprintf(ph->precision, sizeof(ph->precision), "n/a");
	ph->first = first;
	ph->last = last;
	ph->repeat = 1;
	return 0;
}

/* The kept range: the instance of its name on its process that holds the iteration's launches
 * (k0..k1, its depth and thread). Not found: KJ_ENOTFOUND with err saying why. */
static int kept_range(sqlite3 *db, const char *run, const char *kept, const char *label, int64_t pid,
		      const struct kj_from_op *ops, size_t nops, int64_t out[4], char *err, size_t errlen)
{
	int found = kj_store_nvtx_holding(db, kept, pid, ops[0].t_ns, ops[nops - 1].t_ns, out);
	if (found < 0)
		return found;
	if (found)
		return 0;
	size_t graph = 0;
	for (size_t i = 0; i < nops; i++)
		graph += ops[i].graph != 0;
	if (graph)
		snprintf(err, errlen, "%s: no NVTX range '%s' holds the launches of the kept iteration %s, which"
			 " ran as CUDA graph launches: its graph kernels lack their graph launch's time"
			 " (kernel.launch_ns; runs ingested before it was kept): trace it again, or ingest its spool again", run, kept,
			 label);
	else
		snprintf(err, errlen, "%s: no NVTX range '%s' holds the kept iteration's launches", run, kept);
	return KJ_ENOTFOUND;
}

struct ranges_acc {
	struct range *v;
	size_t n, cap;
};

/* One eager range appended to the list ud. */
static int range_add(const struct kj_store_nvtx_row *row, void *ud)
{
	struct ranges_acc *a = ud;
	struct range *nrg = kj_grow(a->v, &a->cap, a->n, sizeof(*nrg), 64);
	if (!nrg)
		return KJ_ENOMEM;
	a->v = nrg;
	struct range *r = &nrg[a->n++];
	r->id = row->id;
	r->start_ns = row->start_ns;
	r->end_ns = row->end_ns;
	snprintf(r->name, sizeof(r->name), "%s", row->name ? row->name : "?");
	return 0;
}

/* The ranges of the eager rule, by start: inside the kept range k (start, end, depth, tid) on its
 * thread, at depth k's + depth, or named region. */
static int eager_ranges_load(sqlite3 *db, int64_t pid, const int64_t k[4], int depth, const char *region,
			     struct range **out, size_t *nr)
{
	struct ranges_acc a = {NULL, 0, 0};
	int rc = kj_store_nvtx_inside(db, pid, k, depth, region, range_add, &a);
	*out = a.v;
	*nr = a.n;
	return rc;
}

/* The eager rule, for operations not of a graph launch: each belongs to the range holding its time
 * (key: the range's id), or to the gap before the next range (key -10 - r, depth mode), or is
 * left out (region mode). Without ranges every one is a gap (left out with region). */
static void eager_assign(struct kj_from_op *ops, size_t nops, const struct range *rg, size_t nr,
			 const char *region)
{
	size_t r = 0;
	for (size_t i = 0; i < nops; i++) {
		struct kj_from_op *o = &ops[i];
		if (o->in_graph)
			continue;
		int64_t t = o->t_ns;
		while (r < nr && rg[r].end_ns < t)
			r++;
		if (r < nr && rg[r].start_ns <= t) {
			o->key = rg[r].id;
			snprintf(o->name, sizeof(o->name), "%s", rg[r].name);
		} else if (region) {
			o->key = KJ_FROM_OUT;
		} else if (!nr) {
			o->key = KJ_FROM_GAP;
		} else {
			o->key = -10 - (int64_t)r;
			if (r == 0)
				snprintf(o->name, sizeof(o->name), "(before %.40s)", rg[0].name);
			else if (r == nr)
				snprintf(o->name, sizeof(o->name), "(after %.40s)", rg[nr - 1].name);
			else
				snprintf(o->name, sizeof(o->name), "(between %.40s and %.40s)", rg[r - 1].name,
					 rg[r].name);
		}
	}
}

/* Gaps of the graph rule (KJ_FROM_GAP) are named after the groups around them in the sequence:
 * "(between A and B)", "(before B)", "(after A)", or "(outside every range)". */
static void gaps_name(struct kj_from_op *ops, size_t nops)
{
	for (size_t i = 0; i < nops;) {
		if (ops[i].key != KJ_FROM_GAP) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < nops && ops[j].key == KJ_FROM_GAP)
			j++;
		const char *a = NULL, *b = NULL;
		for (size_t k = i; k-- > 0 && !a;)
			if (ops[k].key > 0)
				a = ops[k].name;
		for (size_t k = j; k < nops && !b; k++)
			if (ops[k].key > 0)
				b = ops[k].name;
		char nm[96];
		if (a && b)
			snprintf(nm, sizeof(nm), "(between %.40s and %.40s)", a, b);
		else if (b)
			snprintf(nm, sizeof(nm), "(before %.40s)", b);
		else if (a)
			snprintf(nm, sizeof(nm), "(after %.40s)", a);
		else
			snprintf(nm, sizeof(nm), "(outside every range)");
		for (; i < j; i++)
			snprintf(ops[i].name, sizeof(ops[i].name), "%s", nm);
	}
}

/* Consecutive operations of one group (key and name) form one phase; left-out ones none. */
static int phases_build(struct kj_pipeline *p, const struct kj_from_op *ops, size_t nops)
{
	size_t capp = 0;
	for (size_t i = 0; i < nops;) {
		size_t j = i + 1;
		while (j < nops && ops[j].key == ops[i].key && !strcmp(ops[j].name, ops[i].name))
			j++;
		int rc;
		if (ops[i].key != KJ_FROM_OUT &&
		    (rc = phase_add(p, &capp, ops[i].name, ops[i].ordinal, ops[j - 1].ordinal)))
			return rc;
		i = j;
	}
	return 0;
}

/* A graph-launched iteration with no range open at any capture: why, and what to do. */
static void no_capture_ranges(const char *run, const char *label, const struct kj_from_graph *g, int has_column,
			      char *err, size_t errlen)
{
	if (!has_column)
		snprintf(err, errlen, "%s: the kept iteration %s ran as CUDA graph launches, and the run was"
			 " ingested before kjoule kept the NVTX ranges open at capture (no column"
			 " kernel.capture_range_id): trace it again with this kjoule (or ingest its spool again)",
			 run, label);
	else
		snprintf(err, errlen, "%s: the kept iteration %s ran as CUDA graph launches and no NVTX range was"
			 " open when its graphs were captured (kernel.capture_range_id is empty for all %zu of its"
			 " graph kernels), so there are no layers to group them by: push ranges around the modules"
			 " while capturing (e.g. examples/torchvision_nvtx.py's forward hooks, with the forward"
			 " called inside torch.cuda.graph capture: its --graph), or take the iteration whole with"
			 " --layers 0",
			 run, label, g->graph_ops);
}

/* No operation fell in any range: the message for --region NAME or --layers DEPTH. */
static void no_groups(sqlite3 *db, const char *run, const char *label, int depth, const char *region,
		      int64_t kdepth, const struct kj_from_graph *g, char *err, size_t errlen)
{
	if (region && g->captured)
		snprintf(err, errlen, "%s: no NVTX range named '%s' inside %s, nor open when its graphs were"
			 " captured", run, region, label);
	else if (region)
		snprintf(err, errlen, "%s: no NVTX range named '%s' inside %s", run, region, label);
	else if (g->captured)
		snprintf(err, errlen, "%s: no NVTX range %d level(s) below the capture root %s%s%s of %s's graphs"
			 " (the deepest capture range is %" PRId64 " below it), nor at depth %d inside it", run,
			 depth, g->root[0] ? "'" : "(the capture itself: no range enclosed every captured kernel)",
			 g->root, g->root[0] ? "'" : "", label, g->deepest, depth);
	else
		snprintf(err, errlen, "%s: no NVTX range at depth %d inside %s (the deepest there is %" PRId64 ")",
			 run, depth, label, kj_store_nvtx_max_depth(db, kdepth) - kdepth);
}

int kj_pipeline_from_run(const char *run, int depth, const char *region, struct kj_pipeline *p,
			 int64_t *iteration, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	struct range *rg = NULL;
	struct kj_from_op *ops = NULL;
	struct kj_from_graph g;
	size_t nr = 0, nops = 0, capp = 0;
	int64_t k[4];
	char kept[160] = "", pidtxt[32] = "";
	int rc;

	err[0] = 0;
	memset(p, 0, sizeof(*p));
	memset(&g, 0, sizeof(g));
	snprintf(p->file, sizeof(p->file), "%s", run);
	snprintf(p->precision, sizeof(p->precision), "n/a");
	if ((rc = kj_db_open(run, 0, &db))) {
		snprintf(err, errlen, "%s: cannot open the run database (%s)", run, kj_strerror(rc));
		return rc;
	}
	kj_db_meta_get(db, "params_iteration", kept, sizeof(kept));
	kj_db_meta_get(db, "params_iteration_pid", pidtxt, sizeof(pidtxt));
	char *hash = strrchr(kept, '#');
	if (!kept[0] || !hash) {
		snprintf(err, errlen, "%s: no kept iteration (meta params_iteration): trace with NVTX ranges "
			 "around each iteration, `kjoule run` keeps the middle one", run);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	*hash = 0;
	*iteration = strtoll(hash + 1, NULL, 10);
	snprintf(p->name, sizeof(p->name), "%.74s#%" PRId64, kept, *iteration);
	if ((rc = ops_load(db, *iteration, &ops, &nops)))
		goto out;
	if (!nops) {
		snprintf(err, errlen, "%s: iteration %s#%" PRId64 " has no operations in sequence_op", run, kept,
			 *iteration);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	int64_t pid = pidtxt[0] ? strtoll(pidtxt, NULL, 10) : -1;
	if ((rc = kept_range(db, run, kept, p->name, pid, ops, nops, k, err, errlen)))
		goto out;
	if (depth == 0 && !region) {
		/* the iteration itself: one phase */
		rc = phase_add(p, &capp, p->name, ops[0].ordinal, ops[nops - 1].ordinal);
		goto out;
	}
	if ((rc = kj_from_graph_assign(db, run, *iteration, kept, depth, region, ops, nops, &g, err, errlen)))
		goto out;
	if (g.graph_ops && !g.captured) {
		no_capture_ranges(run, p->name, &g, kj_db_caps(db)->kernel_capture_range_id, err, errlen);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	if ((rc = eager_ranges_load(db, pid, k, depth, region, &rg, &nr)))
		goto out;
	if (!nr && !g.assigned) {
		no_groups(db, run, p->name, depth, region, k[2], &g, err, errlen);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	eager_assign(ops, nops, rg, nr, region);
	gaps_name(ops, nops);
	if (g.captured)
		snprintf(p->description, sizeof(p->description), "graph kernels by the NVTX ranges open at capture,"
			 " below %s%.60s%s", g.root[0] ? "'" : "", g.root[0] ? g.root : "the capture",
			 g.root[0] ? "'" : "");
	if ((rc = phases_build(p, ops, nops)))
		goto out;
	if (!p->nphases) {
		snprintf(err, errlen, "%s: the ranges named '%s' inside %s hold no GPU work", run,
			 region ? region : "?", p->name);
		rc = KJ_ENOTFOUND;
	}
out:
	if (rc && !err[0])
		snprintf(err, errlen, "%s: %s", run, kj_strerror(rc));
	if (rc) {
		free(p->phases);
		p->phases = NULL;
		p->nphases = 0;
	}
	kj_db_close(db);
	free(rg);
	free(ops);
	return rc;
}
