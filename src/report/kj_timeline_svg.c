/* kjoule timeline --format svg: a gantt chart of one iteration. */
#include "kj_timeline_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_store_e_timeline.h"

/* ---- svg ---- */

struct svg_gap {
	FILE *f;
	int64_t lo;
	double scale;
	double x0, y, h;
	int64_t n;
};

static void svg_gap_cb(void *ctx, int64_t s, int64_t e)
{
	struct svg_gap *g = ctx;
	double x = g->x0 + (double)(s - g->lo) * g->scale, w = (double)(e - s) * g->scale;
	fprintf(g->f,
		"<rect class=\"idle\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\">"
		"<title>idle %.3f us</title></rect>\n",
		x, g->y, w < 0.5 ? 0.5 : w, g->h, (double)(e - s) / 1e3);
	g->n++;
}

static double nice_step(double range)
{
	double raw = range / 10, p = 1;
	while (p * 10 <= raw)
		p *= 10;
	while (p > raw && p > 1e-6)
		p /= 10;
	if (raw / p >= 5)
		return 5 * p;
	if (raw / p >= 2)
		return 2 * p;
	return p;
}

struct nvtx_draw {
	FILE *f;
	const struct kj_iters *it;
	long sel;
	int64_t lo;
	double x0, scale, y0, lane_h;
	int draw, rows;
};

/* one NVTX range counted in its row (ctx) and, when drawing, drawn; the selected iteration's own
 * range and rows below the third are left out */
static int nvtx_draw_one(void *ctx, const struct kj_store_nvtx_range *r)
{
	struct nvtx_draw *v = ctx;
	FILE *f = v->f;
	const char *nm = r->name;
	int64_t s0 = r->start_ns, e0 = r->end_ns;
	int depth = (int)r->depth;
	if (v->sel >= 0 && !v->it->whole_run && !strcmp(nm, v->it->region))
		return 0;
	int row = depth > 0 ? depth - 1 : 0;
	if (row > 2)
		return 0;
	if (row + 1 > v->rows)
		v->rows = row + 1;
	if (!v->draw)
		return 0;
	double x = v->x0 + (double)(s0 - v->lo) * v->scale, w = (double)(e0 - s0) * v->scale;
	double y = v->y0 + row * v->lane_h;
	fprintf(f, "<rect class=\"nvtx\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\""
		   " fill=\"#fff3c4\" stroke=\"#c9a400\" stroke-width=\"0.5\"><title>",
		x, y, w < 0.5 ? 0.5 : w, v->lane_h - 6);
	kj_xml_esc(f, nm);
	fprintf(f, " %.3f us</title></rect>\n", (double)(e0 - s0) / 1e3);
	if (w > 6.5 * (double)strlen(nm) + 4) { /* the name fits inside the bar */
		fprintf(f, "<text class=\"lab\" x=\"%.2f\" y=\"%.1f\" font-size=\"10\">",
			x + 2, y + v->lane_h / 2);
		kj_xml_esc(f, nm);
		fprintf(f, "</text>\n");
	}
	return 0;
}

/* NVTX ranges inside [lo, hi] below the iteration's own depth, one row per depth (3 at most),
 * as <rect class="nvtx"> with their names; returns the rows drawn. */
static int svg_nvtx_rows(sqlite3 *db, FILE *f, const struct kj_iters *it, long sel, int64_t lo,
			 int64_t hi, double x0, double scale, double y0, double lane_h, int draw)
{
	struct nvtx_draw v = {f, it, sel, lo, x0, scale, y0, lane_h, draw, 0};
	if (kj_store_e_nvtx_inside(db, lo, hi, nvtx_draw_one, &v))
		return 0;
	return v.rows;
}

