/* The collectives' model: measured points per GPU count, read piecewise-linearly in log-log
 * between the two nearest sizes, the latency floor below them and the last segment's bandwidth
 * above them (kj_coll_model.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_coll_model.h"
#include "kj_error.h"
#include "kj_predict.h"

double kj_coll_interp(const int64_t *bytes, const double *val, int n, int64_t b)
{
	if (b <= bytes[0])
		return val[0]; /* the latency floor */
	if (b >= bytes[n - 1]) {
		double db = (double)b - (double)bytes[n - 1];
		if (n >= 2 && val[n - 1] > val[n - 2])
			return val[n - 1] + db * (val[n - 1] - val[n - 2]) / ((double)bytes[n - 1] - (double)bytes[n - 2]);
		return val[n - 1] * (double)b / (double)bytes[n - 1];
	}
	int i = 0;
	while (bytes[i + 1] < b) /* the segment [bytes[i], bytes[i + 1]] holding b */
		i++;
	if (bytes[i + 1] == b)
		return val[i + 1]; /* a measured size: its own figure */
	double f = log((double)b / (double)bytes[i]) / log((double)bytes[i + 1] / (double)bytes[i]);
	return exp(log(val[i]) + f * (log(val[i + 1]) - log(val[i])));
}

/* rows in (gpus, bytes) order, a repeated shape's first row kept (insertion sort: stable);
 * returns the rows left */
static int sort_rows(struct kj_coll_row *r, int n)
{
	for (int i = 1; i < n; i++) {
		struct kj_coll_row x = r[i];
		int j = i;
		while (j > 0 && (r[j - 1].gpus > x.gpus || (r[j - 1].gpus == x.gpus && r[j - 1].bytes > x.bytes))) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = x;
	}
	int k = n ? 1 : 0;
	for (int i = 1; i < n; i++)
		if (r[i].gpus != r[k - 1].gpus || r[i].bytes != r[k - 1].bytes)
			r[k++] = r[i];
	return k;
}

int kj_coll_fit(const struct kj_coll_fit_key *k, struct kj_coll_row *rows, int n, json_t *models)
{
	n = sort_rows(rows, n);
	if (n == 0)
		return 1;
	int64_t *b = malloc(n * sizeof(*b));
	double *y = malloc(n * sizeof(*y)), *meas = malloc(n * sizeof(*meas)), *pred = malloc(n * sizeof(*pred));
	int *ho = malloc(n * sizeof(*ho)), rc = 0, nte = 0;
	char name[600], path[PATH_MAX + 640];
	json_t *pts = json_array();
	double ape = 0, ape_max = 0, ylo = INFINITY, yhi = 0;
	if (!b || !y || !meas || !pred || !ho) {
		rc = KJ_ENOMEM;
		goto out;
	}
	snprintf(name, sizeof(name), "%s_%s_%s_%s_%s", k->gpu, k->op, k->precision, k->prop, k->target);
	for (int s = 0, e; s < n; s = e) { /* one GPU count's rows: s .. e-1 */
		for (e = s; e < n && rows[e].gpus == rows[s].gpus; e++) {
			b[e - s] = rows[e].bytes;
			y[e - s] = rows[e].value;
			ylo = fmin(ylo, rows[e].value);
			yhi = fmax(yhi, rows[e].value);
		}
		json_t *jb = json_array(), *jv = json_array();
		for (int i = 0; i < e - s; i++) {
			json_array_append_new(jb, json_integer(b[i]));
			json_array_append_new(jv, json_real(y[i]));
			meas[s + i] = y[i];
			pred[s + i] = y[i];
			ho[s + i] = i > 0 && i < e - s - 1;
			if (!ho[s + i])
				continue;
			/* an interior point from its neighbours alone: the grid without it */
			int64_t b3[2] = {b[i - 1], b[i + 1]};
			double y3[2] = {y[i - 1], y[i + 1]};
			pred[s + i] = kj_coll_interp(b3, y3, 2, b[i]);
			double a = fabs(pred[s + i] - y[i]) / y[i] * 100.0;
			ape += a;
			ape_max = fmax(ape_max, a);
			nte++;
		}
		json_array_append_new(pts, json_pack("{s:I,s:o,s:o}", "gpus", (json_int_t)rows[s].gpus, "bytes", jb,
						     "values", jv));
	}
	snprintf(path, sizeof(path), "%s/%s.svg", k->dir, name);
	if ((rc = kj_svg_scatter(path, name, k->unit, meas, pred, ho, n))) {
		kj_errorf("fit: cannot write %s", path);
		goto out;
	}
	int64_t blo = rows[0].bytes, bhi = rows[0].bytes;
	for (int i = 1; i < n; i++) {
		blo = rows[i].bytes < blo ? rows[i].bytes : blo;
		bhi = rows[i].bytes > bhi ? rows[i].bytes : bhi;
	}
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:n,s:s+,s:s,s:o,s:i,s:i,s:i,s:f}", "gpu", k->gpu, "op", k->op,
			      "precision", k->precision, "prop", k->prop, "target", k->target, "unit", k->unit,
			      "name", name, "model", "svg", name, ".svg", "kind", KJ_COLL_MODEL_KIND, "points", pts,
			      "n_train", n, "n_test", nte, "n_final", n, "mape_train_pct", 0.0);
	pts = NULL;
	json_object_set_new(j, "shape_range", json_pack("{s:[I,I],s:[I,I]}", "gpus", (json_int_t)rows[0].gpus,
							(json_int_t)rows[n - 1].gpus, "bytes", (json_int_t)blo,
							(json_int_t)bhi));
	json_object_set_new(j, "measured_range", json_pack("[f,f]", ylo, yhi));
	json_object_set_new(j, "mape_test_pct", nte ? json_real(ape / nte) : json_null());
	json_object_set_new(j, "max_ape_test_pct", nte ? json_real(ape_max) : json_null());
	json_array_append_new(models, j);
	if (!k->quiet) {
		char te[64] = "-";
		if (nte)
			snprintf(te, sizeof(te), "%.2f%% (max %.1f%%)", ape / nte, ape_max);
		printf("%-52s %6d %6d %9.2f%%  %-14s %s\n", name, n, nte, 0.0, te, "log-log points");
	}
