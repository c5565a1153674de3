/* Sums over measured phases (sequential and pipeline-parallel) and the writers: summary.csv,
 * the per-phase CSV and the per-pipeline SVG. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kj_escape.h"
#include "kj_pipeline.h"

void kj_pipeline_totals(const struct kj_pipeline *p, const struct kj_phase_result *r,
			double idle_w, struct kj_pipeline_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->bottleneck = -1;
	t->idle_w = idle_w;
	t->phases = p->nphases;
	for (int i = 0; i < p->nphases; i++) {
		if (strcmp(r[i].status, "ok")) {
			t->failed++;
			continue;
		}
		double rep = (double)p->phases[i].repeat;
		t->energy_unmeasured += !r[i].has_energy;
		t->stages += p->phases[i].repeat;
		t->seq_latency_ms += rep * r[i].latency_ms;
		t->seq_energy_j += rep * r[i].energy_j;
		t->seq_dynamic_j += rep * r[i].dynamic_j;
		if (t->bottleneck < 0 || r[i].latency_ms > t->pp_period_ms) {
			t->pp_period_ms = r[i].latency_ms;
			t->bottleneck = i;
		}
	}
	if (t->energy_unmeasured)
		t->seq_energy_j = t->seq_dynamic_j = NAN;
	/* one stage per device: each stage runs once per period, idle for the rest of it */
	if (idle_w < 0 || t->energy_unmeasured) {
		t->pp_energy_j = NAN;
		return;
	}
	for (int i = 0; i < p->nphases; i++) {
		if (strcmp(r[i].status, "ok"))
			continue;
		double wait_s = (t->pp_period_ms - r[i].latency_ms) * 1e-3;
		t->pp_energy_j += (double)p->phases[i].repeat * (r[i].energy_j + wait_s * idle_w);
	}
}

static void csv_num(FILE *f, double v, const char *fmt)
{
	fputc(',', f);
	if (isfinite(v))
		fprintf(f, fmt, v);
}

void kj_summary_header_write(FILE *f)
{
	fputs("name,batch,precision,status,phases,failed_phases,stages,seq_latency_ms,seq_energy_j,"
	      "seq_dynamic_j,bottleneck_phase,bottleneck_latency_ms,pp_period_ms,pp_energy_per_item_j,"
	      "idle_power_w,idle_source,note\n", f);
}

void kj_summary_row_write(FILE *f, const struct kj_summary_row *w)
{
	const struct kj_pipeline_totals *t = &w->t;
	double b = w->batch > 0 ? (double)w->batch : 1;
	kj_csv_put_str(f, w->name);
	fprintf(f, ",%" PRId64 ",", w->batch);
	kj_csv_put_str(f, w->precision);
	fputc(',', f);
	kj_csv_put_str(f, w->status);
	fprintf(f, ",%d,%d,%" PRId64, t->phases, t->failed, t->stages);
	int any = t->bottleneck >= 0;
	csv_num(f, any ? t->seq_latency_ms : NAN, "%.6f");
	csv_num(f, any ? t->seq_energy_j : NAN, "%.6g");
	csv_num(f, any ? t->seq_dynamic_j : NAN, "%.6g");
	fputc(',', f);
	kj_csv_put_str(f, w->bottleneck);
	csv_num(f, any ? t->pp_period_ms : NAN, "%.6f");
	csv_num(f, any ? t->pp_period_ms : NAN, "%.6f");
	csv_num(f, any ? t->pp_energy_j / b : NAN, "%.6g");
	csv_num(f, t->idle_w >= 0 ? t->idle_w : NAN, "%.2f");
	fputc(',', f);
	kj_csv_put_str(f, w->idle_source);
	fputc(',', f);
	kj_csv_put_str(f, w->note);
	fputc('\n', f);
}

