/* kjoule report: the energy section (measured per iteration against predicted, split by tier
 * and idle) and the power trace with the iterations marked. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_compare_out_internal.h"
#include "kj_error.h"
#include "kj_html.h"
#include "kj_html_internal.h"
#include "kj_store_e_power.h"

static const char *const tier_colors[] = {"#2f5d9e", "#e08a2c", "#3b9e5a", "#8e44ad", "#c0392b",
					  "#16a085", "#7f8c8d", "#d4ac0d", "#5d6d7e", "#a04000"};

/* measured energy per iteration (dots with their uncertainty) and the predicted mean */
static void energy_iters(struct kj_html_ctx *x, double pred_j, int have_pred)
{
	FILE *f = x->f;
	const struct kj_compare *c = x->c;
	double W = 1100, H = 300, x0 = 70, y0 = 40, pw = W - x0 - 20, ph = 220, top = 0;
	size_t n = c->it.n > 2000 ? 2000 : c->it.n;
	/* the scale follows the measured iterations; a warm-up above it is clipped, marked ^ */
	for (size_t i = 0; i < n; i++)
		if (c->iv[i].energy_ok && !c->iv[i].skipped)
			top = fmax(top, (c->iv[i].energy_measured_mj + c->iv[i].energy_unc_mj) / 1000);
	if (have_pred)
		top = fmax(top, pred_j);
	if (!(top > 0))
		top = 1;
	double step = kj_chart_tick(top, 5);
	top = ceil(top / step) * step;
	kj_chart_begin(f, "chart-energy-iter", "Energy per iteration (J): measured with its uncertainty"
		       " (NVML counter edges); dashed: predicted mean; ^: warm-up above the scale", W, H);
	kj_chart_y_grid(f, x0, pw, y0, ph, top, step);
	kj_chart_y_unit(f, y0, ph, "J");
	double bw = pw / (double)(n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		const struct cmp_iter *it = &c->iv[i];
		if (!it->energy_ok)
			continue;
		double e = it->energy_measured_mj / 1000, u = it->energy_unc_mj / 1000, cx = x0 + bw * ((double)i + 0.5);
		double ya = y0 + ph - fmin(e + u, top) / top * ph, yb = y0 + ph - fmin(fmax(e - u, 0), top) / top * ph;
		if (e > top)
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"9\">^</text>", cx, y0 - 2);
		fprintf(f, "<g class=\"hov\"%s><title>#%zu%s: %.3f ± %.3f J</title>"
			   "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#9aa5b8\"/>"
			   "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#c0392b\"/></g>\n",
			it->skipped ? " opacity=\"0.4\"" : "", i, it->skipped ? " (warm-up)" : "", e, u, cx, cx,
			ya, yb, cx, y0 + ph - fmin(e, top) / top * ph);
	}
	if (have_pred) {
		double y = y0 + ph - pred_j / top * ph;
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#2f5d9e\""
			   " stroke-dasharray=\"6 4\"><title>predicted %.3f J</title></line>\n",
			x0, x0 + pw, y, y, pred_j);
	}
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
		   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">iteration (0 … %zu)</text></svg>\n",
		x0, x0 + pw, y0 + ph, y0 + ph, x0 + pw / 2, y0 + ph + 20, n ? n - 1 : 0);
}

/* What compare says of other processes on the GPU (or that they could not be seen, or that the
 * power is the whole card's under MIG/MPS), as a note above the energy charts. */
static void shared_gpu_note(struct kj_html_ctx *x)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		return;
	cmp_shared_print(x->c, m);
	fclose(m);
	if (len) {
		fputs("<div class=\"missing\"><b>Other processes on the GPU:</b><pre>", x->f);
		kj_html_esc(x->f, text);
		fputs("</pre></div>\n", x->f);
		kj_html_source(x->f, "gpu_process_sample, foreign_activity (kjoule run's watch of the GPU's processes)",
			       "kjoule compare RUN.kjdb");
	}
	free(text);
}

