/* kjoule fit: per (GPU, operator, precision, fwd/bwd, time/energy), the sweep CSVs' rows (one
 * per shape), the model form chosen by cross-validation on 4/5 of them (kj_fit_model.c), scored
 * on the held-out fifth, then trained on every row and saved with its entry in models.json. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_atomic.h"
#include "kj_coll_model.h"
#include "kj_error.h"
#include "kj_fit_out.h"
#include "kj_predict.h"
#include "kj_sweep.h"
#include "kj_fit_model.h"
#include "kj_xgb.h"

struct sample {
	int64_t v[KJ_SWEEP_MAX_COLS];
	char key[256];
	int order; /* position in the files as read: the first file's row wins */
	double y[4]; /* F_dur, B_dur, F_energy, B_energy; NAN when absent */
};

static const char *const target_cols[4] = {"F_dur(us)", "B_dur(us)", "F_energy(uJ)", "B_energy(uJ)"};

static int cmp_key(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* FNV-1a of the shape text: the same every run */
static uint32_t key_hash(const char *key)
{
	uint32_t h = 2166136261u;
	for (const char *s = key; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* a stable pseudo-random fifth of the shapes is held out */
static int held_out(const char *key)
{
	return key_hash(key) % 5 == 0;
}

/* kj_write_atomic's writer: the models index as indented JSON */
static int dump_json(FILE *f, void *root)
{
	return json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) ? KJ_EIO : 0;
}

struct group {
	char gpu[128], op[128];
	int precision;
	char *files[1024];
	int nfiles;
	char impl[2][64];        /* per direction, the implementation family its rows ran (impl
				  * column), '' none named */
	char impl_where[2][600]; /* the first row that named it: file:line */
};

/* One measured row's impl value into the group: the first named family is kept; another one is an
 * error naming both rows (a model of two implementations' figures would look right and be wrong). */
static int group_impl(struct group *g, const char *impl, const char *path, long long line)
{
	if (!strcmp(impl, "-"))
		return 0;
	const char *slash = strchr(impl, '/');
	for (int d = 0; d < 2; d++) { /* forward before '/', backward after (one name: both) */
		char fam[64];
		kj_sweep_impl_family(d && slash ? slash + 1 : impl, fam, sizeof(fam));
		if (!g->impl[d][0]) {
			snprintf(g->impl[d], sizeof(g->impl[d]), "%s", fam);
			snprintf(g->impl_where[d], sizeof(g->impl_where[d]), "%s:%lld", path, line);
		} else if (strcmp(g->impl[d], fam)) {
			kj_errorf("fit: %s %s %s %s: rows of two implementations, %s (%s) and %s (%s:%lld); fit "
				  "each implementation's CSVs apart", g->gpu, g->op, kj_precision_name(g->precision),
				  d ? "bwd" : "fwd", g->impl[d], g->impl_where[d], fam, path, line);
			return KJ_EINVAL;
		}
	}
	return 0;
}

/* the samples of one group, one per shape (the first file's row wins) */
static int read_group(struct group *g, const struct kj_sweep_op *op, struct sample **out, int *n)
{
	struct sample *s = NULL;
	int cnt = 0, cap = 0;
	char err[2048];
	for (int i = 0; i < g->nfiles; i++) {
		struct kj_sweep_csv csv;
		if (kj_sweep_csv_read(g->files[i], op->name, &csv, err, sizeof(err))) {
			kj_errorf("fit: %s", err);
			free(s);
			return KJ_EINVAL;
		}
		int tc[4], ic = kj_sweep_csv_col(&csv, "impl");
		for (int t = 0; t < 4; t++)
			tc[t] = kj_sweep_csv_col(&csv, target_cols[t]);
		for (int64_t r = 0; r < csv.nrows; r++) {
			if (ic >= 0 && group_impl(g, csv.rows[r][ic], g->files[i], (long long)csv.lines[r])) {
				free(s);
				kj_sweep_csv_free(&csv);
				return KJ_EINVAL;
			}
			if (cnt == cap) {
				cap = cap ? 2 * cap : 1024;
				struct sample *ns = realloc(s, cap * sizeof(*s));
				if (!ns) {
					free(s);
					kj_sweep_csv_free(&csv);
					return KJ_ENOMEM;
				}
				s = ns;
			}
			struct sample *x = &s[cnt];
			x->order = cnt++;
			x->key[0] = '\0';
			for (int j = 0; j < op->ncolumns; j++) {
				x->v[j] = strtoll(csv.rows[r][j], NULL, 10);
				snprintf(x->key + strlen(x->key), sizeof(x->key) - strlen(x->key), "%s%s",
					 j ? "," : "", csv.rows[r][j]);
			}
			for (int t = 0; t < 4; t++) {
				const char *f = tc[t] >= 0 ? csv.rows[r][tc[t]] : "-";
				double y = strcmp(f, "-") ? strtod(f, NULL) : NAN;
				x->y[t] = y > 0 ? y : NAN;
			}
		}
		kj_sweep_csv_free(&csv);
	}
	if (cnt > 1) {
		/* one sample per shape: the first file's figures, and a later file's where the first
		 * has none (a dense time-only sweep beside a coarser one with energy) */
		qsort(s, cnt, sizeof(*s), cmp_key);
		int k = 1;
		for (int i = 1; i < cnt; i++) {
			if (strcmp(s[i].key, s[k - 1].key)) {
				s[k++] = s[i];
				continue;
			}
			for (int t = 0; t < 4; t++)
				if (isnan(s[k - 1].y[t]))
					s[k - 1].y[t] = s[i].y[t];
		}
		cnt = k;
	}
	*out = s;
	*n = cnt;
	return 0;
}

/* the training rows' fold of five for cross-validation (another cut of the hash than held_out's) */
static int fold_of(const char *key)
{
	return (int)(key_hash(key) / 5 % 5);
}

/* train one model; appends its entry to models (jansson array); prints a line. A time model hands
 * its model of the training rows (before the held-out fifth joins them) to *tm; an energy model,
 * given one there, learns the power (energy over time, of rows with both) and predicts energy as
 * that power times tm's time: power varies over a few hundred watts where energy spans decades,
 * and the time models learn from the denser time-only sweeps as well. */
static int fit_one(const struct kj_fit_opts *o, const char *dir, struct group *g, const struct kj_sweep_op *op,
		   struct sample *s, int n, int prop, int energy, int sm, double l2, const char *sm_source,
		   json_t *models, struct kj_fitted *tm)
{
	int t = prop + 2 * energy, e = kj_precision_bytes(g->precision), nf = KJ_PREDICT_NF, nc = op->ncolumns;
	float *x = malloc((size_t)n * nf * sizeof(*x)), *xt = malloc((size_t)n * nf * sizeof(*xt));
	double *ly = malloc(n * sizeof(*ly)), *meas = malloc(n * sizeof(*meas)), *lt = malloc(n * sizeof(*lt));
	double *pv = malloc(n * sizeof(*pv)), *pr = malloc(n * sizeof(*pr)), *yt = malloc(n * sizeof(*yt));
	double *oof = malloc(n * sizeof(*oof)), *oofbest = malloc(n * sizeof(*oofbest));
	int *ho = malloc(n * sizeof(*ho)), *fold = malloc(n * sizeof(*fold)), m = 0, ntr = 0, rc = 0;
	int have_oof = 0;
	int64_t lo[KJ_SWEEP_MAX_COLS], hi[KJ_SWEEP_MAX_COLS]; /* the shape range of the rows */
	double ylo = INFINITY, yhi = 0;
	struct kj_fitted fm = {0};
	double cv[KJ_FIT_NFORMS];
	int power = energy && tm && tm->nw > 0; /* learn power, predict energy = power x tm's time */
	char name[600], path[PATH_MAX + 640];
	if (!x || !xt || !ly || !meas || !lt || !pv || !pr || !yt || !ho || !fold || !oof || !oofbest) {
		rc = KJ_ENOMEM;
		goto out;
	}
	snprintf(name, sizeof(name), "%s_%s_%s_%s_%s", g->gpu, op->name, kj_precision_name(g->precision),
		 prop ? "bwd" : "fwd", energy ? "energy" : "time");
	int nvalid = 0;
	for (int i = 0; i < n; i++)
		nvalid += !isnan(s[i].y[t]) && (!power || s[i].y[prop] > 0);
	/* the held-out fifth, when there are enough rows to spare one */
	for (int i = 0; i < n; i++) {
		if (isnan(s[i].y[t]) || (power && !(s[i].y[prop] > 0)))
			continue;
		kj_predict_features(op, s[i].v, prop, e, sm, l2, &x[m * nf]);
		for (int j = 0; j < nc; j++) {
			lo[j] = m && lo[j] < s[i].v[j] ? lo[j] : s[i].v[j];
			hi[j] = m && hi[j] > s[i].v[j] ? hi[j] : s[i].v[j];
		}
		ylo = fmin(ylo, s[i].y[t]);
		yhi = fmax(yhi, s[i].y[t]);
		meas[m] = s[i].y[t];
		ly[m] = log(power ? s[i].y[t] / s[i].y[prop] : s[i].y[t]);
		ho[m] = nvalid >= 10 && held_out(s[i].key);
		fold[m] = fold_of(s[i].key);
		m++;
	}
	if (m < 4) {
		rc = 1; /* too few rows: no model */
		goto out;
	}
	/* the training rows (all but the held-out fifth), packed */
	float *xtr = malloc((size_t)m * nf * sizeof(*xtr));
	double *ytr = malloc(m * sizeof(*ytr));
	int *ftr = malloc(m * sizeof(*ftr));
	if (!xtr || !ytr || !ftr) {
		free(xtr), free(ytr), free(ftr);
		rc = KJ_ENOMEM;
		goto out;
	}
	for (int i = 0; i < m; i++)
		if (!ho[i]) {
			memcpy(&xtr[ntr * nf], &x[i * nf], nf * sizeof(*x));
			ytr[ntr] = ly[i];
			ftr[ntr++] = fold[i];
		}
	/* the form: the lowest cross-validated error on the training rows (the first, with trees,
	 * when there are too few rows to judge) */
	int best = 0;
	for (int c = 0; c < KJ_FIT_NFORMS; c++) {
		cv[c] = ntr >= 10 ? kj_fit_cv_mape(o->rounds, xtr, ytr, ftr, ntr, nf, nc, c, xt, yt, pr, oof) : -1;
		if (cv[c] >= 0 && (cv[best] < 0 || cv[c] < cv[best] || c == 0)) {
			best = c;
			memcpy(oofbest, oof, ntr * sizeof(*oof)); /* the chosen form's out-of-fold rows */
			have_oof = 1;
		}
	}
	/* scored on the held-out fifth by a model of the training rows ... */
	rc = kj_fitted_train(o->rounds, xtr, ytr, ntr, nf, nc, kj_fit_forms[best].form, kj_fit_forms[best].trees,
			     &fm);
	if (rc > 0 && best) { /* that form is singular on these rows: the plain one */
		kj_fitted_free(&fm);
		best = 0;
		have_oof = 0; /* the out-of-fold rows were the other form's */
		rc = kj_fitted_train(o->rounds, xtr, ytr, ntr, nf, nc, kj_fit_forms[0].form, kj_fit_forms[0].trees, &fm);
	}
	free(xtr), free(ytr), free(ftr);
	if (rc > 0)
		kj_errorf("fit: %s: the baseline cannot be solved on these rows", name);
	if (rc || (rc = kj_fitted_predict_log(&fm, x, m, nf, nc, lt)))
		goto out;
	if (power && (rc = kj_fitted_predict_log(tm, x, m, nf, nc, pr))) /* log time of every row */
		goto out;
	double ape_tr = 0, ape_te = 0, max_te = 0;
	int nte = 0;
	for (int i = 0; i < m; i++) {
		pv[i] = exp(lt[i] + (power ? pr[i] : 0.0));
		double ape = fabs(pv[i] - meas[i]) / meas[i] * 100.0;
		if (ho[i]) {
			ape_te += ape;
			max_te = ape > max_te ? ape : max_te;
			nte++;
		} else {
			ape_tr += ape;
		}
	}
	/* ... and the model kept is then trained on every row (a time model's model of the training
	 * rows goes to *tm, for the energy models' held-out scores) */
	int retrain = nte > 0;
	if (!energy && tm) {
		*tm = fm;
		fm.xm = NULL;
		retrain = 1;
	}
	if (retrain) {
		kj_fitted_free(&fm);
		if ((rc = kj_fitted_train(o->rounds, x, ly, m, nf, nc, kj_fit_forms[best].form,
					  kj_fit_forms[best].trees, &fm)))
			goto out;
	}
	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	if (fm.trees) {
		char err[1024];
		if ((rc = kj_xgb_save(fm.xm, path, err, sizeof(err)))) {
			kj_errorf("fit: %s", err);
			goto out;
		}
	}
	snprintf(path, sizeof(path), "%s/%s.svg", dir, name);
	if ((rc = kj_svg_scatter(path, name, energy ? "uJ" : "us", meas, pv, ho, m))) {
		kj_errorf("fit: cannot write %s", path);
		goto out;
	}
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:i,s:i,s:f}", "gpu", g->gpu, "op",
			      op->name, "precision", kj_precision_name(g->precision), "prop", prop ? "bwd" : "fwd",
			      "target", energy ? "energy" : "time", "unit", energy ? "uJ" : "us", "sm_count", sm,
			      "sm_source", sm_source, "model", name, "svg", name, "n_train", ntr, "n_test", nte,
			      "mape_train_pct", ntr ? ape_tr / ntr : 0.0);
	if (sm <= 0)
		json_object_set_new(j, "sm_count", json_null());
	if (g->impl[prop][0]) /* the implementation its rows ran (flash_atten: cudnn-sdpa, kjoule-flash2) */
		json_object_set_new(j, "implementation", json_string(g->impl[prop]));
	json_t *w = json_array(), *cvj = json_object();
	for (int k = 0; k < fm.nw; k++)
		json_array_append_new(w, json_real(fm.w[k]));
	for (int c = 0; c < KJ_FIT_NFORMS; c++) {
		char key[64];
		snprintf(key, sizeof(key), "%s%s", kj_baseline_name(kj_fit_forms[c].form),
			 kj_fit_forms[c].trees ? "+trees" : "");
		json_object_set_new(cvj, key, cv[c] >= 0 ? json_real(cv[c]) : json_null());
	}
	json_object_set_new(j, "baseline", json_string(kj_baseline_name(fm.form)));
	json_object_set_new(j, "linear", w);
	json_object_set_new(j, "trees", json_boolean(fm.trees));
	json_object_set_new(j, "cv_mape_pct", cvj);
	json_object_set_new(j, "model", fm.trees ? json_sprintf("%s.json", name) : json_null());
	json_object_set_new(j, "svg", json_sprintf("%s.svg", name));
	json_object_set_new(j, "features", json_integer(KJ_PREDICT_FEATURES));
	if (power) /* the model's own output is watts: predict multiplies it by the time model's */
		json_object_set_new(j, "predicts", json_string("power_w"));
	json_object_set_new(j, "l2_bytes", l2 > 0 ? json_real(l2) : json_null());
	json_object_set_new(j, "n_final", json_integer(m)); /* rows the saved model learnt from */
	/* the grid it learnt from: predict says how far outside it a shape lies, and quotes no
	 * held-out error there */
	json_t *range = json_object();
	for (int k = 0; k < nc; k++)
		json_object_set_new(range, op->columns[k], json_pack("[I,I]", (json_int_t)lo[k], (json_int_t)hi[k]));
	json_object_set_new(j, "shape_range", range);
	json_object_set_new(j, "measured_range", json_pack("[f,f]", ylo, yhi));
	json_object_set_new(j, "mape_test_pct", nte ? json_real(ape_te / nte) : json_null());
	json_object_set_new(j, "max_ape_test_pct", nte ? json_real(max_te) : json_null());
	json_object_set_new(j, "mape_by_size", kj_fit_error_by_size(meas, pv, ho, m, have_oof ? oofbest : NULL,
							    power ? pr : NULL));
	json_array_append_new(models, j);
	if (!o->quiet) {
		char te[64] = "-";
		if (nte)
			snprintf(te, sizeof(te), "%.2f%% (max %.1f%%)", ape_te / nte, max_te);
		printf("%-52s %6d %6d %9.2f%%  %-14s %s%s\n", name, ntr, nte, ntr ? ape_tr / ntr : 0.0, te,
		       kj_baseline_name(fm.form), fm.trees ? "+trees" : "");
	}
out:
	kj_fitted_free(&fm);
	free(x);
	free(xt);
	free(ly);
	free(meas);
	free(lt);
	free(pv);
	free(pr);
	free(yt);
	free(oof);
	free(oofbest);
	free(ho);
	free(fold);
	return rc;
}

