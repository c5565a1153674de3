/* kjoule compare: per-iteration decomposition of wall time and energy (docs/analysis-compare.md
 * defines every quantity computed here). */
#include "kj_compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "kj_db.h"
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_report.h"

#define NS_US 1e-3

/* Per-iteration figures, all in ns (energy in mJ). */
struct cmp_iter {
	int64_t start_ns, end_ns;
	int skipped, closed;
	int64_t wall, span, busy, kernel_busy, kernel_sum, copy_sum, clipped_sum, overlap, idle,
		host_only, outside, inherited;
	int64_t n_kernels, n_copies, n_memsets, bytes_h2d, bytes_d2h;
	double replay_warm, replay_cold;     /* Σ over covered launches */
	double insitu_warm, insitu_cold;     /* in-situ Σ of the same launches */
	double replay_seq, insitu_seq;       /* in-sequence replay (replay --sequence), same */
	int64_t cov_warm, cov_cold, cov_energy, cov_seq;
	double energy_kernels_mj;
	double energy_measured_mj;
	int energy_ok;
	double energy_unc_mj;
};

/* One group of launches: a unique kernel (or a kernel name without a unique id). */
struct cmp_group {
	int64_t unique_id, name_id;
	size_t tier;                 /* index into tiers smap */
	double warm_ns, cold_ns;     /* < 0: no replay */
	double seq_ns;               /* < 0: no in-sequence replay */
	double energy_mj;            /* < 0: no replay energy */
	int64_t launches;            /* in kept iterations */
	int64_t measured_ns;
};

struct cmp_tier {
	int64_t launches, unique, measured_ns;
	double replay_warm_ns, energy_mj;
	int64_t cov_warm, cov_energy;
};

struct cmp_region {
	int64_t instances, time_ns, busy_ns, launches;
	int64_t min_depth;
};

struct kj_compare {
	char path[512];
	struct kj_iters it;
	struct cmp_iter *iv;
	struct kj_acts acts;
	struct kj_names names;
	struct cmp_group *groups;
	size_t n_groups;
	struct kj_smap tiers;
	struct cmp_tier *tier_v;
	struct kj_smap region_names;
	struct cmp_region *region_v;
	size_t region_cap;
	int top;
	/* what the run holds */
	int64_t n_replay_warm_rows, n_replay_cold_rows, n_replay_energy_rows;
	double seq_eager_ns, seq_graph_ns, seq_eager_mj, seq_graph_mj; /* < 0: absent */
	int64_t seq_eager_rows, seq_graph_rows;
	int64_t n_power_samples, n_power_in_windows;
	double power_avg_w, power_min_w, power_max_w; /* < 0: absent */
	double idle_w;                                 /* < 0: unknown; the idle term's power */
	double deep_idle_w;                            /* idle_power table (kjoule power --idle) */
	double awake_idle_w;                           /* quiet GPU with clocks up, from the run */
	int64_t n_awake_samples;
	int64_t n_devices_power;
	int have_energy_engine;
	int64_t n_api_calls;
	int64_t realtime_offset_ns; /* realtime - monotonic; valid when have_realtime */
	int have_realtime;
};

/* ---- helpers ---- */

static json_t *num_or_null(double v, int known)
{
	if (!known || !isfinite(v))
		return json_null();
	return json_real(round(v * 1000.0) / 1000.0);
}

static json_t *ratio_or_null(double v, int known)
{
	if (!known || !isfinite(v))
		return json_null();
	return json_real(round(v * 1e6) / 1e6);
}

static double safe_div(double a, double b, int *ok)
{
	if (b == 0.0 || !isfinite(a) || !isfinite(b)) {
		*ok = 0;
		return 0.0;
	}
	*ok = 1;
	return a / b;
}

/* mean/min/max of a per-iteration double over kept iterations */
struct stat3 {
	double mean, min, max;
	int64_t n;
};

typedef double (*iter_get)(const struct cmp_iter *x);

/* mean/min/max of get(x) over kept iterations (and, with need_energy, those with energy) */
static struct stat3 iter_stat(const struct kj_compare *c, iter_get get, int need_energy)
{
	struct stat3 s = {0, 0, 0, 0};
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		if (x->skipped || (need_energy && !x->energy_ok))
			continue;
		double v = get(x);
		if (!s.n || v < s.min)
			s.min = v;
		if (!s.n || v > s.max)
			s.max = v;
		s.mean += v;
		s.n++;
	}
	if (s.n)
		s.mean /= (double)s.n;
	return s;
}

#define GETTER(field)                                                                    \
	static double get_##field(const struct cmp_iter *x)                              \
	{                                                                                \
		return (double)x->field;                                                 \
	}
GETTER(wall)
GETTER(span)
GETTER(busy)
GETTER(kernel_busy)
GETTER(kernel_sum)
GETTER(copy_sum)
GETTER(overlap)
GETTER(idle)
GETTER(host_only)
GETTER(outside)
GETTER(inherited)
GETTER(n_kernels)
GETTER(n_copies)
GETTER(n_memsets)
GETTER(bytes_h2d)
GETTER(bytes_d2h)
GETTER(replay_warm)
GETTER(replay_cold)
GETTER(insitu_warm)
GETTER(insitu_cold)
GETTER(cov_warm)
GETTER(cov_cold)
GETTER(cov_energy)
GETTER(replay_seq)
GETTER(insitu_seq)
GETTER(cov_seq)
GETTER(energy_kernels_mj)
GETTER(energy_measured_mj)
GETTER(energy_unc_mj)

/* tier by name rules when the run has none stored for a kernel */
static const char *name_tier(const struct kj_compare *c, int64_t name_id)
{
	const char *n = kj_names_get(&c->names, name_id);
	return kj_tier_classify(n, n);
}

static size_t group_of(struct kj_compare *c, struct kj_imap *gmap, const struct kj_act *a)
{
	int64_t key = a->unique_id >= 0 ? a->unique_id : -(a->name_id + 2);
	size_t g = kj_imap_get(gmap, key);
	if (g != (size_t)-1)
		return g;
	/* a kernel without a unique_kernel row: its own group, tier unknown */
	struct cmp_group *ng = realloc(c->groups, (c->n_groups + 1) * sizeof(*ng));
	if (!ng)
		return (size_t)-1;
	c->groups = ng;
	g = c->n_groups++;
	c->groups[g] = (struct cmp_group){.unique_id = a->unique_id, .name_id = a->name_id,
					  .tier = kj_smap_intern(&c->tiers, name_tier(c, a->name_id)),
					  .warm_ns = -1, .cold_ns = -1, .seq_ns = -1, .energy_mj = -1};
	if (kj_imap_put(gmap, key, g))
		return (size_t)-1;
	return g;
}

