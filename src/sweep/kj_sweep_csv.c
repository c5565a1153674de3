/* Sweep CSVs: the header the sweep writes and a strict reader for resume, merge and fit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_sweep.h"

static const char *const result_cols[] = {"F_dur(us)", "B_dur(us)", "F_energy(uJ)",
					  "F_energy_unc(uJ)", "B_energy(uJ)", "B_energy_unc(uJ)",
					  "status", "impl", "algbw(GB/s)", "busbw(GB/s)"};
#define NRESULT ((int)(sizeof(result_cols) / sizeof(result_cols[0])))

void kj_sweep_csv_header(const struct kj_sweep_op *op, int energy, char *buf, size_t len)
{
	size_t w = 0;
	buf[0] = '\0';
	for (int i = 0; i < op->ncolumns && w < len; i++)
		w += snprintf(buf + w, len - w, "%s,", op->columns[i]);
	if (w < len)
		snprintf(buf + w, len - w, "F_dur(us),B_dur(us),%sstatus%s%s",
			 energy ? "F_energy(uJ),F_energy_unc(uJ),B_energy(uJ),B_energy_unc(uJ)," : "",
			 op->impl_column ? ",impl" : "", op->collective ? ",algbw(GB/s),busbw(GB/s)" : "");
}

int kj_sweep_impl_ok(const char *s)
{
	static const char ok[] = "0123456789.+-_/abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	return *s && strspn(s, ok) == strlen(s);
}

void kj_sweep_impl_family(const char *impl, char *out, size_t len)
{
	size_t n = strcspn(impl, "./");
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), impl);
}

void kj_sweep_csv_free(struct kj_sweep_csv *csv)
{
	for (int i = 0; i < csv->ncols; i++)
		free(csv->cols[i]);
	for (int64_t r = 0; r < csv->nrows; r++) {
		for (int j = 0; j < csv->ncols; j++)
			free(csv->rows[r][j]);
		free(csv->rows[r]);
	}
	free(csv->rows);
	free(csv->lines);
	memset(csv, 0, sizeof(*csv));
}

int kj_sweep_csv_col(const struct kj_sweep_csv *csv, const char *name)
{
	for (int i = 0; i < csv->ncols; i++)
		if (!strcmp(csv->cols[i], name))
			return i;
	return -1;
}

/* split line (modified in place) at commas into at most cap fields */
static int split(char *line, char **f, int cap)
{
	int n = 0;
	char *s = line;
	for (;;) {
		if (n == cap)
			return cap + 1;
		f[n++] = s;
		char *c = strchr(s, ',');
		if (!c)
			break;
		*c = '\0';
		s = c + 1;
	}
	return n;
}

int kj_sweep_is_number(const char *s)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	return *s && !*end && !errno && x == x && x - x == 0;
}

static int is_pos_int(const char *s)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	return *s >= '0' && *s <= '9' && !*end && !errno && x >= 1;
}

/* the header: a known operator's shape columns, then known result columns, each at most once */
static int check_header(const char *path, char **f, int n, const char *kernel,
			const struct kj_sweep_op **opp, char *err, size_t errlen)
{
	const struct kj_sweep_op *op = NULL;
	if (kernel) {
		op = kj_sweep_op_find(kernel);
		if (!op) {
			snprintf(err, errlen, "%s: unknown operator '%s' in the file name", path, kernel);
			return KJ_EINVAL;
		}
	} else {
		for (int i = 0; i < kj_sweep_op_count() && !op; i++) {
			const struct kj_sweep_op *o = kj_sweep_op_at(i);
			int ok = n >= o->ncolumns;
			for (int j = 0; ok && j < o->ncolumns; j++)
				ok = !strcmp(f[j], o->columns[j]);
			if (ok)
				op = o;
		}
	}
	for (int j = 0; op && j < op->ncolumns; j++)
		if (j >= n || strcmp(f[j], op->columns[j])) {
			snprintf(err, errlen, "%s:1: column %d is '%s', but %s's shape column %d is '%s'",
				 path, j + 1, j < n ? f[j] : "(none)", op->name, j + 1, op->columns[j]);
			return KJ_EINVAL;
		}
	if (!op) {
		snprintf(err, errlen, "%s:1: the header's first columns are no operator's shape columns", path);
		return KJ_EINVAL;
	}
	for (int j = op->ncolumns; j < n; j++) {
		int known = 0;
		for (int k = 0; k < NRESULT; k++)
			known |= !strcmp(f[j], result_cols[k]);
		for (int k = op->ncolumns; k < j; k++)
			if (!strcmp(f[j], f[k])) {
				snprintf(err, errlen, "%s:1: column '%s' appears twice", path, f[j]);
				return KJ_EINVAL;
			}
		if (!known) {
			snprintf(err, errlen, "%s:1: foreign column '%s' (a sweep CSV has %s's shape "
				 "columns, F_dur(us), B_dur(us), F_energy(uJ), F_energy_unc(uJ), "
				 "B_energy(uJ), B_energy_unc(uJ), status, impl, algbw(GB/s), busbw(GB/s))", path, f[j], op->name);
			return KJ_EINVAL;
		}
	}
	*opp = op;
	return 0;
}

