/* kjoule timeline --format ascii: one iteration or window as rows of characters per lane. */
#include "kj_timeline_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_store_e_timeline.h"

/* ---- ascii ---- */

struct cpu_cov {
	int64_t tids[8];
	int nt;
	double *cov; /* per thread, bucket and kind */
	int64_t lo, hi;
	int width;
	double bucket;
};

/* one API call's time added to its thread's buckets (ctx), by kind: 0 synchronising, 1
 * launching, 2 other; threads past the eighth are left out */
static int cpu_cov_add(void *ctx, const struct kj_store_api_call *c)
{
	struct cpu_cov *v = ctx;
	int64_t lo = v->lo, hi = v->hi;
	int width = v->width;
	double bucket = v->bucket;
	int64_t tid = c->tid;
	const char *nm = c->name;
	int64_t s0 = c->start_ns, e0 = c->end_ns;
	int r, kind = nm && strstr(nm, "Synchronize") ? 0 : nm && strstr(nm, "Launch") ? 1 : 2;
	for (r = 0; r < v->nt && v->tids[r] != tid; r++)
		;
	if (r == v->nt) {
		if (v->nt == 8)
			return 0;
		v->tids[v->nt++] = tid;
	}
	int64_t a = s0 < lo ? lo : s0, b = e0 > hi ? hi : e0;
	if (b < a)
		return 0;
	long b0 = (long)((double)(a - lo) / bucket), b1 = (long)((double)(b - lo) / bucket);
	if (b1 >= width)
		b1 = width - 1;
	if (b0 >= width)
		b0 = width - 1;
	for (long k = b0; k <= b1; k++) {
		double bs = lo + k * bucket, be = bs + bucket;
		double ov = (b < be ? b : be) - (a > bs ? a : bs);
		v->cov[((size_t)r * (size_t)width + (size_t)k) * 3 + (size_t)kind] += ov > 0 ? ov : 1;
	}
	return 0;
}

/* One row per CPU thread that made API calls in [lo, hi]: 'Y' synchronising, 'L' launching,
 * 'A' any other CUDA call, '.' none (host code or nothing); at most 8 threads. */
static void ascii_cpu_rows(sqlite3 *db, FILE *f, int64_t lo, int64_t hi, int width, double bucket)
{
	struct cpu_cov v = {{0}, 0, NULL, lo, hi, width, bucket};
	double *cov = calloc((size_t)8 * (size_t)width * 3, sizeof(*cov));
	v.cov = cov;
	if (!cov || kj_store_e_api_spans_in(db, lo, hi, cpu_cov_add, &v)) {
		free(cov);
		return;
	}
	const int64_t *tids = v.tids;
	int nt = v.nt;
	for (int r = 0; r < nt; r++) {
		char label[32];
		snprintf(label, sizeof(label), "cpu %" PRId64, tids[r]);
		fprintf(f, "%-12s|", label);
		for (int k = 0; k < width; k++) {
			double *c = &cov[((size_t)r * (size_t)width + (size_t)k) * 3];
			int best = c[0] >= c[1] && c[0] >= c[2] ? 0 : c[1] >= c[2] ? 1 : 2;
			fputc(c[best] > 0 ? "YLA"[best] : '.', f);
		}
		fputs("|\n", f);
	}
	free(cov);
}

