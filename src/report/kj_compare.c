/* kjoule compare: per-iteration decomposition of wall time and energy (docs/analysis-compare.md
 * defines every quantity computed here). */
#include "kj_compare_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_kernel_class.h"
#include "kj_kernel_waits.h"
#include "kj_replay_cond.h"
#include "kj_quantile.h"

/* tier by name rules when the run has none stored for a kernel */
static const char *name_tier(const struct kj_compare *c, int64_t name_id)
{
	const char *n = kj_names_get(&c->names, name_id);
	return kj_tier_classify(n, n);
}

/* Appends a group with no replay figures yet (-1: not measured). Its index, or -1 out of memory. */
static size_t new_group(struct kj_compare *c, int64_t unique_id, int64_t name_id, const char *tier)
{
	struct cmp_group *ng = realloc(c->groups, (c->n_groups + 1) * sizeof(*ng));
	if (!ng)
		return (size_t)-1;
	c->groups = ng;
	c->groups[c->n_groups] = (struct cmp_group){.unique_id = unique_id, .name_id = name_id,
						    .tier = kj_smap_intern(&c->tiers, tier),
						    .warm_ns = -1, .cold_ns = -1, .seq_ns = -1,
						    .energy_mj = -1, .power_mw = -1, .standin_mw = -1,
						    .energy_warm_mj = -1, .energy_cold_mj = -1,
						    .ew_ns = -1, .ec_ns = -1};
	return c->n_groups++;
}

static size_t group_of(struct kj_compare *c, struct kj_imap *gmap, const struct kj_act *a)
{
	int64_t key = a->unique_id >= 0 ? a->unique_id : -(a->name_id + 2);
	size_t g = kj_imap_get(gmap, key);
	if (g != (size_t)-1)
		return g;
	/* a kernel without a unique_kernel row: its own group, tier unknown */
	g = new_group(c, a->unique_id, a->name_id, name_tier(c, a->name_id));
	if (g == (size_t)-1 || kj_imap_put(gmap, key, g))
		return (size_t)-1;
	return g;
}

/* flag[g] = 1 for the group of every unique_id the query (its first column) gives. */
static void flag_groups(sqlite3 *db, const char *sql, struct kj_imap *gmap, int *flag)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, sql, &st))
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		size_t g = kj_imap_get(gmap, sqlite3_column_int64(st, 0));
		if (g != (size_t)-1)
			flag[g] = 1;
	}
	sqlite3_finalize(st);
}

/* The share of a unique kernel's launches that ran while a kernel of another stream of the same
 * process and device ran: their in-situ time holds that sharing. Over its first
 * KJ_OVERLAP_SAMPLE launches, looking back over the run's longest kernel (at most
 * KJ_OVERLAP_LOOKBACK_NS; *longest_ns, read on the first call, < 0 before) for kernels that
 * started earlier, so a huge run stays quick. 0 where none did or the query fails. */
#define KJ_OVERLAP_SAMPLE 1000
#define KJ_OVERLAP_LOOKBACK_NS 100000000LL
static double overlapped_share(sqlite3 *db, int64_t unique_id, int64_t *longest_ns)
{
	sqlite3_stmt *st = NULL;
	double share = 0;
	if (*longest_ns < 0)
		*longest_ns = kj_db_one_i64(db, "SELECT max(end_ns - start_ns) FROM kernel", 0, 0);
	int64_t lookback_ns = *longest_ns;
	if (kj_db_prepare(db, "SELECT count(*), sum(EXISTS (SELECT 1 FROM kernel b WHERE b.start_ns >= a.start_ns - ?2"
			      " AND b.start_ns < a.end_ns AND b.end_ns > a.start_ns AND b.stream_id != a.stream_id"
			      " AND b.device_id = a.device_id AND b.pid = a.pid))"
			      " FROM (SELECT * FROM kernel WHERE unique_id = ?1 LIMIT ?3) a", &st))
		return 0;
	sqlite3_bind_int64(st, 1, unique_id);
	sqlite3_bind_int64(st, 2, lookback_ns < KJ_OVERLAP_LOOKBACK_NS ? lookback_ns : KJ_OVERLAP_LOOKBACK_NS);
	sqlite3_bind_int(st, 3, KJ_OVERLAP_SAMPLE);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
		share = sqlite3_column_double(st, 1) / sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return share;
}

/* Kernels that wait on something outside themselves (kj_kernel_waits.h): by name, by a replay far
 * beyond their traced time, or by a replay the worker had to kill. Their replay figures are not
 * theirs: each launch is kept in the sums at its in-situ time, and the reason is reported. */
static int mark_waiters(sqlite3 *db, struct kj_compare *c, struct kj_imap *gmap)
{
	sqlite3_stmt *st = NULL;
	double *traced = calloc(c->n_groups + 1, sizeof(*traced));
	int *timed_out = calloc(c->n_groups + 1, sizeof(*timed_out));
	int *setter = calloc(c->n_groups + 1, sizeof(*setter));
	char **fill = calloc(c->n_groups + 1, sizeof(*fill)); /* warm replay's "data: ..." note */
	char why[320];
	int rc = 0;
	int64_t longest_ns = -1; /* the run's longest kernel, read when first needed */
	if (!traced || !timed_out || !setter || !fill) {
		rc = KJ_ENOMEM;
		goto out;
	}
	if (kj_db_prepare(db, "SELECT unique_id, avg(end_ns - start_ns) FROM kernel"
			      " WHERE unique_id IS NOT NULL AND end_ns >= start_ns GROUP BY unique_id", &st) == 0) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			size_t g = kj_imap_get(gmap, sqlite3_column_int64(st, 0));
			if (g != (size_t)-1)
				traced[g] = sqlite3_column_double(st, 1);
		}
		sqlite3_finalize(st);
	}
	flag_groups(db, "SELECT DISTINCT unique_id FROM replay_kernel WHERE lower(status) = 'failed'"
			" AND error LIKE '%timed out%'", gmap, timed_out);
	/* replay refused them before launching: they set a graph conditional's condition */
	flag_groups(db, "SELECT DISTINCT unique_id FROM replay_kernel WHERE lower(status) = 'skipped'"
			" AND error LIKE '%" KJ_COND_SETTER_WHY "%'", gmap, setter);
	/* replayed on stand-in data: the fill the worker fell back to when random data faulted */
	if (kj_db_prepare(db, "SELECT unique_id, error FROM replay_kernel WHERE lower(cache) = 'warm'"
			      " AND error LIKE 'data: %'", &st) == 0) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			size_t g = kj_imap_get(gmap, sqlite3_column_int64(st, 0));
			const char *e = (const char *)sqlite3_column_text(st, 1);
			if (g != (size_t)-1 && e && !fill[g] && !(fill[g] = strdup(e))) {
				sqlite3_finalize(st);
				rc = KJ_ENOMEM;
				goto out;
			}
		}
		sqlite3_finalize(st);
	}
	for (size_t g = 0; g < c->n_groups; g++) {
		struct cmp_group *gr = &c->groups[g];
		double rep = gr->warm_ns > gr->cold_ns ? gr->warm_ns : gr->cold_ns;
		int standin = 0, alone = 0;
		why[0] = 0;
		if (setter[g])
			snprintf(why, sizeof(why), KJ_COND_SETTER_WHY ", whose handle means something only"
				 " inside its graph");
		else if (kj_kernel_waits_by_name(cmp_group_name(c, gr), why, sizeof(why)) ||
			 kj_kernel_waits_by_replay(traced[g], rep, timed_out[g], why, sizeof(why)) ||
			 (gr->seq_ns > 0 && kj_kernel_waits_by_replay(traced[g], gr->seq_ns, 0, why, sizeof(why))))
			;
		else if (kj_kernel_standin_data(fill[g], traced[g], gr->warm_ns, why, sizeof(why)))
			standin = 1;
		else if (!fill[g] && kj_kernel_alone_differs(traced[g], gr->warm_ns, gr->cold_ns, gr->seq_ns, why,
						   sizeof(why)) &&
			 overlapped_share(db, gr->unique_id, &longest_ns) <= KJ_ALONE_OVERLAP_MAX)
			standin = alone = 1; /* it computes, as a stand-in replay does, but other work */
		else
			continue;
		gr->waits = 1;
		gr->waits_why = strdup(why);
		gr->traced_mean_ns = traced[g];
		gr->warm_ns = gr->cold_ns = gr->seq_ns = -1;
		/* it computes (unlike a spinning waiter): its power as replayed, over its in-situ time;
		 * a replay that did other work drew another power: its energy is extrapolated */
		gr->standin = standin;
		gr->standin_mw = standin && !alone && gr->power_mw > 0 ? gr->power_mw : -1;
		gr->energy_mj = gr->energy_warm_mj = gr->energy_cold_mj = -1;
		gr->power_mw = gr->ew_ns = gr->ec_ns = -1;
	}