void kj_phases_csv_write(FILE *f, const struct kj_pipeline *p, const struct kj_phase_result *r,
			 double peak_tflops, double peak_gbs)
{
	fputs("index,name,type,op,precision,repeat,shape,status,latency_ms,single_launch_ms,power_w,sm_clock_mhz,"
	      "energy_j,energy_unc_j,dynamic_j,gflop,mbytes,achieved_tflops,achieved_gbs,"
	      "fraction_of_ceiling,bound,error\n", f);
	for (int i = 0; i < p->nphases; i++) {
		const struct kj_phase *ph = &p->phases[i];
		char shape[320];
		kj_phase_format(ph, shape, sizeof(shape));
		char *nm = strstr(shape, " name=");
		if (nm)
			*nm = 0;
		int ok = !strcmp(r[i].status, "ok");
		double s = r[i].latency_ms * 1e-3;
		double tf = ok && s > 0 ? r[i].flops / s * 1e-12 : NAN;
		double gbs = ok && s > 0 ? r[i].bytes / s * 1e-9 : NAN;
		/* the bound the phase's own counts point to: arithmetic when its FLOP time at the
		 * ceiling exceeds its byte time at the ceiling */
		int compute = peak_tflops > 0 && peak_gbs > 0 &&
			      r[i].flops / (peak_tflops * 1e12) > r[i].bytes / (peak_gbs * 1e9);
		double frac = !ok ? NAN : compute ? (peak_tflops > 0 ? tf / peak_tflops : NAN)
						  : (peak_gbs > 0 ? gbs / peak_gbs : NAN);
		fprintf(f, "%d,", i);
		kj_csv_put_str(f, ph->name);
		fprintf(f, ",%s,%s,%s,%" PRId64 ",", kj_phase_kind_name(ph->kind), ph->op[0] ? ph->op : "",
			ph->precision, ph->repeat);
		kj_csv_put_str(f, shape);
		fputc(',', f);
		kj_csv_put_str(f, r[i].status);
		csv_num(f, ok ? r[i].latency_ms : NAN, "%.6f");
		csv_num(f, ok && r[i].single_ms > 0 ? r[i].single_ms : NAN, "%.6f");
		csv_num(f, ok && r[i].has_energy ? r[i].power_w : NAN, "%.2f");
		csv_num(f, ok && r[i].has_energy && r[i].sm_clock_mhz > 0 ? r[i].sm_clock_mhz : NAN, "%.0f");
		csv_num(f, ok && r[i].has_energy ? r[i].energy_j : NAN, "%.6g");
		csv_num(f, ok && r[i].has_energy ? r[i].energy_unc_j : NAN, "%.3g");
		csv_num(f, ok && r[i].has_energy ? r[i].dynamic_j : NAN, "%.6g");
		csv_num(f, r[i].flops * 1e-9, "%.4f");
		csv_num(f, r[i].bytes * 1e-6, "%.4f");
		csv_num(f, tf, "%.3f");
		csv_num(f, gbs, "%.1f");
		csv_num(f, frac, "%.3f");
		fputc(',', f);
		fputs(ph->kind == KJ_PHASE_SEQ || (!peak_tflops && !peak_gbs) ? "" : compute ? "compute" : "memory", f);
		fputc(',', f);
		kj_csv_put_str(f, r[i].error);
		fputc('\n', f);
	}
}

void kj_phases_svg_write(FILE *f, const struct kj_pipeline *p, const struct kj_phase_result *r,
			 const struct kj_pipeline_totals *t)
{
	const int row = 16, left = 260, bar = 300, top = 56;
	double maxl = 0, maxe = 0;
	for (int i = 0; i < p->nphases; i++)
		if (!strcmp(r[i].status, "ok")) {
			maxl = fmax(maxl, r[i].latency_ms * (double)p->phases[i].repeat);
			if (r[i].has_energy)
				maxe = fmax(maxe, r[i].energy_j * (double)p->phases[i].repeat);
		}
	int h = top + row * p->nphases + 40, w = left + 2 * bar + 120;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"monospace\" font-size=\"11\">\n", w, h);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n<text x=\"8\" y=\"18\" "
		"font-size=\"14\">", w, h);
	kj_html_esc(f, p->name);
	fprintf(f, " (%s): %.3f ms, %.4g J sequential; pipeline-parallel period %.3f ms</text>\n",
		p->precision, t->seq_latency_ms, t->seq_energy_j, t->pp_period_ms);
	fprintf(f, "<text x=\"%d\" y=\"44\">latency x repeat (max %.3f ms)</text>\n", left, maxl);
	fprintf(f, "<text x=\"%d\" y=\"44\">energy x repeat (max %.4g J)</text>\n", left + bar + 40, maxe);
	for (int i = 0; i < p->nphases; i++) {
		int y = top + i * row;
		int ok = !strcmp(r[i].status, "ok"), bn = i == t->bottleneck;
		double rep = (double)p->phases[i].repeat;
		fprintf(f, "<text x=\"8\" y=\"%d\"%s>", y + 11, bn ? " fill=\"#c00\" font-weight=\"bold\"" : "");
		kj_html_esc(f, p->phases[i].name);
		if (p->phases[i].repeat > 1)
			fprintf(f, " x%" PRId64, p->phases[i].repeat);
		fputs(bn ? " (bottleneck)" : "", f);
		fputs("</text>\n", f);
		if (!ok) {
			fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#c00\">%s</text>\n", left, y + 11, r[i].status);
			continue;
		}
		double lw = maxl > 0 ? r[i].latency_ms * rep / maxl * bar : 0;
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%.4f ms "
			"per call</title></rect>\n", left, y + 2, lw, row - 4, bn ? "#c33" : "#48c", r[i].latency_ms);
		if (r[i].has_energy && maxe > 0)
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#e93\"><title>%.4g "
				"J per call</title></rect>\n", left + bar + 40, y + 2,
				r[i].energy_j * rep / maxe * bar, row - 4, r[i].energy_j);
	}
	fputs("</svg>\n", f);
}
