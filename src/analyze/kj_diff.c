/* kjoule diff: per-iteration figures and per-kernel series of two runs, matched and judged
 * against each run's own spread. */
#include "kj_diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_compare_internal.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_store_a_iter.h"

enum { M_KEY = 0, M_NAME = 1, M_ONLY_A = 2, M_ONLY_B = 3 };
static const char *const match_names[] = {"name+geometry", "name", "only_a", "only_b"};

/* per row of the diff, one run's series over its measured iterations */
struct rstat {
	double s, ss;       /* Σ and Σ² of the per-iteration time, ns */
	int64_t launches;   /* in measured iterations */
	double energy_mj;   /* Σ launches × energy per launch */
	int64_t e_launches; /* launches with a replayed energy */
};

struct side {
	struct kj_compare *c;
	char **key, **name; /* per group */
	size_t *row;        /* per group */
	struct rstat *st;   /* per row */
	double n;           /* measured iterations */
};

struct row {
	int match;
	size_t key_a, key_b; /* a group's key string (index into keys) for the label */
	const char *name, *geom;
};

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* side_keys' maps: unique kernel id to its interned geometry text. */
struct geometry {
	struct kj_imap *geo;
	struct kj_smap *gs;
};

/* Interns one unique kernel's geometry text under its id. */
static int add_geometry(void *ud, int64_t unique_id, const char *geometry)
{
	struct geometry *G = ud;
	size_t k = kj_smap_intern(G->gs, geometry);
	if (k == (size_t)-1 || kj_imap_put(G->geo, unique_id, k))
		return KJ_ENOMEM;
	return 0;
}

/* name and "grid gx,gy,gz block bx,by,bz" of every group of a run */
static int side_keys(sqlite3 *db, struct side *s)
{
	struct kj_compare *c = s->c;
	struct kj_imap geo = {0};
	struct kj_smap gs = {0};
	int rc = 0;
	s->key = calloc(c->n_groups + 1, sizeof(char *));
	s->name = calloc(c->n_groups + 1, sizeof(char *));
	s->row = calloc(c->n_groups + 1, sizeof(size_t));
	if (!s->key || !s->name || !s->row)
		return KJ_ENOMEM;
	struct geometry G = {&geo, &gs};
	if ((rc = kj_store_a_geometry_each(db, add_geometry, &G)) != 0)
		goto out;
	for (size_t g = 0; g < c->n_groups; g++) {
		const char *nm = cmp_group_name(c, &c->groups[g]);
		size_t k = c->groups[g].unique_id >= 0 ? kj_imap_get(&geo, c->groups[g].unique_id) : (size_t)-1;
		const char *geom = k != (size_t)-1 ? gs.names[k] : "geometry unknown";
		size_t len = strlen(nm) + strlen(geom) + 4;
		s->name[g] = xstrdup(nm);
		s->key[g] = malloc(len);
		if (!s->name[g] || !s->key[g]) {
			rc = KJ_ENOMEM;
			goto out;
		}
		snprintf(s->key[g], len, "%s | %s", nm, geom);
	}
out:
	kj_imap_free(&geo);
	kj_smap_free(&gs);
	return rc;
}

/* Σ and Σ² over measured iterations of each row's kernel time in this run */
static int side_series(struct side *s, size_t n_rows)
{
	struct kj_compare *c = s->c;
	struct kj_imap gmap = {0};
	double *cur = calloc(n_rows + 1, sizeof(*cur));
	size_t *touched = calloc(n_rows + 1, sizeof(*touched)), nt = 0;
	long last = -1;
	int rc = 0;
	s->st = calloc(n_rows + 1, sizeof(*s->st));
	if (!cur || !touched || !s->st) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t g = 0; g < c->n_groups; g++) {
		const struct cmp_group *gr = &c->groups[g];
		int64_t key = gr->unique_id >= 0 ? gr->unique_id : -(gr->name_id + 2);
		if (kj_imap_put(&gmap, key, g)) {
			rc = KJ_ENOMEM;
			goto out;
		}
		struct rstat *r = &s->st[s->row[g]];
		r->launches += gr->launches;
		if (gr->energy_mj >= 0) {
			r->energy_mj += (double)gr->launches * gr->energy_mj;
			r->e_launches += gr->launches;
		}
	}
	s->n = (double)c->it.n_kept;
	/* activities are sorted by key time, so iterations come one after another */
	for (size_t i = 0; i <= c->acts.n; i++) {
		long it = -1;
		const struct kj_act *a = i < c->acts.n ? &c->acts.v[i] : NULL;
		if (a) {
			if (a->type != KJ_ACT_KERNEL)
				continue;
			it = kj_iters_owner_of(&c->it, a->key_ns, a->pid);
			if (it < 0 || c->it.v[it].skipped)
				continue;
		}
		if (it != last) {
			for (size_t k = 0; k < nt; k++) {
				s->st[touched[k]].s += cur[touched[k]];
				s->st[touched[k]].ss += cur[touched[k]] * cur[touched[k]];
				cur[touched[k]] = 0;
			}
			nt = 0;
			last = it;
		}
		if (!a)
			break;
		size_t g = kj_imap_get(&gmap, a->unique_id >= 0 ? a->unique_id : -(a->name_id + 2));
		if (g == (size_t)-1)
			continue;
		size_t r = s->row[g];
		if (cur[r] == 0)
			touched[nt++] = r;
		cur[r] += (double)(a->end_ns - a->start_ns);
		if (cur[r] == 0) /* a zero-length kernel: keep it marked once */
			cur[r] = 1e-9;
	}
