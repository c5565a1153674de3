/* `kjoule pipeline --from RUN`: which operations of a run's kept iteration belong to which NVTX
 * range (the phases), as ordinal ranges of sequence_op. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_pipeline.h"

struct range {
	int64_t start_ns, end_ns;
	char name[96];
};

struct op {
	int64_t ordinal;
	int64_t t_ns; /* launch time of a kernel; other operations take their neighbour's */
};

/* The operations of the iteration in order, each with a host time. */
static int ops_load(sqlite3 *db, int64_t it, struct op **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (kj_db_prepare(db, "SELECT s.ordinal, l.launch_ns FROM sequence_op s LEFT JOIN launch_params l"
			  " ON l.id = s.launch_params_id WHERE s.iteration = ? ORDER BY s.ordinal, s.id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, it);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct op *no = kj_grow(*out, &cap, *n, sizeof(*no), 256);
		if (!no) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
		*out = no;
		no[*n].ordinal = sqlite3_column_int64(st, 0);
		no[*n].t_ns = kj_db_col_i64(st, 1, -1);
		(*n)++;
	}
	sqlite3_finalize(st);
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
	return 0;
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

int kj_pipeline_from_run(const char *run, int depth, const char *region, struct kj_pipeline *p,
			 int64_t *iteration, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct range *rg = NULL;
	struct op *ops = NULL;
	size_t nr = 0, capr = 0, nops = 0, capp = 0;
	char kept[160] = "", pidtxt[32] = "";
	int rc;

	err[0] = 0;
	memset(p, 0, sizeof(*p));
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
	snprintf(p->name, sizeof(p->name), "%s#%" PRId64, kept, *iteration);
	if ((rc = ops_load(db, *iteration, &ops, &nops)))
		goto out;
	if (!nops) {
		snprintf(err, errlen, "%s: iteration %s#%" PRId64 " has no operations in sequence_op", run, kept,
			 *iteration);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	/* the kept range: the instance of its name on its process that holds the iteration's launches */
	int64_t t_first = ops[0].t_ns, t_last = ops[nops - 1].t_ns;
	int64_t pid = pidtxt[0] ? strtoll(pidtxt, NULL, 10) : -1;
	if (kj_db_prepare(db, "SELECT start_ns, coalesce(end_ns, 9223372036854775807), depth, tid FROM nvtx_range"
			  " WHERE name = ?1 AND (?2 < 0 OR pid = ?2) AND start_ns <= ?3"
			  " AND coalesce(end_ns, 9223372036854775807) >= ?4 ORDER BY start_ns DESC LIMIT 1", &st)) {
		rc = KJ_EDB;
		goto out;
	}
	sqlite3_bind_text(st, 1, kept, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, t_first);
	sqlite3_bind_int64(st, 4, t_last);
	if (sqlite3_step(st) != SQLITE_ROW) {
		if (kj_db_has_column(db, "sequence_op", "kernel_id") &&
		    kj_db_one_i64(db, "SELECT count(*) FROM sequence_op WHERE iteration = ?1 AND kernel_id IS NOT NULL",
				  *iteration, 0) > 0)
			snprintf(err, errlen, "%s: the kept iteration %s ran as CUDA graph launches: `pipeline --from`"
				 " groups a run's own launches by the ranges around them, and a graph's kernels were"
				 " launched at capture, not in the iteration (not supported yet; `kjoule compare`"
				 " shows per-layer regions from the ranges open at capture)", run, p->name);
		else
			snprintf(err, errlen, "%s: no NVTX range '%s' holds the kept iteration's launches", run, kept);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	int64_t k0 = sqlite3_column_int64(st, 0), k1 = sqlite3_column_int64(st, 1);
	int64_t kdepth = sqlite3_column_int64(st, 2), ktid = sqlite3_column_int64(st, 3);
	sqlite3_finalize(st);
	st = NULL;
	if (kj_db_prepare(db, region ?
			  "SELECT start_ns, coalesce(end_ns, ?3), name FROM nvtx_range WHERE (?1 < 0 OR pid = ?1)"
			  " AND tid = ?5 AND start_ns >= ?2 AND start_ns <= ?3 AND name = ?4 ORDER BY start_ns" :
			  "SELECT start_ns, coalesce(end_ns, ?3), name FROM nvtx_range WHERE (?1 < 0 OR pid = ?1)"
			  " AND tid = ?5 AND start_ns >= ?2 AND start_ns <= ?3 AND depth = ?4 ORDER BY start_ns", &st)) {
		rc = KJ_EDB;
		goto out;
	}
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, k0);
	sqlite3_bind_int64(st, 3, k1);
	if (region)
		sqlite3_bind_text(st, 4, region, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_int64(st, 4, kdepth + depth);
	sqlite3_bind_int64(st, 5, ktid);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct range *nrg = kj_grow(rg, &capr, nr, sizeof(*nrg), 64);
		if (!nrg) {
			rc = KJ_ENOMEM;
			goto out;
		}
		rg = nrg;
		rg[nr].start_ns = sqlite3_column_int64(st, 0);
		rg[nr].end_ns = sqlite3_column_int64(st, 1);
		const char *nm = (const char *)sqlite3_column_text(st, 2);
		snprintf(rg[nr].name, sizeof(rg[nr].name), "%s", nm ? nm : "?");
		nr++;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (depth == 0 && !region) {
		/* the iteration itself: one phase */
		rc = phase_add(p, &capp, p->name, ops[0].ordinal, ops[nops - 1].ordinal);
		goto out;
	}
	if (!nr) {
		if (region)
			snprintf(err, errlen, "%s: no NVTX range named '%s' inside %s", run, region, p->name);
		else
			snprintf(err, errlen, "%s: no NVTX range at depth %d inside %s (the deepest there is %" PRId64
				 ")", run, depth, p->name,
				 kj_db_one_i64(db, "SELECT max(depth) FROM nvtx_range", 0, kdepth) - kdepth);
		rc = KJ_ENOTFOUND;
		goto out;
	}
	/* walk the operations: each belongs to the range holding its time, or to the gap before the
	 * next range (depth mode only); consecutive operations of one group form one phase */
	size_t r = 0;
	long cur = -2; /* group: range index, or -(index of next range) - 10 for a gap */
	int64_t first = 0, prev = 0;
	char name[96] = "";
	for (size_t i = 0; i <= nops; i++) {
		long g = -3;
		char gname[96] = "";
		if (i < nops) {
			int64_t t = ops[i].t_ns;
			while (r < nr && rg[r].end_ns < t)
				r++;
			if (r < nr && rg[r].start_ns <= t) {
				g = (long)r;
				snprintf(gname, sizeof(gname), "%s", rg[r].name);
			} else if (region) {
				g = -1; /* outside every named range: left out */
			} else {
				g = -10 - (long)r;
				if (r == 0)
					snprintf(gname, sizeof(gname), "(before %.40s)", rg[0].name);
				else if (r == nr)
					snprintf(gname, sizeof(gname), "(after %.40s)", rg[nr - 1].name);
				else
					snprintf(gname, sizeof(gname), "(between %.40s and %.40s)", rg[r - 1].name,
						 rg[r].name);
			}
		}
		if (g != cur) {
			if (cur != -2 && cur != -1 && (rc = phase_add(p, &capp, name, first, prev)))
				goto out;
			cur = g;
			if (i < nops)
				first = ops[i].ordinal;
			snprintf(name, sizeof(name), "%s", gname);
		}
		if (i < nops)
			prev = ops[i].ordinal;
	}
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
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(rg);
	free(ops);
	return rc;
}