static int load_groups(sqlite3 *db, struct kj_compare *c, struct kj_imap *gmap)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT id, name_id, tier FROM unique_kernel", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *tier = (const char *)sqlite3_column_text(st, 2);
		struct cmp_group *ng = realloc(c->groups, (c->n_groups + 1) * sizeof(*ng));
		if (!ng)
			goto nomem;
		c->groups = ng;
		c->groups[c->n_groups] = (struct cmp_group){
			.unique_id = sqlite3_column_int64(st, 0),
			.name_id = sqlite3_column_type(st, 1) == SQLITE_NULL
					   ? -1
					   : sqlite3_column_int64(st, 1),
			.tier = kj_smap_intern(&c->tiers, tier && *tier ? tier : name_tier(c, sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1))),
			.warm_ns = -1, .cold_ns = -1, .energy_mj = -1};
		if (kj_imap_put(gmap, c->groups[c->n_groups].unique_id, c->n_groups))
			goto nomem;
		c->n_groups++;
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
		}
	}
	sqlite3_finalize(st);
	if (kj_db_prepare(db,
			  "SELECT unique_id, energy_mj_per_launch FROM replay_energy"
			  " WHERE energy_mj_per_launch IS NOT NULL AND energy_mj_per_launch >= 0",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		size_t g = kj_imap_get(gmap, sqlite3_column_int64(st, 0));
		if (g == (size_t)-1)
			continue;
		c->groups[g].energy_mj = sqlite3_column_double(st, 1);
		c->n_replay_energy_rows++;
	}
	sqlite3_finalize(st);
	/* sequence replays: mean of the medians stored per mode */
	c->seq_eager_ns = c->seq_graph_ns = c->seq_eager_mj = c->seq_graph_mj = -1;
	if (kj_db_prepare(db,
			  "SELECT lower(mode), avg(median_ns), count(*), avg(energy_mj),"
			  " count(energy_mj) FROM replay_sequence"
			  " WHERE median_ns IS NOT NULL AND median_ns > 0 GROUP BY lower(mode)",
			  &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *mode = (const char *)sqlite3_column_text(st, 0);
		int has_e = sqlite3_column_int64(st, 4) > 0;
		if (!mode)
			continue;
		if (!strcmp(mode, "eager")) {
			c->seq_eager_ns = sqlite3_column_double(st, 1);
			c->seq_eager_rows = sqlite3_column_int64(st, 2);
			c->seq_eager_mj = has_e ? sqlite3_column_double(st, 3) : -1;
		} else if (!strcmp(mode, "graph")) {
			c->seq_graph_ns = sqlite3_column_double(st, 1);
			c->seq_graph_rows = sqlite3_column_int64(st, 2);
			c->seq_graph_mj = has_e ? sqlite3_column_double(st, 3) : -1;
		}
	}
	sqlite3_finalize(st);
	return 0;
nomem:
	sqlite3_finalize(st);
	return KJ_ENOMEM;
}

/* Realtime offset from clock_sync (for the seed's wall-clock timestamps). */
static void load_realtime(sqlite3 *db, struct kj_compare *c)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db,
			  "SELECT realtime_ns - monotonic_ns FROM clock_sync WHERE realtime_ns IS NOT"
			  " NULL AND monotonic_ns IS NOT NULL LIMIT 1",
			  &st))
		return;
	if (sqlite3_step(st) == SQLITE_ROW) {
		c->realtime_offset_ns = sqlite3_column_int64(st, 0);
		c->have_realtime = 1;
	}
	sqlite3_finalize(st);
}

/* Power of a device that waits with its clocks up — what a launch-bound program's GPU draws
 * between kernels, well above deep idle. Taken from the run itself: the median of readings with
 * the SM clock within 10% of its highest reading and no GPU activity from 150 ms before the
 * reading (NVML power averages over about 100 ms) to 20 ms after. < 0 when fewer than 20 such
 * readings exist. */
static double awake_idle_mw(sqlite3 *db, int64_t dev, int64_t *nsel)
{
	sqlite3_stmt *st = NULL;
	int64_t *as = NULL, *ae = NULL, maxclk = 0;
	size_t na = 0, cap = 0, np = 0, pcap = 0, nq = 0;
	int64_t (*ps)[3] = NULL;
	double *q = NULL, med = -1;
	*nsel = 0;
	if (kj_db_prepare(db, "SELECT start_ns, end_ns FROM gpu_activity WHERE device_id = ?"
			  " AND start_ns IS NOT NULL ORDER BY start_ns", &st))
		return -1;
	sqlite3_bind_int64(st, 1, dev);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (na == cap) {
			cap = cap ? 2 * cap : 4096;
			int64_t *ns = realloc(as, cap * sizeof(*ns)), *ne = ns ? realloc(ae, cap * sizeof(*ne)) : NULL;
			if (ns)
				as = ns;
			if (!ns || !ne)
				goto out;
			ae = ne;
		}
		as[na] = sqlite3_column_int64(st, 0);
		int64_t e = sqlite3_column_int64(st, 1);
		ae[na] = na && ae[na - 1] > e ? ae[na - 1] : e; /* running max of ends */
		na++;
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
		if (np == pcap) {
			pcap = pcap ? 2 * pcap : 4096;
			void *n = realloc(ps, pcap * sizeof(*ps));
			if (!n)
				goto out;
			ps = n;
		}
		ps[np][0] = sqlite3_column_int64(st, 0);
		ps[np][1] = sqlite3_column_int64(st, 1);
		ps[np][2] = sqlite3_column_int64(st, 2);
		if (ps[np][2] > maxclk)
			maxclk = ps[np][2];
		np++;
	}
	q = malloc((np ? np : 1) * sizeof(*q));
	if (!q)
		goto out;
	for (size_t i = 0, a = 0; i < np; i++) {
		int64_t lo = ps[i][0] - 150000000LL, hi = ps[i][0] + 20000000LL;
		if (ps[i][2] * 10 < maxclk * 9)
			continue;
		while (a < na && as[a] <= hi)
			a++; /* as[a-1]: the last activity starting before hi */
		if (a > 0 && ae[a - 1] >= lo)
			continue;
		q[nq++] = (double)ps[i][1];
	}
	if (nq >= 20) {
		for (size_t i = 1; i < nq; i++) /* insertion sort: a few hundred readings */
			for (size_t j = i; j > 0 && q[j - 1] > q[j]; j--) {
				double t = q[j];
				q[j] = q[j - 1];
				q[j - 1] = t;
			}
		med = nq % 2 ? q[nq / 2] : (q[nq / 2 - 1] + q[nq / 2]) / 2;
	}
	*nsel = (int64_t)nq;
out:
	sqlite3_finalize(st);
	free(as);
	free(ae);
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
			if (w >= 0) {
				c->idle_w = (c->idle_w < 0 ? 0 : c->idle_w) + w / 1000.0;
			}
		}
		sqlite3_finalize(st);
		return 0;
	}
	for (size_t i = 0; i < c->it.n; i++)
		c->iv[i].energy_ok = 1;
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
		free(s);
	}
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
		size_t before = c->region_names.n;
		size_t r = kj_smap_intern(&c->region_names, name);
		if (r == (size_t)-1)
			goto nomem;
		if (c->region_names.n > before) {
			if (r >= c->region_cap) {
				size_t nc = c->region_cap ? c->region_cap * 2 : 32;
				struct cmp_region *nr = realloc(c->region_v, nc * sizeof(*nr));
				if (!nr)
					goto nomem;
				c->region_v = nr;
				c->region_cap = nc;
			}
			c->region_v[r] = (struct cmp_region){.min_depth = depth};
		}
		struct cmp_region *g = &c->region_v[r];
		g->instances++;
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
	return 0;
nomem:
	sqlite3_finalize(st);
	free(scratch);
	return KJ_ENOMEM;
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
		goto fail;
	}
	if (rc)
		goto fail;
	rc = kj_acts_load(db, &c->acts);
	if (rc)
		goto fail;
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
		goto fail;
	rc = kj_names_load(db, &c->names);
	if (rc)
		goto fail;
	rc = load_groups(db, c, &gmap);
	if (rc)
		goto fail;
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
		goto fail;
	}
	/* assign each activity to the iteration that launched it; CSR lists per iteration */
	win = malloc((na ? na : 1) * sizeof(*win));
	if (!win) {
		rc = KJ_ENOMEM;
		goto fail;
	}
	for (size_t k = 0; k < na; k++) {
		const struct kj_act *a = &c->acts.v[k];
		owner[k] = kj_iters_owner(&c->it, a->key_ns);
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
			goto fail;
		}
		for (size_t k = 0; k < na; k++)
			if (owner[k] >= 0)
				order[first[owner[k]] + fill[owner[k]]++] = k;
		free(fill);
	}

	c->tier_v = calloc(c->tiers.cap + 8, sizeof(*c->tier_v));
	if (!c->tier_v) {
		rc = KJ_ENOMEM;
		goto fail;
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
					goto fail;
				}
				struct cmp_group *gr = &c->groups[g];
				if (gr->warm_ns >= 0) {
					x->replay_warm += gr->warm_ns;
					x->insitu_warm += (double)d;
					x->cov_warm++;
				}
				if (gr->cold_ns >= 0) {
					x->replay_cold += gr->cold_ns;
					x->insitu_cold += (double)d;
					x->cov_cold++;
				}
				if (gr->seq_ns >= 0) {
					x->replay_seq += gr->seq_ns;
					x->insitu_seq += (double)d;
					x->cov_seq++;
				}
				if (gr->energy_mj >= 0) {
					x->energy_kernels_mj += gr->energy_mj;
					x->cov_energy++;
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
			goto fail;
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
	rc = compute_energy(db, c);
	if (rc)
		goto fail;
	rc = compute_regions(db, c);
	if (rc)
		goto fail;
	if (!o->quiet && c->acts.n_kernels == 0)
		kj_warnf("the run holds no kernels: GPU figures are zero");
	free(owner);
	free(first);
	free(order);
	free(iv_all);
	free(iv_k);
	free(win);
	kj_imap_free(&gmap);
	*out = c;
	return 0;
fail:
	if (rc == KJ_ENOMEM)
		kj_errorf("compare: out of memory");
	free(owner);
	free(first);
	free(order);
	free(iv_all);
	free(iv_k);
	free(win);
	kj_imap_free(&gmap);
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
	free(c->groups);
	free(c->iv);
	free(c);
}

