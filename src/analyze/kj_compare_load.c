/* kjoule compare: the run's groups of launches (one per unique kernel) with their replay figures,
 * the kernels that wait on something outside themselves, and the sequence and topology replays. */
#include "kj_compare_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_schema.h"
#include "kj_store_a_replay.h"
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
						    .warm_unc_mj = -1, .cold_unc_mj = -1,
						    .ew_ns = -1, .ec_ns = -1, .b2b_ns = -1, .b2b_mhz = -1};
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

/* A map of unique kernel ids to groups, with an array of one value per group to fill. */
struct per_group {
	struct kj_imap *gmap;
	void *v;
};

/* flag[g] = 1 for the group of the unique kernel. */
static int flag_group(void *ud, int64_t unique_id)
{
	struct per_group *P = ud;
	size_t g = kj_imap_get(P->gmap, unique_id);
	if (g != (size_t)-1)
		((int *)P->v)[g] = 1;
	return 0;
}

/* traced[g]: the mean traced time of the group's unique kernel. */
static int set_traced(void *ud, int64_t unique_id, double mean_ns)
{
	struct per_group *P = ud;
	size_t g = kj_imap_get(P->gmap, unique_id);
	if (g != (size_t)-1)
		((double *)P->v)[g] = mean_ns;
	return 0;
}

/* fill[g]: the first warm replay's "data: ..." note of the group's unique kernel. */
static int set_fill(void *ud, int64_t unique_id, const char *note)
{
	struct per_group *P = ud;
	char **fill = P->v;
	size_t g = kj_imap_get(P->gmap, unique_id);
	if (g != (size_t)-1 && note && !fill[g] && !(fill[g] = strdup(note)))
		return KJ_ENOMEM;
	return 0;
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
	if (*longest_ns < 0)
		*longest_ns = kj_store_a_longest_kernel_ns(db);
	int64_t lookback_ns = *longest_ns;
	return kj_store_a_overlap_share(db, unique_id,
					lookback_ns < KJ_OVERLAP_LOOKBACK_NS ? lookback_ns : KJ_OVERLAP_LOOKBACK_NS,
					KJ_OVERLAP_SAMPLE);
}

/* Kernels that wait on something outside themselves (kj_kernel_waits.h): by name, by a replay far
 * beyond their traced time, or by a replay the worker had to kill. Their replay figures are not
 * theirs: each launch is kept in the sums at its in-situ time, and the reason is reported. */
