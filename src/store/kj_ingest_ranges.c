/* Spool ingest: NVTX markers paired into ranges, and the --params-iteration sequence. */
#include "kj_ingest_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_kernel_class.h"

static int cmp_marker(const void *a, const void *b)
{
	const struct marker *x = a, *y = b;
	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns ? 1 : 0;
}

struct open_range {
	uint32_t id, tid;
	int64_t row, start_ns;
	int depth;
	int64_t parent;
	uint32_t name_id, domain_id;
};

/* Pair NVTX start and end markers into ranges; depth and parent come from the ranges open on
 * the same thread when one starts. A range that never ends keeps end_ns NULL. */
int ing_put_ranges(struct ingest *in)
{
	struct open_range *open = NULL;
	size_t nopen = 0, cap = 0;
	int64_t next_row;
	int rc = 0;
	sqlite3_stmt *st = in->st[S_NVTX];
	sqlite3_stmt *q;
	if (!in->nmarkers)
		return 0;
	qsort(in->markers, in->nmarkers, sizeof(*in->markers), cmp_marker);
	if (kj_db_prepare(in->db, "SELECT coalesce(max(id), 0) + 1 FROM nvtx_range", &q))
		return KJ_EDB;
	sqlite3_step(q);
	next_row = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	for (size_t i = 0; i < in->nmarkers && !rc; i++) {
		const struct marker *m = &in->markers[i];
		if (m->flags & 2) { /* start */
			if (nopen == cap) {
				cap = cap ? cap * 2 : 64;
				struct open_range *n = realloc(open, cap * sizeof(*n));
				if (!n) {
					rc = KJ_ENOMEM;
					break;
				}
				open = n;
			}
			struct open_range *o = &open[nopen++];
			o->id = m->id;
			o->tid = m->tid;
			o->row = next_row++;
			o->start_ns = m->t_ns;
			o->name_id = m->name_id;
			o->domain_id = m->domain_id;
			o->depth = 0;
			o->parent = 0;
			for (size_t j = nopen - 1; j-- > 0;)
				if (open[j].tid == m->tid) {
					o->depth = open[j].depth + 1;
					o->parent = open[j].row;
					break;
				}
		} else if (m->flags & 4) { /* end */
			size_t j = nopen;
			while (j-- > 0)
				if (open[j].id == m->id)
					break;
			if (j == (size_t)-1)
				continue;
			struct open_range o = open[j];
			memmove(open + j, open + j + 1, (nopen - j - 1) * sizeof(*open));
			nopen--;
			sqlite3_bind_int64(st, 1, o.row);
			sqlite3_bind_int64(st, 2, in->pid);
			sqlite3_bind_int64(st, 3, o.tid);
			if (ing_str(in, o.domain_id))
				sqlite3_bind_text(st, 4, ing_str(in, o.domain_id), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 5, ing_str(in, o.name_id) ? ing_str(in, o.name_id) : "", -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 6, o.start_ns);
			sqlite3_bind_int64(st, 7, m->t_ns);
			sqlite3_bind_int64(st, 8, o.depth);
			ing_bind_opt_i64(st, 9, o.parent != 0, o.parent);
			sqlite3_bind_text(st, 10, "range", -1, SQLITE_STATIC);
			rc = ing_step_done(in, st);
			in->stats->nvtx_ranges++;
		}
	}
	for (size_t j = 0; j < nopen && !rc; j++) { /* never closed */
		const struct open_range *o = &open[j];
		sqlite3_bind_int64(st, 1, o->row);
		sqlite3_bind_int64(st, 2, in->pid);
		sqlite3_bind_int64(st, 3, o->tid);
		if (ing_str(in, o->domain_id))
			sqlite3_bind_text(st, 4, ing_str(in, o->domain_id), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, ing_str(in, o->name_id) ? ing_str(in, o->name_id) : "", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, o->start_ns);
		sqlite3_bind_int64(st, 8, o->depth);
		ing_bind_opt_i64(st, 9, o->parent != 0, o->parent);
		sqlite3_bind_text(st, 10, "range", -1, SQLITE_STATIC);
		rc = ing_step_done(in, st);
		in->stats->nvtx_ranges++;
	}
	free(open);
	return rc;
}


/* NVTX ranges pushed while a stream is captured fire at capture time, never when the graph runs:
 * each graph kernel whose node a stream-capture launch made gets the innermost range of its process
 * open at that launch (kernel.capture_range_id), so per-layer regions hold inside graph launches.
 * Marker records carry CUPTI's thread ids, not the OS's, so the process and the time decide. */