/* ---- derived figures (means over kept iterations, ns) ---- */

struct cmp_summary {
	int64_t n;
	struct stat3 wall, span, busy, kernel_busy, kernel_sum, copy_sum, overlap, idle, host_only,
		outside, inherited, n_kernels, n_copies, n_memsets, bytes_h2d, bytes_d2h;
	double replay_warm, replay_cold, insitu_warm, insitu_cold, replay_seq, insitu_seq;
	double cov_warm, cov_cold, cov_energy, cov_seq; /* fractions of kernel launches */
	int have_warm, have_cold, full_warm, full_cold, have_seq;
	double predicted_wall, explained_fraction, naive_fraction, naive_error_pct;
	double explained_fraction_seq; /* the same with in-sequence replay times */
	int have_explained;
	double seq_eager, seq_graph, framework_host, launch_cost, sequence_fraction;
	int have_eager, have_graph;
	/* energy, mJ per iteration */
	struct stat3 e_meas;
	int have_meas;
	double e_unc, e_unc_mean, e_kernels, e_idle, e_pred, e_err_pct;
	int have_kernels_e, have_idle_e, have_pred, have_err;
};

static void summarize(const struct kj_compare *c, struct cmp_summary *s)
{
	int ok;
	memset(s, 0, sizeof(*s));
	s->n = (int64_t)c->it.n_kept;
	s->wall = iter_stat(c, get_wall, 0);
	s->span = iter_stat(c, get_span, 0);
	s->busy = iter_stat(c, get_busy, 0);
	s->kernel_busy = iter_stat(c, get_kernel_busy, 0);
	s->kernel_sum = iter_stat(c, get_kernel_sum, 0);
	s->copy_sum = iter_stat(c, get_copy_sum, 0);
	s->overlap = iter_stat(c, get_overlap, 0);
	s->idle = iter_stat(c, get_idle, 0);
	s->host_only = iter_stat(c, get_host_only, 0);
	s->outside = iter_stat(c, get_outside, 0);
	s->inherited = iter_stat(c, get_inherited, 0);
	s->n_kernels = iter_stat(c, get_n_kernels, 0);
	s->n_copies = iter_stat(c, get_n_copies, 0);
	s->n_memsets = iter_stat(c, get_n_memsets, 0);
	s->bytes_h2d = iter_stat(c, get_bytes_h2d, 0);
	s->bytes_d2h = iter_stat(c, get_bytes_d2h, 0);
	s->replay_warm = iter_stat(c, get_replay_warm, 0).mean;
	s->replay_cold = iter_stat(c, get_replay_cold, 0).mean;
	s->insitu_warm = iter_stat(c, get_insitu_warm, 0).mean;
	s->insitu_cold = iter_stat(c, get_insitu_cold, 0).mean;
	double kl = s->n_kernels.mean;
	double cw = iter_stat(c, get_cov_warm, 0).mean, cc = iter_stat(c, get_cov_cold, 0).mean;
	double ce = iter_stat(c, get_cov_energy, 0).mean;
	s->cov_warm = kl > 0 ? cw / kl : 0;
	s->cov_cold = kl > 0 ? cc / kl : 0;
	s->cov_energy = kl > 0 ? ce / kl : 0;
	s->replay_seq = iter_stat(c, get_replay_seq, 0).mean;
	s->insitu_seq = iter_stat(c, get_insitu_seq, 0).mean;
	double cs = iter_stat(c, get_cov_seq, 0).mean;
	s->cov_seq = kl > 0 ? cs / kl : 0;
	s->have_seq = cs > 0;
	s->have_warm = cw > 0;
	s->have_cold = cc > 0;
	s->full_warm = kl > 0 && cw >= kl;
	s->full_cold = kl > 0 && cc >= kl;
	/* predicted wall: the measured wall with every replayed kernel's in-situ time replaced by
	 * its isolated replay time (docs/analysis-compare.md, "explained_fraction") */
	if (s->have_warm) {
		s->predicted_wall = s->wall.mean + (s->replay_warm - s->insitu_warm);
		s->explained_fraction = safe_div(s->predicted_wall, s->wall.mean, &ok);
		s->explained_fraction_seq =
			s->have_seq ? (s->wall.mean + (s->replay_seq - s->insitu_seq)) / s->wall.mean : -1;
		s->have_explained = ok;
		s->naive_fraction = safe_div(s->replay_warm, s->wall.mean, &ok);
		s->naive_error_pct = safe_div(100.0 * (s->replay_warm - s->wall.mean), s->wall.mean,
					      &ok);
	}
	s->have_eager = c->seq_eager_ns >= 0;
	s->have_graph = c->seq_graph_ns >= 0;
	s->seq_eager = c->seq_eager_ns;
	s->seq_graph = c->seq_graph_ns;
	if (s->have_eager) {
		s->framework_host = s->wall.mean - s->seq_eager;
		s->sequence_fraction = safe_div(s->seq_eager, s->wall.mean, &ok);
	}
	if (s->have_eager && s->have_graph)
		s->launch_cost = s->seq_eager - s->seq_graph;
	/* energy */
	s->e_meas = iter_stat(c, get_energy_measured_mj, 1);
	s->have_meas = s->e_meas.n > 0;
	s->e_unc = iter_stat(c, get_energy_unc_mj, 1).mean;
	/* the mean of n windows: their stated uncertainties in quadrature / n (independent edges) */
	{
		double q = 0;
		for (size_t i = 0; i < c->it.n; i++)
			if (!c->iv[i].skipped && c->iv[i].energy_ok)
				q += c->iv[i].energy_unc_mj * c->iv[i].energy_unc_mj;
		s->e_unc_mean = s->e_meas.n ? sqrt(q) / (double)s->e_meas.n : 0;
	}
	if (ce > 0) {
		s->e_kernels = iter_stat(c, get_energy_kernels_mj, 0).mean;
		s->have_kernels_e = 1;
	}
	if (c->idle_w >= 0) {
		/* idle power over the time no kernel runs (copies count as idle here) */
		s->e_idle = c->idle_w * (s->wall.mean - s->kernel_busy.mean) * 1e-6; /* W*ns->mJ */
		s->have_idle_e = 1;
	}
	if (s->have_kernels_e && s->have_idle_e) {
		s->e_pred = s->e_kernels + s->e_idle;
		s->have_pred = 1;
		if (s->have_meas) {
			s->e_err_pct = safe_div(100.0 * (s->e_pred - s->e_meas.mean), s->e_meas.mean,
						&ok);
			s->have_err = ok;
		}
	}
}

static json_t *stat_json(struct stat3 st, double scale)
{
	json_t *o = json_object();
	json_object_set_new(o, "mean", num_or_null(st.mean * scale, st.n > 0));
	json_object_set_new(o, "min", num_or_null(st.min * scale, st.n > 0));
	json_object_set_new(o, "max", num_or_null(st.max * scale, st.n > 0));
	return o;
}

static int group_cmp_desc(const void *a, const void *b, void *ctx)
{
	const struct kj_compare *c = ctx;
	const struct cmp_group *x = &c->groups[*(const size_t *)a], *y = &c->groups[*(const size_t *)b];
	if (x->measured_ns != y->measured_ns)
		return x->measured_ns > y->measured_ns ? -1 : 1;
	return x->launches > y->launches ? -1 : x->launches < y->launches;
}

