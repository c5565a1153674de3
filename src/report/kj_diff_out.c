/* kjoule diff: the text and HTML forms of a diff object (kj_diff.c builds it). */
#include <math.h>
#include <string.h>

#include "kj_diff_out.h"
#include "kj_error.h"
#include "kj_html_internal.h"

/* a number or "-" (text form) */
static void tnum(FILE *f, const json_t *o, const char *k, const char *fmt, int width)
{
	double v;
	if (kj_html_jnum(o, k, &v))
		fprintf(f, fmt, width, v);
	else
		fprintf(f, "%*s", width, "-");
}

void kj_diff_print(const json_t *d, FILE *f)
{
	json_t *a = json_object_get(d, "a"), *b = json_object_get(d, "b"), *w = json_object_get(d, "warnings");
	fprintf(f, "kjoule diff\n  A: %s (%s, %lld measured iterations)\n  B: %s (%s, %lld measured iterations)\n",
		kj_html_jstr(a, "path"), kj_html_jstr(a, "gpu") ? kj_html_jstr(a, "gpu") : "GPU not recorded",
		(long long)json_integer_value(json_object_get(a, "iterations_measured")), kj_html_jstr(b, "path"),
		kj_html_jstr(b, "gpu") ? kj_html_jstr(b, "gpu") : "GPU not recorded",
		(long long)json_integer_value(json_object_get(b, "iterations_measured")));
	for (size_t i = 0; i < json_array_size(w); i++)
		fprintf(f, "  warning: %s\n", json_string_value(json_array_get(w, i)));
	fprintf(f, "\nper iteration            A mean       A sd       B mean       B sd      delta   delta %%\n");
	json_t *t = json_object_get(d, "totals");
	for (size_t i = 0; i < json_array_size(t); i++) {
		json_t *m = json_array_get(t, i);
		fprintf(f, "  %-18s", kj_html_jstr(m, "metric"));
		tnum(f, m, "a_mean", " %*.3f", 12);
		tnum(f, m, "a_sd", " %*.3f", 10);
		tnum(f, m, "b_mean", " %*.3f", 12);
		tnum(f, m, "b_sd", " %*.3f", 10);
		tnum(f, m, "delta", " %*.3f", 10);
		tnum(f, m, "delta_pct", " %*.1f", 9);
		fprintf(f, "%s\n", json_is_true(json_object_get(m, "significant")) ? "  CHANGED" : "");
	}
	json_t *k = json_object_get(d, "kernels");
	fprintf(f, "\nkernels: %lld changed beyond their spread, %lld only in A, %lld only in B (of %zu)\n",
		(long long)json_integer_value(json_object_get(d, "kernels_changed")),
		(long long)json_integer_value(json_object_get(d, "kernels_only_a")),
		(long long)json_integer_value(json_object_get(d, "kernels_only_b")), json_array_size(k));
	fprintf(f, "  %-9s %8s %8s %11s %11s %10s %8s  %s\n", "", "A n/it", "B n/it", "A us/it", "B us/it",
		"delta us", "delta %", "kernel");
	size_t shown = 0;
	for (size_t i = 0; i < json_array_size(k) && shown < 25; i++) {
		json_t *o = json_array_get(k, i);
		const char *m = kj_html_jstr(o, "match");
		int sig = json_is_true(json_object_get(o, "significant"));
		if (!sig && strncmp(m, "only", 4) && shown >= 10)
			continue;
		shown++;
		fprintf(f, "  %-9s", sig ? "CHANGED" : !strcmp(m, "only_a") ? "only A" : !strcmp(m, "only_b") ? "only B" : "");
		tnum(f, o, "a_count", " %*.1f", 8);
		tnum(f, o, "b_count", " %*.1f", 8);
		tnum(f, o, "a_us", " %*.2f", 11);
		tnum(f, o, "b_us", " %*.2f", 11);
		tnum(f, o, "delta_us", " %*.2f", 10);
		tnum(f, o, "delta_pct", " %*.1f", 8);
		const char *nm = kj_html_jstr(o, "name");
		fprintf(f, "  %.90s%s\n", nm, strlen(nm) > 90 ? "..." : "");
	}
	fprintf(f, "\nA change is flagged when |delta| > %g standard errors of the two runs' iteration-to-iteration"
		   " spread, > %g %% of A and > %g us; --json lists every kernel.\n",
		json_number_value(json_object_get(json_object_get(d, "thresholds"), "sigma")),
		100 * json_number_value(json_object_get(json_object_get(d, "thresholds"), "min_rel")),
		json_number_value(json_object_get(json_object_get(d, "thresholds"), "min_abs_us")));
}