/* A collective's rows as kj_coll_fit's points, one model a target with rows (no backward:
 * collectives have none); returns 0, or 1 when no target had rows, or a negative code. */
static int fit_collective(const struct kj_fit_opts *o, const char *dir, const struct group *g,
			  const struct kj_sweep_op *op, const struct sample *s, int n, json_t *models, int *nmodels)
{
	struct kj_coll_row *r = malloc((n ? n : 1) * sizeof(*r));
	int rc = r ? 1 : KJ_ENOMEM;
	for (int t = 0; t < 4 && rc >= 0; t++) {
		int m = 0;
		for (int i = 0; i < n; i++)
			if (!isnan(s[i].y[t]))
				r[m++] = (struct kj_coll_row){.gpus = s[i].v[0], .bytes = s[i].v[1], .value = s[i].y[t]};
		struct kj_coll_fit_key k = {g->gpu, op->name, kj_precision_name(g->precision), t % 2 ? "bwd" : "fwd",
					    t / 2 ? "energy" : "time", t / 2 ? "uJ" : "us", dir, o->quiet};
		int x = kj_coll_fit(&k, r, m, models);
		*nmodels += x == 0;
		rc = x < 0 ? x : rc && x;
	}
	free(r);
	return rc;
}

/* same model key: gpu, op, precision, prop, target */
static int same_key(json_t *a, json_t *b)
{
	static const char *const keys[] = {"gpu", "op", "precision", "prop", "target"};
	for (int i = 0; i < 5; i++) {
		const char *x = json_string_value(json_object_get(a, keys[i]));
		const char *y = json_string_value(json_object_get(b, keys[i]));
		if (!x || !y || strcmp(x, y))
			return 0;
	}
	return 1;
}