int ing_put_capture_ranges(struct ingest *in)
{
	sqlite3_stmt *q = NULL, *up = NULL;
	struct kj_map *memo = NULL;
	int rc = 0;
	if (!in->ngraph_rows || !in->nmarkers)
		return 0;
	memo = kj_map_new();
	if (!memo)
		return KJ_ENOMEM;
	if (kj_db_prepare(in->db, "SELECT id FROM nvtx_range WHERE pid = ?1 AND start_ns <= ?2 AND"
			      " (end_ns IS NULL OR end_ns >= ?2) ORDER BY depth DESC, start_ns DESC LIMIT 1", &q) ||
	    kj_db_prepare(in->db, "UPDATE kernel SET capture_range_id = ?1 WHERE id = ?2", &up)) {
		rc = KJ_EDB;
		goto out;
	}
	for (size_t i = 0; i < in->ngraph_rows && !rc; i++) {
		int64_t li = in->graph_row_list[i][1];
		const struct launch_info *l = &in->launches[li];
		uint64_t range;
		/* node parameters read at instantiation (node by node) were not captured inside a range */
		if (l->correlation >= KJ_NODE_CORRELATION_BASE)
			continue;
		if (!kj_map_get(memo, (uint64_t)li, &range)) {
			range = 0;
			sqlite3_reset(q);
			sqlite3_bind_int64(q, 1, in->pid);
			sqlite3_bind_int64(q, 2, l->launch_ns);
			if (sqlite3_step(q) == SQLITE_ROW)
				range = (uint64_t)sqlite3_column_int64(q, 0);
			if (kj_map_put(memo, (uint64_t)li, range)) {
				rc = KJ_ENOMEM;
				break;
			}
		}
		if (!range)
			continue;
		sqlite3_bind_int64(up, 1, (int64_t)range);
		sqlite3_bind_int64(up, 2, in->graph_row_list[i][0]);
		rc = ing_step_done(in, up);
	}
out:
	sqlite3_finalize(q);
	sqlite3_finalize(up);
	kj_map_free(memo);
	return rc;
}

static int64_t query_int(sqlite3 *db, const char *sql, int64_t pid, const char *text, int64_t arg)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (kj_db_prepare(db, sql, &st))
		return -1;
	sqlite3_bind_int64(st, 1, pid);
	if (text)
		sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, arg);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* [*lo, *hi] widened to hold the correlation c */
static void widen(int64_t c, int64_t *lo, int64_t *hi)
{
	if (c < *lo)
		*lo = c;
	if (c > *hi)
		*hi = c;
}

/* The kernels of the graph launches made inside [start, end], in the order they ran, as sequence
 * ops of iteration n: each with the parameters of the launch that describes its node (stream
 * capture, or the node itself at instantiation) and the stream it ran on. */
