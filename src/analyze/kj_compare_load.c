/* kjoule compare: the run's groups of launches (one per unique kernel) with their replay figures,
 * the kernels that wait on something outside themselves, and the sequence and topology replays. */
#include "kj_compare_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_schema.h"
#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_kernel_waits.h"

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

size_t cmp_group_of(struct kj_compare *c, struct kj_imap *gmap, const struct kj_act *a)
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
	/* replay's reason code (schema 3; migrated runs have it filled from the text); runs read
	 * without it, by the text */
	int reason = kj_db_caps(db)->replay_kernel_reason;
	flag_groups(db, reason ? "SELECT DISTINCT unique_id FROM replay_kernel WHERE reason = '" KJ_REASON_TIMED_OUT "'"
			       : "SELECT DISTINCT unique_id FROM replay_kernel WHERE lower(status) = 'failed'"
				 " AND error LIKE '%timed out%'", gmap, timed_out);
	/* replay refused them before launching: they set a graph conditional's condition */
	flag_groups(db, reason ? "SELECT DISTINCT unique_id FROM replay_kernel WHERE reason = '" KJ_REASON_COND_SETTER "'"
			       : "SELECT DISTINCT unique_id FROM replay_kernel WHERE lower(status) = 'skipped'"
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

int cmp_load_groups(sqlite3 *db, struct kj_compare *c, struct kj_imap *gmap)
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
	/* runs replayed before each kernel's data was stored have no data column: unknown */
	int has_data = kj_db_caps(db)->replay_energy_data;
	if (kj_db_prepare(db,
			  has_data ? "SELECT unique_id, energy_mj_per_launch,"
				     " coalesce(power_mw, energy_mj_per_launch * launches / nullif(seconds, 0)), data"
				     " FROM replay_energy"
				     " WHERE energy_mj_per_launch IS NOT NULL AND energy_mj_per_launch >= 0"
				   : "SELECT unique_id, energy_mj_per_launch,"
				     " coalesce(power_mw, energy_mj_per_launch * launches / nullif(seconds, 0)), NULL"
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
		const char *data = (const char *)sqlite3_column_text(st, 3);
		c->groups[g].data = KJ_CMP_DATA_UNKNOWN;
		for (int k = 1; data && k < KJ_CMP_DATA_KINDS; k++)
			if (!strcmp(data, kj_cmp_data_names[k]))
				c->groups[g].data = k;
		c->n_replay_energy_rows++;
	}
	sqlite3_finalize(st);
	/* with the data out of L2 (older runs lack the table): each kernel's energy is the mean of
	 * the two, as its time is, and its power that energy over the mean of its two times */
	if (kj_db_caps(db)->replay_energy_cold) {
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
		 kj_db_caps(db)->replay_sequence_data ? "max(data)" : "NULL",
		 kj_db_caps(db)->replay_sequence_pace_ns ? "avg(pace_ns)" : "NULL");
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
