/* kjoule merge: the part CSVs of one sweep into one file, without duplicates, sorted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_atomic.h"
#include "kj_error.h"
#include "kj_sweep.h"

int kj_sweep_name_parse(const char *path, struct kj_sweep_name *out)
{
	const char *base = strrchr(path, '/');
	char name[512], *tok[64];
	int n = 0;
	base = base ? base + 1 : path;
	size_t len = strlen(base);
	if (len < 5 || len >= sizeof(name) || strcmp(base + len - 4, ".csv"))
		return -1;
	snprintf(name, sizeof(name), "%.*s", (int)(len - 4), base);
	for (char *s = strtok(name, "_"); s && n < 64; s = strtok(NULL, "_"))
		tok[n++] = s;
	memset(out, 0, sizeof(*out));
	int last = n - 1;
	char *end1, *end2;
	if (n >= 5) {
		long a = strtol(tok[n - 2], &end1, 10), b = strtol(tok[n - 1], &end2, 10);
		if (!*end1 && !*end2 && a >= 1 && b >= 1 && b <= a) {
			out->parts = (int)a;
			out->part = (int)b;
			last = n - 3;
		}
	}
	if (last < 2 || (out->precision = kj_precision_parse(tok[last])) < 0)
		return -1;
	snprintf(out->gpu, sizeof(out->gpu), "%s", tok[0]);
	out->op[0] = '\0';
	for (int i = 1; i < last; i++)
		snprintf(out->op + strlen(out->op), sizeof(out->op) - strlen(out->op), "%s%s", i > 1 ? "_" : "", tok[i]);
	return kj_sweep_op_find(out->op) ? 0 : -1;
}

struct mrow {
	int64_t v[KJ_SWEEP_MAX_COLS];
	char **fields;
	int measured;
	int64_t order;
};

static int g_ncols;

static int cmp_row(const void *a, const void *b)
{
	const struct mrow *x = a, *y = b;
	for (int i = 0; i < g_ncols; i++)
		if (x->v[i] != y->v[i])
			return x->v[i] < y->v[i] ? -1 : 1;
	/* a measured row before a skipped one, then the order of reading */
	if (x->measured != y->measured)
		return y->measured - x->measured;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* What kj_write_atomic writes: the header, then the sorted rows, a shape's later rows left out. */
struct merged {
	const struct kj_sweep_csv *head;
	const struct mrow *all;
	int64_t total, *rows, *dups;
};

static int write_merged(FILE *f, void *ctx)
{
	struct merged *m = ctx;
	for (int j = 0; j < m->head->ncols; j++)
		fprintf(f, "%s%s", j ? "," : "", m->head->cols[j]);
	fputc('\n', f);
	for (int64_t r = 0; r < m->total; r++) {
		if (r > 0 && !memcmp(m->all[r].v, m->all[r - 1].v, g_ncols * sizeof(int64_t))) {
			(*m->dups)++;
			continue;
		}
		for (int j = 0; j < m->head->ncols; j++)
			fprintf(f, "%s%s", j ? "," : "", m->all[r].fields[j]);
		fputc('\n', f);
		(*m->rows)++;
	}
	return ferror(f) ? KJ_EIO : 0;
}

int kj_sweep_merge(const char *const *paths, int n, const char *out, int64_t *rows, int64_t *dups,
		   char *err, size_t errlen)
{
	struct kj_sweep_csv *csv = calloc(n, sizeof(*csv));
	struct mrow *all = NULL;
	int64_t total = 0, k = 0;
	int rc = 0, nread = 0;

	*rows = *dups = 0;
	if (!csv)
		return KJ_ENOMEM;
	for (int i = 0; i < n; i++, nread++) {
		if ((rc = kj_sweep_csv_read(paths[i], NULL, &csv[i], err, errlen)))
			goto out;
		int same = csv[i].ncols == csv[0].ncols;
		for (int j = 0; same && j < csv[i].ncols; j++)
			same = !strcmp(csv[i].cols[j], csv[0].cols[j]);
		if (!same) {
			snprintf(err, errlen, "%s:1: its header differs from %s's", paths[i], paths[0]);
			rc = KJ_EINVAL;
			nread++;
			goto out;
		}
		total += csv[i].nrows;
	}
	const struct kj_sweep_op *op = NULL;
	for (int i = 0; i < kj_sweep_op_count() && !op; i++) {
		const struct kj_sweep_op *o = kj_sweep_op_at(i);
		int ok = csv[0].ncols >= o->ncolumns;
		for (int j = 0; ok && j < o->ncolumns; j++)
			ok = !strcmp(csv[0].cols[j], o->columns[j]);
		if (ok)
			op = o;
	}
	g_ncols = op->ncolumns;
	all = calloc(total + 1, sizeof(*all));
	if (!all) {
		rc = KJ_ENOMEM;
		goto out;
	}
	int st = kj_sweep_csv_col(&csv[0], "status"), fd = kj_sweep_csv_col(&csv[0], "F_dur(us)");
	for (int i = 0; i < n; i++)
		for (int64_t r = 0; r < csv[i].nrows; r++, k++) {
			for (int j = 0; j < g_ncols; j++)
				all[k].v[j] = strtoll(csv[i].rows[r][j], NULL, 10);
			all[k].fields = csv[i].rows[r];
			all[k].measured = st >= 0 ? !strcmp(all[k].fields[st], "ok")
					  : fd >= 0 && strcmp(all[k].fields[fd], "-");
			all[k].order = k;
		}
	qsort(all, total, sizeof(*all), cmp_row);
	struct merged m = {&csv[0], all, total, rows, dups};
	if ((rc = kj_write_atomic(out, write_merged, &m)) != 0)
		snprintf(err, errlen, "%s: not written (the reason is above)", out);
out:
	for (int i = 0; i < nread && i < n; i++)
		kj_sweep_csv_free(&csv[i]);
	free(csv);
	free(all);
	return rc;
}