static int put_graph_launches(struct ingest *in, int n, int64_t start, int64_t end, int64_t *seq,
			      int64_t *min_corr, int64_t *max_corr)
{
	sqlite3_stmt *k = NULL, *ins = NULL;
	int rc = 0;
	for (size_t i = 0; i < in->nissues && !rc; i++) {
		const struct kj_rec_issue *g = &in->issues[i];
		if (g->op != KJ_ISSUE_GRAPH_LAUNCH || g->start_ns < start || g->start_ns > end)
			continue;
		/* its kernels and memsets in the order they ran: a memset node (a tile scheduler's
		 * counter, a split-K semaphore) resets what the next kernel reads */
		if (!k && (kj_db_prepare(in->db, "SELECT id, graph_node_id, stream_id, 0, start_ns, 0 FROM kernel"
					 " WHERE pid = ?1 AND correlation_id = ?2 AND graph_node_id IS NOT NULL"
					 " UNION ALL SELECT id, graph_node_id, stream_id, 1, start_ns, bytes FROM memset"
					 " WHERE pid = ?1 AND correlation_id = ?2 AND graph_node_id IS NOT NULL"
					 " ORDER BY 5, 4, 1", &k) ||
			   kj_db_prepare(in->db, "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op,"
					 " correlation_id, launch_params_id, kernel_id, memset_id, bytes)"
					 " VALUES(?,?,?,?,?,?,?,?,?,?)", &ins))) {
			rc = KJ_EDB;
			break;
		}
		sqlite3_reset(k);
		sqlite3_bind_int64(k, 1, in->pid);
		sqlite3_bind_int64(k, 2, g->correlation);
		while (!rc && sqlite3_step(k) == SQLITE_ROW) {
			uint64_t li;
			if (sqlite3_column_int64(k, 3)) {
				sqlite3_bind_int64(ins, 1, n);
				sqlite3_bind_int64(ins, 2, (*seq)++);
				sqlite3_bind_int64(ins, 3, in->pid);
				sqlite3_bind_int64(ins, 4, sqlite3_column_int64(k, 2));
				sqlite3_bind_text(ins, 5, "memset", -1, SQLITE_STATIC);
				sqlite3_bind_int64(ins, 6, g->correlation);
				sqlite3_bind_null(ins, 7);
				sqlite3_bind_null(ins, 8);
				sqlite3_bind_int64(ins, 9, sqlite3_column_int64(k, 0));
				sqlite3_bind_int64(ins, 10, sqlite3_column_int64(k, 5));
				rc = ing_step_done(in, ins);
				continue;
			}
			const struct launch_info *l =
				kj_map_get(in->graph_rows, (uint64_t)sqlite3_column_int64(k, 0), &li)
					? &in->launches[li - 1] : NULL;
			int64_t stream = sqlite3_column_int64(k, 2), params_id = -1;
			if (l && l->unique_id > 0 && in->groups[l->group].ref) {
				struct launch_info on = *l;
				on.stream = (uint32_t)stream;
				if ((rc = ing_put_launch_params(in, &on, -1, n)) != 0)
					break;
				params_id = sqlite3_last_insert_rowid(in->db);
			}
			sqlite3_bind_int64(ins, 1, n);
			sqlite3_bind_int64(ins, 2, (*seq)++);
			sqlite3_bind_int64(ins, 3, in->pid);
			sqlite3_bind_int64(ins, 4, stream);
			sqlite3_bind_text(ins, 5, "kernel", -1, SQLITE_STATIC);
			sqlite3_bind_int64(ins, 6, g->correlation);
			ing_bind_opt_i64(ins, 7, params_id >= 0, params_id);
			sqlite3_bind_int64(ins, 8, sqlite3_column_int64(k, 0));
			sqlite3_bind_null(ins, 9);
			sqlite3_bind_null(ins, 10);
			rc = ing_step_done(in, ins);
		}
		widen(g->correlation, min_corr, max_corr);
	}
	sqlite3_finalize(k);
	sqlite3_finalize(ins);
	return rc;
}

/* --params-iteration N: every launch inside the N-th instance of the iteration range keeps its
 * parameters, and the iteration's kernels, copies and memsets become sequence_op rows in issue
 * (correlation) order, for whole-iteration replay. KJ_ITERATION_AUTO (the default) takes the
 * middle instance of a range that repeats, past the warm-up, and quietly none otherwise. */