int timeline_svg(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f,
			const struct kj_acts *acts,
			const unsigned char *sty, const struct kj_names *names,
			const struct kj_iters *it, long sel_iter, int64_t t0, int64_t lo, int64_t hi)
{
	size_t *idx = NULL, n = 0, nl = 0;
	struct lane *lanes = NULL;
	int rc = tl_pick(acts, it, sel_iter, &lo, &hi, &idx, &n, &lanes, &nl);
	if (rc)
		return rc;
	double W = o->width > 0 ? o->width : 1400;
	if (W < 300)
		W = 300;
	double x0 = 150, plot_w = W - x0 - 20, lane_h = 26, top = 50;
	int64_t len = hi - lo > 0 ? hi - lo : 1;
	double scale = plot_w / (double)len;
	int nv_rows = svg_nvtx_rows(db, f, it, sel_iter, lo, hi, 0, 0, 0, 0, 0);
	double nvtx_y = top + (double)nl * lane_h + 6;
	double busy_y = nvtx_y + (double)nv_rows * lane_h;
	double axis_y = busy_y + lane_h + 4;
	double H = axis_y + 40 + 24 * 2;
	int used[N_STYLES] = {0};
	struct kj_ival *all = malloc((n ? n : 1) * sizeof(*all));
	if (!all) {
		free(idx);
		free(lanes);
		return KJ_ENOMEM;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\""
		   " viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		W, H, W, H);
	fprintf(f, "<style>rect.k{stroke:none} rect.idle{fill:#f4b6b6} rect.busy{fill:#555}"
		   " text.lab{fill:#222} line.tick{stroke:#999;stroke-width:0.5}</style>\n");
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
	fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">");
	if (sel_iter >= 0) {
		char t[300];
		snprintf(t, sizeof(t), "iteration %ld of %s, ", sel_iter,
			 it->whole_run ? "the whole run" : it->region);
		kj_xml_esc(f, t);
	}
	kj_xml_esc(f, o->run_path ? o->run_path : "");
	fprintf(f, ": %.1f us, %zu GPU activities</text>\n", (double)len / 1e3, n);
	/* lanes */
	for (size_t l = 0; l < nl; l++) {
		double y = top + (double)l * lane_h;
		fprintf(f, "<rect class=\"lane\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\""
			   " fill=\"%s\"/>\n",
			x0, y, plot_w, lane_h - 4, l % 2 ? "#f7f7f7" : "#efefef");
		fprintf(f, "<text class=\"lab\" x=\"10\" y=\"%.1f\">GPU %" PRId64 " stream %" PRId64
			   "</text>\n",
			y + lane_h / 2 + 2, lanes[l].device, lanes[l].stream);
	}
	for (size_t q = 0; q < n; q++) {
		const struct kj_act *a = &acts->v[idx[q]];
		size_t l = tl_lane_find(lanes, nl, a);
		int64_t s = a->start_ns < lo ? lo : a->start_ns, e = a->end_ns > hi ? hi : a->end_ns;
		double x = x0 + (double)(s - lo) * scale, w = (double)(e - s) * scale;
		const char *nm = a->type == KJ_ACT_KERNEL ? kj_names_get(names, a->name_id)
			       : a->type == KJ_ACT_MEMCPY ? "memcpy"
							  : "memset";
		all[q] = (struct kj_ival){s, e};
		used[sty[idx[q]]] = 1;
		fprintf(f, "<rect class=\"k\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\""
			   " fill=\"%s\"><title>",
			x, top + (double)l * lane_h, w < 0.5 ? 0.5 : w, lane_h - 4,
			tl_styles[sty[idx[q]]].color);
		kj_xml_esc(f, nm);
		fprintf(f, " (%s) %.3f us</title></rect>\n", tl_styles[sty[idx[q]]].tier,
			(double)(a->end_ns - a->start_ns) / 1e3);
	}
	if (nv_rows) {
		fprintf(f, "<text class=\"lab\" x=\"10\" y=\"%.1f\">NVTX ranges</text>\n",
			nvtx_y + lane_h / 2);
		svg_nvtx_rows(db, f, it, sel_iter, lo, hi, x0, scale, nvtx_y, lane_h, 1);
	}
	/* busy/idle row: union of every lane, idle gaps visible (before, inside and after) */
	fprintf(f, "<text class=\"lab\" x=\"10\" y=\"%.1f\">GPU busy / idle</text>\n",
		busy_y + lane_h / 2 + 2);
	int64_t ss = 0, se = 0;
	kj_ival_union(all, n, lo, hi, &ss, &se, NULL);
	struct svg_gap g = {f, lo, scale, x0, busy_y, lane_h - 4, 0};
	if (n == 0) {
		svg_gap_cb(&g, lo, hi);
	} else {
		if (ss > lo)
			svg_gap_cb(&g, lo, ss);
		kj_ival_gaps(all, n, lo, hi, svg_gap_cb, &g);
		if (se < hi)
			svg_gap_cb(&g, se, hi);
	}
	/* busy segments */
	{
		int64_t cs = 0, ce = 0;
		int open = 0;
		for (size_t q = 0; q <= n; q++) {
			if (q < n && all[q].e <= all[q].s)
				continue;
			if (q < n && open && all[q].s <= ce) {
				if (all[q].e > ce)
					ce = all[q].e;
				continue;
			}
			if (open)
				fprintf(f, "<rect class=\"busy\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\""
					   " height=\"%.1f\"/>\n",
					x0 + (double)(cs - lo) * scale, busy_y,
					(double)(ce - cs) * scale < 0.5 ? 0.5 : (double)(ce - cs) * scale,
					lane_h - 4);
			if (q < n) {
				cs = all[q].s;
				ce = all[q].e;
				open = 1;
			}
		}
	}
	/* axis in us from the window start */
	double range_us = (double)len / 1e3, step = nice_step(range_us);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0,
		axis_y, x0 + plot_w, axis_y);
	for (double v = 0; v <= range_us + 1e-9; v += step) {
		double x = x0 + v * 1e3 * scale;
		fprintf(f, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>\n", x,
			top - 4, x, axis_y + 4);
		fprintf(f, "<text class=\"lab\" x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
			x, axis_y + 16, v);
	}
	fprintf(f, "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">us (window starts"
		   " %.1f us after the run's first event)</text>\n",
		x0 + plot_w, axis_y + 32, (double)(lo - t0) / 1e3);
	/* legend */
	double lx = x0, ly = axis_y + 44;
	for (size_t s = 0; s < N_STYLES; s++) {
		if (!used[s])
			continue;
		fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\""
			   " fill=\"%s\"/><text class=\"lab\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			lx, ly, tl_styles[s].color, lx + 16, ly + 11, tl_styles[s].tier);
		lx += 110;
	}
	fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\""
		   " fill=\"#f4b6b6\"/><text class=\"lab\" x=\"%.1f\" y=\"%.1f\">GPU idle</text>\n",
		lx, ly, lx + 16, ly + 11);
	fprintf(f, "</svg>\n");
	free(all);
	free(idx);
	free(lanes);
	return ferror(f) ? KJ_EIO : 0;
}

