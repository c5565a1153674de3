/* SVG charts of the HTML pages: stacked bars, grouped horizontal bars, log-log scatter. Every
 * chart is one <svg class="kj-chart"> with its title and unit on it and a <title> per mark. */
#include "kj_html_internal.h"

#include <math.h>
#include <string.h>

double kj_chart_tick(double span, int n)
{
	if (!(span > 0) || !isfinite(span))
		return 1;
	double raw = span / (n > 0 ? n : 5), p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
}

static double fin(double v)
{
	return isfinite(v) && v > 0 ? v : 0;
}

void kj_chart_begin(FILE *f, const char *id, const char *title, double w, double h)
{
	fprintf(f, "<svg class=\"kj-chart\" id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\""
		   " height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-size=\"11\" font-family=\"sans-serif\">\n",
		id, w, h, w, h);
	fputs("<text x=\"4\" y=\"14\" font-size=\"13\" font-weight=\"600\">", f);
	kj_html_esc(f, title);
	fputs("</text>\n", f);
}

void kj_chart_y_grid(FILE *f, double x0, double pw, double y0, double ph, double top, double step)
{
	for (double t = 0; t <= top * 1.0001; t += step) {
		double y = y0 + ph - t / top * ph;
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ee\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			x0, x0 + pw, y, y, x0 - 4, y + 4, t);
	}
}

void kj_chart_y_unit(FILE *f, double y0, double ph, const char *unit)
{
	fprintf(f, "<text x=\"12\" y=\"%.1f\" transform=\"rotate(-90 12 %.1f)\" text-anchor=\"middle\">",
		y0 + ph / 2, y0 + ph / 2);
	kj_html_esc(f, unit);
	fputs("</text>\n", f);
}

static void legend(FILE *f, double x, double y, const char *const *names, const char *const *colors,
		   size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\">",
			x, y - 9, colors[i], x + 14, y);
		kj_html_esc(f, names[i]);
		fputs("</text>\n", f);
		x += 24 + 6.2 * (double)strlen(names[i]);
	}
}

void kj_chart_stacked(FILE *f, const char *id, const char *title, const char *unit, double W,
		      const struct kj_stack_part *parts, size_t n_parts, const double *v,
		      const char *const *label, const int *dim, size_t n_cols)
{
	double H = 330, x0 = 70, y0 = 40, ph = 230, pw = W - x0 - 20, top = 0;
	const char *names[16] = {0}, *colors[16] = {0};
	/* the scale follows the bars drawn in full (warm-up bars are clipped, marked with ^) */
	int any_full = 0;
	for (size_t c = 0; c < n_cols; c++)
		any_full |= !(dim && dim[c]);
	for (size_t c = 0; c < n_cols; c++) {
		double s = 0;
		for (size_t p = 0; p < n_parts; p++)
			s += fin(v[c * n_parts + p]);
		if (s > top && (!any_full || !(dim && dim[c])))
			top = s;
	}
	if (top <= 0)
		top = 1;
	double step = kj_chart_tick(top, 5);
	top = ceil(top / step) * step;
	kj_chart_begin(f, id, title, W, H);
	for (size_t p = 0; p < n_parts && p < 16; p++) {
		names[p] = parts[p].name;
		colors[p] = parts[p].color;
	}
	legend(f, x0, 30, names, colors, n_parts < 16 ? n_parts : 16);
	kj_chart_y_grid(f, x0, pw, y0, ph, top, step);
	kj_chart_y_unit(f, y0, ph, unit);
	double bw = pw / (double)(n_cols ? n_cols : 1);
	int every = bw >= 22 ? 1 : (int)ceil(22 / bw);
	for (size_t c = 0; c < n_cols; c++) {
		double x = x0 + bw * (double)c, y = y0 + ph, gap = bw > 4 ? bw * 0.15 : 0;
		if (bw - gap > 90) /* few bars: keep them bar-shaped */
			gap = bw - 90;
		fprintf(f, "<g class=\"hov\"%s><title>", dim && dim[c] ? " opacity=\"0.45\"" : "");
		kj_html_esc(f, label[c]);
		for (size_t p = 0; p < n_parts; p++) {
			double x1 = v[c * n_parts + p];
			fprintf(f, "\n%s: ", parts[p].name);
			if (isfinite(x1))
				fprintf(f, "%.3f %s", x1, unit);
			else
				fputs("not measured", f);
		}
		fputs("</title>", f);
		for (size_t p = 0; p < n_parts; p++) {
			double h = fin(v[c * n_parts + p]) / top * ph;
			if (y - h < y0) { /* clipped at the top of the plot */
				h = y - y0;
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"9\">^</text>",
					x + bw / 2, y0 - 2);
			}
			y -= h;
			fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>",
				x + gap / 2, y, bw - gap > 0.3 ? bw - gap : 0.3, h, parts[p].color);
		}
		fputs("</g>\n", f);
		if ((int)(c % (size_t)every) == 0 || c + 1 == n_cols) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"9\""
				   " transform=\"rotate(-60 %.1f %.1f)\">",
				x + bw / 2, y0 + ph + 12, x + bw / 2, y0 + ph + 12);
			kj_html_esc(f, label[c]);
			fputs("</text>\n", f);
		}
	}
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		x0 + pw, y0 + ph, y0 + ph);
	fputs("</svg>\n", f);
}

