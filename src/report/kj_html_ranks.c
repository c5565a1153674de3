/* kjoule report: the ranks and the job of a run with two GPU processes or more
 * (docs/multi-gpu.md), the figures compare prints in its Ranks and Job sections (kj_job_analyze,
 * computed by kj_compare_compute). Single-GPU runs get no section. */
#include <stdint.h>
#include <stdlib.h>

#include "kj_compare_out_internal.h"
#include "kj_html.h"
#include "kj_html_internal.h"

#define RANK_ROWS_DRAWN 64 /* the chart's rows; the table has every rank */

/* The table of ranks: label, pid, GPU, range, iterations, per-iteration times, explained
 * fraction, its GPU's energy; "not measured" where compare has no figure. */
static void rank_table(FILE *f, const struct kj_job *j)
{
	fputs("<table class=\"kj-table sortable\" id=\"ranks-table\"><thead><tr><th class=\"l\">rank</th>"
	      "<th>pid</th><th class=\"l\">GPU</th><th class=\"l\">iteration range</th><th>measured</th>"
	      "<th>wall µs</th><th>GPU busy µs</th><th>busy % of wall</th><th>NCCL µs</th>"
	      "<th>NCCL exposed µs</th><th>NCCL MB</th><th>bus GB/s</th><th>explained</th>"
	      "<th>energy mJ (its GPU)</th><th>± mJ</th>"
	      "</tr></thead><tbody>\n", f);
	for (size_t i = 0; i < j->n; i++) {
		const struct kj_rank *r = &j->r[i];
		char lab[48];
		kj_rank_label(j, r->pid, lab, sizeof(lab));
		fprintf(f, "<tr><td class=\"l\" data-v=\"%zu\">", i);
		kj_html_esc(f, lab);
		fprintf(f, "</td><td>%lld</td><td class=\"l\">", (long long)r->pid);
		kj_html_esc(f, r->gpu[0] ? r->gpu : "(not recorded)");
		fputs("</td><td class=\"l\">", f);
		kj_html_esc(f, r->range[0] ? r->range : "(whole run)");
		fprintf(f, "</td><td>%lld</td><td>", (long long)r->n_kept);
		kj_html_fig(f, r->wall_ns * NS_US, 1, 1, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->busy_ns * NS_US, 1, 1, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->wall_ns > 0 ? 100 * r->busy_ns / r->wall_ns : 0, r->wall_ns > 0, 1, "%");
		fputs("</td><td>", f);
		kj_html_fig(f, r->comm_ns * NS_US, 1, 1, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->comm_exposed_ns * NS_US, 1, 1, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->nccl_bytes / 1e6, r->nccl_bytes_ok, 3, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->nccl_bus_gbps, r->nccl_bw_ok, 1, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->explained_fraction, r->have_explained, 3, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->energy_mj, r->energy_ok, 1, NULL);
		fputs("</td><td>", f);
		kj_html_fig(f, r->energy_unc_mj, r->energy_ok, 1, NULL);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
}

/* What the table cannot say in a cell: a rank without its own range, without energy, without NCCL
 * bytes or bandwidth, or dead; the NCCL ops it ran per iteration. */
static void rank_notes(FILE *f, const struct kj_job *j)
{
	int any = 0;
	for (size_t i = 0; i < j->n; i++) {
		const struct kj_rank *r = &j->r[i];
		char lab[48];
		kj_rank_label(j, r->pid, lab, sizeof(lab));
		const char *bw = r->nccl_bytes_ok && !r->nccl_bw_ok ? r->nccl_bw_why : NULL;
		const char *why[6] = {r->range[0] ? NULL : "no iteration range of its own; its whole run is one iteration",
				      r->energy_ok ? NULL : r->energy_why ? r->energy_why : "unknown",
				      r->died ? r->died_why : NULL,
				      r->nccl_bytes_ok || !r->nccl_bytes_why ? NULL : r->nccl_bytes_why, bw,
				      r->nccl_bytes_ok && r->nccl_ops[0] ? r->nccl_ops : NULL};
		static const char *lead[6] = {": ", ": energy not measured: ", " died: ", ": NCCL bytes not known: ",
					      ": NCCL bus bandwidth not known: ", ": NCCL calls per iteration: "};
		for (int k = 0; k < 6; k++) {
			if (!why[k])
				continue;
			fputs(any++ ? "<li>" : "<ul class=\"rank-notes\">\n<li>", f);
			kj_html_esc(f, lab);
			if (k == 2)
				fprintf(f, " (pid %lld)", (long long)r->pid);
			fputs(lead[k], f);
			kj_html_esc(f, why[k]);
			fputs("</li>\n", f);
		}
	}
	if (any)
		fputs("</ul>\n", f);
}

/* Per rank: wall, GPU busy, NCCL and its exposed part (µs per iteration), as grouped bars. */
static void rank_chart(FILE *f, const struct kj_job *j)
{
	size_t n = j->n < RANK_ROWS_DRAWN ? j->n : RANK_ROWS_DRAWN;
	struct kj_hbar_row *rows = calloc(n, sizeof(*rows));
	char *labs = calloc(n, 48);
	if (!rows || !labs)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct kj_rank *r = &j->r[i];
		kj_rank_label(j, r->pid, labs + i * 48, 48);
		rows[i] = (struct kj_hbar_row){labs + i * 48,
					       {r->wall_ns * NS_US, r->busy_ns * NS_US, r->comm_ns * NS_US,
						r->comm_exposed_ns * NS_US}};
	}
	static const char *names[] = {"wall", "GPU busy (its own GPU)", "NCCL kernels",
				      "NCCL exposed (no compute overlapped)"};
	static const char *colors[] = {"#b8bec9", "#2f5d9e", "#e08a2c", "#c0392b"};
	kj_chart_hbars(f, "chart-ranks", "Per rank, per iteration: wall, GPU busy on its own GPU, NCCL "
		       "kernel time and the part of it no compute kernel overlapped (µs)",
		       "µs", names, colors, 4, rows, n);
	if (j->n > n)
		fprintf(f, "<p>The first %zu of %zu ranks are drawn; the table has them all.</p>\n", n, j->n);
out:
	free(rows);
	free(labs);
}