out:
	kj_imap_free(&gmap);
	free(cur);
	free(touched);
	return rc;
}

static void side_free(struct side *s)
{
	if (s->key)
		for (size_t g = 0; g < s->c->n_groups; g++) {
			free(s->key[g]);
			free(s->name[g]);
		}
	free(s->key);
	free(s->name);
	free(s->row);
	free(s->st);
	kj_compare_free(s->c);
}

static json_t *num(double v, int known)
{
	return known && isfinite(v) ? json_real(round(v * 1e6) / 1e6) : json_null();
}

/* mean and standard deviation from Σ, Σ², n */
static void msd(double s, double ss, double n, double *mean, double *sd)
{
	*mean = n > 0 ? s / n : 0;
	double var = n > 1 ? (ss - s * s / n) / (n - 1) : 0;
	*sd = var > 0 ? sqrt(var) : 0;
}

/* The judgement: |delta| beyond sigma standard errors and beyond the relative and absolute
 * floors. With one iteration on a side its spread is unknown and only the floors apply. */
static int significant(const struct kj_diff_opts *o, double ma, double sa, double na, double mb,
		       double sb, double nb, double abs_floor)
{
	double d = fabs(mb - ma), se = sqrt((na > 0 ? sa * sa / na : 0) + (nb > 0 ? sb * sb / nb : 0));
	return d > o->sigma * se && d > o->min_rel * fabs(ma) && d > abs_floor;
}

static json_t *metric(const struct kj_diff_opts *o, const char *name, const char *unit, double ma,
		      double sa, double na, double mb, double sb, double nb, double abs_floor)
{
	json_t *m = json_object();
	int ok = na > 0 && nb > 0;
	json_object_set_new(m, "metric", json_string(name));
	json_object_set_new(m, "unit", json_string(unit));
	json_object_set_new(m, "a_mean", num(ma, na > 0));
	json_object_set_new(m, "a_sd", num(sa, na > 1));
	json_object_set_new(m, "a_n", json_integer((json_int_t)na));
	json_object_set_new(m, "b_mean", num(mb, nb > 0));
	json_object_set_new(m, "b_sd", num(sb, nb > 1));
	json_object_set_new(m, "b_n", json_integer((json_int_t)nb));
	json_object_set_new(m, "delta", num(mb - ma, ok));
	json_object_set_new(m, "delta_pct", num(100 * (mb - ma) / ma, ok && ma != 0));
	json_object_set_new(m, "significant", json_boolean(ok && significant(o, ma, sa, na, mb, sb, nb, abs_floor)));
	return m;
}

/* mean/sd over measured iterations of one per-iteration field (ns → µs), or energy (J) */
static void iter_stat(const struct kj_compare *c, size_t off, int energy, double *mean, double *sd, double *n)
{
	double s = 0, ss = 0, k = 0;
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *it = &c->iv[i];
		double v;
		if (it->skipped)
			continue;
		if (energy) {
			/* as compare: iterations with another process's work are left out when enough
			 * clean ones remain (energy on a shared GPU) */
			if (!it->energy_ok || it->energy_excluded)
				continue;
			v = it->energy_measured_mj / 1000;
		} else {
			v = (double)*(const int64_t *)((const char *)it + off) / 1e3;
		}
		s += v;
		ss += v * v;
		k++;
	}
	msd(s, ss, k, mean, sd);
	*n = k;
}

