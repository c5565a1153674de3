/* kjoule report: the run's story (stages, CUDA API calls, GPU idle gaps) from kj_api_story. */
#include "kj_apistory_out.h"
#include "kj_html.h"
#include "kj_html_internal.h"

/* kj_api_story's stages, API calls by time (runs traced with --api) and longest GPU idle gaps */
void kj_html_story(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	json_t *s = NULL;
	struct kj_api_opts ao = {.region = x->o->region, .skip = x->o->skip, .gaps = 5, .quiet = 1};
	fputs("<section id=\"api\"><h2>The run's story (stages, CUDA API)</h2>\n", f);
	if (kj_api_story(x->db, &ao, &s) || !s) {
		kj_html_missing(f, "the API story could not be told from this run", NULL);
		goto out;
	}
	json_t *st = json_object_get(s, "stages");
	if (json_array_size(st)) {
		fputs("<table class=\"kj-table\" id=\"stages-table\"><thead><tr><th class=\"l\">stage</th><th>start s</th>"
		      "<th>duration ms</th><th class=\"l\">defined as</th></tr></thead><tbody>\n", f);
		for (size_t i = 0; i < json_array_size(st); i++) {
			json_t *o = json_array_get(st, i);
			double a = 0, d = 0;
			int ha = kj_html_jnum(o, "start_us", &a), hd = kj_html_jnum(o, "duration_us", &d);
			fputs("<tr><td class=\"l\">", f);
			kj_html_esc(f, kj_html_jstr(o, "stage"));
			fputs("</td><td>", f);
			kj_html_fig(f, a / 1e6, ha, 3, NULL);
			fputs("</td><td>", f);
			kj_html_fig(f, d / 1e3, hd, 1, NULL);
			fputs("</td><td class=\"l\">", f);
			kj_html_esc(f, kj_html_jstr(o, "defined_as"));
			fputs("</td></tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	if (!json_is_true(json_object_get(s, "api_traced"))) {
		kj_html_missing(f, "CUDA API calls (launch, synchronise, copy calls and their time)",
				"kjoule run --api -o RUN.kjdb -- PROGRAM");
	} else {
		json_t *pa = json_object_get(s, "per_api");
		size_t m = json_array_size(pa) < 12 ? json_array_size(pa) : 12;
		fputs("<h3>CUDA API calls by total time</h3><table class=\"kj-table sortable\" id=\"api-table\"><thead><tr>"
		      "<th class=\"l\">call</th><th>count</th><th>total µs</th><th>mean µs</th><th>max µs</th></tr></thead><tbody>\n", f);
		for (size_t i = 0; i < m; i++) {
			json_t *o = json_array_get(pa, i);
			fputs("<tr><td class=\"l\">", f);
			kj_html_esc(f, kj_html_jstr(o, "name"));
			fputs("</td>", f);
			static const struct kj_html_col api_cols[] = {{"count", 0},
				{"total_us", 1}, {"mean_us", 2}, {"max_us", 1}};
			kj_html_num_cells(f, o, api_cols, KJ_HTML_NCOLS(api_cols), -1);
			fputs("</tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	json_t *lg = json_object_get(json_object_get(s, "gpu_idle"), "longest");
	if (json_array_size(lg)) {
		fputs("<h3>Longest GPU idle periods and what the CPU did meanwhile</h3><table class=\"kj-table\" id=\"gaps-table\">"
		      "<thead><tr><th>start s</th><th>µs</th><th>iteration</th><th class=\"l\">CPU</th></tr></thead><tbody>\n", f);
		for (size_t i = 0; i < json_array_size(lg); i++) {
			json_t *o = json_array_get(lg, i);
			double a = 0;
			fputs("<tr><td>", f);
			kj_html_fig(f, a / 1e6, kj_html_jnum(o, "start_us", &a), 3, NULL);
			fputs("</td>", f);
			kj_html_num_cell(f, o, "duration_us", 1, -1);
			kj_html_num_cell(f, o, "iteration", 0, -1);
			fputs("<td class=\"l\">", f);
			kj_html_esc(f, kj_html_jstr(o, "cpu_summary") ? kj_html_jstr(o, "cpu_summary") : "");
			fputs("</td></tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	kj_html_source(f, "api_call, kernel, memcpy, allocation, nvtx_range", kj_html_cmd(x, "api", ""));
out:
	fputs("</section>\n", f);
	json_decref(s);
}