void kj_html_energy(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	const json_t *j = x->j;
	double em = 0, ep = 0, ei = 0, ek = 0, ipw = 0, eu = 0, ee = 0;
	int hem = kj_html_jnum(j, "energy_measured_j", &em), hep = kj_html_jnum(j, "energy_predicted_j", &ep);
	int hei = kj_html_jnum(j, "energy_idle_j", &ei), hek = kj_html_jnum(j, "energy_kernels_j", &ek);
	int hipw = kj_html_jnum(j, "idle_power_w", &ipw), heu = kj_html_jnum(j, "energy_measured_mean_unc_j", &eu);
	int hee = kj_html_jnum(j, "energy_error_pct", &ee);
	const char *basis = json_string_value(json_object_get(j, "idle_power_basis"));
	char cmd[1200];
	fputs("<section id=\"energy\"><h2>Energy per iteration: measured against predicted</h2>\n", f);
	shared_gpu_note(x);
	if (hem) {
		energy_iters(x, ep, hep);
		snprintf(cmd, sizeof(cmd), "kjoule compare %s -o DIR  (iterations.csv: energy_measured_j)", x->run);
		kj_html_source(f, "power_sample (energy counter, power readings) over each iteration's window", cmd);
	} else if (x->c->n_power_samples > 0) {
		kj_html_missing(f, "measured energy: the power samples do not cover the iterations' windows", NULL);
	} else {
		snprintf(cmd, sizeof(cmd), "kjoule run -o RUN.kjdb -- PROGRAM  (samples GPU power through NVML)");
		kj_html_missing(f, "measured energy per iteration (the run has no power samples)", cmd);
	}
	/* the split: measured bar against predicted stacked by tier + idle */
	json_t *tiers = json_object_get(j, "tiers");
	struct kj_stack_part parts[16];
	size_t np = 0, tix[16];
	parts[np++] = (struct kj_stack_part){"measured", "#c0392b"};
	for (size_t t = 0; t < json_array_size(tiers) && np < 14; t++) {
		double e;
		json_t *o = json_array_get(tiers, t);
		if (!kj_html_jnum(o, "energy_j", &e))
			continue;
		tix[np] = t;
		parts[np] = (struct kj_stack_part){json_string_value(json_object_get(o, "tier")),
						   tier_colors[(np - 1) % 10]};
		np++;
	}
	size_t idle_p = np;
	parts[np++] = (struct kj_stack_part){"idle (power × time no kernel runs)", "#f0a8a8"};
	if (hek) {
		double v[2 * 16] = {0};
		const char *lab[2] = {"measured", "predicted"};
		v[0] = hem ? em : 0;
		for (size_t p = 1; p < idle_p; p++)
			kj_html_jnum(json_array_get(tiers, tix[p]), "energy_j", &v[np + p]);
		v[np + idle_p] = hei ? ei : 0;
		kj_chart_stacked(f, "chart-energy-split", "Energy per iteration (J): measured, and predicted = Σ kernels by tier + idle",
				 "J", 820, parts, np, v, lab, NULL, 2);
		snprintf(cmd, sizeof(cmd), "kjoule compare %s --json  (tiers[].energy_j, energy_idle_j)", x->run);
		kj_html_source(f, "replay_energy × launches per iteration; idle power × (wall − kernel busy)", cmd);
	}
	fputs("<table class=\"kj-table\" id=\"energy-table\"><thead><tr><th class=\"l\">per iteration</th><th>J</th></tr></thead><tbody>\n", f);
	const char *mbasis = json_string_value(json_object_get(j, "energy_measured_basis"));
	double ew = 0, lout = 0;
	int loop = mbasis && !strcmp(mbasis, "loop") && kj_html_jnum(j, "energy_measured_windows_j", &ew) &&
		   kj_html_jnum(j, "energy_loop_outside_pct", &lout);
	if (loop)
		fprintf(f, "<tr id=\"energy-measured-loop\"><td class=\"l\">measured over the loop as one window: the"
			   " energy counter between its first and last update inside the iterations' span, less idle"
			   " power over the %.1f %% between iterations (± uncertainty of the mean; each iteration's own"
			   " window: %.3f J)</td><td>",
			lout, ew);
	else
		fputs("<tr><td class=\"l\">measured (± uncertainty of the mean)</td><td>", f);
	kj_html_fig(f, em, hem, 3, NULL);
	if (hem && heu)
		fprintf(f, " ± %.3f", eu);
	double ekw = 0, ekc = 0, ccov = 0, crat = 0;
	int hekc = kj_html_jnum(j, "energy_kernels_cold_j", &ekc) && kj_html_jnum(j, "energy_kernels_warm_j", &ekw) &&
		   kj_html_jnum(j, "energy_cold_time_coverage", &ccov) && kj_html_jnum(j, "energy_cold_ratio", &crat);
	fprintf(f, "</td></tr>\n<tr><td class=\"l\">kernels: Σ count × replayed energy per launch%s</td><td>",
		hekc ? " (each kernel at the mean of its warm- and cold-L2 energies)" : "");
	kj_html_fig(f, ek, hek, 3, NULL);
	if (hekc) {
		fputs("</td></tr>\n<tr id=\"energy-kernels-warm\"><td class=\"l\">&nbsp;&nbsp;the same, warm L2 (same buffers)</td><td>", f);
		kj_html_fig(f, ekw, 1, 3, NULL);
		fprintf(f, "</td></tr>\n<tr id=\"energy-kernels-cold\"><td class=\"l\">&nbsp;&nbsp;the same, cold L2 (flushed;"
			   " measured for kernels holding %.1f %% of kernel time, cold/warm %.3f)</td><td>", 100 * ccov, crat);
		kj_html_fig(f, ekc, 1, 3, NULL);
	}
	fputs("</td></tr>\n<tr><td class=\"l\">idle: ", f);
	if (hipw)
		fprintf(f, "%.1f W (%s idle) × time no kernel runs", ipw, basis ? basis : "?");
	else
		fputs("idle power × time no kernel runs", f);
	fputs("</td><td>", f);
	kj_html_fig(f, ei, hei, 3, NULL);
	fputs("</td></tr>\n<tr><td class=\"l\">predicted = kernels + idle</td><td>", f);
	kj_html_fig(f, ep, hep, 3, NULL);
	double pu = 0; /* the parts' own uncertainty, where the parts predict */
	const char *pm = json_string_value(json_object_get(j, "energy_prediction_method"));
	if (hep && kj_html_jnum(j, "energy_kernels_predicted_unc_j", &pu) && pm && strcmp(pm, "iteration_replay"))
		fprintf(f, " <span id=\"energy-parts-unc\" title=\"the replayed energies' own uncertainty\">± %.3f</span>", pu);
	fputs("</td></tr>\n<tr><td class=\"l\">error of the prediction</td><td>", f);
	kj_html_fig(f, ee, hee, 1, "%");
	fputs("</td></tr>\n", f);
	/* the second prediction: the kept iteration replayed as one graph, and what it ran on */
	double es = 0, ese = 0;
	int hes = kj_html_jnum(j, "energy_predicted_sequence_j", &es);
	int hese = kj_html_jnum(j, "energy_error_sequence_pct", &ese);
	const char *smode = json_string_value(json_object_get(j, "energy_sequence_mode"));
	const char *sdata = json_string_value(json_object_get(j, "energy_sequence_data"));
	double pace = 0;
	int paced = kj_html_jnum(j, "energy_sequence_pace_us", &pace);
	char how[160] = "+ idle over the rest of the wall";
	if (paced)
		snprintf(how, sizeof(how), "paced as the program ran it (one launch every %.1f µs), idle between"
			 " iterations taken off", pace);
	if (hes) {
		fprintf(f, "<tr id=\"energy-sequence\"><td class=\"l\">the iteration replayed as one graph (%s"
			   " replay) %s%s%s%s</td><td>",
			smode ? smode : "?", how, sdata ? ", on " : "", sdata ? sdata : "", sdata ? " data" : "");
		kj_html_fig(f, es, 1, 3, NULL);
		fputs("</td></tr>\n<tr><td class=\"l\">its error</td><td>", f);
		if (sdata && (!strncmp(sdata, "smallint", 8) || !strncmp(sdata, "zero", 4)))
			fputs("<span class=\"na\">not judged: replayed on fallback data (trace with"
			      " --snapshot-graphs)</span>", f);
		else
			kj_html_fig(f, ese, hese, 1, "%");
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	if (!hek) {
		snprintf(cmd, sizeof(cmd), "kjoule replay %s --energy", x->run);
		kj_html_missing(f, "energy per kernel launch (the kernels' part of the prediction)", cmd);
	}
	if (!hipw) {
		snprintf(cmd, sizeof(cmd), "kjoule power --idle --db %s", x->run);
		kj_html_missing(f, "idle power (the idle part of the prediction)", cmd);
	}
	fputs("</section>\n", f);
}

struct psample {
	int64_t t_ns, dev;
	double w;
};

/* one panel of the power trace over [lo, hi): iterations shaded, samples as a line per device
 * (min and max per pixel column when there are more samples than columns) */
static void power_panel(struct kj_html_ctx *x, const char *id, const char *title,
			const struct psample *s, size_t n, int64_t lo, int64_t hi, double top)
{
	FILE *f = x->f;
	const struct kj_compare *c = x->c;
	double W = 1100, H = 280, x0 = 70, y0 = 40, pw = W - x0 - 20, ph = 200;
	double span = (double)(hi - lo > 0 ? hi - lo : 1);
	double step = kj_chart_tick(top, 5);
	top = ceil(top / step) * step;
	kj_chart_begin(f, id, title, W, H);
	static const char *ln[] = {"measured iteration", "warm-up", "kept iteration", "GPU power"};
	static const char *lc[] = {"#cfe0f5", "#f7d9b0", "#7fc99a", "#1d2330"};
	double lx = 500;
	for (int i = 0; i < 4; i++) {
		fprintf(f, "<rect x=\"%.0f\" y=\"22\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.0f\" y=\"31\">%s</text>\n",
			lx, lc[i], lx + 14, ln[i]);
		lx += 30 + 6.2 * (double)strlen(ln[i]);
	}
	for (size_t i = 0; i < c->it.n; i++) {
		const struct cmp_iter *it = &c->iv[i];
		if (it->end_ns < lo || it->start_ns > hi)
			continue;
		double a = x0 + (double)(it->start_ns - lo) / span * pw, b = x0 + (double)(it->end_ns - lo) / span * pw;
		a = fmax(a, x0);
		b = fmin(b, x0 + pw);
		fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>iteration #%zu%s</title></rect>\n",
			a, y0, fmax(b - a, 0.4), ph,
			(long)i == x->kept_iter ? lc[2] : it->skipped ? lc[1] : lc[0], i,
			(long)i == x->kept_iter ? " (kept whole for replay)" : it->skipped ? " (warm-up)" : "");
	}
	kj_chart_y_grid(f, x0, pw, y0, ph, top, step);
	double ts = kj_chart_tick(span / 1e9, 8);
	for (double t = 0; t <= span / 1e9 * 1.0001; t += ts) {
		double xx = x0 + t * 1e9 / span * pw;
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", xx, y0 + ph + 14, t);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">s after %.3f s of the run's clock</text>\n",
		x0 + pw / 2, y0 + ph + 30, (double)lo / 1e9);
	kj_chart_y_unit(f, y0, ph, "W");
	/* one polyline per device; columns keep their min and max */
	for (size_t i = 0; i < n;) {
		int64_t dev = s[i].dev;
		fputs("<polyline fill=\"none\" stroke=\"#1d2330\" stroke-width=\"1\" points=\"", f);
		long col = -1;
		double mn = 0, mx = 0;
		size_t pts = 0;
		for (; i < n && s[i].dev == dev; i++) {
			if (s[i].t_ns < lo || s[i].t_ns > hi)
				continue;
			long cx = (long)((double)(s[i].t_ns - lo) / span * pw);
			if (cx != col) {
				if (col >= 0) {
					fprintf(f, "%.1f,%.1f %.1f,%.1f ", x0 + (double)col, y0 + ph - mx / top * ph,
						x0 + (double)col, y0 + ph - mn / top * ph);
					pts += 2;
				}
				col = cx;
				mn = mx = s[i].w;
			}
			mn = fmin(mn, s[i].w);
			mx = fmax(mx, s[i].w);
		}
		if (col >= 0)
			fprintf(f, "%.1f,%.1f %.1f,%.1f", x0 + (double)col, y0 + ph - mx / top * ph, x0 + (double)col,
				y0 + ph - mn / top * ph);
		fprintf(f, "\"><title>GPU %lld power (W)</title></polyline>\n", (long long)dev);
		(void)pts;
	}
	fputs("</svg>\n", f);
}