int kj_diff_html(const json_t *d, FILE *f)
{
	json_t *a = json_object_get(d, "a"), *b = json_object_get(d, "b"), *w = json_object_get(d, "warnings");
	json_t *t = json_object_get(d, "totals"), *k = json_object_get(d, "kernels");
	kj_html_page_begin(f, "kjoule diff");
	fputs("<h1>kjoule diff</h1>\n<table class=\"kj-table\" id=\"runs\"><thead><tr><th></th><th class=\"l\">run</th>"
	      "<th class=\"l\">GPU</th><th>measured iterations</th></tr></thead><tbody>\n", f);
	for (int i = 0; i < 2; i++) {
		json_t *r = i ? b : a;
		fprintf(f, "<tr><td>%s</td><td class=\"l\">", i ? "B" : "A");
		kj_html_esc(f, kj_html_jstr(r, "path"));
		fputs("</td><td class=\"l\">", f);
		kj_html_esc(f, kj_html_jstr(r, "gpu") ? kj_html_jstr(r, "gpu") : "not recorded");
		fprintf(f, "</td><td>%lld</td></tr>\n", (long long)json_integer_value(json_object_get(r, "iterations_measured")));
	}
	fputs("</tbody></table>\n", f);
	for (size_t i = 0; i < json_array_size(w); i++) {
		fputs("<div class=\"missing\"><b>Note:</b> ", f);
		kj_html_esc(f, json_string_value(json_array_get(w, i)));
		fputs("</div>\n", f);
	}
	/* totals as bars A vs B */
	struct kj_hbar_row rows[8];
	size_t nr = 0;
	static const char *sn[] = {"A", "B"};
	static const char *sc[] = {"#9aa5b8", "#2f5d9e"};
	for (size_t i = 0; i < json_array_size(t) && nr < 8; i++) {
		json_t *m = json_array_get(t, i);
		double va, vb;
		if (strcmp(kj_html_jstr(m, "unit"), "us"))
			continue;
		rows[nr].label = kj_html_jstr(m, "metric");
		rows[nr].v[0] = kj_html_jnum(m, "a_mean", &va) ? va : -1;
		rows[nr].v[1] = kj_html_jnum(m, "b_mean", &vb) ? vb : -1;
		nr++;
	}
	kj_chart_hbars(f, "chart-diff-totals", "Per iteration, A against B (µs, means over measured iterations)", "µs",
		       sn, sc, 2, rows, nr);
	kj_html_source(f, "each run's kernel, memcpy, nvtx_range tables", "kjoule diff A.kjdb B.kjdb --json  (totals)");
	fputs("<table class=\"kj-table\" id=\"totals\"><thead><tr><th class=\"l\">per iteration</th><th>A mean</th><th>A sd</th>"
	      "<th>B mean</th><th>B sd</th><th>delta</th><th>delta %</th><th class=\"l\">change?</th></tr></thead><tbody>\n", f);
	for (size_t i = 0; i < json_array_size(t); i++) {
		json_t *m = json_array_get(t, i);
		fputs("<tr><td class=\"l\">", f);
		kj_html_esc(f, kj_html_jstr(m, "metric"));
		fputs("</td>", f);
		static const struct kj_html_col totals_cols[] = {{"a_mean", 3}, {"a_sd", 3},
			{"b_mean", 3}, {"b_sd", 3}, {"delta", 3}, {"delta_pct", 1}};
		kj_html_num_cells(f, m, totals_cols, KJ_HTML_NCOLS(totals_cols), -1e300);
		fprintf(f, "<td class=\"l\">%s</td></tr>\n", json_is_true(json_object_get(m, "significant")) ? "<b>changed</b>" : "within noise");
	}
	fputs("</tbody></table>\n", f);
	fprintf(f, "<h2>Kernels (%zu rows: %lld changed, %lld only in A, %lld only in B)</h2>\n", json_array_size(k),
		(long long)json_integer_value(json_object_get(d, "kernels_changed")),
		(long long)json_integer_value(json_object_get(d, "kernels_only_a")),
		(long long)json_integer_value(json_object_get(d, "kernels_only_b")));
	fputs("<table class=\"kj-table sortable\" id=\"diff-kernels\"><thead><tr><th class=\"l\">change</th><th class=\"l\">kernel</th>"
	      "<th class=\"l\">matched by</th><th>A n/it</th><th>B n/it</th><th>A µs/it</th><th>A sd</th><th>B µs/it</th><th>B sd</th>"
	      "<th>delta µs</th><th>delta %</th><th>delta mJ/it</th></tr></thead><tbody>\n", f);
	size_t lim = json_array_size(k) < 500 ? json_array_size(k) : 500;
	for (size_t i = 0; i < lim; i++) {
		json_t *o = json_array_get(k, i);
		const char *m = kj_html_jstr(o, "match");
		fprintf(f, "<tr><td class=\"l\">%s</td>",
			json_is_true(json_object_get(o, "significant")) ? "<b>changed</b>"
			: !strcmp(m, "only_a") ? "only in A" : !strcmp(m, "only_b") ? "only in B" : "");
		kj_html_name_cell(f, kj_html_jstr(o, "key"));
		fputs("<td class=\"l\">", f);
		kj_html_esc(f, m);
		fputs("</td>", f);
		static const struct kj_html_col kernel_cols[] = {{"a_count", 1}, {"b_count", 1},
			{"a_us", 2}, {"a_sd_us", 2}, {"b_us", 2}, {"b_sd_us", 2}, {"delta_us", 2},
			{"delta_pct", 1}, {"delta_energy_mj", 3}};
		kj_html_num_cells(f, o, kernel_cols, KJ_HTML_NCOLS(kernel_cols), -1e300);
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	if (json_array_size(k) > lim)
		fprintf(f, "<p>%zu more rows, none changed: <code>kjoule diff A B --json</code> lists them.</p>\n",
			json_array_size(k) - lim);
	kj_html_source(f, "kernel, unique_kernel (name, grid, block), replay_energy of each run",
		       "kjoule diff A.kjdb B.kjdb --json  (kernels)");
	kj_html_page_end(f);
	return ferror(f) ? KJ_EIO : 0;
}