/* sorted indices of groups with launches, by measured time (caller frees) */
static size_t *top_groups(const struct kj_compare *c, size_t *n_out)
{
	size_t *ix = malloc((c->n_groups + 1) * sizeof(*ix)), n = 0;
	if (!ix) {
		*n_out = 0;
		return NULL;
	}
	for (size_t g = 0; g < c->n_groups; g++)
		if (c->groups[g].launches > 0)
			ix[n++] = g;
	/* binary insertion sort: groups are unique kernels (hundreds), and qsort has no context */
	for (size_t i = 1; i < n; i++) {
		size_t v = ix[i], j = i;
		/* n is the number of unique kernels (small): a binary insertion keeps it simple */
		size_t lo = 0, hi = i;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (group_cmp_desc(&ix[mid], &v, (void *)c) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (j = i; j > lo; j--)
			ix[j] = ix[j - 1];
		ix[lo] = v;
	}
	*n_out = n;
	return ix;
}

static const char *group_name(const struct kj_compare *c, const struct cmp_group *g)
{
	return kj_names_get(&c->names, g->name_id);
}

static json_t *tiers_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	double n = (double)(s->n ? s->n : 1);
	for (size_t t = 0; t < c->tiers.n; t++) {
		const struct cmp_tier *ti = &c->tier_v[t];
		int ok;
		if (!ti->launches)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "tier", json_string(c->tiers.names[t]));
		json_object_set_new(o, "unique_kernels", json_integer(ti->unique));
		json_object_set_new(o, "launches_per_iteration", json_real(round((double)ti->launches / n * 1000) / 1000));
		json_object_set_new(o, "measured_us", num_or_null((double)ti->measured_ns / n * NS_US, 1));
		double pct = safe_div(100.0 * (double)ti->measured_ns / n, s->kernel_sum.mean + s->copy_sum.mean, &ok);
		json_object_set_new(o, "measured_pct", num_or_null(pct, ok));
		json_object_set_new(o, "replay_warm_us", num_or_null(ti->replay_warm_ns / n * NS_US, ti->cov_warm > 0));
		json_object_set_new(o, "replay_coverage", ratio_or_null((double)ti->cov_warm / (double)ti->launches, 1));
		json_object_set_new(o, "energy_j", num_or_null(ti->energy_mj / n / 1000.0, ti->cov_energy > 0));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *top_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	size_t n = 0, *ix = top_groups(c, &n);
	double ni = (double)(s->n ? s->n : 1);
	for (size_t k = 0; k < n && k < (size_t)c->top; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		int ok;
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(group_name(c, g)));
		json_object_set_new(o, "unique_id", g->unique_id >= 0 ? json_integer(g->unique_id) : json_null());
		json_object_set_new(o, "tier", json_string(c->tiers.names[g->tier]));
		json_object_set_new(o, "count_per_iteration", json_real(round((double)g->launches / ni * 1000) / 1000));
		json_object_set_new(o, "measured_us", num_or_null((double)g->measured_ns / ni * NS_US, 1));
		json_object_set_new(o, "measured_mean_us", num_or_null((double)g->measured_ns / (double)g->launches * NS_US, 1));
		json_object_set_new(o, "replay_warm_us", num_or_null(g->warm_ns * NS_US, g->warm_ns >= 0));
		json_object_set_new(o, "replay_cold_us", num_or_null(g->cold_ns * NS_US, g->cold_ns >= 0));
		json_object_set_new(o, "replay_sequence_us", num_or_null(g->seq_ns * NS_US, g->seq_ns >= 0));
		json_object_set_new(o, "predicted_us", num_or_null(g->warm_ns * (double)g->launches / ni * NS_US, g->warm_ns >= 0));
		json_object_set_new(o, "energy_mj_per_launch", num_or_null(g->energy_mj, g->energy_mj >= 0));
		double share = safe_div(100.0 * (double)g->measured_ns / ni, s->kernel_sum.mean, &ok);
		json_object_set_new(o, "share_of_kernel_sum_pct", num_or_null(share, ok));
		json_array_append_new(arr, o);
	}
	free(ix);
	return arr;
}

/* Kernels whose replay disagrees with the trace where it should not: timed inside the replayed
 * iteration (same order, same L2) a kernel should take its in-situ time. A disagreement of more
 * than 25 % on a kernel with at least 1 % of the kernel time points at a replay that did other
 * work (data-dependent kernels on random data, semaphores not zeroed). Indices into groups,
 * largest share first; *n_out entries. */
static size_t *disagreements(const struct kj_compare *c, const struct cmp_summary *s, size_t *n_out)
{
	size_t n = 0, nt = 0, *ix = top_groups(c, &nt), *out = malloc((nt + 1) * sizeof(*out));
	double ni = (double)(s->n ? s->n : 1);
	*n_out = 0;
	if (!ix || !out) {
		free(ix);
		free(out);
		return NULL;
	}
	for (size_t k = 0; k < nt; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		if (g->seq_ns < 0 || g->launches <= 0)
			continue;
		double situ = (double)g->measured_ns / (double)g->launches;
		double share = (double)g->measured_ns / ni / (s->kernel_sum.mean > 0 ? s->kernel_sum.mean : 1);
		if (situ > 0 && share >= 0.01 && fabs(g->seq_ns / situ - 1.0) > 0.25)
			out[n++] = ix[k];
	}
	free(ix);
	*n_out = n;
	return out;
}

static json_t *disagreements_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	size_t n = 0, *ix = disagreements(c, s, &n);
	for (size_t k = 0; k < n; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		double situ = (double)g->measured_ns / (double)g->launches;
		json_array_append_new(arr, json_pack("{s:s, s:o, s:f, s:f, s:o}", "name", group_name(c, g),
			"unique_id", g->unique_id >= 0 ? json_integer(g->unique_id) : json_null(),
			"in_situ_mean_us", situ * NS_US, "replay_sequence_us", g->seq_ns * NS_US,
			"replay_warm_us", num_or_null(g->warm_ns * NS_US, g->warm_ns >= 0)));
	}
	free(ix);
	return arr;
}

static json_t *regions_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	double ni = (double)(s->n ? s->n : 1);
	for (size_t r = 0; r < c->region_names.n; r++) {
		const struct cmp_region *g = &c->region_v[r];
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(c->region_names.names[r]));
		json_object_set_new(o, "depth", json_integer(g->min_depth));
		json_object_set_new(o, "instances_per_iteration", json_real(round((double)g->instances / ni * 1000) / 1000));
		json_object_set_new(o, "time_us", num_or_null((double)g->time_ns / ni * NS_US, 1));
		json_object_set_new(o, "gpu_busy_us", num_or_null((double)g->busy_ns / ni * NS_US, 1));
		json_object_set_new(o, "kernels_per_iteration", json_real(round((double)g->launches / ni * 1000) / 1000));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *missing_json(const struct kj_compare *c, const struct cmp_summary *s)
{
	json_t *arr = json_array();
	if (c->acts.n_kernels == 0)
		json_array_append_new(arr, json_string("no kernels in the run"));
	if (!s->have_warm)
		json_array_append_new(arr, json_string("no warm kernel replays (run kjoule replay)"));
	else if (!s->full_warm)
		json_array_append_new(arr, json_string("warm replays cover only part of the launches (replay_coverage_warm)"));
	if (!s->have_cold)
		json_array_append_new(arr, json_string("no cold-cache kernel replays"));
	if (!s->have_eager)
		json_array_append_new(arr, json_string("no eager sequence replay"));
	if (!s->have_graph)
		json_array_append_new(arr, json_string("no CUDA-graph sequence replay"));
	if (c->n_power_samples == 0)
		json_array_append_new(arr, json_string("no power samples: measured energy unknown"));
	else if (!s->have_meas)
		json_array_append_new(arr, json_string("power samples do not cover the iterations"));
	if (c->idle_w < 0)
		json_array_append_new(arr, json_string("no idle power (run kjoule power --idle)"));
	if (!s->have_kernels_e)
		json_array_append_new(arr, json_string("no replayed energy per launch"));
	if (c->it.whole_run)
		json_array_append_new(arr, json_string("no NVTX iteration ranges: the whole run is one iteration"));
	return arr;
}