struct psample_vec {
	struct psample *s;
	size_t n, cap;
	double top;
};

/* one stored reading kept (in watts) when it is finite and not negative */
static int psample_add(void *ctx, const struct kj_store_power_point *p)
{
	struct psample_vec *v = ctx;
	if (v->n == v->cap) {
		struct psample *ns = realloc(v->s, (v->cap = v->cap ? v->cap * 2 : 4096) * sizeof(*v->s));
		if (!ns)
			return KJ_ENOMEM;
		v->s = ns;
	}
	v->s[v->n] = (struct psample){p->t_ns, p->device_id, p->power_mw / 1000};
	if (isfinite(v->s[v->n].w) && v->s[v->n].w >= 0) {
		v->top = fmax(v->top, v->s[v->n].w);
		v->n++;
	}
	return 0;
}

int kj_html_power(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	const struct kj_compare *c = x->c;
	struct psample_vec v = {NULL, 0, 0, 0};
	char cmd[1200];
	int rc = 0;
	fputs("<section id=\"power\"><h2>GPU power over the run</h2>\n", f);
	rc = kj_store_e_power_points(x->db, psample_add, &v);
	struct psample *s = v.s;
	size_t n = v.n;
	double top = v.top;
	if (rc)
		goto out;
	if (!n) {
		kj_html_missing(f, "power samples (the run was traced without NVML power sampling)",
				"kjoule run -o RUN.kjdb -- PROGRAM  on a machine where NVML (libnvidia-ml) loads");
		goto out;
	}
	int64_t lo = INT64_MAX, hi = INT64_MIN, ilo = INT64_MAX, ihi = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		lo = s[i].t_ns < lo ? s[i].t_ns : lo;
		hi = s[i].t_ns > hi ? s[i].t_ns : hi;
	}
	for (size_t i = 0; i < c->it.n; i++) {
		if (c->iv[i].skipped)
			continue;
		ilo = c->iv[i].start_ns < ilo ? c->iv[i].start_ns : ilo;
		ihi = c->iv[i].end_ns > ihi ? c->iv[i].end_ns : ihi;
	}
	if (top <= 0)
		top = 1;
	power_panel(x, "chart-power-run", "Power over the whole run (W), iterations shaded", s, n, lo, hi, top);
	if (c->it.n && !c->it.whole_run && ihi > ilo) {
		int64_t pad = (ihi - ilo) / 20 + 1;
		power_panel(x, "chart-power-iters", "Power during the measured iterations (W)", s, n, ilo - pad, ihi + pad, top);
	}
	snprintf(cmd, sizeof(cmd), "kjoule timeline %s --format chrome  (power counter track)", x->run);
	kj_html_source(f, "power_sample (NVML power readings, every sample; min/max per pixel column)", cmd);
out:
	fputs("</section>\n", f);
	free(v.s);
	return rc;
}