out:
	json_decref(pts);
	free(b);
	free(y);
	free(meas);
	free(pred);
	free(ho);
	return rc;
}

int kj_coll_predict(const json_t *e, const char *dir, const struct kj_sweep_op *op, const int64_t *v, double *value,
		    json_t **grid, char *err, size_t len)
{
	const json_t *pts = json_object_get(e, "points"), *p;
	const char *name = json_string_value(json_object_get(e, "name"));
	char counts[256] = "";
	size_t i;
	*grid = NULL;
	json_array_foreach(pts, i, p) {
		const json_t *jb = json_object_get(p, "bytes"), *jv = json_object_get(p, "values");
		json_int_t g = json_integer_value(json_object_get(p, "gpus"));
		size_t n = json_array_size(jb);
		snprintf(counts + strlen(counts), sizeof(counts) - strlen(counts), "%s%lld", i ? ", " : "", (long long)g);
		if (g != v[0])
			continue;
		int64_t *b = malloc((n ? n : 1) * sizeof(*b));
		double *y = malloc((n ? n : 1) * sizeof(*y)), lo = INFINITY, hi = 0;
		if (!b || !y) {
			free(b);
			free(y);
			return KJ_ENOMEM;
		}
		int ok = n >= 1 && json_array_size(jv) == n;
		for (size_t k = 0; ok && k < n; k++) {
			b[k] = json_integer_value(json_array_get(jb, k));
			y[k] = json_number_value(json_array_get(jv, k));
			ok = b[k] > 0 && y[k] > 0 && isfinite(y[k]) && (k == 0 || b[k] > b[k - 1]);
			lo = fmin(lo, y[k]);
			hi = fmax(hi, y[k]);
		}
		if (ok) {
			*value = kj_coll_interp(b, y, (int)n, v[1]);
			*grid = json_pack("{s:{s:[I,I],s:[I,I]},s:[f,f]}", "shape_range", op->columns[0], g, g,
					  op->columns[1], (json_int_t)b[0], (json_int_t)b[n - 1], "measured_range", lo, hi);
		}
		free(b);
		free(y);
		if (!ok) {
			snprintf(err, len, "%s/models.json: model %s: the points of gpus=%lld are not sizes ascending "
				 "with positive figures: run kjoule fit again", dir, name ? name : op->name, (long long)g);
			return KJ_EINVAL;
		}
		return *grid ? 0 : KJ_ENOMEM;
	}
	snprintf(err, len, "%s: gpus=%lld was not measured (%s: gpus=%s); a collective is predicted from sizes "
		 "measured on the same GPU count: sweep with --gpus %lld and fit again", name ? name : op->name,
		 (long long)v[0], i ? "measured" : "no points", i ? counts : "none", (long long)v[0]);
	return KJ_EINVAL;
}