int timeline_ascii(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f,
			  const struct kj_acts *acts,
			  const unsigned char *sty, const struct kj_iters *it, long sel_iter,
			  int64_t t0, int64_t lo, int64_t hi)
{
	size_t *idx = NULL, n = 0, nl = 0;
	struct lane *lanes = NULL;
	int width = o->width > 0 ? o->width : 100;
	int rc = tl_pick(acts, it, sel_iter, &lo, &hi, &idx, &n, &lanes, &nl);
	if (rc)
		return rc;
	if (width < 10)
		width = 10;
	if (width > 2000)
		width = 2000;
	int64_t len = hi - lo > 0 ? hi - lo : 1;
	double bucket = (double)len / width;
	/* per lane and bucket: covered ns per style */
	size_t cells = (nl + 1) * (size_t)width;
	double *cov = calloc(cells * N_STYLES, sizeof(*cov));
	struct kj_ival *all = malloc((n ? n : 1) * sizeof(*all));
	if (!cov || !all) {
		free(cov);
		free(all);
		free(idx);
		free(lanes);
		return KJ_ENOMEM;
	}
	for (size_t q = 0; q < n; q++) {
		const struct kj_act *a = &acts->v[idx[q]];
		size_t l = tl_lane_find(lanes, nl, a);
		int64_t s = a->start_ns < lo ? lo : a->start_ns, e = a->end_ns > hi ? hi : a->end_ns;
		all[q] = (struct kj_ival){s, e};
		if (e <= s)
			continue;
		long b0 = (long)((double)(s - lo) / bucket), b1 = (long)((double)(e - lo) / bucket);
		if (b1 >= width)
			b1 = width - 1;
		for (long b = b0; b <= b1; b++) {
			double bs = lo + b * bucket, be = bs + bucket;
			double ov = (e < be ? e : be) - (s > bs ? s : bs);
			if (ov > 0)
				cov[((size_t)l * (size_t)width + (size_t)b) * N_STYLES + sty[idx[q]]] += ov;
		}
	}
	int64_t busy = kj_ival_union(all, n, lo, hi, NULL, NULL, NULL);
	if (sel_iter >= 0)
		fprintf(f, "iteration %ld of %s'%s' (%s)", sel_iter, it->whole_run ? "" : "region ",
			it->whole_run ? "whole run" : it->region,
			it->v[sel_iter].skipped ? "warm-up" : "measured");
	else
		fprintf(f, "window");
	fprintf(f, ": %.1f us .. %.1f us after the run's start, %.2f us per column\n",
		(double)(lo - t0) / 1e3, (double)(hi - t0) / 1e3, bucket / 1e3);
	fprintf(f, "%zu GPU activities, busy %.1f us of %.1f us (%.1f%%), idle %.1f us\n\n", n,
		(double)busy / 1e3, (double)len / 1e3, 100.0 * (double)busy / (double)len,
		(double)(len - busy) / 1e3);
	char *line = malloc((size_t)width + 1);
	if (!line) {
		free(cov);
		free(all);
		free(idx);
		free(lanes);
		return KJ_ENOMEM;
	}
	for (size_t l = 0; l < nl; l++) {
		for (int b = 0; b < width; b++) {
			double *cv = &cov[(l * (size_t)width + (size_t)b) * N_STYLES], tot = 0, best = 0;
			int bi = -1;
			for (size_t s = 0; s < N_STYLES; s++) {
				tot += cv[s];
				if (cv[s] > best) {
					best = cv[s];
					bi = (int)s;
				}
			}
			char ch = '.';
			if (bi >= 0) {
				ch = tl_styles[bi].ch;
				if (tot < 0.5 * bucket)
					ch = (char)(ch - 'A' + 'a'); /* mostly idle: lower case */
			}
			line[b] = ch;
		}
		line[width] = 0;
		char label[48];
		snprintf(label, sizeof(label), "gpu%" PRId64 " s%" PRId64, lanes[l].device,
			 lanes[l].stream);
		fprintf(f, "%-12s|%s|\n", label, line);
	}
	if (nl == 0)
		fprintf(f, "%-12s|%*s|\n", "(no GPU work)", width, "");
	ascii_cpu_rows(db, f, lo, hi, width, bucket);
	/* axis: a tick every 10 columns, labels in us from the window start */
	memset(line, '-', (size_t)width);
	for (int b = 0; b < width; b += 10)
		line[b] = '+';
	line[width] = 0;
	fprintf(f, "%-12s+%s+\n", "us", line);
	fprintf(f, "%-13s", "");
	for (int b = 0; b < width; b += 20) {
		char lab[32];
		int k = snprintf(lab, sizeof(lab), "%.1f", b * bucket / 1e3);
		fprintf(f, "%-20.*s", k, lab);
	}
	fputc('\n', f);
	fprintf(f, "\nlegend: ");
	for (size_t s = 0; s < N_STYLES; s++)
		if (strcmp(tl_styles[s].tier, "copy"))
			fprintf(f, "%c %s  ", tl_styles[s].ch, tl_styles[s].tier);
	fprintf(f, ". idle  (lower case: busy under half the column)\n"
		   "        cpu rows: Y synchronising, L launching, A other CUDA call, . host code\n");
	free(line);
	free(cov);
	free(all);
	free(idx);
	free(lanes);
	return 0;
}