int ing_put_iteration(struct ingest *in)
{
	char name[256] = "", what[2048];
	sqlite3_stmt *st = NULL;
	int n = in->opts ? in->opts->params_iteration : 0;
	int64_t start = -1, end = -1, seq = 0, min_corr = INT64_MAX, max_corr = -1;
	int rc = 0;
	int automatic = n == KJ_ITERATION_AUTO;
	if ((n <= 0 && !automatic) || in->pid < 0 || (automatic && in->opts->params_k <= 0))
		return 0;
	/* one process keeps it: the first (lowest pid) that has the instance. Replay takes an
	 * iteration by number, and the workers of one job would each keep the same number. */
	if (kj_db_has_row(in->db, "SELECT 1 FROM sequence_op LIMIT 1"))
		return 0;
	if (in->opts->iteration_range)
		snprintf(name, sizeof(name), "%s", in->opts->iteration_range);
	else if (in->opts->choose_range &&
		 (rc = in->opts->choose_range(in->db, in->pid, name, sizeof(name), NULL)) != 0)
		return rc;
	if (automatic) {
		int64_t count = name[0] ? query_int(in->db, "SELECT count(*) FROM nvtx_range WHERE pid = ?1 AND"
						    " name = ?2 AND depth = 0 AND end_ns IS NOT NULL",
						    in->pid, name, 0) : 0;
		if (count < 2)
			return 0;
		n = (int)(count / 2 + 1);
	}
	start = query_int(in->db, "SELECT start_ns FROM nvtx_range WHERE pid = ?1 AND name = ?2 AND"
			  " end_ns IS NOT NULL ORDER BY start_ns LIMIT 1 OFFSET ?3 - 1", in->pid, name, n);
	end = query_int(in->db, "SELECT end_ns FROM nvtx_range WHERE pid = ?1 AND name = ?2 AND"
			" end_ns IS NOT NULL ORDER BY start_ns LIMIT 1 OFFSET ?3 - 1", in->pid, name, n);
	if (!name[0] || start < 0 || end < 0) {
		snprintf(what, sizeof(what), "--params-iteration %d: process %lld has no instance %d of "
			 "the iteration range '%s'", n, (long long)in->pid, n, name[0] ? name : "(none)");
		return kj_db_problem(in->db, in->pid, -1, "warning", what);
	}
	if (kj_db_prepare(in->db, "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op,"
			  " correlation_id, launch_params_id, bytes, kind) VALUES(?,?,?,?,?,?,?,?,?)", &st))
		return KJ_EDB;
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		const struct launch_info *l = &in->launches[i];
		uint64_t made_node;
		if (l->launch_ns < start || l->launch_ns > end)
			continue;
		/* a launch into a capturing stream, or a graph node read at instantiation: it made a
		 * graph node and ran nothing itself */
		if (kj_map_get(in->node_corrs, l->correlation, &made_node))
			continue;
		int has_params = in->groups[l->group].ref != NULL; /* none with --no-params */
		if (has_params && (rc = ing_put_launch_params(in, l, -1, n)) != 0)
			break;
		sqlite3_bind_int64(st, 1, n);
		sqlite3_bind_int64(st, 2, seq++);
		sqlite3_bind_int64(st, 3, in->pid);
		sqlite3_bind_int64(st, 4, l->stream);
		sqlite3_bind_text(st, 5, "kernel", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, l->correlation);
		ing_bind_opt_i64(st, 7, has_params, sqlite3_last_insert_rowid(in->db));
		rc = ing_step_done(in, st);
		widen(l->correlation, &min_corr, &max_corr);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (!rc)
		rc = put_graph_launches(in, n, start, end, &seq, &min_corr, &max_corr);
	/* every host call made inside the window (event records and waits, copy and memset calls)
	 * widens the correlation span the window's copies and memsets are taken from */
	for (size_t i = 0; i < in->nseqops && max_corr >= 0; i++)
		if (in->seqops[i].t_ns >= start && in->seqops[i].t_ns <= end)
			widen(in->seqops[i].correlation, &min_corr, &max_corr);
	for (size_t i = 0; i < in->nissues && max_corr >= 0; i++)
		if (in->issues[i].start_ns >= start && in->issues[i].start_ns <= end &&
		    in->issues[i].correlation < KJ_NODE_CORRELATION_BASE)
			widen(in->issues[i].correlation, &min_corr, &max_corr);
	if (rc || max_corr < 0)
		return rc;
	/* the event records and waits made during the iteration: they order its streams */
	if (in->nseqops) {
		if (kj_db_prepare(in->db, "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op,"
				  " correlation_id, event_id) VALUES(?,0,?,?,?,?,?)", &st))
			return KJ_EDB;
		for (size_t i = 0; i < in->nseqops && !rc; i++) {
			const struct kj_rec_seqop *e = &in->seqops[i];
			if (e->t_ns < start || e->t_ns > end || (e->op != 1 && e->op != 2))
				continue;
			sqlite3_bind_int64(st, 1, n);
			sqlite3_bind_int64(st, 2, in->pid);
			sqlite3_bind_int64(st, 3, e->stream);
			sqlite3_bind_text(st, 4, e->op == 1 ? "event_record" : "event_wait", -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 5, e->correlation);
			sqlite3_bind_int64(st, 6, (int64_t)e->event);
			rc = ing_step_done(in, st);
		}
		sqlite3_finalize(st);
		if (rc)
			return rc;
	}
	snprintf(what, sizeof(what),
		 "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op, correlation_id, bytes, kind)"
		 " SELECT %d, 0, pid, stream_id, 'memcpy', correlation_id, bytes, kind FROM memcpy"
		 " WHERE pid = %lld AND correlation_id BETWEEN %lld AND %lld"
		 " UNION ALL SELECT %d, 0, pid, stream_id, 'memset', correlation_id, bytes, NULL FROM memset"
		 " WHERE pid = %lld AND correlation_id BETWEEN %lld AND %lld AND graph_node_id IS NULL;"
		 "UPDATE sequence_op SET ordinal = (SELECT rn FROM (SELECT id, row_number() OVER"
		 " (ORDER BY correlation_id, id) - 1 AS rn FROM sequence_op WHERE iteration = %d AND pid = %lld) t"
		 " WHERE t.id = sequence_op.id) WHERE iteration = %d AND pid = %lld;",
		 n, (long long)in->pid, (long long)min_corr, (long long)max_corr, n, (long long)in->pid,
		 (long long)min_corr, (long long)max_corr, n, (long long)in->pid, n, (long long)in->pid);
	rc = kj_db_exec(in->db, what, "iteration sequence");
	if (!rc) {
		snprintf(what, sizeof(what), "%s#%d", name, n);
		kj_db_meta_set(in->db, "params_iteration", what);
		snprintf(what, sizeof(what), "%lld", (long long)in->pid);
		kj_db_meta_set(in->db, "params_iteration_pid", what);
	}
	return rc;
}

