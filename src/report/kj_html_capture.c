/* kjoule report: the capture section of a --capture run (docs/tracing.md "Capture ranges"): what
 * was captured, its status, and the whole run's iterations beside the captured ones, the figures
 * `kjoule info` and `kjoule compare` print (kj_capture_stats). Other runs get no section. */
#include <stdint.h>
#include <stdio.h>

#include "kj_capture_out.h"
#include "kj_html.h"
#include "kj_html_internal.h"

/* One row of the iterations table: instances, mean wall, instances with energy, mean energy and
 * its mean bound; "not measured" where a set has none. */
static void set_row(FILE *f, const char *label, const struct kj_iter_set *s)
{
	fputs("<tr><td class=\"l\">", f);
	kj_html_esc(f, label);
	fprintf(f, "</td><td>%lld</td><td>", (long long)s->instances);
	kj_html_fig(f, s->wall_ms, s->instances > 0, 3, "ms");
	fputs("</td><td>", f);
	kj_html_fig(f, s->span_s, s->instances > 0, 3, "s");
	fputs("</td><td>", f);
	kj_html_fig(f, s->energy_j, s->measured > 0, 3, "J");
	fputs("</td><td>", f);
	kj_html_fig(f, s->uncertainty_j, s->measured > 0, 3, "J");
	fputs("</td></tr>\n", f);
}

/* The capture window's span: its length, or why it has none. */
static void window_cell(FILE *f, const struct kj_capture_stats *s)
{
	if (s->window_start_ns >= 0 && s->window_end_ns >= s->window_start_ns)
		kj_html_fig(f, (double)(s->window_end_ns - s->window_start_ns) / 1e9, 1, 3, "s");
	else if (s->window_start_ns >= 0)
		fputs("<span class=\"na\">opened, no end recorded (the process ended inside it)</span>", f);
	else
		fputs("<span class=\"na\">none: the window never opened</span>", f);
}

void kj_html_capture(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	struct kj_capture_stats s;
	if (kj_capture_stats_of(x->db, x->o->run_path, kj_capture_whole_skip(x->o->whole_skip, x->o->skip), &s) ||
	    !s.active)
		return;
	const char *words = kj_capture_status_words(s.status);
	fputs("<section id=\"capture\"><h2>Capture: the traced iterations and the whole run</h2>\n"
	      "<table class=\"kj-table\" id=\"capture-facts\"><tbody>\n"
	      "<tr><th class=\"l\">captured</th><td class=\"l\"><code>", f);
	kj_html_esc(f, s.spec[0] ? s.spec : "(range not recorded)");
	fputs("</code></td></tr>\n<tr><th class=\"l\">status</th><td class=\"l\"><code>", f);
	kj_html_esc(f, s.status[0] ? s.status : "(not recorded)");
	fputs("</code>", f);
	if (words) {
		fputs(": ", f);
		kj_html_esc(f, words);
	}
	fputs("</td></tr>\n<tr><th class=\"l\">window</th><td class=\"l\">", f);
	window_cell(f, &s);
	fputs("</td></tr>\n</tbody></table>\n", f);
	fputs("<h3>Iterations: the whole run beside the captured ones (per iteration)</h3>\n"
	      "<table class=\"kj-table\" id=\"capture-iterations\"><thead><tr><th class=\"l\">iterations</th>"
	      "<th>instances</th><th>wall (mean)</th><th>span</th><th>energy</th><th>± bound</th>"
	      "</tr></thead><tbody>\n", f);
	char all_label[64];
	snprintf(all_label, sizeof(all_label), "whole run (first %lld left out)", (long long)s.all_skipped);
	set_row(f, s.all_skipped ? all_label : "whole run", &s.all);
	set_row(f, "captured", &s.captured);
	fputs("</tbody></table>\n", f);
	if (!s.all.measured || !s.captured.measured) {
		fputs("<p>Energy not measured", f);
		if (s.all.measured)
			fputs(" for the captured iterations", f);
		fputs(": ", f);
		kj_html_esc(f, s.energy_why ? s.energy_why
					    : s.captured.instances ? "the power samples cover none of the captured iterations"
								   : "no iteration was captured");
		fputs(".</p>\n", f);
	}
	if (s.agreement_known)
		fprintf(f, "<p id=\"capture-agreement\">The captured iterations against the whole run: %+.2f&#8239;%% "
			   "(the two bounds added: ±%.2f&#8239;%%): %s.</p>\n",
			s.agreement_apart_pct, s.agreement_bound_pct, kj_capture_agreement_words(&s));
	fputs("<p>Every instance of the range leaves an iteration mark, captured or not, and power is "
	      "sampled through the whole run: the whole run's figures cover the iterations the trace "
	      "left out. A set's energy per iteration is its span's (first start to last end, the time "
	      "between iterations included) over its iterations. The rest of this page is the captured "
	      "iterations'.</p>\n", f);
	kj_html_source(f, "meta capture_range, capture_status; capture_window; iteration_mark; power_sample "
			  "over each instance's window",
		       kj_html_cmd(x, "info", "   /   kjoule compare RUN"));
	fputs("</section>\n", f);
}
