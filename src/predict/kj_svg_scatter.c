/* Predicted against measured, one SVG per model: log-log axes, the diagonal, training points in
 * grey and held-out points in red. */
#include <math.h>
#include <stdio.h>

#include "kj_error.h"
#include "kj_predict.h"

int kj_svg_scatter(const char *path, const char *title, const char *unit, const double *meas,
		   const double *pred, const int *heldout, int n)
{
	const double W = 480, H = 480, L = 70, B = 60, P = 20;
	double lo = INFINITY, hi = -INFINITY;
	FILE *f;
	for (int i = 0; i < n; i++) {
		double a = log10(meas[i]), b = log10(pred[i]);
		lo = fmin(lo, fmin(a, b));
		hi = fmax(hi, fmax(a, b));
	}
	if (!(hi > lo)) {
		lo -= 1;
		hi += 1;
	}
	lo = floor(lo);
	hi = ceil(hi);
	if (!(f = fopen(path, "w")))
		return KJ_EIO;
#define X(v) (L + (log10(v) - lo) / (hi - lo) * (W - L - P))
#define Y(v) (H - B - (log10(v) - lo) / (hi - lo) * (H - B - P))
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
		"font-family=\"sans-serif\" font-size=\"11\">\n", W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%g\" y=\"14\" text-anchor=\"middle\">%s</text>\n", W / 2, title);
	fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#888\" stroke-dasharray=\"4\"/>\n",
		L, H - B, W - P, (double)P);
	for (double d = lo; d <= hi; d += 1) {
		double px = L + (d - lo) / (hi - lo) * (W - L - P), py = H - B - (d - lo) / (hi - lo) * (H - B - P);
		fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">1e%g</text>\n", px, H - B + 15, d);
		fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">1e%g</text>\n", L - 4, py + 4, d);
	}
	fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"black\"/>\n",
		L, P, W - L - P, H - B - P);
	fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">measured (%s)</text>\n", (W + L) / 2,
		H - 20, unit);
	fprintf(f, "<text x=\"16\" y=\"%g\" transform=\"rotate(-90 16 %g)\" text-anchor=\"middle\">"
		"predicted (%s)</text>\n", (H - B) / 2, (H - B) / 2, unit);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++)
			if (heldout[i] == pass)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n",
					X(meas[i]), Y(pred[i]), pass ? "3" : "2", pass ? "#d62728" : "#aaa");
	fprintf(f, "<text x=\"%g\" y=\"%g\" fill=\"#d62728\">held-out</text>"
		"<text x=\"%g\" y=\"%g\" fill=\"#888\">training</text>\n", L + 8, P + 14, L + 8, P + 28);
	fprintf(f, "</svg>\n");
#undef X
#undef Y
	return fclose(f) ? KJ_EIO : 0;
}