static int mark_waiters(sqlite3 *db, struct kj_compare *c, struct kj_imap *gmap)
{
	double *traced = calloc(c->n_groups + 1, sizeof(*traced));
	int *timed_out = calloc(c->n_groups + 1, sizeof(*timed_out));
	int *setter = calloc(c->n_groups + 1, sizeof(*setter));
	char **fill = calloc(c->n_groups + 1, sizeof(*fill)); /* warm replay's "data: ..." note */
	char why[320];
	int rc = 0;
	int64_t longest_ns = -1; /* the run's longest kernel, read when first needed */
	struct per_group P = {gmap, traced};
	if (!traced || !timed_out || !setter || !fill) {
		rc = KJ_ENOMEM;
		goto out;
	}
	kj_store_a_traced_means_each(db, set_traced, &P);
	/* replay's reason code (schema 3; migrated runs have it filled from the text); runs read
	 * without it, by the text */
	P.v = timed_out;
	kj_store_a_replay_flagged_each(db, KJ_REASON_TIMED_OUT, "failed", "timed out", flag_group, &P);
	/* replay refused them before launching: they set a graph conditional's condition */
	P.v = setter;
	kj_store_a_replay_flagged_each(db, KJ_REASON_COND_SETTER, "skipped", KJ_COND_SETTER_WHY, flag_group, &P);
	/* replayed on stand-in data: the fill the worker fell back to when random data faulted */
	P.v = fill;
	if (kj_store_a_replay_fill_notes_each(db, set_fill, &P) == KJ_ENOMEM) {
		rc = KJ_ENOMEM;
		goto out;
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
		gr->warm_unc_mj = gr->cold_unc_mj = -1;
		gr->power_mw = gr->ew_ns = gr->ec_ns = -1;
		gr->b2b_ns = gr->b2b_mhz = -1;
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
	int rc = kj_store_a_topology_latest(db, c->topo_status, sizeof(c->topo_status), c->topo_unbuilt,
					    sizeof(c->topo_unbuilt), c->topo_reason, sizeof(c->topo_reason));
	return rc < 0 ? rc : 0;
}

/* cmp_load_groups' state: the comparison and its map of unique kernel ids to groups. */
struct groups {
	struct kj_compare *c;
	struct kj_imap *gmap;
};

/* A group for one unique kernel, its tier as stored or else by its name. */
static int add_group(void *ud, int64_t uid, int64_t name_id, const char *tier)
{
	struct groups *G = ud;
	size_t g = new_group(G->c, uid, name_id, tier && *tier ? tier : name_tier(G->c, name_id));
	if (g == (size_t)-1 || kj_imap_put(G->gmap, uid, g))
		return KJ_ENOMEM;
	return 0;
}

/* One isolated replay's median, under its cache mode. */
static int add_median(void *ud, int64_t unique_id, const char *cache, double med)
{
	struct groups *G = ud;
	struct kj_compare *c = G->c;
	size_t g = kj_imap_get(G->gmap, unique_id);
	if (g == (size_t)-1 || !cache)
		return 0;
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
	return 0;
}

/* One replayed energy per launch (warm), with its power and the data it ran on. */
static int add_energy(void *ud, const struct kj_store_a_replay_energy *e)
{
	struct groups *G = ud;
	struct kj_compare *c = G->c;
	size_t g = kj_imap_get(G->gmap, e->unique_id);
	if (g == (size_t)-1 || !isfinite(e->energy_mj))
		return 0;
	c->groups[g].energy_mj = e->energy_mj;
	/* mW; the power of the energy loop, from its own seconds where power_mw is absent */
	if (e->has_power && e->power_mw > 0) {
		c->groups[g].power_mw = e->power_mw;
		c->groups[g].ew_ns = c->groups[g].energy_mj / c->groups[g].power_mw * 1e9;
	}
	c->groups[g].energy_warm_mj = c->groups[g].energy_mj;
	c->groups[g].warm_unc_mj = isfinite(e->unc_mj) && e->unc_mj >= 0 ? e->unc_mj : -1;
	c->groups[g].e_paced = e->method && !strncmp(e->method, "paced", 5);
	const char *data = e->data;
	c->groups[g].data = KJ_CMP_DATA_UNKNOWN;
	for (int k = 1; data && k < KJ_CMP_DATA_KINDS; k++)
		if (!strcmp(data, kj_cmp_data_names[k]))
			c->groups[g].data = k;
	c->n_replay_energy_rows++;
	return 0;
}

/* A kernel's back-to-back window under the power cap, kept beside its paced energy. */
static int add_energy_b2b(void *ud, int64_t unique_id, double ns, double mhz)
{
	struct groups *G = ud;
	size_t g = kj_imap_get(G->gmap, unique_id);
	if (g == (size_t)-1 || !isfinite(ns) || !isfinite(mhz))
		return 0;
	G->c->groups[g].b2b_ns = ns;
	G->c->groups[g].b2b_mhz = mhz;
	return 0;
}

/* One replayed energy per launch with the data out of L2: the kernel's energy becomes the mean
 * of the two, and its power that energy over the mean of the two times. */
static int add_energy_cold(void *ud, int64_t unique_id, double cold_mj, double cold_unc_mj, double cold_ns)
{
	struct groups *G = ud;
	size_t g = kj_imap_get(G->gmap, unique_id);
	struct cmp_group *gr = g == (size_t)-1 ? NULL : &G->c->groups[g];
	if (!gr || gr->energy_mj < 0)
		return 0;
	double warm_ns = gr->power_mw > 0 ? gr->energy_mj / gr->power_mw * 1e9 : -1;
	if (!isfinite(cold_mj)) /* a figure no replay writes: not a measurement */
		return 0;
	gr->energy_warm_mj = gr->energy_mj;
	gr->energy_cold_mj = cold_mj;
	gr->cold_unc_mj = isfinite(cold_unc_mj) && cold_unc_mj >= 0 ? cold_unc_mj : -1;
	gr->ec_ns = cold_ns > 0 ? cold_ns : -1;
	gr->energy_mj = (gr->energy_warm_mj + cold_mj) / 2;
	if (warm_ns > 0 && cold_ns > 0)
		gr->power_mw = gr->energy_mj / ((warm_ns + cold_ns) / 2) * 1e9;
	return 0;
}

/* One mode of the sequence replays: its mean median, rows, energy, pace and data note. */
static int add_sequence_mode(void *ud, const struct kj_store_a_sequence_mode *m)
{
	struct kj_compare *c = ud;
	const char *mode = m->mode;
	const char *data = m->data;
	int has_e = m->has_energy;
	if (!mode)
		return 0;
	if (data && !strcmp(mode, "graph"))
		snprintf(c->seq_graph_data, sizeof(c->seq_graph_data), "%s", data);
	else if (data && !strcmp(mode, "topology"))
		snprintf(c->seq_topo_data, sizeof(c->seq_topo_data), "%s", data);
	if (!strcmp(mode, "eager")) {
		c->seq_eager_ns = m->median_ns;
		c->seq_eager_rows = m->rows;
		c->seq_eager_mj = has_e ? m->energy_mj : -1;
	} else if (!strcmp(mode, "graph")) {
		c->seq_graph_ns = m->median_ns;
		c->seq_graph_rows = m->rows;
		c->seq_graph_mj = has_e ? m->energy_mj : -1;
		if (has_e && m->has_pace)
			c->seq_graph_pace_ns = m->pace_ns;
	} else if (!strcmp(mode, "topology")) {
		c->seq_topo_ns = m->median_ns;
		c->seq_topo_rows = m->rows;
		c->seq_topo_mj = has_e ? m->energy_mj : -1;
		if (has_e && m->has_pace)
			c->seq_topo_pace_ns = m->pace_ns;
	}
	return 0;
}

int cmp_load_groups(sqlite3 *db, struct kj_compare *c, struct kj_imap *gmap)
{
	struct groups G = {c, gmap};
	int rc;
	if ((rc = kj_store_a_unique_kernels_each(db, add_group, &G)) != 0)
		return rc;
	/* isolated replays: rows with a median whose replay succeeded (status ok or relocated,
	 * as src/replay writes them; rows without a status count when they hold no error) */
	if (kj_store_a_replay_medians_each(db, add_median, &G))
		return KJ_EDB;
	if (kj_store_a_replay_energy_each(db, add_energy, &G))
		return KJ_EDB;
	/* with the data out of L2 (older runs lack the table): each kernel's energy is the mean of
	 * the two, as its time is, and its power that energy over the mean of its two times */
	if (kj_db_caps(db)->replay_energy_cold && kj_store_a_replay_energy_cold_each(db, add_energy_cold, &G))
		return KJ_EDB;
	if (kj_db_caps(db)->replay_energy_b2b && kj_store_a_replay_energy_b2b_each(db, add_energy_b2b, &G))
		return KJ_EDB;
	if ((rc = mark_waiters(db, c, gmap)) != 0)
		return rc;
	/* sequence replays: mean of the medians stored per mode */
	c->seq_eager_ns = c->seq_graph_ns = c->seq_eager_mj = c->seq_graph_mj = -1;
	c->seq_topo_ns = c->seq_topo_mj = -1;
	c->seq_graph_data[0] = c->seq_topo_data[0] = '\0';
	c->have_snapshot = kj_db_has_snapshot(db);
	c->seq_topo_pace_ns = c->seq_graph_pace_ns = 0;
	/* a sequence replay that faulted stores its modes without a time */
	c->seq_failed_rows = kj_store_a_sequence_failed_rows(db);
	/* launches the kept iteration's chain left out: the iteration's kernels less the replay's */
	c->seq_left_out = kj_store_a_sequence_left_out(db);
	if (kj_store_a_sequence_modes_each(db, add_sequence_mode, c))
		return KJ_EDB;
	return load_topology(db, c);
}