static json_t *run_json(sqlite3 *db, const char *path, const struct kj_compare *c, char *gpu, size_t gl,
			char *cmd, size_t cl)
{
	json_t *r = json_object();
	cmd[0] = 0;
	kj_store_a_device_names(db, gpu, gl);
	if (kj_db_meta_get(db, "command", cmd, cl))
		cmd[0] = 0;
	json_object_set_new(r, "path", json_string(path));
	json_object_set_new(r, "gpu", gpu[0] ? json_string(gpu) : json_null());
	json_object_set_new(r, "command", cmd[0] ? json_string(cmd) : json_null());
	json_object_set_new(r, "region", c->it.whole_run ? json_null() : json_string(c->it.region));
	json_object_set_new(r, "iterations_measured", json_integer((json_int_t)c->it.n_kept));
	return r;
}

/* order of the kernel rows: changed first, then only in one run, then by |delta|, then by time */
static double sort_key(const json_t *k, int *rank)
{
	const char *m = json_string_value(json_object_get(k, "match"));
	double a = json_number_value(json_object_get(k, "a_us")), b = json_number_value(json_object_get(k, "b_us"));
	*rank = json_is_true(json_object_get(k, "significant")) ? 0 : !strncmp(m, "only", 4) ? 1 : 2;
	return fabs(b - a) * 1e6 + fmax(a, b);
}

static int by_delta(const void *x, const void *y)
{
	int ra, rb;
	double da = sort_key(*(json_t *const *)x, &ra), db = sort_key(*(json_t *const *)y, &rb);
	if (ra != rb)
		return ra - rb;
	return da < db ? 1 : da > db ? -1 : 0;
}

