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
#include "kj_ranks_nccl.h"
#include "kj_store_a2_ranks.h"
#include "kj_store_a_run.h"

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

/* The NCCL flags being filled: one per kernel_name.id. */
struct nccl_flags {
	unsigned char *v;
	size_t n;
};

static int mark_nccl(void *ud, int64_t id, const char *demangled, const char *mangled)
{
	struct nccl_flags *f = ud;
	if (id >= 0 && (size_t)id < f->n)
		f->v[id] = kj_kernel_is_nccl(mangled) || kj_kernel_is_nccl(demangled);
	return 0;
}

/* NCCL flag per kernel_name.id (*nccl malloc'ed, *n slots). */
static int load_nccl_names(sqlite3 *db, unsigned char **nccl, size_t *n)
{
	int64_t max = -1;
	if (kj_store_a_kernel_name_max_id(db, &max))
		max = 0;
	*n = (size_t)(max > 0 ? max : 0) + 1;
	*nccl = calloc(*n, 1);
	if (!*nccl)
		return KJ_ENOMEM;
	struct nccl_flags f = {*nccl, *n};
	return kj_store_a_kernel_names_each(db, mark_nccl, &f) ? KJ_EDB : 0;
}

static int add_replay(void *ud, int64_t id, const char *cache, double median_ns)
{
	struct replays *r = ud;
	if (id < 0 || (size_t)id >= r->n || !cache)
		return 0;
	if (!strcmp(cache, "warm"))
		r->warm[id] = median_ns;
	else if (!strcmp(cache, "cold"))
		r->cold[id] = median_ns;
	return 0;
}

/* The warm and cold medians of every replayed unique kernel (failed replays left out). */
static int load_replays(sqlite3 *db, struct replays *r)
{
	int64_t max = kj_store_a2_unique_kernel_max_id(db);
	r->n = (size_t)(max > 0 ? max : 0) + 1;
	r->warm = malloc(r->n * sizeof(double));
	r->cold = malloc(r->n * sizeof(double));
	if (!r->warm || !r->cold)
		return KJ_ENOMEM;
	for (size_t i = 0; i < r->n; i++)
		r->warm[i] = r->cold[i] = -1;
	return kj_store_a2_rank_replays_each(db, add_replay, r);
}

/* The activity being gathered for one process. */
struct acts_ctx {
	const unsigned char *nccl;
	size_t nn, cap, n;
	struct ract *v;
};

static int add_act(void *ud, const struct kj_store_a2_rank_act *r)
{
	struct acts_ctx *c = ud;
	if (!r->has_times)
		return 0;
	struct ract a = {.s = r->start_ns, .e = r->end_ns};
	if (a.e < a.s)
		return 0;
	a.key = a.s;
	if (r->has_launch && r->launch_ns <= a.s)
		a.key = r->launch_ns;
	a.uid = r->unique_id;
	a.kind = r->kind;
	if (a.kind == 0 && r->name_id >= 0 && (size_t)r->name_id < c->nn && c->nccl[r->name_id])
		a.kind = 1;
	struct ract *v = kj_grow(c->v, &c->cap, c->n, sizeof(*v), 1024);
	if (!v)
		return KJ_ENOMEM;
	c->v = v;
	c->v[c->n++] = a;
	return 0;
}

/* Every kernel, copy and memset of one process, sorted by key (launch time where sane). */
static int load_acts(sqlite3 *db, int64_t pid, const unsigned char *nccl, size_t nn,
		     struct ract **out, size_t *n)
{
	struct acts_ctx c = {.nccl = nccl, .nn = nn};
	int rc = kj_store_a2_rank_acts_each(db, pid, add_act, &c);
	*out = c.v;
	*n = c.n;
	if (rc)
		return rc;
	qsort(*out, *n, sizeof(**out), ract_cmp);
	return 0;
}

/* The iteration instances being gathered. */
struct iters_ctx {
	struct kj_interval *v;
	size_t n, cap;
};

static int add_iter(void *ud, int64_t start_ns, int has_end, int64_t end_ns)
{
	struct iters_ctx *c = ud;
	struct kj_interval *v = kj_grow(c->v, &c->cap, c->n, sizeof(*v), 64);
	if (!v)
		return KJ_ENOMEM;
	c->v = v;
	v[c->n].start_ns = start_ns;
	v[c->n].end_ns = has_end ? end_ns : INT64_MIN;
	c->n++;
	return 0;
}

/* The rank's iteration instances ([start, end] pairs into *iv, *n of them): of its range when it
 * has one, unclosed ones ending at the next start (or last_ns); else [first_ns, last_ns]. */