json_t *kj_compare_json(const struct kj_compare *c)
{
	struct cmp_summary s;
	json_t *o = json_object(), *it = json_object(), *st = json_object();
	summarize(c, &s);
	int ok;

	json_object_set_new(it, "region", c->it.whole_run ? json_null() : json_string(c->it.region));
	json_object_set_new(it, "instances", json_integer((json_int_t)c->it.n));
	json_object_set_new(it, "skipped", json_integer(c->it.skip));
	json_object_set_new(it, "measured", json_integer((json_int_t)c->it.n_kept));
	json_object_set_new(it, "unclosed", json_integer(c->it.unclosed));
	json_object_set_new(it, "overlapping", json_integer(c->it.overlaps));
	json_object_set_new(it, "whole_run", json_boolean(c->it.whole_run));
	json_object_set_new(o, "iterations", it);

	json_object_set_new(o, "wall_us", num_or_null(s.wall.mean * NS_US, s.n > 0));
	json_object_set_new(o, "span_us", num_or_null(s.span.mean * NS_US, s.n > 0));
	json_object_set_new(o, "busy_us", num_or_null(s.busy.mean * NS_US, s.n > 0));
	json_object_set_new(o, "kernel_busy_us", num_or_null(s.kernel_busy.mean * NS_US, s.n > 0));
	json_object_set_new(o, "kernel_sum_us", num_or_null(s.kernel_sum.mean * NS_US, s.n > 0));
	json_object_set_new(o, "copy_sum_us", num_or_null(s.copy_sum.mean * NS_US, s.n > 0));
	json_object_set_new(o, "overlap_us", num_or_null(s.overlap.mean * NS_US, s.n > 0));
	json_object_set_new(o, "idle_us", num_or_null(s.idle.mean * NS_US, s.n > 0));
	json_object_set_new(o, "host_only_us", num_or_null(s.host_only.mean * NS_US, s.n > 0));
	json_object_set_new(o, "outside_us", num_or_null(s.outside.mean * NS_US, s.n > 0));
	json_object_set_new(o, "inherited_us", num_or_null(s.inherited.mean * NS_US, s.n > 0));
	json_object_set_new(o, "kernels_per_iteration", num_or_null(s.n_kernels.mean, s.n > 0));
	json_object_set_new(o, "copies_per_iteration", num_or_null(s.n_copies.mean, s.n > 0));
	json_object_set_new(o, "memsets_per_iteration", num_or_null(s.n_memsets.mean, s.n > 0));
	json_object_set_new(o, "bytes_h2d_per_iteration", num_or_null(s.bytes_h2d.mean, s.n > 0));
	json_object_set_new(o, "bytes_d2h_per_iteration", num_or_null(s.bytes_d2h.mean, s.n > 0));
	json_object_set_new(o, "replay_sum_warm_us", num_or_null(s.replay_warm * NS_US, s.have_warm));
	json_object_set_new(o, "replay_sum_cold_us", num_or_null(s.replay_cold * NS_US, s.have_cold));
	json_object_set_new(o, "replay_coverage_warm", ratio_or_null(s.cov_warm, s.n_kernels.mean > 0));
	json_object_set_new(o, "replay_coverage_cold", ratio_or_null(s.cov_cold, s.n_kernels.mean > 0));
	json_object_set_new(o, "replay_sum_sequence_us", num_or_null(s.replay_seq * NS_US, s.have_seq));
	json_object_set_new(o, "replay_coverage_sequence", ratio_or_null(s.cov_seq, s.n_kernels.mean > 0));
	json_object_set_new(o, "insitu_sum_sequence_covered_us", num_or_null(s.insitu_seq * NS_US, s.have_seq));
	json_object_set_new(o, "insitu_sum_replayed_us", num_or_null(s.insitu_warm * NS_US, s.have_warm));
	json_object_set_new(o, "sequence_eager_us", num_or_null(s.seq_eager * NS_US, s.have_eager));
	json_object_set_new(o, "sequence_graph_us", num_or_null(s.seq_graph * NS_US, s.have_graph));
	json_object_set_new(o, "framework_host_us", num_or_null(s.framework_host * NS_US, s.have_eager));
	json_object_set_new(o, "launch_cost_us", num_or_null(s.launch_cost * NS_US, s.have_eager && s.have_graph));
	json_object_set_new(o, "sequence_fraction", ratio_or_null(s.sequence_fraction, s.have_eager));
	json_object_set_new(o, "naive_error_pct", num_or_null(s.naive_error_pct, s.have_warm && s.wall.mean > 0));
	json_object_set_new(o, "naive_fraction", ratio_or_null(s.naive_fraction, s.have_warm && s.wall.mean > 0));
	json_object_set_new(o, "predicted_wall_us", num_or_null(s.predicted_wall * NS_US, s.have_explained));
	json_object_set_new(o, "explained_fraction", ratio_or_null(s.explained_fraction, s.have_explained));
	json_object_set_new(o, "explained_fraction_sequence",
			    ratio_or_null(s.explained_fraction_seq, s.have_explained && s.have_seq));

	json_object_set_new(o, "energy_measured_j", num_or_null(s.e_meas.mean / 1000.0, s.have_meas));
	json_object_set_new(o, "energy_measured_unc_j", num_or_null(s.e_unc / 1000.0, s.have_meas));
	json_object_set_new(o, "energy_measured_mean_unc_j", num_or_null(s.e_unc_mean / 1000.0, s.have_meas));
	json_object_set_new(o, "energy_kernels_j", num_or_null(s.e_kernels / 1000.0, s.have_kernels_e));
	json_object_set_new(o, "energy_kernels_coverage", ratio_or_null(s.cov_energy, s.n_kernels.mean > 0));
	json_object_set_new(o, "energy_idle_j", num_or_null(s.e_idle / 1000.0, s.have_idle_e));
	json_object_set_new(o, "energy_predicted_j", num_or_null(s.e_pred / 1000.0, s.have_pred));
	json_object_set_new(o, "energy_error_pct", num_or_null(s.e_err_pct, s.have_err));
	json_object_set_new(o, "idle_power_w", num_or_null(c->idle_w, c->idle_w >= 0));
	json_object_set_new(o, "idle_power_basis", c->idle_w < 0 ? json_null()
				  : json_string(c->awake_idle_w >= 0 ? "awake" : "deep"));
	json_object_set_new(o, "awake_idle_power_w", num_or_null(c->awake_idle_w, c->awake_idle_w >= 0));
	json_object_set_new(o, "awake_idle_readings", json_integer(c->n_awake_samples));
	json_object_set_new(o, "deep_idle_power_w", num_or_null(c->deep_idle_w, c->deep_idle_w >= 0));
	json_object_set_new(o, "sequence_eager_energy_j", num_or_null(c->seq_eager_mj / 1000.0, c->seq_eager_mj >= 0));
	json_object_set_new(o, "sequence_graph_energy_j", num_or_null(c->seq_graph_mj / 1000.0, c->seq_graph_mj >= 0));
	double pavg = safe_div(s.e_meas.mean, s.wall.mean * 1e-6, &ok); /* mJ/ns*1e6 = W */
	json_object_set_new(o, "power_avg_w", num_or_null(pavg, ok && s.have_meas));

	json_object_set_new(st, "wall_us", stat_json(s.wall, NS_US));
	json_object_set_new(st, "span_us", stat_json(s.span, NS_US));
	json_object_set_new(st, "busy_us", stat_json(s.busy, NS_US));
	json_object_set_new(st, "kernel_sum_us", stat_json(s.kernel_sum, NS_US));
	json_object_set_new(st, "idle_us", stat_json(s.idle, NS_US));
	json_object_set_new(st, "host_only_us", stat_json(s.host_only, NS_US));
	json_object_set_new(st, "energy_measured_j", stat_json(s.e_meas, 1e-3));
	json_object_set_new(o, "stats", st);

	json_object_set_new(o, "tiers", tiers_json(c, &s));
	json_object_set_new(o, "top_kernels", top_json(c, &s));
	json_object_set_new(o, "replay_disagreements", disagreements_json(c, &s));
	json_object_set_new(o, "regions", regions_json(c, &s));
	json_object_set_new(o, "missing", missing_json(c, &s));
	return o;
}

