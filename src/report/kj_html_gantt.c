/* kjoule report: the gantt of one iteration, as timeline's SVG writer draws it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_compare_out_internal.h"
#include "kj_error.h"
#include "kj_html.h"
#include "kj_html_internal.h"
#include "kj_timeline.h"

#define GANTT_MAX_BYTES (1500 * 1000) /* the page stays under 5 MB */
#define GANTT_MAX_ACTS 8000

/* The gantt of the kept iteration (else the first measured) as timeline's SVG writer draws it,
 * unless it holds more than GANTT_MAX_ACTS activities or draws bigger than GANTT_MAX_BYTES: then a
 * note with the command that draws it on its own. */
void kj_html_gantt(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	const struct kj_compare *c = x->c;
	char *buf = NULL;
	size_t len = 0, sel = 0;
	char args[64] = "--format svg", what[200], how[1400];
	struct kj_timeline_opts to = {.format = KJ_TL_SVG, .iteration = x->kept_iter, .region = x->o->region,
				      .width = 1400, .quiet = 1, .run_path = x->run};
	fputs("<section id=\"gantt\"><h2>", f);
	fputs(x->kept_iter >= 0 ? "The kept iteration on the GPU" : "The first measured iteration on the GPU", f);
	fputs("</h2>\n", f);
	if (x->kept_iter >= 0) {
		snprintf(args, sizeof(args), "--format svg --iteration %ld", x->kept_iter);
		sel = (size_t)x->kept_iter;
	} else {
		while (sel + 1 < c->it.n && c->iv[sel].skipped)
			sel++;
	}
	int64_t acts = c->it.n ? c->iv[sel].n_kernels + c->iv[sel].n_copies + c->iv[sel].n_memsets : 0;
	int rc = KJ_ENOMEM;
	if (acts <= GANTT_MAX_ACTS) {
		FILE *m = open_memstream(&buf, &len);
		if (m) {
			rc = kj_timeline_write(x->db, &to, m);
			fclose(m);
		}
	}
	snprintf(how, sizeof(how), "kjoule timeline %s %s -o gantt.svg (or --from T --to T for a window,"
		 " --format chrome for Perfetto)", x->run, args);
	char *svg = buf && !rc ? strstr(buf, "<svg") : NULL;
	if (acts > GANTT_MAX_ACTS || len > GANTT_MAX_BYTES) {
		snprintf(what, sizeof(what), "the gantt here: the iteration holds %lld GPU activities, too many"
			 " to draw in this page", (long long)acts);
		kj_html_missing(f, what, how);
	} else if (!svg) {
		kj_html_missing(f, "a gantt of one iteration: the iteration holds no GPU work", NULL);
	} else {
		/* the SVG element gets the chart class so the self-check sees it */
		fputs("<div class=\"gantt\"><svg class=\"kj-chart\" id=\"chart-gantt\"", f);
		fputs(svg + 4, f);
		fputs("</div>\n", f);
		kj_html_source(f, "kernel, memcpy, memset, nvtx_range; colours by tier, pink: GPU idle; hover a bar"
			       " for its name", kj_html_cmd(x, "timeline", args));
	}
	fputs("</section>\n", f);
	free(buf);
}