static int load_iters(sqlite3 *db, struct kj_rank *r, int64_t first_ns, int64_t last_ns,
		      struct kj_interval **iv, size_t *n)
{
	struct iters_ctx c = {0};
	*iv = NULL;
	*n = 0;
	if (r->range[0]) {
		int rc = kj_store_a2_rank_ranges_each(db, r->range, r->pid, add_iter, &c);
		*iv = c.v;
		*n = c.n;
		if (rc)
			return rc;
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

/* The rank's NCCL bytes and bandwidth: its NCCL kernels (a[0..na), sorted by launch), those
 * owned by iteration sk or later kept, matched with its recorded calls. */
static int rank_nccl(sqlite3 *db, struct kj_rank *r, const struct ract *a, size_t na, const long *own, int sk,
		     const char *absent)
{
	struct kj_nccl_kernel *k = malloc((na ? na : 1) * sizeof(*k));
	size_t n = 0;
	if (!k)
		return KJ_ENOMEM;
	for (size_t i = 0; i < na; i++)
		if (a[i].kind == 1)
			k[n++] = (struct kj_nccl_kernel){a[i].key, a[i].e - a[i].s, own[i] >= sk};
	int rc = kj_rank_nccl_bytes(db, r, k, n, absent);
	free(k);
	return rc;
}

/* The iterations iv[0..ni) as the GPU ran them: each lasts until its own work (a[i] with
 * own[i] = its index) is done, and starts at its range's start or, where the host ran ahead and
 * queued it, when the iteration before it ended. Instances follow each other without overlap,
 * and a host that runs ahead of its GPU (CUDA graphs, no synchronisation) no longer shrinks its
 * iterations to their launches while the last one collects the queued work. */
static void gpu_iterations(struct kj_interval *iv, size_t ni, const struct ract *a, size_t na, const long *own)
{
	for (size_t i = 0; i < na; i++)
		if (own[i] >= 0 && a[i].e > iv[own[i]].end_ns)
			iv[own[i]].end_ns = a[i].e;
	for (size_t k = 1; k < ni; k++) {
		if (iv[k].start_ns < iv[k - 1].end_ns)
			iv[k].start_ns = iv[k - 1].end_ns;
		if (iv[k].end_ns < iv[k].start_ns)
			iv[k].end_ns = iv[k].start_ns;
	}
}

/* One rank: its range, iterations and figures. */
static int analyze_rank(sqlite3 *db, const char *region, int skip, const unsigned char *nccl,
			size_t nn, const struct replays *rp, const char *nccl_absent, struct kj_rank *r)
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
	for (size_t i = 0; i < na; i++) /* each launch's iteration, by the range it was launched in */
		own[i] = kj_intervals_holding(iv, ni, a[i].key, 4);
	gpu_iterations(iv, ni, a, na, own);
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
	if (!rc)
		rc = rank_nccl(db, r, a, na, own, sk, nccl_absent);
out:
	free(a);
	free(iv);
	free(sc);
	free(own);
	return rc;
}

/* The job's ranks being gathered. */
struct ranks_ctx {
	struct kj_job *j;
	size_t cap;
};

static int add_rank(void *ud, int64_t pid, int64_t device_id, int64_t n_devices)
{
	struct ranks_ctx *c = ud;
	struct kj_job *j = c->j;
	struct kj_rank *v = kj_grow(j->r, &c->cap, j->n, sizeof(*v), 8);
	if (!v)
		return KJ_ENOMEM;
	j->r = v;
	memset(&v[j->n], 0, sizeof(v[j->n]));
	v[j->n].pid = pid;
	v[j->n].device_id = device_id;
	v[j->n].n_devices = n_devices;
	j->n++;
	return 0;
}

/* The processes with GPU work, by GPU then pid. */
static int load_ranks(sqlite3 *db, struct kj_job *j)
{
	struct ranks_ctx c = {j, 0};
	return kj_store_a2_ranks_each(db, add_rank, &c);
}

/* GPU type, death, and the job's mixed-type list for every rank. */
static int rank_facts(sqlite3 *db, struct kj_job *j)
{
	struct kj_store_a2_rank_reader *rd = NULL;
	int rc = kj_store_a2_rank_reader_open(db, &rd);
	if (rc)
		return rc;
	for (size_t i = 0; i < j->n; i++) {
		struct kj_rank *r = &j->r[i];
		int clean = 0;
		if (kj_store_a2_rank_gpu(rd, r->device_id, r->pid, r->gpu, sizeof(r->gpu), &clean))
			r->died = clean != 1;
		if (r->died) {
			j->n_died++;
			snprintf(r->died_why, sizeof(r->died_why), "ended without closing its trace"
				 " (killed, crashed or _exit; this run does not record how)");
			kj_store_a2_rank_end(rd, r->pid, r->died_why, sizeof(r->died_why));
		}
		if (r->gpu[0] && !strstr(j->gpus, r->gpu)) {
			size_t l = strlen(j->gpus);
			snprintf(j->gpus + l, sizeof(j->gpus) - l, "%s%s", l ? ", " : "", r->gpu);
			j->mixed_gpus = l > 0;
		}
	}
	kj_store_a2_rank_reader_close(rd);
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
	const char *nccl_absent = kj_nccl_calls_absent_why(db);
	double busy_sum = 0, busy_max = 0;
	out->energy_ok = 1;
	for (size_t i = 0; i < out->n; i++) {
		struct kj_rank *r = &out->r[i];
		if ((rc = analyze_rank(db, region, skip, nccl, nn, &rp, nccl_absent, r)))
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