/* The sweep CSVs of o->data_dir (of GPU tag want, when not '') into *out, one group per (GPU,
 * operator, precision), a merged file before its parts; a message and an error when the folder
 * cannot be read or holds none. */
static int scan_groups(const struct kj_fit_opts *o, const char *want, struct group **out, int *ng)
{
	DIR *d = opendir(o->data_dir);
	struct group *groups;
	struct dirent *de;
	struct kj_sweep_name nm;
	int n = 0;
	*out = NULL;
	*ng = 0;
	if (!d) {
		kj_errorf("fit: %s: %s", o->data_dir, strerror(errno));
		return KJ_EIO;
	}
	groups = calloc(512, sizeof(*groups));
	while (groups && (de = readdir(d))) {
		if (kj_sweep_name_parse(de->d_name, &nm) || (want[0] && strcmp(want, nm.gpu)))
			continue;
		int k;
		for (k = 0; k < n; k++)
			if (!strcmp(groups[k].gpu, nm.gpu) && !strcmp(groups[k].op, nm.op) &&
			    groups[k].precision == nm.precision)
				break;
		if (k == n) {
			if (n == 512)
				continue;
			snprintf(groups[k].gpu, sizeof(groups[k].gpu), "%s", nm.gpu);
			snprintf(groups[k].op, sizeof(groups[k].op), "%s", nm.op);
			groups[k].precision = nm.precision;
			n++;
		}
		if (groups[k].nfiles < 1024) {
			size_t l = strlen(o->data_dir) + strlen(de->d_name) + 2;
			char *p = malloc(l);
			if (!p)
				continue;
			snprintf(p, l, "%s/%s", o->data_dir, de->d_name);
			/* a merged file first, so its rows win over the parts' */
			if (nm.parts == 0 && groups[k].nfiles) {
				groups[k].files[groups[k].nfiles++] = groups[k].files[0];
				groups[k].files[0] = p;
			} else {
				groups[k].files[groups[k].nfiles++] = p;
			}
		}
	}
	closedir(d);
	if (!groups)
		return KJ_ENOMEM;
	*out = groups;
	*ng = n;
	if (n == 0) {
		kj_errorf("fit: %s holds no sweep CSVs ({GPU}_{op}_{precision}[_{parts}_{part}].csv)%s%s",
			  o->data_dir, want[0] ? " for GPU " : "", want);
		return KJ_ENOTFOUND;
	}
	return 0;
}