void kj_chart_hbars(FILE *f, const char *id, const char *title, const char *unit,
		    const char *const *names, const char *const *colors, size_t n_series,
		    const struct kj_hbar_row *rows, size_t n_rows)
{
	double x0 = 330, W = 1100, pw = W - x0 - 90, rh = 6 + 9 * (double)n_series, y0 = 44, top = 0;
	double H = y0 + rh * (double)n_rows + 30;
	for (size_t r = 0; r < n_rows; r++)
		for (size_t s = 0; s < n_series; s++)
			if (fin(rows[r].v[s]) > top)
				top = rows[r].v[s];
	if (top <= 0)
		top = 1;
	kj_chart_begin(f, id, title, W, H);
	legend(f, x0, 32, names, colors, n_series);
	double step = kj_chart_tick(top, 5);
	for (double t = 0; t <= top * 1.0001; t += step) {
		double x = x0 + t / top * pw;
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ee\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
			x, x, y0, H - 24, x, H - 10, t);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x0 + pw + 6, H - 10);
	kj_html_esc(f, unit);
	fputs("</text>\n", f);
	for (size_t r = 0; r < n_rows; r++) {
		double y = y0 + rh * (double)r;
		char lab[60];
		snprintf(lab, sizeof(lab), "%s", rows[r].label ? rows[r].label : "?");
		if (strlen(rows[r].label ? rows[r].label : "") > 55)
			memcpy(lab + 52, "...", 4);
		fputs("<g class=\"hov\"><title>", f);
		kj_html_esc(f, rows[r].label);
		for (size_t s = 0; s < n_series; s++) {
			fprintf(f, "\n%s: ", names[s]);
			if (rows[r].v[s] >= 0 && isfinite(rows[r].v[s]))
				fprintf(f, "%.3f %s", rows[r].v[s], unit);
			else
				fputs("not measured", f);
		}
		fprintf(f, "</title><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x0 - 6,
			y + rh / 2 + 3);
		kj_html_esc(f, lab);
		fputs("</text>", f);
		for (size_t s = 0; s < n_series; s++) {
			double v = rows[r].v[s];
			if (!(v >= 0) || !isfinite(v))
				continue;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"8\" fill=\"%s\"/>", x0,
				y + 3 + 9 * (double)s, v / top * pw, colors[s]);
		}
		fputs("</g>\n", f);
	}
	fputs("</svg>\n", f);
}

void kj_chart_scatter(FILE *f, const char *id, const char *title, const char *xunit,
		      const char *yunit, const char *const *series, const char *const *colors,
		      size_t n_series, const struct kj_point *p, size_t n)
{
	double W = 560, H = 460, x0 = 60, y0 = 40, pw = W - x0 - 20, ph = H - y0 - 50;
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (!(p[i].x > 0 && p[i].y > 0 && isfinite(p[i].x) && isfinite(p[i].y)))
			continue;
		lo = fmin(lo, fmin(p[i].x, p[i].y));
		hi = fmax(hi, fmax(p[i].x, p[i].y));
	}
	if (!isfinite(lo)) {
		lo = 1;
		hi = 10;
	}
	double l0 = floor(log10(lo)), l1 = ceil(log10(hi));
	if (l1 <= l0)
		l1 = l0 + 1;
	kj_chart_begin(f, id, title, W, H);
	legend(f, x0, 32, series, colors, n_series);
#define SX(v) (x0 + (log10(v) - l0) / (l1 - l0) * pw)
#define SY(v) (y0 + ph - (log10(v) - l0) / (l1 - l0) * ph)
	for (double d = l0; d <= l1; d += 1) {
		double t = pow(10, d);
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ee\"/>"
			   "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ee\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>"
			   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			SX(t), SX(t), y0, y0 + ph, x0, x0 + pw, SY(t), SY(t), SX(t), y0 + ph + 14, t,
			x0 - 4, SY(t) + 4, t);
	}
	double a = pow(10, l0), b = pow(10, l1);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"><title>y = x"
		   "</title></line>\n",
		SX(a), SY(a), SX(b), SY(b));
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#aaa\""
		   " stroke-dasharray=\"4 3\"><title>replay 25 %% slower than traced</title></line>\n",
		SX(a), SY(a * 1.25), SX(b / 1.25), SY(b));
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#aaa\""
		   " stroke-dasharray=\"4 3\"><title>replay 25 %% faster than traced</title></line>\n",
		SX(a / 0.75), SY(a), SX(b), SY(b * 0.75));
	for (size_t i = 0; i < n; i++) {
		if (!(p[i].x > 0 && p[i].y > 0 && isfinite(p[i].x) && isfinite(p[i].y)))
			continue;
		fprintf(f, "<circle class=\"hov\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\""
			   " fill-opacity=\"0.75\"><title>",
			SX(p[i].x), SY(p[i].y), colors[p[i].series]);
		kj_html_esc(f, p[i].label);
		fprintf(f, "\n%s: traced %.3f %s, replayed %.3f %s (%+.1f %%)</title></circle>\n",
			series[p[i].series], p[i].x, xunit, p[i].y, yunit, 100 * (p[i].y / p[i].x - 1));
	}
#undef SX
#undef SY
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">traced, mean per launch (%s)</text>\n",
		x0 + pw / 2, H - 12, xunit);
	fprintf(f, "<text x=\"12\" y=\"%.1f\" transform=\"rotate(-90 12 %.1f)\" text-anchor=\"middle\">"
		   "replayed (%s)</text>\n",
		y0 + ph / 2, y0 + ph / 2, yunit);
	fputs("</svg>\n", f);
}