/* ---- text ---- */

static void row(FILE *f, const char *label, struct stat3 st, const char *note)
{
	if (st.n == 0) {
		fprintf(f, "  %-34s %12s\n", label, "-");
		return;
	}
	fprintf(f, "  %-34s %12.1f %12.1f %12.1f  %s\n", label, st.mean * NS_US, st.min * NS_US,
		st.max * NS_US, note ? note : "");
}

static void line_us(FILE *f, const char *label, double v_ns, int known, const char *note)
{
	if (!known)
		fprintf(f, "  %-34s %12s  %s\n", label, "n/a", note ? note : "");
	else
		fprintf(f, "  %-34s %12.1f  %s\n", label, v_ns * NS_US, note ? note : "");
}

static double pct(double a, double b)
{
	return b != 0 ? 100.0 * a / b : 0.0;
}

void kj_compare_print(const struct kj_compare *c, FILE *f)
{
	struct cmp_summary s;
	summarize(c, &s);
	if (c->it.whole_run)
		fprintf(f, "iterations: no NVTX iteration ranges; the whole run is one iteration\n");
	else
		fprintf(f, "iterations: region '%s', %zu instance(s), %d skipped as warm-up, %zu measured%s%s\n",
			c->it.region, c->it.n, c->it.skip, c->it.n_kept,
			c->it.unclosed ? " (some never closed)" : "",
			c->it.overlaps ? " (some overlap)" : "");
	fprintf(f, "\nTime per iteration (us)                    mean          min          max\n");
	row(f, "wall", s.wall, NULL);
	row(f, "GPU span (first start..last end)", s.span, NULL);
	row(f, "GPU busy (union of kernels+copies)", s.busy, NULL);
	row(f, "  kernel sum (overlap counted)", s.kernel_sum, NULL);
	row(f, "  copy+memset sum", s.copy_sum, NULL);
	row(f, "  overlap", s.overlap, NULL);
	row(f, "idle inside the span", s.idle, NULL);
	row(f, "host-only (outside the span)", s.host_only, NULL);
	if (s.outside.max > 0)
		row(f, "own GPU work after the range ended", s.outside, "(not in this wall)");
	if (s.inherited.max > 0)
		row(f, "earlier work running in this window", s.inherited, "(in busy)");
	fprintf(f, "  kernels %.1f, copies %.1f, memsets %.1f per iteration\n", s.n_kernels.mean,
		s.n_copies.mean, s.n_memsets.mean);

	fprintf(f, "\nDecomposition (mean): wall = busy + idle-in-span + host-only\n");
	fprintf(f, "  %.1f = %.1f (%.1f%%) + %.1f (%.1f%%) + %.1f (%.1f%%) us\n", s.wall.mean * NS_US,
		s.busy.mean * NS_US, pct(s.busy.mean, s.wall.mean), s.idle.mean * NS_US,
		pct(s.idle.mean, s.wall.mean), s.host_only.mean * NS_US,
		pct(s.host_only.mean, s.wall.mean));

	fprintf(f, "\nReplay (isolated kernels, Σ count × median)\n");
	if (!s.have_warm) {
		fprintf(f, "  no kernel replays in this run yet: run 'kjoule replay RUN' for the"
			   " predicted figures\n");
	} else {
		char note[96];
		snprintf(note, sizeof(note), "coverage %.1f%% of launches", 100 * s.cov_warm);
		line_us(f, "Σ warm-cache replay", s.replay_warm, 1, note);
		snprintf(note, sizeof(note), "coverage %.1f%% of launches", 100 * s.cov_cold);
		line_us(f, "Σ cold-cache replay", s.replay_cold, s.have_cold, s.have_cold ? note : "(no cold replays)");
		line_us(f, "in-situ Σ of the same launches", s.insitu_warm, 1, NULL);
		if (s.have_seq) {
			snprintf(note, sizeof(note), "coverage %.1f%%; in situ %.1f us (%+.1f%%)", 100 * s.cov_seq,
				 s.insitu_seq * NS_US,
				 s.insitu_seq > 0 ? 100 * (s.replay_seq - s.insitu_seq) / s.insitu_seq : 0.0);
			line_us(f, "Σ in-sequence replay", s.replay_seq, 1, note);
		}
		fprintf(f, "  naive prediction Σ warm = %.1f%% of wall (error %+.1f%%)\n",
			100 * s.naive_fraction, s.naive_error_pct);
		fprintf(f, "  explained_fraction = %.4f  (wall with each replayed kernel's in-situ time"
			   " replaced by its warm replay; idle and host-only measured)\n",
			s.explained_fraction);
		if (s.have_seq && s.explained_fraction_seq > 0)
			fprintf(f, "  explained_fraction_sequence = %.4f  (the same with in-sequence replay times)\n",
				s.explained_fraction_seq);
	}
	fprintf(f, "\nSequence replay of one iteration\n");
	line_us(f, "eager (stream of launches)", s.seq_eager, s.have_eager,
		s.have_eager ? "" : "(none: run kjoule replay --sequence)");
	line_us(f, "one CUDA graph", s.seq_graph, s.have_graph, s.have_graph ? "" : "(none)");
	if (s.have_eager) {
		line_us(f, "framework/host cost (wall - eager)", s.framework_host, 1, NULL);
		line_us(f, "launch cost (eager - graph)", s.launch_cost, s.have_graph, NULL);
		fprintf(f, "  eager sequence = %.1f%% of wall\n", 100 * s.sequence_fraction);
	}

	fprintf(f, "\nEnergy per iteration (J)\n");
	if (c->n_power_samples == 0)
		fprintf(f, "  no power samples in this run: measured energy unknown\n");
	else if (!s.have_meas)
		fprintf(f, "  power samples (%lld) do not cover the iterations\n",
			(long long)c->n_power_samples);
	else
		fprintf(f, "  measured                            %12.6f  ± %.6f per iteration, ± %.6f the mean"
			   " (min %.6f, max %.6f)\n",
			s.e_meas.mean / 1000, s.e_unc / 1000, s.e_unc_mean / 1000, s.e_meas.min / 1000,
			s.e_meas.max / 1000);
	if (s.have_kernels_e)
		fprintf(f, "  Σ count × replayed energy/launch    %12.6f  (coverage %.1f%%)\n",
			s.e_kernels / 1000, 100 * s.cov_energy);
	else
		fprintf(f, "  no replayed energy per launch yet\n");
	if (s.have_idle_e)
		fprintf(f, "  %s idle %.1f W × non-kernel time  %12.6f\n",
			c->awake_idle_w >= 0 ? "awake" : "deep", c->idle_w, s.e_idle / 1000);
	if (c->awake_idle_w >= 0 || c->deep_idle_w >= 0) {
		fprintf(f, "    (awake idle: ");
		if (c->awake_idle_w >= 0)
			fprintf(f, "%.1f W, median of %lld quiet readings at full SM clock", c->awake_idle_w,
				(long long)c->n_awake_samples);
		else
			fprintf(f, "unknown, too few quiet readings at full clock");
		if (c->deep_idle_w >= 0)
			fprintf(f, "; deep idle: %.1f W", c->deep_idle_w);
		fprintf(f, ")\n");
	}
	else
		fprintf(f, "  idle power unknown (kjoule power --idle)\n");
	if (s.have_pred)
		fprintf(f, "  predicted (kernels + idle)          %12.6f%s\n", s.e_pred / 1000,
			s.have_err ? "" : "  (no measurement to compare)");
	if (s.have_err)
		fprintf(f, "  error vs measured                   %+11.2f%%\n", s.e_err_pct);

	/* tiers */
	fprintf(f, "\nTiers (per iteration)\n  %-16s %8s %10s %12s %8s %12s %12s\n", "tier", "unique",
		"launches", "measured_us", "share", "replay_us", "energy_J");
	double n = (double)(s.n ? s.n : 1);
	for (size_t t = 0; t < c->tiers.n; t++) {
		const struct cmp_tier *ti = &c->tier_v[t];
		if (!ti->launches)
			continue;
		char rep[32] = "-", en[32] = "-";
		if (ti->cov_warm)
			snprintf(rep, sizeof(rep), "%.1f", ti->replay_warm_ns / n * NS_US);
		if (ti->cov_energy)
			snprintf(en, sizeof(en), "%.6f", ti->energy_mj / n / 1000);
		fprintf(f, "  %-16s %8lld %10.1f %12.1f %7.1f%% %12s %12s\n", c->tiers.names[t],
			(long long)ti->unique, (double)ti->launches / n,
			(double)ti->measured_ns / n * NS_US,
			pct((double)ti->measured_ns / n, s.kernel_sum.mean + s.copy_sum.mean), rep, en);
	}
	/* top kernels */
	size_t ng = 0, *ix = top_groups(c, &ng);
	fprintf(f, "\nTop %d kernels by measured time per iteration\n  %10s %8s %10s %10s %10s %10s  %s\n",
		c->top, "measured", "count", "mean_us", "warm_us", "in_seq_us", "tier", "name");
	for (size_t k = 0; k < ng && k < (size_t)c->top; k++) {
		const struct cmp_group *g = &c->groups[ix[k]];
		char w[32] = "-", q[32] = "-";
		if (g->warm_ns >= 0)
			snprintf(w, sizeof(w), "%.2f", g->warm_ns * NS_US);
		if (g->seq_ns >= 0)
			snprintf(q, sizeof(q), "%.2f", g->seq_ns * NS_US);
		fprintf(f, "  %10.1f %8.1f %10.2f %10s %10s %10s  %.100s\n", (double)g->measured_ns / n * NS_US,
			(double)g->launches / n, (double)g->measured_ns / (double)g->launches * NS_US, w, q,
			c->tiers.names[g->tier], group_name(c, g));
	}
	free(ix);
	{
		size_t nd = 0, *dx = disagreements(c, &s, &nd);
		if (nd) {
			fprintf(f, "\nReplay disagreements (in-sequence time off the in-situ mean by > 25 %%; the"
				   " replay likely did other work)\n  %10s %10s  %s\n", "in_situ_us", "in_seq_us", "name");
			for (size_t k = 0; k < nd; k++) {
				const struct cmp_group *g = &c->groups[dx[k]];
				fprintf(f, "  %10.2f %10.2f  %.100s\n",
					(double)g->measured_ns / (double)g->launches * NS_US, g->seq_ns * NS_US,
					group_name(c, g));
			}
		}
		free(dx);
	}
	if (c->region_names.n) {
		fprintf(f, "\nNVTX ranges inside the iteration (per iteration)\n  %12s %12s %10s  %s\n",
			"time_us", "gpu_busy_us", "count", "name");
		for (size_t r = 0; r < c->region_names.n; r++) {
			const struct cmp_region *g = &c->region_v[r];
			fprintf(f, "  %12.1f %12.1f %10.1f  %s%s\n", (double)g->time_ns / n * NS_US,
				(double)g->busy_ns / n * NS_US, (double)g->instances / n,
				g->min_depth > 1 ? "  " : "", c->region_names.names[r]);
		}
	}
	json_t *miss = missing_json(c, &s);
	if (json_array_size(miss)) {
		fprintf(f, "\nWhat this run lacks:\n");
		for (size_t i = 0; i < json_array_size(miss); i++)
			fprintf(f, "  - %s\n", json_string_value(json_array_get(miss, i)));
	}
	json_decref(miss);
}