/* Every input is read and checked (the CSVs, and the folder the models go to with its index)
 * before anything is written; the models are then built in a temporary folder beside the output
 * one and renamed into place (kj_fit_out.h), so a refused or failed fit leaves no folder, no
 * half index and the earlier models as they were. */
int kj_fit_run(const struct kj_fit_opts *o)
{
	struct group *groups = NULL;
	struct sample **rows = NULL;
	struct kj_fit_out fo;
	int *nrows = NULL, ng = 0, rc, nmodels = 0;
	char want[128] = "", why[512], path[PATH_MAX + 16];
	json_t *models = NULL, *index = NULL, *dropped = NULL;
	memset(&fo, 0, sizeof(fo));
	if (o->gpu)
		kj_sweep_gpu_tag(o->gpu, want, sizeof(want));
	if ((rc = scan_groups(o, want, &groups, &ng)))
		goto out;
	if ((rc = kj_xgb_load(why, sizeof(why)))) {
		kj_errorf("fit: %s", why);
		goto out;
	}
	if ((rc = kj_fit_out_open(o->out_dir, &fo)))
		goto out;
	rows = calloc(ng, sizeof(*rows));
	nrows = calloc(ng, sizeof(*nrows));
	if (!rows || !nrows) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (int k = 0; k < ng; k++)
		if ((rc = read_group(&groups[k], kj_sweep_op_find(groups[k].op), &rows[k], &nrows[k])))
			goto out;
	if ((rc = kj_fit_out_begin(&fo)))
		goto out;
	models = json_array();
	if (!o->quiet)
		printf("%-52s %6s %6s %10s  %-14s %s\n", "model", "train", "test", "MAPE train", "MAPE held-out",
		       "form");
	for (int k = 0; k < ng && !rc; k++) {
		const struct kj_sweep_op *op = kj_sweep_op_find(groups[k].op);
		if (op->collective) { /* measured points per GPU count, read in log-log */
			int r = fit_collective(o, fo.tmp, &groups[k], op, rows[k], nrows[k], models, &nmodels);
			rc = r < 0 ? r : 0;
			continue;
		}
		int sm = o->sm_count > 0 ? o->sm_count : kj_predict_sm_count(groups[k].gpu);
		double l2 = kj_predict_l2_bytes(groups[k].gpu);
		const char *src = o->sm_count > 0 ? "--sm-count" : sm > 0 ? "known-GPU table" : "none";
		if (sm <= 0 && !o->quiet)
			kj_warnf("fit: SM count of %s unknown (give --sm-count): wave features left out",
				 groups[k].gpu);
		struct kj_fitted tm[2];
		memset(tm, 0, sizeof(tm));
		for (int t = 0; t < 4 && !rc; t++) { /* fwd time, bwd time, fwd energy, bwd energy */
			int r = fit_one(o, fo.tmp, &groups[k], op, rows[k], nrows[k], t % 2, t / 2, sm, l2, src, models,
					&tm[t % 2]);
			if (r < 0)
				rc = r;
			else if (r == 0)
				nmodels++;
			/* r == 1, no time model: tm[t] stays empty and that direction's energy is learnt
			 * directly */
		}
		kj_fitted_free(&tm[0]);
		kj_fitted_free(&tm[1]);
	}
	if (!rc && nmodels == 0) {
		kj_errorf("fit: no model trained: every column had fewer than 4 measured rows");
		rc = KJ_ENOTFOUND;
	}
	if (rc)
		goto out;
	/* keep the earlier index's models of other keys (another GPU fitted into the same folder);
	 * those of this fit's keys are dropped with their files */
	index = fo.old ? json_deep_copy(fo.old) : json_object();
	dropped = json_array();
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(fo.old, "models"), i, e) {
		int dup = 0;
		for (size_t j = 0; j < json_array_size(models); j++)
			dup |= same_key(e, json_array_get(models, j));
		json_array_append(dup ? dropped : models, e);
	}
	json_object_set_new(index, "kjoule_models", json_integer(1));
	json_object_set(index, "models", models);
	snprintf(path, sizeof(path), "%s/models.json", fo.tmp);
	if (kj_write_atomic(path, dump_json, index)) {
		kj_errorf("fit: cannot write %s", path);
		rc = KJ_EIO;
		goto out;
	}
	if (!(rc = kj_fit_out_commit(&fo, dropped)) && !o->quiet)
		printf("%d models in %s/models.json\n", nmodels, o->out_dir);
out:
	kj_fit_out_abort(&fo);
	json_decref(models);
	json_decref(index);
	json_decref(dropped);
	for (int k = 0; k < ng; k++) {
		for (int f = 0; f < groups[k].nfiles; f++)
			free(groups[k].files[f]);
		free(rows ? rows[k] : NULL);
	}
	free(groups);
	free(rows);
	free(nrows);
	return rc;
}