int kj_sweep_csv_read(const char *path, const char *kernel, struct kj_sweep_csv *csv, char *err,
		      size_t errlen)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int64_t lineno = 0, rows_cap = 0;
	char *f[KJ_SWEEP_MAX_CSV_COLS + 1];
	const struct kj_sweep_op *op = NULL;
	int rc = 0, st = -1, im = -1;

	memset(csv, 0, sizeof(*csv));
	if (!fp) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KJ_EIO;
	}
	while ((len = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (lineno > 1 && len == 0)
			continue;
		int n = split(line, f, KJ_SWEEP_MAX_CSV_COLS);
		if (lineno == 1) {
			if (n > KJ_SWEEP_MAX_CSV_COLS) {
				snprintf(err, errlen, "%s:1: more than %d columns", path, KJ_SWEEP_MAX_CSV_COLS);
				rc = KJ_EINVAL;
				break;
			}
			if ((rc = check_header(path, f, n, kernel, &op, err, errlen)))
				break;
			for (int j = 0; j < n; j++)
				csv->cols[j] = strdup(f[j]);
			csv->ncols = n;
			st = kj_sweep_csv_col(csv, "status");
			im = kj_sweep_csv_col(csv, "impl");
			continue;
		}
		if (n != csv->ncols) {
			snprintf(err, errlen, "%s:%lld: %d fields, the header has %d", path,
				 (long long)lineno, n > KJ_SWEEP_MAX_CSV_COLS ? n - 1 : n, csv->ncols);
			rc = KJ_EINVAL;
			break;
		}
		for (int j = 0; j < n && !rc; j++) {
			int ok = j < op->ncolumns ? is_pos_int(f[j])
				 : j == st       ? (!strcmp(f[j], "ok") || !strcmp(f[j], "oom") ||
						    !strcmp(f[j], "unsupported") || !strcmp(f[j], "error"))
				 : j == im	 ? kj_sweep_impl_ok(f[j])
						 : (!strcmp(f[j], "-") || kj_sweep_is_number(f[j]));
			if (!ok) {
				snprintf(err, errlen, "%s:%lld: column '%s': '%s' is not %s", path,
					 (long long)lineno, csv->cols[j], f[j],
					 j < op->ncolumns ? "a positive integer"
					 : j == st	  ? "ok, oom, unsupported or error"
					 : j == im	  ? "an implementation's name (letters, digits, '.', '+', '-', '_', '/') or '-'"
							  : "a finite number or '-'");
				rc = KJ_EINVAL;
			}
		}
		if (rc)
			break;
		if (csv->nrows == rows_cap) {
			rows_cap = rows_cap ? 2 * rows_cap : 256;
			char ***r = realloc(csv->rows, rows_cap * sizeof(*r));
			int64_t *l = realloc(csv->lines, rows_cap * sizeof(*l));
			if (r)
				csv->rows = r;
			if (l)
				csv->lines = l;
			if (!r || !l) {
				rc = KJ_ENOMEM;
				break;
			}
		}
		char **row = calloc(n, sizeof(*row));
		if (!row) {
			rc = KJ_ENOMEM;
			break;
		}
		for (int j = 0; j < n; j++)
			row[j] = strdup(f[j]);
		csv->lines[csv->nrows] = lineno;
		csv->rows[csv->nrows++] = row;
	}
	if (!rc && lineno == 0) {
		snprintf(err, errlen, "%s: empty file (no header)", path);
		rc = KJ_EINVAL;
	}
	if (rc == KJ_ENOMEM)
		snprintf(err, errlen, "%s: out of memory", path);
	free(line);
	fclose(fp);
	if (rc)
		kj_sweep_csv_free(csv);
	return rc;
}

void kj_sweep_gpu_tag(const char *name, char *out, size_t len)
{
	size_t w = 0;
	for (const char *s = name; *s && w + 1 < len; s++)
		if (*s != ' ' && *s != '/' && *s != '\\' && *s != '_' && (unsigned char)*s > 32)
			out[w++] = *s;
	out[w] = '\0';
	if (!w)
		snprintf(out, len, "GPU");
}