int kj_diff_compute(sqlite3 *dba, const char *path_a, sqlite3 *dbb, const char *path_b,
		    const struct kj_diff_opts *oin, json_t **out)
{
	struct kj_diff_opts o = *oin;
	struct kj_compare_opts co = {.region = o.region, .skip = o.skip, .top = 10, .quiet = o.quiet};
	struct side A = {0}, B = {0};
	struct kj_smap keys = {0}, names = {0};
	struct row *rows = NULL;
	size_t n_rows = 0, *key_row = NULL, *name_row = NULL;
	unsigned char *in_a = NULL, *in_b = NULL, *nin_a = NULL, *nin_b = NULL;
	json_t *d = NULL;
	int rc;
	if (o.sigma <= 0)
		o.sigma = 4;
	if (o.min_rel <= 0)
		o.min_rel = 0.02;
	if (o.min_abs_us <= 0)
		o.min_abs_us = 0.5;
	if ((rc = kj_compare_compute(dba, &co, &A.c)) || (rc = kj_compare_compute(dbb, &co, &B.c)))
		goto out;
	if ((rc = side_keys(dba, &A)) || (rc = side_keys(dbb, &B)))
		goto out;
	rc = KJ_ENOMEM;
	/* keys of both runs in one map: which run has each */
	size_t na = A.c->n_groups, nb = B.c->n_groups, cap = na + nb + 1;
	in_a = calloc(cap, 1);
	in_b = calloc(cap, 1);
	nin_a = calloc(cap, 1);
	nin_b = calloc(cap, 1);
	key_row = malloc(cap * sizeof(*key_row));
	name_row = malloc(cap * sizeof(*name_row));
	rows = calloc(cap, sizeof(*rows));
	if (!in_a || !in_b || !nin_a || !nin_b || !key_row || !name_row || !rows)
		goto out;
	for (size_t i = 0; i < cap; i++)
		key_row[i] = name_row[i] = (size_t)-1;
	for (size_t g = 0; g < na + nb; g++) {
		struct side *s = g < na ? &A : &B;
		size_t k = kj_smap_intern(&keys, s->key[g < na ? g : g - na]);
		if (k == (size_t)-1)
			goto out;
		(g < na ? in_a : in_b)[k] = 1;
	}
	/* names of keys that did not match, for the second pass */
	for (size_t g = 0; g < na + nb; g++) {
		struct side *s = g < na ? &A : &B;
		size_t gi = g < na ? g : g - na, k = kj_smap_intern(&keys, s->key[gi]);
		if (in_a[k] && in_b[k])
			continue;
		size_t nm = kj_smap_intern(&names, s->name[gi]);
		if (nm == (size_t)-1)
			goto out;
		(g < na ? nin_a : nin_b)[nm] = 1;
	}
	for (size_t g = 0; g < na + nb; g++) {
		struct side *s = g < na ? &A : &B;
		size_t gi = g < na ? g : g - na, k = kj_smap_intern(&keys, s->key[gi]), r;
		if (in_a[k] && in_b[k]) {
			if (key_row[k] == (size_t)-1) {
				key_row[k] = n_rows;
				rows[n_rows++] = (struct row){M_KEY, k, k, s->name[gi], NULL};
			}
			r = key_row[k];
		} else {
			size_t nm = kj_smap_intern(&names, s->name[gi]);
			if (nin_a[nm] && nin_b[nm]) {
				if (name_row[nm] == (size_t)-1) {
					name_row[nm] = n_rows;
					rows[n_rows++] = (struct row){M_NAME, k, k, s->name[gi], NULL};
				}
				r = name_row[nm];
			} else {
				if (key_row[k] == (size_t)-1) {
					key_row[k] = n_rows;
					rows[n_rows++] = (struct row){g < na ? M_ONLY_A : M_ONLY_B, k, k, s->name[gi], NULL};
				}
				r = key_row[k];
			}
		}
		s->row[gi] = r;
	}
	if ((rc = side_series(&A, n_rows)) || (rc = side_series(&B, n_rows)))
		goto out;
	rc = KJ_ENOMEM;
	d = json_object();
	char ga[512], gb[512], ca[4096], cb[4096];
	json_t *warn = json_array();
	json_object_set_new(d, "a", run_json(dba, path_a, A.c, ga, sizeof(ga), ca, sizeof(ca)));
	json_object_set_new(d, "b", run_json(dbb, path_b, B.c, gb, sizeof(gb), cb, sizeof(cb)));
	int same_gpu = !strcmp(ga, gb), same_cmd = !strcmp(ca, cb);
	json_object_set_new(d, "same_gpu", json_boolean(same_gpu));
	json_object_set_new(d, "same_command", json_boolean(same_cmd));
	if (!same_gpu)
		json_array_append_new(warn, json_sprintf("different GPUs: A ran on %s, B on %s; a kernel's time"
							 " change mixes the program's change with the GPU's",
							 ga[0] ? ga : "(not recorded)", gb[0] ? gb : "(not recorded)"));
	if (!same_cmd)
		json_array_append_new(warn, json_sprintf("different commands: A ran %s, B ran %s; kernels are"
							 " matched by name and geometry, the rest are listed as only in one run",
							 ca[0] ? ca : "(not recorded)", cb[0] ? cb : "(not recorded)"));
	if (A.c->it.whole_run != B.c->it.whole_run ||
	    (!A.c->it.whole_run && strcmp(A.c->it.region, B.c->it.region)))
		json_array_append_new(warn, json_sprintf("different iterations: A's are '%s', B's '%s'",
							 A.c->it.whole_run ? "the whole run" : A.c->it.region,
							 B.c->it.whole_run ? "the whole run" : B.c->it.region));
	/* the kernels' replayed energies: the mean of warm and cold L2 in a run with cold-cache
	 * energies (replay_energy_cold), warm alone in one without */
	int cold_a = cmp_groups_have_cold_energy(A.c), cold_b = cmp_groups_have_cold_energy(B.c);
	if (cold_a != cold_b)
		json_array_append_new(warn, json_sprintf("the kernels' replayed energies differ in kind: %s's are the"
							 " mean of warm and cold L2, %s's warm L2 alone (replay it"
							 " again with --energy); a kernel's energy change mixes the two",
							 cold_a ? "A" : "B", cold_a ? "B" : "A"));
	if (A.c->it.n_kept < 2 || B.c->it.n_kept < 2)
		json_array_append_new(warn, json_string("a run has fewer than 2 measured iterations: its spread is"
							" unknown, so only changes above the relative floor are flagged"));
	json_object_set_new(d, "warnings", warn);
	json_t *th = json_object();
	json_object_set_new(th, "sigma", json_real(o.sigma));
	json_object_set_new(th, "min_rel", json_real(o.min_rel));
	json_object_set_new(th, "min_abs_us", json_real(o.min_abs_us));
	json_object_set_new(d, "thresholds", th);
	/* per-iteration totals */
	static const struct {
		const char *name;
		size_t off;
	} tot[] = {{"wall_us", offsetof(struct cmp_iter, wall)},
		   {"busy_us", offsetof(struct cmp_iter, busy)},
		   {"idle_us", offsetof(struct cmp_iter, idle)},
		   {"host_only_us", offsetof(struct cmp_iter, host_only)},
		   {"kernel_sum_us", offsetof(struct cmp_iter, kernel_sum)}};
	json_t *totals = json_array();
	for (size_t t = 0; t <= sizeof(tot) / sizeof(tot[0]); t++) {
		int en = t == sizeof(tot) / sizeof(tot[0]);
		double ma, sa, nA, mb, sb, nB;
		iter_stat(A.c, en ? 0 : tot[t].off, en, &ma, &sa, &nA);
		iter_stat(B.c, en ? 0 : tot[t].off, en, &mb, &sb, &nB);
		json_array_append_new(totals, metric(&o, en ? "energy_measured_j" : tot[t].name, en ? "J" : "us",
						     ma, sa, nA, mb, sb, nB, en ? 0 : o.min_abs_us));
	}
	json_object_set_new(d, "totals", totals);
	/* kernels */
	json_t **kv = calloc(n_rows + 1, sizeof(*kv));
	size_t n_sig = 0, only_a = 0, only_b = 0;
	if (!kv)
		goto out;
	for (size_t r = 0; r < n_rows; r++) {
		const struct rstat *a = &A.st[r], *b = &B.st[r];
		double ma, sa, mb, sb;
		if (a->launches + b->launches == 0)
			continue; /* launched outside the measured iterations only */
		msd(a->s / 1e3, a->ss / 1e6, A.n, &ma, &sa);
		msd(b->s / 1e3, b->ss / 1e6, B.n, &mb, &sb);
		int ha = rows[r].match != M_ONLY_B, hb = rows[r].match != M_ONLY_A;
		double ca_ = A.n > 0 ? (double)a->launches / A.n : 0, cb_ = B.n > 0 ? (double)b->launches / B.n : 0;
		int sig = ha && hb && (significant(&o, ma, sa, A.n, mb, sb, B.n, o.min_abs_us) || fabs(cb_ - ca_) >= 0.5);
		json_t *k = json_object();
		json_object_set_new(k, "name", json_string(rows[r].name));
		json_object_set_new(k, "key", json_string(keys.names[rows[r].key_a]));
		json_object_set_new(k, "match", json_string(match_names[rows[r].match]));
		json_object_set_new(k, "a_count", num(ca_, ha));
		json_object_set_new(k, "b_count", num(cb_, hb));
		json_object_set_new(k, "a_us", num(ma, ha));
		json_object_set_new(k, "a_sd_us", num(sa, ha && A.n > 1));
		json_object_set_new(k, "b_us", num(mb, hb));
		json_object_set_new(k, "b_sd_us", num(sb, hb && B.n > 1));
		json_object_set_new(k, "delta_us", num(mb - ma, ha && hb));
		json_object_set_new(k, "delta_pct", num(100 * (mb - ma) / ma, ha && hb && ma > 0));
		int hea = ha && a->e_launches == a->launches && a->launches > 0, heb = hb && b->e_launches == b->launches && b->launches > 0;
		json_object_set_new(k, "a_energy_mj", num(A.n > 0 ? a->energy_mj / A.n : 0, hea));
		json_object_set_new(k, "b_energy_mj", num(B.n > 0 ? b->energy_mj / B.n : 0, heb));
		json_object_set_new(k, "delta_energy_mj", num((B.n > 0 ? b->energy_mj / B.n : 0) - (A.n > 0 ? a->energy_mj / A.n : 0), hea && heb));
		json_object_set_new(k, "significant", json_boolean(sig));
		n_sig += sig;
		only_a += rows[r].match == M_ONLY_A;
		only_b += rows[r].match == M_ONLY_B;
		kv[r] = k;
	}
	size_t nk = 0;
	for (size_t r = 0; r < n_rows; r++)
		if (kv[r])
			kv[nk++] = kv[r];
	qsort(kv, nk, sizeof(*kv), by_delta);
	json_t *karr = json_array();
	for (size_t r = 0; r < nk; r++)
		json_array_append_new(karr, kv[r]);
	free(kv);
	json_object_set_new(d, "kernels", karr);
	json_object_set_new(d, "kernels_changed", json_integer((json_int_t)n_sig));
	json_object_set_new(d, "kernels_only_a", json_integer((json_int_t)only_a));
	json_object_set_new(d, "kernels_only_b", json_integer((json_int_t)only_b));
	*out = d;
	d = NULL;
	rc = 0;
out:
	json_decref(d);
	side_free(&A);
	side_free(&B);
	kj_smap_free(&keys);
	kj_smap_free(&names);
	free(rows);
	free(key_row);
	free(name_row);
	free(in_a);
	free(in_b);
	free(nin_a);
	free(nin_b);
	return rc;
}