/* ---- files ---- */

static void fmt_realtime(const struct kj_compare *c, int64_t mono_ns, char *buf, size_t len)
{
	time_t secs;
	struct tm tm;
	int64_t rt = mono_ns + c->realtime_offset_ns;
	secs = (time_t)(rt / 1000000000);
	gmtime_r(&secs, &tm);
	size_t k = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + k, len - k, ".%03d", (int)((rt / 1000000) % 1000));
}

static int dump(json_t *o, const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (json_dump_file(o, p, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) != 0) {
		kj_errorf("%s: cannot write", p);
		return KJ_EIO;
	}
	return 0;
}

static FILE *open_csv(const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f)
		kj_errorf("%s: %s", p, strerror(errno));
	return f;
}

static void csv_num(FILE *f, json_t *v)
{
	if (json_is_null(v) || !v)
		fputs("", f);
	else if (json_is_integer(v))
		fprintf(f, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fprintf(f, "%.6g", json_real_value(v));
	else if (json_is_string(v))
		kj_csv_put_str(f, json_string_value(v));
	else if (json_is_boolean(v))
		fputs(json_is_true(v) ? "1" : "0", f);
}

/* write an array of flat objects as CSV with the given columns */
static int write_table(const char *dir, const char *name, json_t *arr, const char *const *cols)
{
	FILE *f = open_csv(dir, name);
	if (!f)
		return KJ_EIO;
	for (size_t k = 0; cols[k]; k++)
		fprintf(f, "%s%s", k ? "," : "", cols[k]);
	fputc('\n', f);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *o = json_array_get(arr, i);
		for (size_t k = 0; cols[k]; k++) {
			if (k)
				fputc(',', f);
			csv_num(f, json_object_get(o, cols[k]));
		}
		fputc('\n', f);
	}
	return fclose(f) ? KJ_EIO : 0;
}

static json_t *iterations_json(const struct kj_compare *c)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *x = &c->iv[i];
		json_t *o = json_object();
		json_object_set_new(o, "index", json_integer((json_int_t)i));
		json_object_set_new(o, "skipped", json_boolean(x->skipped));
		json_object_set_new(o, "closed", json_boolean(x->closed));
		json_object_set_new(o, "start_ns", json_integer(x->start_ns));
		json_object_set_new(o, "end_ns", json_integer(x->end_ns));
		json_object_set_new(o, "wall_us", num_or_null(x->wall * NS_US, 1));
		json_object_set_new(o, "span_us", num_or_null(x->span * NS_US, 1));
		json_object_set_new(o, "busy_us", num_or_null(x->busy * NS_US, 1));
		json_object_set_new(o, "kernel_sum_us", num_or_null(x->kernel_sum * NS_US, 1));
		json_object_set_new(o, "copy_sum_us", num_or_null(x->copy_sum * NS_US, 1));
		json_object_set_new(o, "overlap_us", num_or_null(x->overlap * NS_US, 1));
		json_object_set_new(o, "idle_us", num_or_null(x->idle * NS_US, 1));
		json_object_set_new(o, "host_only_us", num_or_null(x->host_only * NS_US, 1));
		json_object_set_new(o, "kernels", json_integer(x->n_kernels));
		json_object_set_new(o, "replay_sum_warm_us", num_or_null(x->replay_warm * NS_US, x->cov_warm > 0));
		json_object_set_new(o, "replay_sum_cold_us", num_or_null(x->replay_cold * NS_US, x->cov_cold > 0));
		json_object_set_new(o, "energy_measured_j", num_or_null(x->energy_measured_mj / 1000, x->energy_ok));
		json_object_set_new(o, "energy_kernels_j", num_or_null(x->energy_kernels_mj / 1000, x->cov_energy > 0));
		json_array_append_new(arr, o);
	}
	return arr;
}