out:
	if (fill)
		for (size_t g = 0; g < c->n_groups; g++)
			free(fill[g]);
	free(fill);
	free(traced);
	free(timed_out);
	free(setter);
	return rc;
}

/* The latest topology replay's outcome (replay_topology, created by the first one), if any. */
static int load_topology(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	c->topo_status[0] = c->topo_unbuilt[0] = c->topo_reason[0] = '\0';
	if (!kj_db_has_row(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'replay_topology'"))
		return 0;
	if (kj_db_prepare(db, "SELECT status, not_rebuilt, reason FROM replay_topology"
			      " ORDER BY replayed_at DESC, iteration LIMIT 1", &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *a = sqlite3_column_text(st, 0), *b = sqlite3_column_text(st, 1),
				    *r = sqlite3_column_text(st, 2);
		snprintf(c->topo_status, sizeof(c->topo_status), "%s", a ? (const char *)a : "");
		snprintf(c->topo_unbuilt, sizeof(c->topo_unbuilt), "%s", b ? (const char *)b : "");
		snprintf(c->topo_reason, sizeof(c->topo_reason), "%s", r ? (const char *)r : "");
	}
	sqlite3_finalize(st);
	return 0;
}

static int load_groups(sqlite3 *db, struct kj_compare *c, struct kj_imap *gmap)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (kj_db_prepare(db, "SELECT id, name_id, tier FROM unique_kernel", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *tier = (const char *)sqlite3_column_text(st, 2);
		int64_t uid = sqlite3_column_int64(st, 0);
		int64_t name_id = kj_db_col_i64(st, 1, -1);
		size_t g = new_group(c, uid, name_id, tier && *tier ? tier : name_tier(c, name_id));
		if (g == (size_t)-1 || kj_imap_put(gmap, uid, g))
			goto nomem;
	}
	sqlite3_finalize(st);
	/* isolated replays: rows with a median whose replay succeeded (status ok or relocated,
	 * as src/replay writes them; rows without a status count when they hold no error) */
	if (kj_db_prepare(db,
			  "SELECT unique_id, lower(cache), median_ns FROM replay_kernel"
			  " WHERE median_ns IS NOT NULL AND median_ns > 0 AND (lower(status) IN"
			  " ('ok', 'relocated') OR (status IS NULL AND (error IS NULL OR error = '')))",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		size_t g = kj_imap_get(gmap, sqlite3_column_int64(st, 0));
		const char *cache = (const char *)sqlite3_column_text(st, 1);
		double med = sqlite3_column_double(st, 2);
		if (g == (size_t)-1 || !cache)
			continue;
		if (!strcmp(cache, "warm")) {
			c->groups[g].warm_ns = med;
			c->n_replay_warm_rows++;
		} else if (!strcmp(cache, "cold")) {
			c->groups[g].cold_ns = med;
			c->n_replay_cold_rows++;
		} else if (!strcmp(cache, "sequence")) {
			c->groups[g].seq_ns = med;
			c->n_replay_seq_rows++;
		}
	}
	sqlite3_finalize(st);
	if (kj_db_prepare(db,
			  "SELECT unique_id, energy_mj_per_launch,"
			  " coalesce(power_mw, energy_mj_per_launch * launches / nullif(seconds, 0))"
			  " FROM replay_energy"
			  " WHERE energy_mj_per_launch IS NOT NULL AND energy_mj_per_launch >= 0",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		size_t g = kj_imap_get(gmap, sqlite3_column_int64(st, 0));
		if (g == (size_t)-1 || !isfinite(sqlite3_column_double(st, 1)))
			continue;
		c->groups[g].energy_mj = sqlite3_column_double(st, 1);
		/* mW; the power of the energy loop, from its own seconds where power_mw is absent */
		if (sqlite3_column_type(st, 2) != SQLITE_NULL && sqlite3_column_double(st, 2) > 0) {
			c->groups[g].power_mw = sqlite3_column_double(st, 2);
			c->groups[g].ew_ns = c->groups[g].energy_mj / c->groups[g].power_mw * 1e9;
		}
		c->groups[g].energy_warm_mj = c->groups[g].energy_mj;
		c->n_replay_energy_rows++;
	}
	sqlite3_finalize(st);
	/* with the data out of L2 (older runs lack the table): each kernel's energy is the mean of
	 * the two, as its time is, and its power that energy over the mean of its two times */
	if (kj_db_has_column(db, "replay_energy_cold", "ns_per_launch")) {
		if (kj_db_prepare(db, "SELECT unique_id, energy_mj_per_launch, ns_per_launch FROM replay_energy_cold"
				      " WHERE energy_mj_per_launch > 0", &st))
			return KJ_EDB;
		while (sqlite3_step(st) == SQLITE_ROW) {
			size_t g = kj_imap_get(gmap, sqlite3_column_int64(st, 0));
			struct cmp_group *gr = g == (size_t)-1 ? NULL : &c->groups[g];
			if (!gr || gr->energy_mj < 0)
				continue;
			double cold_mj = sqlite3_column_double(st, 1), cold_ns = sqlite3_column_double(st, 2);
			double warm_ns = gr->power_mw > 0 ? gr->energy_mj / gr->power_mw * 1e9 : -1;
			if (!isfinite(cold_mj)) /* a figure no replay writes: not a measurement */
				continue;
			gr->energy_warm_mj = gr->energy_mj;
			gr->energy_cold_mj = cold_mj;
			gr->ec_ns = cold_ns > 0 ? cold_ns : -1;
			gr->energy_mj = (gr->energy_warm_mj + cold_mj) / 2;
			if (warm_ns > 0 && cold_ns > 0)
				gr->power_mw = gr->energy_mj / ((warm_ns + cold_ns) / 2) * 1e9;
		}
		sqlite3_finalize(st);
	}
	if ((rc = mark_waiters(db, c, gmap)) != 0)
		return rc;
	/* sequence replays: mean of the medians stored per mode */
	c->seq_eager_ns = c->seq_graph_ns = c->seq_eager_mj = c->seq_graph_mj = -1;
	c->seq_topo_ns = c->seq_topo_mj = -1;
	c->seq_graph_data[0] = c->seq_topo_data[0] = '\0';
	c->have_snapshot = kj_db_has_snapshot(db);
	c->seq_topo_pace_ns = c->seq_graph_pace_ns = 0;
	/* a sequence replay that faulted stores its modes without a time */
	c->seq_failed_rows = 0;
	if (!kj_db_prepare(db, "SELECT count(*) FROM replay_sequence WHERE median_ns IS NULL", &st)) {
		if (sqlite3_step(st) == SQLITE_ROW)
			c->seq_failed_rows = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	/* launches the kept iteration's chain left out: the iteration's kernels less the replay's */
	c->seq_left_out = -1;
	if (!kj_db_prepare(db, "SELECT (SELECT count(*) FROM sequence_op s WHERE s.iteration = r.iteration"
			       " AND s.op = 'kernel') - r.launches FROM replay_sequence r WHERE lower(r.mode) = 'graph'"
			       " AND r.median_ns > 0 AND r.launches IS NOT NULL ORDER BY r.id DESC LIMIT 1", &st)) {
		if (sqlite3_step(st) == SQLITE_ROW)
			c->seq_left_out = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	/* columns added later (data, pace_ns) are read where the run has them */
	char sql[400];
	snprintf(sql, sizeof(sql), "SELECT lower(mode), avg(median_ns), count(*), avg(energy_mj), count(energy_mj), %s, %s"
		 " FROM replay_sequence WHERE median_ns IS NOT NULL AND median_ns > 0 GROUP BY lower(mode)",
		 kj_db_has_column(db, "replay_sequence", "data") ? "max(data)" : "NULL",
		 kj_db_has_column(db, "replay_sequence", "pace_ns") ? "avg(pace_ns)" : "NULL");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *mode = (const char *)sqlite3_column_text(st, 0);
		const char *data = (const char *)sqlite3_column_text(st, 5);
		int has_e = sqlite3_column_int64(st, 4) > 0;
		if (!mode)
			continue;
		if (data && !strcmp(mode, "graph"))
			snprintf(c->seq_graph_data, sizeof(c->seq_graph_data), "%s", data);
		else if (data && !strcmp(mode, "topology"))
			snprintf(c->seq_topo_data, sizeof(c->seq_topo_data), "%s", data);
		if (!strcmp(mode, "eager")) {
			c->seq_eager_ns = sqlite3_column_double(st, 1);
			c->seq_eager_rows = sqlite3_column_int64(st, 2);
			c->seq_eager_mj = has_e ? sqlite3_column_double(st, 3) : -1;
		} else if (!strcmp(mode, "graph")) {
			c->seq_graph_ns = sqlite3_column_double(st, 1);
			c->seq_graph_rows = sqlite3_column_int64(st, 2);
			c->seq_graph_mj = has_e ? sqlite3_column_double(st, 3) : -1;
			if (has_e && sqlite3_column_type(st, 6) != SQLITE_NULL)
				c->seq_graph_pace_ns = sqlite3_column_double(st, 6);
		} else if (!strcmp(mode, "topology")) {
			c->seq_topo_ns = sqlite3_column_double(st, 1);
			c->seq_topo_rows = sqlite3_column_int64(st, 2);
			c->seq_topo_mj = has_e ? sqlite3_column_double(st, 3) : -1;
			if (has_e && sqlite3_column_type(st, 6) != SQLITE_NULL)
				c->seq_topo_pace_ns = sqlite3_column_double(st, 6);
		}
	}
	sqlite3_finalize(st);
	return load_topology(db, c);
nomem:
	sqlite3_finalize(st);
	return KJ_ENOMEM;
}

/* GPU activity time inside [a, b] that falls between the measured iterations: work no iteration
 * owns (an optimizer step outside a 'forward' range, say). The loop is one window only where the
 * GPU waits between iterations. */
static int64_t gap_busy_ns(const struct kj_compare *c, int64_t a, int64_t b)
{
	struct kj_ival *gap = malloc((c->it.n + 1) * sizeof(*gap));
	size_t ng = 0;
	int64_t busy = 0, prev_end = INT64_MIN;
	if (!gap)
		return INT64_MAX; /* unknown: no loop */
	for (size_t i = 0; i < c->it.n; i++) { /* iterations are sorted by start */
		const struct cmp_iter *x = &c->iv[i];
		if (x->skipped || x->start_ns < a || x->end_ns > b)
			continue;
		if (prev_end != INT64_MIN && x->start_ns > prev_end)
			gap[ng++] = (struct kj_ival){prev_end, x->start_ns};
		prev_end = x->end_ns;
	}
	for (size_t k = 0; k < c->acts.n && ng; k++) {
		const struct kj_act *t = &c->acts.v[k];
		if (t->end_ns <= a || t->start_ns >= b)
			continue;
		size_t lo = 0, hi = ng; /* the first gap that ends after the activity starts */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (gap[mid].e <= t->start_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t g = lo; g < ng && gap[g].s < t->end_ns; g++) {
			int64_t s0 = t->start_ns > gap[g].s ? t->start_ns : gap[g].s;
			int64_t s1 = t->end_ns < gap[g].e ? t->end_ns : gap[g].e;
			busy += s1 > s0 ? s1 - s0 : 0;
		}
	}
	free(gap);
	return busy;
}

/* The kept iterations' span, the iterations inside it and their total length (c->loop_*). 0 when
 * there is no loop to measure: fewer than 3 iterations, or two of them overlapping. (Iterations
 * that shared the GPU with another process are known later: the summary checks them.) */
static int loop_span(struct kj_compare *c)
{
	int64_t a = INT64_MAX, b = INT64_MIN, prev_end = INT64_MIN;
	c->loop_mj = c->loop_unc_mj = c->loop_iter_mj = c->loop_iter_unc_mj = 0;
	c->loop_span_ns = c->loop_inside_ns = c->loop_n = c->loop_window_ns = 0;
	c->loop_window_iters = c->loop_window_inside_ns = 0;
	c->loop_aligned = 1;
	c->loop_counter_periods = 0;
	for (size_t i = 0; i < c->it.n; i++)
		if (!c->iv[i].skipped) {
			a = c->iv[i].start_ns < a ? c->iv[i].start_ns : a;
			b = c->iv[i].end_ns > b ? c->iv[i].end_ns : b;
		}
	if (a >= b)
		return 0;
	for (size_t i = 0; i < c->it.n; i++) { /* iterations are sorted by start */
		const struct cmp_iter *x = &c->iv[i];
		if (x->start_ns < a || x->end_ns > b)
			continue;
		if (x->start_ns < prev_end)
			return 0;
		prev_end = x->end_ns;
		c->loop_inside_ns += x->end_ns - x->start_ns;
		c->loop_n++;
	}
	c->loop_start_ns = a;
	c->loop_span_ns = b - a;
	c->loop_gap_busy_ns = gap_busy_ns(c, a, b);
	return c->loop_n >= 3;
}

/* Adds one device's energy per iteration over the loop; 0 when it cannot be measured. The window
 * runs from the first to the last update of the energy counter inside the loop's span, so it holds
 * whole counter periods only (no cut period to estimate); the iterations count by the share of
 * each inside it, and the time between them inside it at the device's idle power (idle_w_dev W;
 * 5 % of that term added to the bound). A loop with fewer than two updates inside is measured over
 * its whole span instead, its cut periods estimated (loop_aligned 0). */
static int add_loop_energy(struct kj_compare *c, const struct kj_power_sample *s, size_t n, double idle_mw,
			   double idle_w_dev)
{
	struct kj_window_energy we;
	int64_t w0 = c->loop_start_ns, w1 = c->loop_start_ns + c->loop_span_ns, e0, e1, sig0 = 0, sig1 = 0;
	double iters = 0, inside_ns = 0;
	memset(&we, 0, sizeof(we));
	if (n == 0)
		return 0;
	if (kj_energy_edges_inside(s, n, w0, w1, &e0, &e1, &sig0, &sig1) >= 2 && e1 > e0) {
		w0 = e0, w1 = e1;
	} else {
		c->loop_aligned = 0;
		sig0 = sig1 = 0; /* the window's own bound has its edges' timing */
	}
	if (kj_energy_window(s, n, w0, w1, idle_mw, &we) != 0 || !we.ok || !isfinite(we.energy_j))
		return 0;
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		if (x->start_ns < c->loop_start_ns || x->end_ns > c->loop_start_ns + c->loop_span_ns)
			continue;
		int64_t a = x->start_ns > w0 ? x->start_ns : w0, b = x->end_ns < w1 ? x->end_ns : w1;
		if (b > a && x->end_ns > x->start_ns) {
			inside_ns += (double)(b - a);
			iters += (double)(b - a) / (double)(x->end_ns - x->start_ns);
		}
	}
	if (iters <= 0)
		return 0;
	double outside_mj = (idle_w_dev > 0 ? idle_w_dev : 0) * ((double)(w1 - w0) - inside_ns) * 1e-6; /* W*ns->mJ */
	c->loop_mj += we.energy_j * 1000.0;
	c->loop_unc_mj += isfinite(we.uncertainty_j) ? we.uncertainty_j * 1000.0 : 0;
	double per_iter_mj = (we.energy_j * 1000.0 - outside_mj) / iters;
	/* each update's true time lies within half its bracket of the estimate: the iterations the
	 * window holds are known to that much time of them, the energy itself exactly */
	double timing_mj = per_iter_mj * 0.5 * (double)(sig0 + sig1) / inside_ns;
	c->loop_iter_mj += per_iter_mj;
	c->loop_iter_unc_mj += ((isfinite(we.uncertainty_j) ? we.uncertainty_j * 1000.0 : 0) + 0.05 * outside_mj) / iters +
			       timing_mj;
	if (c->loop_window_ns == 0) {
		c->loop_window_ns = w1 - w0;
		c->loop_window_iters = iters;
		c->loop_window_inside_ns = inside_ns;
	}
	if (c->loop_counter_periods == 0 || we.counter_periods < c->loop_counter_periods)
		c->loop_counter_periods = we.counter_periods;
	return 1;
}

/* cuGraphLaunch calls per iteration (by the time the call ran), where the run records them. */
static int count_graph_launches(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	c->have_host_calls = kj_db_has_row(db, "SELECT 1 FROM sqlite_master WHERE name = 'host_call'");
	if (!c->have_host_calls)
		return 0;
	if (kj_db_prepare(db, "SELECT start_ns, pid FROM host_call WHERE op = 'graph_launch'", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		long i = kj_iters_owner_of(&c->it, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
		if (i >= 0)
			c->iv[i].n_graph_launches++;
	}
	sqlite3_finalize(st);
	return 0;
}

/* Realtime offset from clock_sync (for the seed's wall-clock timestamps). */
static void load_realtime(sqlite3 *db, struct kj_compare *c)
{
	c->have_realtime = kj_db_realtime_offset(db, &c->realtime_offset_ns);
}

/* Power of a device that waits with its clocks up — what a launch-bound program's GPU draws
 * between kernels, well above deep idle. Taken from the run itself: the median of readings with
 * the SM clock within 10% of its highest reading and no GPU activity from 150 ms before the
 * reading (NVML power averages over about 100 ms) to 20 ms after. < 0 when fewer than 20 such
 * readings exist. */
static double awake_idle_mw(sqlite3 *db, int64_t dev, int64_t *nsel)
{
	sqlite3_stmt *st = NULL;
	struct {
		int64_t start, end_max; /* an activity's start; the latest end up to it */
	} *act = NULL, *na;
	struct {
		int64_t t, mw, clock;
	} *ps = NULL, *np_;
	size_t nact = 0, cap = 0, np = 0, pcap = 0, nq = 0;
	int64_t maxclk = 0;
	double *q = NULL, med = -1;
	*nsel = 0;
	if (kj_db_prepare(db, "SELECT start_ns, end_ns FROM gpu_activity WHERE device_id = ?"
			  " AND start_ns IS NOT NULL ORDER BY start_ns", &st))
		return -1;
	sqlite3_bind_int64(st, 1, dev);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!(na = kj_grow(act, &cap, nact, sizeof(*act), 4096)))
			goto out;
		act = na;
		int64_t e = sqlite3_column_int64(st, 1);
		act[nact].start = sqlite3_column_int64(st, 0);
		act[nact].end_max = nact && act[nact - 1].end_max > e ? act[nact - 1].end_max : e;
		nact++;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (kj_db_prepare(db, "SELECT t_ns, coalesce(power_mw, power_avg_mw), sm_clock_mhz FROM power_sample"
			  " WHERE device_id = ? AND coalesce(power_mw, power_avg_mw) > 0 ORDER BY t_ns", &st))
		goto out;
	sqlite3_bind_int64(st, 1, dev);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (sqlite3_column_type(st, 2) == SQLITE_NULL)
			continue;
		if (!(np_ = kj_grow(ps, &pcap, np, sizeof(*ps), 4096)))
			goto out;
		ps = np_;
		ps[np].t = sqlite3_column_int64(st, 0);
		ps[np].mw = sqlite3_column_int64(st, 1);
		ps[np].clock = sqlite3_column_int64(st, 2);
		if (ps[np].clock > maxclk)
			maxclk = ps[np].clock;
		np++;
	}
	q = malloc((np ? np : 1) * sizeof(*q));
	if (!q)
		goto out;
	for (size_t i = 0, a = 0; i < np; i++) {
		int64_t lo = ps[i].t - 150000000LL, hi = ps[i].t + 20000000LL;
		if (ps[i].clock * 10 < maxclk * 9)
			continue;
		while (a < nact && act[a].start <= hi)
			a++; /* act[a-1]: the last activity starting before hi */
		if (a > 0 && act[a - 1].end_max >= lo)
			continue;
		q[nq++] = (double)ps[i].mw;
	}
	if (nq >= 20) {
		kj_sort_doubles(q, nq);
		med = kj_quantile_sorted(q, nq, 0.5);
	}
	*nsel = (int64_t)nq;
out:
	sqlite3_finalize(st);
	free(act);
	free(ps);
	free(q);
	return med;
}

/* Measured energy of every iteration from each device's samples; power statistics inside the
 * kept windows. */
static int compute_energy(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	int64_t devs[64];
	size_t nd = 0;
	double idle_total = 0;
	int idle_known = 1;
	int rc = 0;

	c->idle_w = c->deep_idle_w = c->awake_idle_w = -1;
	c->power_avg_w = c->power_min_w = c->power_max_w = -1;
	if (kj_db_prepare(db,
			  "SELECT DISTINCT device_id FROM power_sample WHERE device_id IS NOT NULL"
			  " ORDER BY device_id",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW && nd < 64)
		devs[nd++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	c->n_devices_power = (int64_t)nd;
	if (nd == 0) {
		/* no samples: idle power may still be known for the run's devices */
		if (kj_db_prepare(db, "SELECT device_id FROM idle_power", &st))
			return KJ_EDB;
		while (sqlite3_step(st) == SQLITE_ROW) {
			double w = kj_energy_idle_mw(db, sqlite3_column_int64(st, 0));
			if (w >= 0)
				c->deep_idle_w = (c->deep_idle_w < 0 ? 0 : c->deep_idle_w) + w / 1000.0;
		}
		sqlite3_finalize(st);
		c->idle_w = c->deep_idle_w; /* no readings, so no awake idle */
		return 0;
	}
	for (size_t i = 0; i < c->it.n; i++)
		c->iv[i].energy_ok = 1;
	int loop_ok = loop_span(c);
	c->win_power_s = c->win_s = 0;
	double psum = 0, awake_total = 0;
	int64_t pn = 0;
	int awake_known = 1;
	for (size_t d = 0; d < nd; d++) {
		struct kj_power_sample *s = NULL;
		size_t n = 0;
		int64_t nsel = 0;
		double idle_mw = kj_energy_idle_mw(db, devs[d]);
		double awake_mw = awake_idle_mw(db, devs[d], &nsel);
		c->n_awake_samples += nsel;
		if (awake_mw < 0)
			awake_known = 0;
		else
			awake_total += awake_mw / 1000.0;
		if (idle_mw < 0)
			idle_known = 0;
		else
			idle_total += idle_mw / 1000.0;
		rc = kj_energy_load_samples(db, devs[d], &s, &n);
		if (rc) {
			kj_errorf("power samples of device %lld: %s", (long long)devs[d],
				  kj_strerror(rc));
			free(s);
			return rc;
		}
		c->n_power_samples += (int64_t)n;
		size_t j = 0;
		for (size_t i = 0; i < c->it.n; i++) {
			struct cmp_iter *x = &c->iv[i];
			struct kj_window_energy we;
			memset(&we, 0, sizeof(we));
			if (n == 0 ||
			    kj_energy_window(s, n, x->start_ns, x->end_ns, idle_mw, &we) != 0 ||
			    !we.ok || !isfinite(we.energy_j)) {
				x->energy_ok = 0;
			} else {
				x->energy_measured_mj += we.energy_j * 1000.0;
				if (isfinite(we.uncertainty_j))
					x->energy_unc_mj += we.uncertainty_j * 1000.0;
				if (!x->skipped) { /* how much of the windows no counter period resolves */
					double len = (double)(x->end_ns - x->start_ns) * 1e-9;
					c->win_power_s += we.counter_periods == 0 ? len : we.power_s;
					c->win_s += len;
				}
			}
			if (x->skipped)
				continue;
			/* power statistics of samples inside kept windows (iterations sorted) */
			while (j < n && s[j].t_ns < x->start_ns)
				j++;
			for (size_t k = j; k < n && s[k].t_ns <= x->end_ns; k++) {
				int64_t p = s[k].power_mw >= 0 ? s[k].power_mw : s[k].power_avg_mw;
				if (p < 0)
					continue;
				double w = (double)p / 1000.0;
				if (c->power_min_w < 0 || w < c->power_min_w)
					c->power_min_w = w;
				if (w > c->power_max_w)
					c->power_max_w = w;
				psum += w;
				pn++;
			}
		}
		if (loop_ok)
			loop_ok = add_loop_energy(c, s, n, idle_mw, awake_mw >= 0 ? awake_mw / 1000.0 : idle_mw / 1000.0);
		free(s);
	}
	c->have_loop = loop_ok && c->loop_n > 0;
	c->n_power_in_windows = pn;
	if (pn)
		c->power_avg_w = psum / (double)pn;
	if (idle_known)
		c->deep_idle_w = idle_total;
	if (awake_known)
		c->awake_idle_w = awake_total;
	/* the idle term: the GPU waits awake between kernels; deep idle only when that is unknown */
	c->idle_w = awake_known ? awake_total : c->deep_idle_w;
	return 0;
}

/* The region of a name, created with depth when new; (size_t)-1 out of memory. */
static size_t region_of(struct kj_compare *c, const char *name, int64_t depth)
{
	size_t before = c->region_names.n;
	size_t r = kj_smap_intern(&c->region_names, name);
	if (r == (size_t)-1)
		return r;
	if (c->region_names.n > before) {
		struct cmp_region *nr = kj_grow(c->region_v, &c->region_cap, r, sizeof(*nr), 32);
		if (!nr)
			return (size_t)-1;
		c->region_v = nr;
		c->region_v[r] = (struct cmp_region){.min_depth = depth};
	}
	return r;
}

/* Graph kernels of the measured iterations whose nodes were captured inside NVTX ranges
 * (kernel.capture_range_id): each counts for that range and the ranges around it, by name, as
 * they would in an eager iteration; a captured instance has GPU time but no host time of its own
 * in the iteration. Runs recorded before capture ranges were have none. */
static int captured_regions(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	struct kj_ival *iv = NULL;
	size_t n = 0, cap = 0, cur = (size_t)-1;
	int64_t last_owner = -1, last_range = -1;
	int rc;
	if (!kj_db_has_column(db, "kernel", "capture_range_id"))
		return 0;
	if (kj_db_prepare(db,
			  "WITH RECURSIVE anc(kid, rid) AS (SELECT id, capture_range_id FROM kernel"
			  " WHERE capture_range_id IS NOT NULL UNION ALL SELECT a.kid, r.parent_id FROM anc a"
			  " JOIN nvtx_range r ON r.id = a.rid WHERE r.parent_id IS NOT NULL)"
			  " SELECT r.name, r.depth, k.pid, coalesce(k.launch_ns, k.start_ns), k.start_ns, k.end_ns, r.id"
			  " FROM anc a JOIN kernel k ON k.id = a.kid JOIN nvtx_range r ON r.id = a.rid"
			  " WHERE r.name IS NOT NULL AND k.end_ns >= k.start_ns ORDER BY r.name, k.start_ns",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int64_t depth = sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 1);
		long owner = kj_iters_owner_of(&c->it, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 2));
		int64_t range = sqlite3_column_int64(st, 6);
		if (owner < 0 || c->it.v[owner].skipped || (!c->it.whole_run && !strcmp(name, c->it.region)))
			continue;
		size_t r = region_of(c, name, depth);
		if (r == (size_t)-1)
			goto nomem;
		if (r != cur) { /* a new name: close the previous one's busy time */
			if (cur != (size_t)-1)
				c->region_v[cur].busy_ns += kj_ival_union(iv, n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
			n = 0;
			cur = r;
			last_owner = last_range = -1;
		}
		struct cmp_region *g = &c->region_v[r];
		g->captured = 1;
		if (depth < g->min_depth)
			g->min_depth = depth;
		if (owner != last_owner || range != last_range) /* one instance per range per launch */
			g->instances++;
		last_owner = owner;
		last_range = range;
		g->launches++;
		struct kj_ival *nv = kj_grow(iv, &cap, n, sizeof(*nv), 1024);
		if (!nv)
			goto nomem;
		iv = nv;
		iv[n++] = (struct kj_ival){sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5)};
	}
	if (cur != (size_t)-1)
		c->region_v[cur].busy_ns += kj_ival_union(iv, n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
	sqlite3_finalize(st);
	free(iv);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
nomem:
	sqlite3_finalize(st);
	free(iv);
	return KJ_ENOMEM;
}

static int compute_regions(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	struct kj_ival *scratch = NULL;
	size_t scap = 0;
	int rc;
	if (kj_db_prepare(db,
			  "SELECT name, start_ns, end_ns, pid, depth FROM nvtx_range WHERE name IS"
			  " NOT NULL AND start_ns IS NOT NULL AND end_ns IS NOT NULL"
			  " AND end_ns >= start_ns ORDER BY start_ns",
			  &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int64_t rs = sqlite3_column_int64(st, 1), re = sqlite3_column_int64(st, 2);
		int64_t pid = sqlite3_column_int64(st, 3);
		int64_t depth = sqlite3_column_type(st, 4) == SQLITE_NULL ? 0
									  : sqlite3_column_int64(st, 4);
		if (!c->it.whole_run && !strcmp(name, c->it.region))
			continue;
		long owner = kj_iters_owner(&c->it, rs);
		if (owner < 0 || c->it.v[owner].skipped || re > c->it.v[owner].end_ns)
			continue;
		if (!c->it.whole_run && c->it.v[owner].pid != pid)
			continue;
		size_t r = region_of(c, name, depth);
		if (r == (size_t)-1)
			goto nomem;
		struct cmp_region *g = &c->region_v[r];
		g->instances++;
		g->timed = 1;
		g->time_ns += re - rs;
		if (depth < g->min_depth)
			g->min_depth = depth;
		/* GPU work launched inside this instance: a slice of the key-sorted activity */
		size_t lo = 0, hi = c->acts.n, n = 0;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (c->acts.v[mid].key_ns < rs)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < c->acts.n && c->acts.v[k].key_ns < re; k++) {
			const struct kj_act *a = &c->acts.v[k];
			if (a->pid != pid)
				continue;
			if (n == scap) {
				size_t nc = scap ? scap * 2 : 1024;
				struct kj_ival *ns = realloc(scratch, nc * sizeof(*ns));
				if (!ns)
					goto nomem;
				scratch = ns;
				scap = nc;
			}
			scratch[n++] = (struct kj_ival){a->start_ns, a->end_ns};
			if (a->type == KJ_ACT_KERNEL)
				g->launches++;
		}
		g->busy_ns += kj_ival_union(scratch, n, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
	}
	sqlite3_finalize(st);
	free(scratch);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading NVTX ranges: %s", sqlite3_errmsg(db));
		return KJ_EDB;
	}
	return captured_regions(db, c);
nomem:
	sqlite3_finalize(st);
	free(scratch);
	return KJ_ENOMEM;
}

/* A launch of d ns in situ whose kernel replayed in median_ns (< 0: not replayed in that mode):
 * the replayed and in-situ sums of the covered launches, and their count. */
static void add_replayed(double median_ns, int64_t d, double *replay, double *insitu, int64_t *cov)
{
	if (median_ns < 0)
		return;
	*replay += median_ns;
	*insitu += (double)d;
	(*cov)++;
}

/* GPU activity sorted by start, for what ran inside each iteration's window */
struct win_act {
	int64_t s, e;
	long owner;
	int kernel;
};

static int win_cmp(const void *a, const void *b)
{
	const struct win_act *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

int kj_compare_compute(sqlite3 *db, const struct kj_compare_opts *o, struct kj_compare **out)
{
	struct win_act *win = NULL;
	int64_t max_dur = 0;
	struct kj_compare *c = calloc(1, sizeof(*c));
	struct kj_imap gmap = {0};
	long *owner = NULL;
	size_t *first = NULL, *order = NULL;
	struct kj_ival *iv_all = NULL, *iv_k = NULL;
	int64_t t0 = 0, t1 = 0;
	int rc;

	*out = NULL;
	if (!c)
		return KJ_ENOMEM;
	c->top = o->top > 0 ? o->top : 10;
	rc = kj_run_extent(db, &t0, &t1);
	if (rc == KJ_ENOTFOUND) {
		kj_errorf("the run holds no kernels, copies, API calls or NVTX ranges: nothing to"
			  " compare");
		goto out;
	}
	if (rc)
		goto out;
	rc = kj_acts_load(db, &c->acts);
	if (rc)
		goto out;
	if (!o->quiet && c->acts.dropped)
		kj_warnf("%zu GPU activity row(s) without times or ending before they start were"
			 " ignored",
			 c->acts.dropped);
	if (!o->quiet && c->acts.launch_after)
		kj_warnf("%zu kernel(s) have a launch time after their start (a clock-mapping gap);"
			 " their start time assigns them to iterations",
			 c->acts.launch_after);
	rc = kj_iters_find(db, o->region, o->skip, t0, t1, o->quiet, &c->it);
	if (rc)
		goto out;
	rc = kj_names_load(db, &c->names);
	if (rc)
		goto out;
	rc = load_groups(db, c, &gmap);
	if (rc)
		goto out;
	kj_smap_intern(&c->tiers, "memcpy");
	kj_smap_intern(&c->tiers, "memset");
	load_realtime(db, c);
	c->n_api_calls = kj_db_count(db, "api_call");

	size_t ni = c->it.n, na = c->acts.n;
	c->iv = calloc(ni, sizeof(*c->iv));
	owner = malloc((na ? na : 1) * sizeof(*owner));
	first = calloc(ni + 1, sizeof(*first));
	order = malloc((na ? na : 1) * sizeof(*order));
	iv_all = malloc((na ? na : 1) * sizeof(*iv_all));
	iv_k = malloc((na ? na : 1) * sizeof(*iv_k));
	if (!c->iv || !owner || !first || !order || !iv_all || !iv_k) {
		rc = KJ_ENOMEM;
		goto out;
	}
	/* assign each activity to the iteration that launched it; CSR lists per iteration */
	win = malloc((na ? na : 1) * sizeof(*win));
	if (!win) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < na; k++) {
		const struct kj_act *a = &c->acts.v[k];
		owner[k] = kj_iters_owner_of(&c->it, a->key_ns, a->pid);
		if (owner[k] >= 0)
			first[owner[k] + 1]++;
		win[k] = (struct win_act){a->start_ns, a->end_ns, owner[k], a->type == KJ_ACT_KERNEL};
		if (a->end_ns - a->start_ns > max_dur)
			max_dur = a->end_ns - a->start_ns;
	}
	qsort(win, na, sizeof(*win), win_cmp);
	for (size_t i = 0; i < ni; i++)
		first[i + 1] += first[i];
	/* An iteration lasts until its own GPU work is done: a GPU-bound region's range closes on
	 * the host long before its kernels finish. Its window ends at the later of the range's end
	 * and its last own activity's end, but never past the next instance's start. */
	for (size_t k = 0; k < na; k++) {
		if (owner[k] < 0)
			continue;
		struct kj_iter *it = &c->it.v[owner[k]];
		int64_t cap = (size_t)owner[k] + 1 < ni ? c->it.v[owner[k] + 1].start_ns : INT64_MAX;
		int64_t e = c->acts.v[k].end_ns < cap ? c->acts.v[k].end_ns : cap;
		if (e > it->end_ns)
			it->end_ns = e;
	}
	{
		size_t *fill = calloc(ni + 1, sizeof(*fill));
		if (!fill) {
			rc = KJ_ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < na; k++)
			if (owner[k] >= 0)
				order[first[owner[k]] + fill[owner[k]]++] = k;
		free(fill);
	}

	c->tier_v = calloc(c->tiers.cap + 8, sizeof(*c->tier_v));
	if (!c->tier_v) {
		rc = KJ_ENOMEM;
		goto out;
	}
	size_t tier_memcpy = kj_smap_intern(&c->tiers, "memcpy");
	size_t tier_memset = kj_smap_intern(&c->tiers, "memset");
	for (size_t i = 0; i < ni; i++) {
		struct cmp_iter *x = &c->iv[i];
		const struct kj_iter *it = &c->it.v[i];
		size_t nall = 0, nk = 0;
		int64_t ss, se;
		x->start_ns = it->start_ns;
		x->end_ns = it->end_ns;
		x->skipped = it->skipped;
		x->closed = it->closed;
		x->wall = it->end_ns - it->start_ns;
		for (size_t q = first[i]; q < first[i + 1]; q++) {
			const struct kj_act *a = &c->acts.v[order[q]];
			int64_t d = a->end_ns - a->start_ns;
			iv_all[nall++] = (struct kj_ival){a->start_ns, a->end_ns};
			if (a->type == KJ_ACT_KERNEL) {
				iv_k[nk++] = (struct kj_ival){a->start_ns, a->end_ns};
				x->n_kernels++;
				x->kernel_sum += d;
				size_t g = group_of(c, &gmap, a);
				if (g == (size_t)-1) {
					rc = KJ_ENOMEM;
					goto out;
				}
				struct cmp_group *gr = &c->groups[g];
				if (gr->waits) { /* kept at its in-situ time in every sum the run has */
					if (c->n_replay_warm_rows) {
						add_replayed((double)d, d, &x->replay_warm, &x->insitu_warm, &x->cov_warm);
						x->replay_iso += (double)d;
					}
					if (c->n_replay_cold_rows)
						add_replayed((double)d, d, &x->replay_cold, &x->insitu_cold, &x->cov_cold);
					if (c->n_replay_seq_rows)
						add_replayed((double)d, d, &x->replay_seq, &x->insitu_seq, &x->cov_seq);
					if (gr->standin)
						x->standin_ns += d;
					if (gr->standin_mw > 0) { /* its replayed power over its in-situ time */
						cmp_energy_add_all(x, gr, gr->standin_mw * (double)d * 1e-9);
						x->energy_kernels_mj += gr->standin_mw * (double)d * 1e-9;
						x->energy_insitu_mj += gr->standin_mw * (double)d * 1e-9;
						x->cov_energy++;
						x->insitu_energy_ns += d;
					} else if (!gr->standin) { /* spins: idle power (below) */
						x->waits_ns += d;
						x->n_waits++;
					}
				}
				add_replayed(gr->warm_ns, d, &x->replay_warm, &x->insitu_warm, &x->cov_warm);
				add_replayed(gr->cold_ns, d, &x->replay_cold, &x->insitu_cold, &x->cov_cold);
				/* the program's L2 held part of each kernel's data: between the two replays
				 * (over the warm replays' launches: their in-situ Σ is insitu_warm) */
				if (gr->warm_ns >= 0)
					x->replay_iso += gr->cold_ns >= 0 ? (gr->warm_ns + gr->cold_ns) / 2 : gr->warm_ns;
				add_replayed(gr->seq_ns, d, &x->replay_seq, &x->insitu_seq, &x->cov_seq);
				if (gr->energy_mj >= 0) {
					cmp_energy_add_launch(x, gr, d);
					x->energy_kernels_mj += gr->energy_mj;
					if (gr->energy_cold_mj >= 0) {
						x->e_cold_cov_warm_mj += gr->energy_warm_mj;
						x->e_cold_cov_cold_mj += gr->energy_cold_mj;
						x->cold_energy_ns += d;
					} else {
						x->e_nocold_warm_mj += gr->energy_mj;
					}
					x->cov_energy++;
					x->insitu_energy_ns += d;
					/* without a power figure, the launch's replayed energy stands */
					x->energy_insitu_mj += gr->power_mw > 0 ? gr->power_mw * (double)d * 1e-9
										: gr->energy_mj;
				}
				if (!x->skipped) {
					gr->launches++;
					gr->measured_ns += d;
				}
			} else {
				x->copy_sum += d;
				if (a->type == KJ_ACT_MEMCPY) {
					x->n_copies++;
					if (a->dir == KJ_COPY_H2D)
						x->bytes_h2d += a->bytes;
					else if (a->dir == KJ_COPY_D2H)
						x->bytes_d2h += a->bytes;
				} else {
					x->n_memsets++;
				}
				if (!x->skipped) {
					struct cmp_tier *t = &c->tier_v[a->type == KJ_ACT_MEMCPY
										 ? tier_memcpy
										 : tier_memset];
					t->launches++;
					t->measured_ns += d;
				}
			}
		}
		/* own work that ran outside the window (launched here, finished after the end) */
		int64_t own_clipped = 0;
		for (size_t q = 0; q < nall; q++) {
			int64_t cs = iv_all[q].s > it->start_ns ? iv_all[q].s : it->start_ns;
			int64_t ce = iv_all[q].e < it->end_ns ? iv_all[q].e : it->end_ns;
			if (ce > cs)
				own_clipped += ce - cs;
		}
		x->outside = x->kernel_sum + x->copy_sum - own_clipped;
		/* the window's accounting: every GPU activity that ran inside it, whoever launched it */
		nall = nk = 0;
		{
			size_t lo = 0, hi = na;
			int64_t from = it->start_ns - max_dur;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (win[mid].s < from)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (size_t k = lo; k < na && win[k].s < it->end_ns; k++) {
				if (win[k].e <= it->start_ns)
					continue;
				iv_all[nall++] = (struct kj_ival){win[k].s, win[k].e};
				if (win[k].kernel)
					iv_k[nk++] = (struct kj_ival){win[k].s, win[k].e};
				if (win[k].owner != (long)i) {
					int64_t cs = win[k].s > it->start_ns ? win[k].s : it->start_ns;
					int64_t ce = win[k].e < it->end_ns ? win[k].e : it->end_ns;
					x->inherited += ce - cs;
				}
			}
		}
		x->busy = kj_ival_union(iv_all, nall, it->start_ns, it->end_ns, &ss, &se,
					&x->clipped_sum);
		x->span = se - ss;
		x->kernel_busy = kj_ival_union(iv_k, nk, it->start_ns, it->end_ns, NULL, NULL, NULL);
		x->overlap = x->clipped_sum - x->busy;
		x->idle = x->span - x->busy;
		x->host_only = x->wall - x->span;
	}
	/* tiers from groups (tier table may have grown with unclassified groups) */
	{
		struct cmp_tier *nt = realloc(c->tier_v, (c->tiers.n + 1) * sizeof(*nt));
		if (!nt) {
			rc = KJ_ENOMEM;
			goto out;
		}
		c->tier_v = nt;
		/* entries past the first allocation are zeroed: recompute kernel tiers */
		struct cmp_tier cp = c->tier_v[tier_memcpy], ms = c->tier_v[tier_memset];
		memset(c->tier_v, 0, (c->tiers.n + 1) * sizeof(*nt));
		c->tier_v[tier_memcpy] = cp;
		c->tier_v[tier_memset] = ms;
		for (size_t g = 0; g < c->n_groups; g++) {
			const struct cmp_group *gr = &c->groups[g];
			struct cmp_tier *t = &c->tier_v[gr->tier];
			if (!gr->launches)
				continue;
			t->unique++;
			t->launches += gr->launches;
			t->measured_ns += gr->measured_ns;
			if (gr->warm_ns >= 0) {
				t->replay_warm_ns += gr->warm_ns * (double)gr->launches;
				t->cov_warm += gr->launches;
			}
			if (gr->energy_mj >= 0) {
				t->energy_mj += gr->energy_mj * (double)gr->launches;
				t->cov_energy += gr->launches;
			}
		}
	}
	rc = count_graph_launches(db, c);
	if (!rc)
		rc = compute_energy(db, c);
	if (!rc)
		rc = cmp_shared_apply(db, c);
	if (!rc)
		rc = cmp_clocks_apply(db, c);
	if (rc)
		goto out;
	/* a waiting kernel's energy: its in-situ time at the GPU's idle power (it spins, the rest of
	 * the chip waits) */
	if (c->idle_w >= 0 && c->n_replay_energy_rows)
		for (size_t i = 0; i < ni; i++) {
			cmp_energy_add_all(&c->iv[i], NULL, (double)c->iv[i].waits_ns * 1e-6 * c->idle_w);
			c->iv[i].energy_kernels_mj += (double)c->iv[i].waits_ns * 1e-6 * c->idle_w;
			c->iv[i].energy_insitu_mj += (double)c->iv[i].waits_ns * 1e-6 * c->idle_w;
			c->iv[i].cov_energy += c->iv[i].n_waits;
			c->iv[i].insitu_energy_ns += c->iv[i].waits_ns;
		}
	rc = compute_regions(db, c);
	if (rc)
		goto out;
	if (!o->quiet && c->acts.n_kernels == 0)
		kj_warnf("the run holds no kernels: GPU figures are zero");
	*out = c;
	c = NULL;
out: /* c is NULL once handed to the caller */
	if (c && rc == KJ_ENOMEM)
		kj_errorf("compare: out of memory");
	free(owner);
	free(first);
	free(order);
	free(iv_all);
	free(iv_k);
	free(win);
	kj_imap_free(&gmap);
	if (!c)
		return 0;
	kj_compare_free(c);
	return rc ? rc : KJ_EINVAL;
}

void kj_compare_free(struct kj_compare *c)
{
	if (!c)
		return;
	kj_iters_free(&c->it);
	kj_acts_free(&c->acts);
	kj_names_free(&c->names);
	kj_smap_free(&c->tiers);
	kj_smap_free(&c->region_names);
	free(c->tier_v);
	free(c->region_v);
	for (size_t g = 0; g < c->n_groups; g++)
		free(c->groups[g].waits_why);
	free(c->groups);
	free(c->iv);
	kj_shared_free(&c->shared);
	free(c);
}

int cmp_groups_have_cold_energy(const struct kj_compare *c)
{
	for (size_t g = 0; c && g < c->n_groups; g++)
		if (c->groups[g].energy_cold_mj >= 0)
			return 1;
	return 0;
}
