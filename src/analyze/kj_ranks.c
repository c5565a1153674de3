/* The ranks of a multi-GPU job and the job they make (kj_ranks.h, docs/multi-gpu.md). */
#include "kj_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_intervals.h"
#include "kj_iterations.h"

int kj_kernel_is_nccl(const char *name)
{
	return name && (strstr(name, "ncclKernel_") || strstr(name, "ncclDevKernel_") ||
			strstr(name, "ncclDevFunc_"));
}

/* One kernel or copy of one rank. */
struct ract {
	int64_t s, e, key;
	int64_t uid; /* unique kernel id; -1 none */
	int kind;    /* 0 compute kernel, 1 NCCL kernel, 2 copy or memset */
};

/* Replay figures by unique kernel id (index); < 0 none. */
struct replays {
	double *warm, *cold;
	size_t n;
};

static int ract_cmp(const void *a, const void *b)
{
	const struct ract *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* NCCL flag per kernel_name.id (*nccl malloc'ed, *n slots). */
static int load_nccl_names(sqlite3 *db, unsigned char **nccl, size_t *n)
{
	int64_t max = kj_db_one_i64(db, "SELECT coalesce(max(id), 0) FROM kernel_name", 0, 0);
	sqlite3_stmt *st = NULL;
	*n = (size_t)(max > 0 ? max : 0) + 1;
	*nccl = calloc(*n, 1);
	if (!*nccl)
		return KJ_ENOMEM;
	if (kj_db_prepare(db, "SELECT id, mangled, demangled FROM kernel_name", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		if (id >= 0 && (size_t)id < *n)
			(*nccl)[id] = kj_kernel_is_nccl((const char *)sqlite3_column_text(st, 1)) ||
				      kj_kernel_is_nccl((const char *)sqlite3_column_text(st, 2));
	}
	sqlite3_finalize(st);
	return 0;
}

/* The warm and cold medians of every replayed unique kernel (failed replays left out). */
static int load_replays(sqlite3 *db, struct replays *r)
{
	int64_t max = kj_db_one_i64(db, "SELECT coalesce(max(id), 0) FROM unique_kernel", 0, 0);
	sqlite3_stmt *st = NULL;
	r->n = (size_t)(max > 0 ? max : 0) + 1;
	r->warm = malloc(r->n * sizeof(double));
	r->cold = malloc(r->n * sizeof(double));
	if (!r->warm || !r->cold)
		return KJ_ENOMEM;
	for (size_t i = 0; i < r->n; i++)
		r->warm[i] = r->cold[i] = -1;
	if (!kj_db_has_row(db, "SELECT 1 FROM replay_kernel LIMIT 1"))
		return 0;
	if (kj_db_prepare(db, "SELECT unique_id, cache, median_ns FROM replay_kernel WHERE median_ns"
			      " IS NOT NULL AND coalesce(status, 'ok') NOT IN ('failed', 'timeout')", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const char *cache = (const char *)sqlite3_column_text(st, 1);
		if (id < 0 || (size_t)id >= r->n || !cache)
			continue;
		if (!strcmp(cache, "warm"))
			r->warm[id] = sqlite3_column_double(st, 2);
		else if (!strcmp(cache, "cold"))
			r->cold[id] = sqlite3_column_double(st, 2);
	}
	sqlite3_finalize(st);
	return 0;
}

/* Every kernel, copy and memset of one process, sorted by key (launch time where sane). */
static int load_acts(sqlite3 *db, int64_t pid, const unsigned char *nccl, size_t nn,
		     struct ract **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc;
	*out = NULL;
	*n = 0;
	if (kj_db_prepare(db, "SELECT start_ns, end_ns, launch_ns, name_id, unique_id, 0 FROM kernel"
			      " WHERE pid = ?1 UNION ALL SELECT start_ns, end_ns, launch_ns, NULL, NULL,"
			      " 2 FROM memcpy WHERE pid = ?1 UNION ALL SELECT start_ns, end_ns,"
			      " launch_ns, NULL, NULL, 2 FROM memset WHERE pid = ?1", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;
		struct ract a = {.s = sqlite3_column_int64(st, 0), .e = sqlite3_column_int64(st, 1)};
		if (a.e < a.s)
			continue;
		a.key = a.s;
		if (sqlite3_column_type(st, 2) != SQLITE_NULL && sqlite3_column_int64(st, 2) <= a.s)
			a.key = sqlite3_column_int64(st, 2);
		int64_t name = kj_db_col_i64(st, 3, -1);
		a.uid = kj_db_col_i64(st, 4, -1);
		a.kind = sqlite3_column_int(st, 5);
		if (a.kind == 0 && name >= 0 && (size_t)name < nn && nccl[name])
			a.kind = 1;
		struct ract *v = kj_grow(*out, &cap, *n, sizeof(*v), 1024);
		if (!v) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
		*out = v;
		(*out)[(*n)++] = a;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return KJ_EDB;
	qsort(*out, *n, sizeof(**out), ract_cmp);
	return 0;
}

/* The rank's iteration instances ([start, end] pairs into *iv, *n of them): of its range when it
 * has one, unclosed ones ending at the next start (or last_ns); else [first_ns, last_ns]. */
static int load_iters(sqlite3 *db, struct kj_rank *r, int64_t first_ns, int64_t last_ns,
		      struct kj_interval **iv, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	*iv = NULL;
	*n = 0;
	if (r->range[0]) {
		if (kj_db_prepare(db, "SELECT start_ns, end_ns FROM nvtx_range WHERE name = ?1 AND pid = ?2"
				      " AND start_ns IS NOT NULL AND (end_ns IS NULL OR end_ns >= start_ns)"
				      " ORDER BY start_ns", &st))
			return KJ_EDB;
		sqlite3_bind_text(st, 1, r->range, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, r->pid);
		while (sqlite3_step(st) == SQLITE_ROW) {
			struct kj_interval *v = kj_grow(*iv, &cap, *n, sizeof(*v), 64);
			if (!v) {
				sqlite3_finalize(st);
				return KJ_ENOMEM;
			}
			*iv = v;
			v[*n].start_ns = sqlite3_column_int64(st, 0);
			v[*n].end_ns = kj_db_col_i64(st, 1, INT64_MIN);
			(*n)++;
		}
		sqlite3_finalize(st);
	}
	if (*n == 0) {
		r->range[0] = 0;
		free(*iv);
		if (!(*iv = malloc(sizeof(**iv))))
			return KJ_ENOMEM;
		(*iv)[0] = (struct kj_interval){first_ns, last_ns};
		*n = 1;
	}
	for (size_t i = 0; i < *n; i++)
		if ((*iv)[i].end_ns == INT64_MIN) {
			int64_t e = i + 1 < *n ? (*iv)[i + 1].start_ns : last_ns;
			(*iv)[i].end_ns = e > (*iv)[i].start_ns ? e : (*iv)[i].start_ns;
		}
	return 0;
}

/* Sums of one rank's kept iterations (ns), divided by the kept count at the end. */
struct rsum {
	double wall, busy, kernel, comm, exposed, launches, predicted, covered;
};

/* One iteration's figures from its activity a[0..n), added to *s; scratch holds n intervals x3. */
static void iter_figures(const struct ract *a, size_t n, const struct kj_interval *win,
			 const struct replays *rp, struct kj_interval *sc, struct rsum *s)
{
	struct kj_interval *all = sc, *comp = sc + n, *comm = sc + 2 * n;
	size_t na = 0, nc = 0, nm = 0;
	double ksum = 0, cov_d = 0, cov_p = 0;
	for (size_t i = 0; i < n; i++) {
		struct kj_interval x = {a[i].s, a[i].e};
		all[na++] = x;
		if (a[i].kind == 2)
			continue;
		ksum += (double)(a[i].e - a[i].s);
		if (a[i].kind == 1) {
			comm[nm++] = x;
			s->launches += 1;
			continue;
		}
		comp[nc++] = x;
		int64_t u = a[i].uid;
		if (u >= 0 && (size_t)u < rp->n && rp->warm[u] >= 0) {
			double w = rp->warm[u], c = rp->cold[u];
			cov_p += c >= 0 ? (w + c) / 2 : w;
			cov_d += (double)(a[i].e - a[i].s);
		}
	}
	double busy = (double)kj_intervals_union_sorted_ns(all, kj_intervals_merge(all, na));
	nc = kj_intervals_merge(comp, nc);
	nm = kj_intervals_merge(comm, nm);
	double kunion = (double)kj_intervals_union_sorted_ns(comp, nc) +
			(double)kj_intervals_union_sorted_ns(comm, nm) -
			(double)kj_intervals_overlap_ns(comp, nc, comm, nm);
	double comm_t = (double)kj_intervals_union_sorted_ns(comm, nm);
	double wall = (double)(win->end_ns - win->start_ns);
	s->wall += wall;
	s->busy += busy;
	s->kernel += ksum;
	s->comm += comm_t;
	s->exposed += comm_t - (double)kj_intervals_overlap_ns(comm, nm, comp, nc);
	/* compare's predicted wall: overlap back in, each replayed launch at its isolated time */
	s->predicted += wall + (ksum - kunion) + (cov_p - cov_d);
	s->covered += cov_d;
}

/* The rank's energy per iteration from its GPU's counter over its kept iterations. */
static int rank_energy(sqlite3 *db, struct kj_rank *r, int64_t t0, int64_t t1)
{
	struct kj_power_sample *s = NULL;
	size_t n = 0;
	struct kj_window_energy we;
	int rc = kj_energy_load_samples(db, r->device_id, &s, &n);
	if (rc)
		return rc;
	r->energy_why = "no power samples of its GPU";
	if (n && kj_energy_window(s, n, t0, t1, kj_energy_idle_mw(db, r->device_id), &we) == 0 && we.ok) {
		r->energy_ok = 1;
		r->energy_mj = we.energy_j * 1e3 / (double)r->n_kept;
		r->energy_unc_mj = we.uncertainty_j * 1e3 / (double)r->n_kept;
		r->energy_why = NULL;
	} else if (n) {
		r->energy_why = "its GPU's samples do not cover the measured iterations";
	}
	free(s);
	return 0;
}

/* One rank: its range, iterations and figures. */
static int analyze_rank(sqlite3 *db, const char *region, int skip, const unsigned char *nccl,
			size_t nn, const struct replays *rp, struct kj_rank *r)
{
	struct ract *a = NULL;
	struct kj_interval *iv = NULL, *sc = NULL;
	size_t na = 0, ni = 0;
	long *own = NULL;
	int rc;
	if (region) {
		snprintf(r->range, sizeof(r->range), "%s", region);
		r->chosen_by = "named";
	} else if ((rc = kj_iter_default_range(db, r->pid, r->range, sizeof(r->range), &r->chosen_by)))
		return rc;
	if ((rc = load_acts(db, r->pid, nccl, nn, &a, &na)))
		goto out;
	int64_t t_first = na ? a[0].key : 0, last = t_first;
	for (size_t i = 0; i < na; i++)
		last = a[i].e > last ? a[i].e : last;
	if ((rc = load_iters(db, r, t_first, last, &iv, &ni)))
		goto out;
	own = malloc((na ? na : 1) * sizeof(*own));
	sc = malloc((na ? na : 1) * 3 * sizeof(*sc));
	if (!own || !sc) {
		rc = KJ_ENOMEM;
		goto out;
	}
	/* an iteration lasts until its own work is done, never past the next instance's start */
	for (size_t i = 0; i < na; i++) {
		own[i] = kj_intervals_holding(iv, ni, a[i].key, 4);
		if (own[i] < 0)
			continue;
		int64_t cap = (size_t)own[i] + 1 < ni ? iv[own[i] + 1].start_ns : INT64_MAX;
		int64_t e = a[i].e < cap ? a[i].e : cap;
		if (e > iv[own[i]].end_ns)
			iv[own[i]].end_ns = e;
	}
	int sk = skip >= 0 ? skip : kj_iter_default_skip(ni);
	if ((size_t)sk >= ni)
		sk = (int)ni - 1;
	r->n_iters = (int64_t)ni;
	r->n_kept = (int64_t)ni - sk;
	struct rsum s = {0};
	/* each iteration's own activity, gathered by owner (counting sort, order kept) */
	struct ract *mine = malloc((na ? na : 1) * sizeof(*mine));
	size_t *first = calloc(ni + 1, sizeof(*first));
	if (!mine || !first) {
		free(mine);
		free(first);
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < na; i++)
		if (own[i] >= 0)
			first[own[i] + 1]++;
	for (size_t k = 0; k < ni; k++)
		first[k + 1] += first[k];
	for (size_t i = 0; i < na; i++)
		if (own[i] >= 0)
			mine[first[own[i]]++] = a[i];
	for (size_t k = ni; k > 0; k--) /* first[k] now ends iteration k: shift back to starts */
		first[k] = first[k - 1];
	first[0] = 0;
	for (size_t k = (size_t)sk; k < ni; k++)
		iter_figures(mine + first[k], first[k + 1] - first[k], &iv[k], rp, sc, &s);
	free(mine);
	free(first);
	double kept = (double)r->n_kept;
	r->wall_ns = s.wall / kept;
	r->busy_ns = s.busy / kept;
	r->kernel_ns = s.kernel / kept;
	r->comm_ns = s.comm / kept;
	r->comm_exposed_ns = s.exposed / kept;
	r->comm_launches = s.launches / kept;
	r->have_explained = s.covered > 0 && s.wall > 0;
	r->explained_fraction = r->have_explained ? s.predicted / s.wall : 0;
	rc = rank_energy(db, r, iv[sk].start_ns, iv[ni - 1].end_ns);
out:
	free(a);
	free(iv);
	free(sc);
	free(own);
	return rc;
}

/* The processes with GPU work, by GPU then pid. */
static int load_ranks(sqlite3 *db, struct kj_job *j)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc;
	if (kj_db_prepare(db, "SELECT pid, min(device_id), count(DISTINCT device_id) FROM (SELECT pid,"
			      " device_id FROM kernel UNION ALL SELECT pid, device_id FROM memcpy"
			      " UNION ALL SELECT pid, device_id FROM memset) WHERE pid IS NOT NULL"
			      " GROUP BY pid ORDER BY min(device_id), pid", &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_rank *v = kj_grow(j->r, &cap, j->n, sizeof(*v), 8);
		if (!v) {
			sqlite3_finalize(st);
			return KJ_ENOMEM;
		}
		j->r = v;
		memset(&v[j->n], 0, sizeof(v[j->n]));
		v[j->n].pid = sqlite3_column_int64(st, 0);
		v[j->n].device_id = kj_db_col_i64(st, 1, -1);
		v[j->n].n_devices = sqlite3_column_int64(st, 2);
		j->n++;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : KJ_EDB;
}

/* GPU type, death, and the job's mixed-type list for every rank. */
static int rank_facts(sqlite3 *db, struct kj_job *j)
{
	sqlite3_stmt *st = NULL, *pr = NULL;
	if (kj_db_prepare(db, "SELECT coalesce(d.name, ''), (SELECT coalesce(ended_cleanly, 0) FROM"
			      " process WHERE pid = ?2) FROM (SELECT 1) LEFT JOIN device d ON d.id = ?1", &st))
		return KJ_EDB;
	/* how it ended: ingest's row for a process that did not close its trace starts "ended "
	 * (kj_ingest_end.c); a run ingested before those rows existed has none */
	if (kj_db_prepare(db, "SELECT what FROM problem WHERE pid = ?1 AND what LIKE 'ended %' ORDER BY id"
			      " LIMIT 1", &pr)) {
		sqlite3_finalize(st);
		return KJ_EDB;
	}
	for (size_t i = 0; i < j->n; i++) {
		struct kj_rank *r = &j->r[i];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, r->device_id);
		sqlite3_bind_int64(st, 2, r->pid);
		if (sqlite3_step(st) == SQLITE_ROW) {
			snprintf(r->gpu, sizeof(r->gpu), "%s", (const char *)sqlite3_column_text(st, 0));
			r->died = sqlite3_column_int(st, 1) != 1;
		}
		if (r->died) {
			j->n_died++;
			snprintf(r->died_why, sizeof(r->died_why), "ended without closing its trace"
				 " (killed, crashed or _exit; this run does not record how)");
			sqlite3_reset(pr);
			sqlite3_bind_int64(pr, 1, r->pid);
			if (sqlite3_step(pr) == SQLITE_ROW && sqlite3_column_text(pr, 0))
				snprintf(r->died_why, sizeof(r->died_why), "%s",
					 (const char *)sqlite3_column_text(pr, 0));
		}
		if (r->gpu[0] && !strstr(j->gpus, r->gpu)) {
			size_t l = strlen(j->gpus);
			snprintf(j->gpus + l, sizeof(j->gpus) - l, "%s%s", l ? ", " : "", r->gpu);
			j->mixed_gpus = l > 0;
		}
	}
	sqlite3_finalize(st);
	sqlite3_finalize(pr);
	return 0;
}


int kj_ranks_list(sqlite3 *db, struct kj_job *out)
{
	int rc;
	memset(out, 0, sizeof(*out));
	if ((rc = load_ranks(db, out)) || out->n < 2)
		return rc;
	out->n_processes = kj_db_count(db, "process");
	return rank_facts(db, out);
}

int kj_job_analyze(sqlite3 *db, const char *region, int skip, struct kj_job *out)
{
	unsigned char *nccl = NULL;
	size_t nn = 0;
	struct replays rp = {0};
	int rc;
	if ((rc = kj_ranks_list(db, out)) || out->n < 2)
		return rc;
	if ((rc = load_nccl_names(db, &nccl, &nn)) || (rc = load_replays(db, &rp)))
		goto done;
	double busy_sum = 0, busy_max = 0;
	out->energy_ok = 1;
	for (size_t i = 0; i < out->n; i++) {
		struct kj_rank *r = &out->r[i];
		if ((rc = analyze_rank(db, region, skip, nccl, nn, &rp, r)))
			goto done;
		if (r->wall_ns > out->time_ns) {
			out->time_ns = r->wall_ns;
			out->slowest = i;
		}
		/* a rank's own work: its GPU busy less the time it only waited inside collectives (a fast
		 * rank's NCCL kernels spin until the slow one arrives, which is the imbalance, not work) */
		double work = r->busy_ns - r->comm_exposed_ns;
		work = work > 0 ? work : 0;
		busy_sum += work;
		busy_max = work > busy_max ? work : busy_max;
		int first_on_gpu = 1; /* a GPU two ranks share counts once */
		for (size_t k = 0; k < i; k++)
			first_on_gpu &= out->r[k].device_id != r->device_id;
		if (!first_on_gpu)
			continue;
		out->n_gpus++;
		if (!r->energy_ok)
			out->energy_ok = 0;
		out->energy_mj += r->energy_mj;
		out->energy_unc_mj += r->energy_unc_mj;
	}
	out->imbalance = busy_sum > 0 ? busy_max / (busy_sum / (double)out->n) : 0;
done:
	free(nccl);
	free(rp.warm);
	free(rp.cold);
	return rc;
}

void kj_rank_label(const struct kj_job *j, int64_t pid, char *buf, size_t len)
{
	buf[0] = 0;
	for (size_t i = 0; j->n >= 2 && i < j->n; i++)
		if (j->r[i].pid == pid) {
			snprintf(buf, len, "rank %zu (GPU %lld)", i, (long long)j->r[i].device_id);
			return;
		}
}

void kj_job_free(struct kj_job *j)
{
	if (!j)
		return;
	free(j->r);
	j->r = NULL;
	j->n = 0;
}