/* The job: time (slowest rank), energy summed over its GPUs, imbalance, GPU types, dead ranks. */
static void job_table(FILE *f, const struct kj_job *j)
{
	char lab[48];
	kj_rank_label(j, j->r[j->slowest].pid, lab, sizeof(lab));
	fputs("<h3>The job (all ranks together, per iteration)</h3>\n"
	      "<table class=\"kj-table\" id=\"job-table\"><tbody>\n"
	      "<tr><th class=\"l\">time (the slowest rank's wall)</th><td>", f);
	kj_html_fig(f, j->time_ns * NS_US, 1, 1, "µs");
	fputs("</td><td class=\"l\">", f);
	kj_html_esc(f, lab);
	fputs("</td></tr>\n<tr><th class=\"l\">energy, summed over the GPUs</th><td>", f);
	kj_html_fig(f, j->energy_mj, j->energy_ok, 1, "mJ");
	fputs("</td><td class=\"l\">", f);
	if (j->energy_ok) {
		fputs("± ", f);
		kj_html_fig(f, j->energy_unc_mj, 1, 1, "mJ");
		fprintf(f, " (the GPUs' bounds added), %lld GPU(s), each once", (long long)j->n_gpus);
	} else {
		fputs("some GPU of the job has no energy figure (named above)", f);
	}
	fputs("</td></tr>\n<tr><th class=\"l\">load imbalance</th><td>", f);
	kj_html_fig(f, j->imbalance, j->imbalance > 0, 3, NULL);
	fputs("</td><td class=\"l\">", f);
	fputs(j->imbalance > 0 ? "the largest rank's work / the mean rank's, work = GPU busy less the waits "
				 "inside collectives (exposed NCCL time)"
			       : "no rank had GPU busy time",
	      f);
	fputs("</td></tr>\n<tr><th class=\"l\">GPU types</th><td>", f);
	fputs(j->mixed_gpus ? "mixed" : "one type", f);
	fputs("</td><td class=\"l\">", f);
	kj_html_esc(f, j->gpus[0] ? j->gpus : "(not recorded)");
	fprintf(f, "</td></tr>\n<tr><th class=\"l\">ranks that died</th><td>%zu</td><td class=\"l\">%s"
		   "</td></tr>\n</tbody></table>\n",
		j->n_died, j->n_died ? "before the end of the run (named above)" : "");
	if (j->mixed_gpus) {
		fputs("<div class=\"missing\"><b>Warning:</b> the ranks run on different GPU types (", f);
		kj_html_esc(f, j->gpus);
		fputs("): their times and energies are not comparable rank for rank.</div>\n", f);
	}
	if (j->n_died)
		fprintf(f, "<div class=\"missing\"><b>Warning:</b> %zu rank(s) died before the end of the run: "
			   "their figures cover what they recorded.</div>\n", j->n_died);
}

void kj_html_ranks(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	const struct kj_job *j = &x->c->job;
	if (j->n < 2)
		return;
	fprintf(f, "<section id=\"ranks\"><h2>Ranks: %zu processes with GPU work on %lld GPU(s)</h2>\n"
		   "<p>%lld traced processes in all (a launcher without GPU work is no rank). Each rank's "
		   "iterations are its own; every figure of a rank is over its own GPU.</p>\n",
		j->n, (long long)j->n_gpus, (long long)j->n_processes);
	rank_chart(f, j);
	kj_html_source(f, "kernel, memcpy, memset, nvtx_range of each process",
		       kj_html_cmd(x, "compare", "--json  (job.ranks[])"));
	rank_table(f, j);
	rank_notes(f, j);
	fputs("<p>GPU busy: the union of the rank's own kernels and copies on its own GPU (never across "
	      "GPUs); NCCL: NCCL kernel time per iteration, measured in place (never replayed alone); "
	      "exposed: the part of it no compute kernel of that rank overlapped. NCCL bytes moved: not "
	      "recorded (the trace keeps no NCCL message sizes), so no bus bandwidth.</p>\n", f);
	job_table(f, j);
	kj_html_source(f, "the ranks' figures; power_sample of each GPU over its rank's measured iterations"
			  " (compare's Ranks and Job sections)", kj_html_cmd(x, "compare", ""));
	fputs("</section>\n", f);
}