int kj_compare_write_dir(const struct kj_compare *c, const char *dir)
{
	struct cmp_summary s;
	json_t *all, *o, *tb, *tk;
	int rc = 0;
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		kj_errorf("%s: cannot create directory: %s", dir, strerror(errno));
		return KJ_EIO;
	}
	summarize(c, &s);
	all = kj_compare_json(c);
	json_t *iters = iterations_json(c);

	/* full_model_timing.json (seed fields first) */
	o = json_object();
	json_object_set_new(o, "full_model_inference_us", json_object_get(all, "wall_us") ? json_incref(json_object_get(all, "wall_us")) : json_null());
	json_object_set_new(o, "full_model_inference_ms", num_or_null(s.wall.mean * 1e-6, s.n > 0));
	json_object_set_new(o, "min_time_us", num_or_null(s.wall.min * NS_US, s.n > 0));
	json_object_set_new(o, "max_time_us", num_or_null(s.wall.max * NS_US, s.n > 0));
	json_object_set_new(o, "num_runs", json_integer(s.n));
	{
		int64_t first_ns = 0, last_ns = 0;
		int any = 0;
		for (size_t i = 0; i < c->it.n; i++) {
			if (c->iv[i].skipped)
				continue;
			if (!any || c->iv[i].start_ns < first_ns)
				first_ns = c->iv[i].start_ns;
			if (!any || c->iv[i].end_ns > last_ns)
				last_ns = c->iv[i].end_ns;
			any = 1;
		}
		char b0[64], b1[64];
		if (any && c->have_realtime) {
			fmt_realtime(c, first_ns, b0, sizeof(b0));
			fmt_realtime(c, last_ns, b1, sizeof(b1));
			json_object_set_new(o, "start_timestamp", json_string(b0));
			json_object_set_new(o, "end_timestamp", json_string(b1));
		} else {
			json_object_set_new(o, "start_timestamp", json_null());
			json_object_set_new(o, "end_timestamp", json_null());
		}
		json_object_set_new(o, "start_ns", any ? json_integer(first_ns) : json_null());
		json_object_set_new(o, "end_ns", any ? json_integer(last_ns) : json_null());
	}
	json_object_set(o, "iterations_info", json_object_get(all, "iterations"));
	json_object_set(o, "iterations", iters);
	rc = dump(o, dir, "full_model_timing.json");
	json_decref(o);

	/* comparison_report.json */
	o = json_object();
	json_object_set(o, "full_model_inference_us", json_object_get(all, "wall_us"));
	json_object_set(o, "predicted_from_kernels_us", json_object_get(all, "replay_sum_warm_us"));
	json_object_set(o, "error_percent", json_object_get(all, "naive_error_pct"));
	tb = json_object();
	json_t *tiers = json_object_get(all, "tiers");
	for (size_t i = 0; i < json_array_size(tiers); i++) {
		json_t *t = json_array_get(tiers, i), *e = json_object();
		json_t *rw = json_object_get(t, "replay_warm_us");
		int ok = 0;
		double p = json_is_number(rw) && json_is_number(json_object_get(all, "replay_sum_warm_us"))
				   ? safe_div(100.0 * json_number_value(rw),
					      json_number_value(json_object_get(all, "replay_sum_warm_us")), &ok)
				   : 0;
		json_object_set(e, "unique_kernels", json_object_get(t, "unique_kernels"));
		json_object_set(e, "total_us", json_is_number(rw) ? rw : json_object_get(t, "measured_us"));
		json_object_set_new(e, "total_source", json_string(json_is_number(rw) ? "replay_warm" : "measured"));
		json_object_set_new(e, "percentage_of_predicted", num_or_null(p, ok));
		json_object_set(e, "measured_us", json_object_get(t, "measured_us"));
		json_object_set(e, "launches_per_iteration", json_object_get(t, "launches_per_iteration"));
		json_object_set(e, "energy_j", json_object_get(t, "energy_j"));
		json_object_set_new(tb, json_string_value(json_object_get(t, "tier")), e);
	}
	json_object_set_new(o, "tier_breakdown", tb);
	tk = json_array();
	json_t *top = json_object_get(all, "top_kernels");
	for (size_t i = 0; i < json_array_size(top); i++) {
		json_t *t = json_array_get(top, i), *e = json_object();
		json_t *pred = json_object_get(t, "predicted_us");
		json_object_set(e, "name", json_object_get(t, "name"));
		json_object_set(e, "tier", json_object_get(t, "tier"));
		json_object_set(e, "count", json_object_get(t, "count_per_iteration"));
		json_object_set(e, "total_us", json_is_number(pred) ? pred : json_object_get(t, "measured_us"));
		json_object_set(e, "measured_us", json_object_get(t, "measured_us"));
		json_array_append_new(tk, e);
	}
	json_object_set_new(o, "top_kernels", tk);
	json_object_set(o, "kjoule", all);
	if (!rc)
		rc = dump(o, dir, "comparison_report.json");
	json_decref(o);

	/* energy_report.json */
	o = json_object();
	{
		double dur_s = 0;
		for (size_t i = 0; i < c->it.n; i++)
			if (!c->iv[i].skipped)
				dur_s += (double)c->iv[i].wall * 1e-9;
		double total_j = s.e_meas.mean / 1000.0 * (double)s.e_meas.n;
		json_t *pw = json_object(), *ej = json_object(), *ew = json_object();
		json_object_set_new(o, "duration_seconds", num_or_null(dur_s, 1));
		json_object_set_new(o, "num_power_samples", json_integer(c->n_power_in_windows));
		json_object_set_new(o, "num_runs", json_integer(s.n));
		json_object_set_new(pw, "average", num_or_null(c->power_avg_w, c->power_avg_w >= 0));
		json_object_set_new(pw, "peak", num_or_null(c->power_max_w, c->power_max_w >= 0));
		json_object_set_new(pw, "min", num_or_null(c->power_min_w, c->power_min_w >= 0));
		json_object_set_new(o, "power_watts", pw);
		json_object_set_new(ej, "total", num_or_null(total_j, s.have_meas));
		json_object_set_new(ej, "per_run", num_or_null(s.e_meas.mean / 1000.0, s.have_meas));
		json_object_set_new(o, "energy_joules", ej);
		json_object_set_new(ew, "total", num_or_null(total_j / 3600.0, s.have_meas));
		json_object_set_new(ew, "per_run", num_or_null(s.e_meas.mean / 1000.0 / 3600.0, s.have_meas));
		json_object_set_new(o, "energy_wh", ew);
		const char *keys[] = {"energy_measured_j", "energy_measured_unc_j", "energy_kernels_j",
				      "energy_kernels_coverage", "energy_idle_j", "energy_predicted_j",
				      "energy_error_pct", "idle_power_w", "sequence_eager_energy_j",
				      "sequence_graph_energy_j", NULL};
		for (size_t k = 0; keys[k]; k++)
			json_object_set(o, keys[k], json_object_get(all, keys[k]));
		json_object_set(o, "tiers", json_object_get(all, "tiers"));
	}
	if (!rc)
		rc = dump(o, dir, "energy_report.json");
	json_decref(o);

	static const char *const tier_cols[] = {"tier", "unique_kernels", "launches_per_iteration",
						"measured_us", "measured_pct", "replay_warm_us",
						"replay_coverage", "energy_j", NULL};
	static const char *const top_cols[] = {"name", "unique_id", "tier", "count_per_iteration",
					       "measured_us", "measured_mean_us", "replay_warm_us",
					       "replay_cold_us", "predicted_us",
					       "energy_mj_per_launch", "share_of_kernel_sum_pct", NULL};
	static const char *const reg_cols[] = {"name", "depth", "instances_per_iteration", "time_us",
					       "gpu_busy_us", "kernels_per_iteration", NULL};
	static const char *const it_cols[] = {"index", "skipped", "closed", "start_ns", "end_ns",
					      "wall_us", "span_us", "busy_us", "kernel_sum_us",
					      "copy_sum_us", "overlap_us", "idle_us", "host_only_us",
					      "kernels", "replay_sum_warm_us", "replay_sum_cold_us",
					      "energy_measured_j", "energy_kernels_j", NULL};
	if (!rc)
		rc = write_table(dir, "tiers.csv", json_object_get(all, "tiers"), tier_cols);
	if (!rc)
		rc = write_table(dir, "top_kernels.csv", json_object_get(all, "top_kernels"), top_cols);
	if (!rc)
		rc = write_table(dir, "regions.csv", json_object_get(all, "regions"), reg_cols);
	if (!rc)
		rc = write_table(dir, "iterations.csv", iters, it_cols);
	json_decref(iters);
	json_decref(all);
	return rc;
}
