/* kjoule report: the page of one run. Figures come from compare (kj_compare_compute and its
 * JSON), the gantt from timeline's SVG writer, the API story from kj_api_story; each section
 * says its unit and the command that re-creates it, or what is missing and how to get it. */
#include "kj_html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_compare_out_internal.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_html_internal.h"

#define C_BUSY "#2f5d9e"
#define C_IDLE "#f0a8a8"
#define C_HOST "#b8bec9"

static void card(FILE *f, const char *key, double v, int known, int prec, const char *unit,
		 const char *note)
{
	fputs("<div class=\"card\"><div class=\"v\">", f);
	kj_html_fig(f, v, known, prec, unit);
	fputs("</div><div class=\"k\">", f);
	kj_html_esc(f, key);
	if (note) {
		fputs("<br>", f);
		kj_html_esc(f, note);
	}
	fputs("</div></div>\n", f);
}

/* "kjoule SUB RUN ARGS" in a static buffer (kj_html_internal.h) */
const char *kj_html_cmd(const struct kj_html_ctx *x, const char *sub, const char *args)
{
	static char buf[1200];
	snprintf(buf, sizeof(buf), "kjoule %s %s%s%s", sub, x->run, args && *args ? " " : "",
		 args ? args : "");
	return buf;
}

/* run facts from `kjoule info` (command, GPU, start, duration, end, iterations, counts) and the
 * union of what info and compare say was not captured */
static void header(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	const json_t *info = x->o->info;
	double d;
	fputs("<header><h1>kjoule report: ", f);
	kj_html_esc(f, x->run);
	fputs("</h1>\n<table class=\"kj-table\" id=\"run-facts\"><tbody>\n", f);
	fputs("<tr><th class=\"l\">command</th><td class=\"l\"><code>", f);
	kj_html_esc(f, info && kj_html_jstr(info, "command") ? kj_html_jstr(info, "command") : "(not recorded)");
	fputs("</code></td></tr>\n<tr><th class=\"l\">GPU</th><td class=\"l\">", f);
	json_t *devs = info ? json_object_get(info, "devices") : NULL;
	if (json_array_size(devs) == 0)
		fputs("<span class=\"na\">no device facts recorded</span>", f);
	for (size_t i = 0; i < json_array_size(devs); i++) {
		json_t *dv = json_array_get(devs, i);
		if (i)
			fputs("; ", f);
		kj_html_esc(f, kj_html_jstr(dv, "name") ? kj_html_jstr(dv, "name") : "GPU");
		if (kj_html_jstr(dv, "driver_version")) {
			fputs(", driver ", f);
			kj_html_esc(f, kj_html_jstr(dv, "driver_version"));
		}
		if (kj_html_jnum(dv, "power_limit_mw", &d)) {
			fputs(", power limit ", f);
			kj_html_fig(f, d / 1000, 1, 0, "W");
		}
	}
	fputs("</td></tr>\n<tr><th class=\"l\">started</th><td class=\"l\">", f);
	kj_html_esc(f, info && kj_html_jstr(info, "start_time") ? kj_html_jstr(info, "start_time") : "not recorded");
	fputs("</td></tr>\n<tr><th class=\"l\">duration</th><td class=\"l\">", f);
	kj_html_fig(f, info && kj_html_jnum(info, "duration_s", &d) ? d : 0,
		    info && kj_html_jnum(info, "duration_s", &d), 3, "s");
	fputs("</td></tr>\n<tr><th class=\"l\">ended</th><td class=\"l\">", f);
	kj_html_esc(f, info && kj_html_jstr(info, "end_status") ? kj_html_jstr(info, "end_status") : "not recorded");
	if (info && kj_html_jstr(info, "end_note")) {
		fputs(" — ", f);
		kj_html_esc(f, kj_html_jstr(info, "end_note"));
	}
	const json_t *it = json_object_get(x->j, "iterations");
	fputs("</td></tr>\n<tr><th class=\"l\">iterations</th><td class=\"l\">", f);
	if (json_is_true(json_object_get(it, "whole_run"))) {
		fputs("none found: the whole run is taken as one iteration", f);
	} else {
		fprintf(f, "%lld instances of NVTX range <code>",
			(long long)json_integer_value(json_object_get(it, "instances")));
		kj_html_esc(f, kj_html_jstr(it, "region"));
		fprintf(f, "</code>, %lld skipped as warm-up, %lld measured",
			(long long)json_integer_value(json_object_get(it, "skipped")),
			(long long)json_integer_value(json_object_get(it, "measured")));
		if (x->kept_iter >= 0)
			fprintf(f, "; #%ld kept whole for replay", x->kept_iter);
	}
	fputs("</td></tr>\n", f);
	json_t *counts = info ? json_object_get(info, "counts") : NULL;
	if (counts) {
		fputs("<tr><th class=\"l\">captured</th><td class=\"l\">", f);
		const char *keys[] = {"kernels", "unique_kernels", "memcpys", "memsets", "api_calls",
				      "nvtx_ranges", "allocations", "power_samples", "replay_kernel",
				      "replay_energy", "replay_sequence", NULL};
		for (int k = 0; keys[k]; k++)
			if (kj_html_jnum(counts, keys[k], &d))
				fprintf(f, "%s%s ", k ? ", " : "", keys[k]), kj_html_fig(f, d, 1, 0, NULL);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	json_t *nc = info ? json_object_get(info, "not_captured") : NULL, *ms = json_object_get(x->j, "missing");
	if (json_array_size(nc) + json_array_size(ms)) {
		fputs("<h3>Not captured (as <code>kjoule info</code> and <code>kjoule compare</code> say)</h3><ul>\n", f);
		for (size_t i = 0; i < json_array_size(nc); i++) {
			fputs("<li>", f);
			kj_html_esc(f, json_string_value(json_array_get(nc, i)));
			fputs("</li>\n", f);
		}
		for (size_t i = 0; i < json_array_size(ms); i++) {
			fputs("<li>", f);
			kj_html_esc(f, json_string_value(json_array_get(ms, i)));
			fputs("</li>\n", f);
		}
		fputs("</ul>\n", f);
	}
	fputs("</header>\n", f);
}

/* the cards: compare's means per measured iteration, "not measured" where null */
static void summary(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	const json_t *j = x->j;
	double w = 0, b = 0, i = 0, h = 0, em = 0, eu = 0, ep = 0, ee = 0, ef = 0, efs = 0, k = 0;
	int hw = kj_html_jnum(j, "wall_us", &w) && w > 0;
	kj_html_jnum(j, "busy_us", &b);
	kj_html_jnum(j, "idle_us", &i);
	kj_html_jnum(j, "host_only_us", &h);
	kj_html_jnum(j, "kernels_per_iteration", &k);
	int hem = kj_html_jnum(j, "energy_measured_j", &em), heu = kj_html_jnum(j, "energy_measured_mean_unc_j", &eu);
	int hep = kj_html_jnum(j, "energy_predicted_j", &ep), hee = kj_html_jnum(j, "energy_error_pct", &ee);
	int hef = kj_html_jnum(j, "explained_fraction", &ef), hefs = kj_html_jnum(j, "explained_fraction_sequence", &efs);
	char note[128];
	fputs("<section id=\"summary\"><h2>At a glance (mean per measured iteration)</h2><div class=\"cards\">\n", f);
	card(f, "wall per iteration", w / 1000, hw, 3, "ms", NULL);
	card(f, "GPU busy", hw ? 100 * b / w : 0, hw, 1, "%", "of the wall");
	card(f, "GPU idle inside its span", hw ? 100 * i / w : 0, hw, 1, "%", "of the wall");
	card(f, "host only", hw ? 100 * h / w : 0, hw, 1, "%", "before the first / after the last GPU work");
	card(f, "kernels per iteration", k, 1, 0, NULL, NULL);
	snprintf(note, sizeof(note), "± %.3f J (mean of the measured iterations)", eu);
	card(f, "energy measured", em, hem, 3, "J", hem && heu ? note : NULL);
	double eup = 0;
	int judge = !json_is_false(json_object_get(j, "energy_error_judgeable"));
	kj_html_jnum(j, "energy_measured_mean_unc_pct", &eup);
	double standin = 0, overlap = 0;
	kj_html_jnum(j, "energy_standin_share", &standin);
	kj_html_jnum(j, "kernel_overlap_fraction", &overlap);
	if (judge)
		snprintf(note, sizeof(note), "%+.1f %% against measured", ee);
	else if (json_is_true(json_object_get(j, "energy_measured_too_short")))
		snprintf(note, sizeof(note), "%+.1f %%, not judged: the loop is too short to measure", ee);
	else if (standin > KJ_CMP_STANDIN_JUDGE_FRAC) /* those kernels' replays ran on small integers or zeros */
		snprintf(note, sizeof(note), "%+.1f %%, not judged: %.0f %% of kernel time replayed on stand-in data",
			 ee, 100 * standin);
	else /* a short run: the measured mean is not known well enough to judge the error */
		snprintf(note, sizeof(note), "%+.1f %% against a measurement known only to ± %.0f %%", ee, eup);
	card(f, "energy predicted", ep, hep, 3, "J", hee ? note : NULL);
	char onote[128];
	snprintf(onote, sizeof(onote), "first-order: kernels of several streams overlapped %.0f %% of their time",
		 100 * overlap);
	card(f, "explained fraction (isolated replays)", ef, hef, 3, NULL, overlap > KJ_CMP_OVERLAP_FRAC ? onote : NULL);
	card(f, "explained fraction (in sequence)", efs, hefs, 3, NULL, NULL);
	fputs("</div>\n", f);
	kj_html_source(f, "kernel, memcpy, memset, nvtx_range, replay_*, power_sample tables",
		       kj_html_cmd(x, "compare", "--json"));
	fputs("</section>\n", f);
}

/* one stacked bar per iteration (busy / idle / host only, which sum to its wall) and the mean,
 * then the replay-derived figures with their share of the wall and notes for absent replays */
static void decomposition(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	const struct kj_compare *c = x->c;
	size_t n = c->it.n > 2000 ? 2000 : c->it.n, cols = n + 1;
	static const struct kj_stack_part parts[] = {
		{"GPU busy", C_BUSY}, {"GPU idle inside the span", C_IDLE}, {"host only", C_HOST}};
	double *v = calloc(cols * 3, sizeof(*v));
	char *labs = calloc(cols, 24);
	const char **lab = calloc(cols, sizeof(*lab));
	int *dim = calloc(cols, sizeof(*dim));
	fputs("<section id=\"decomposition\"><h2>Where each iteration's wall time goes</h2>\n", f);
	if (c->it.whole_run)
		kj_html_missing(f, "iterations: no NVTX range repeats, so the whole run is one iteration",
				"wrap each step in an NVTX range (torch.cuda.nvtx.range_push/pop), trace again "
				"with kjoule run, or name one with kjoule report RUN --region NAME");
	if (!v || !labs || !lab || !dim)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct cmp_iter *it = &c->iv[i];
		v[i * 3] = (double)it->busy / 1e3;
		v[i * 3 + 1] = (double)it->idle / 1e3;
		v[i * 3 + 2] = (double)it->host_only / 1e3;
		snprintf(labs + i * 24, 24, "#%zu%s%s", i, it->skipped ? " warm-up" : "",
			 (long)i == x->kept_iter ? " kept" : "");
		lab[i] = labs + i * 24;
		dim[i] = it->skipped;
	}
	double b = 0, id = 0, h = 0;
	kj_html_jnum(x->j, "busy_us", &b);
	kj_html_jnum(x->j, "idle_us", &id);
	kj_html_jnum(x->j, "host_only_us", &h);
	v[n * 3] = b;
	v[n * 3 + 1] = id;
	v[n * 3 + 2] = h;
	lab[n] = "mean";
	kj_chart_stacked(f, "chart-decomposition",
			 "Per iteration: GPU busy / idle inside the GPU span / host only (µs); faded bars are warm-up",
			 "µs", 1100, parts, 3, v, lab, dim, cols);
	if (c->it.n > n)
		fprintf(f, "<p>The first %zu of %zu iterations are drawn; the mean is over all measured.</p>\n",
			n, c->it.n);
	kj_html_source(f, "kernel, memcpy, memset (GPU times), nvtx_range (iterations); wall = busy + idle + host only",
		       kj_html_cmd(x, "compare", "-o DIR  (iterations.csv)"));
	/* the replay-derived figures beside it */
	static const struct {
		const char *key, *label, *cmd;
	} rows[] = {
		{"wall_us", "wall (traced)", NULL},
		{"busy_us", "GPU busy (traced, union)", NULL},
		{"kernel_sum_us", "Σ kernel durations (traced)", NULL},
		{"replay_sum_warm_us", "Σ count × replayed alone, warm L2", "kjoule replay RUN"},
		{"replay_sum_cold_us", "Σ count × replayed alone, cold L2", "kjoule replay RUN"},
		{"replay_sum_sequence_us", "Σ kernels timed inside the replayed iteration", "kjoule replay RUN --sequence"},
		{"sequence_eager_us", "whole iteration replayed in C, eager stream", "kjoule replay RUN --sequence"},
		{"sequence_graph_us", "whole iteration replayed as one CUDA graph", "kjoule replay RUN --sequence --graph"},
		{"framework_host_us", "framework/host cost (wall − eager replay)", "kjoule replay RUN --sequence"},
		{"launch_cost_us", "launch cost (eager − graph replay)", "kjoule replay RUN --sequence --graph"},
		{"predicted_wall_us", "predicted wall (busy+idle+host with isolated replays)", "kjoule replay RUN"},
	};
	fputs("<h3>Replay-derived figures (µs per iteration)</h3>\n<table class=\"kj-table\" id=\"replay-figures\">"
	      "<thead><tr><th class=\"l\">figure</th><th>µs</th><th>vs wall</th></tr></thead><tbody>\n", f);
	double wall = 0;
	int hw = kj_html_jnum(x->j, "wall_us", &wall) && wall > 0;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		double val = 0;
		int known = kj_html_jnum(x->j, rows[r].key, &val);
		fputs("<tr><td class=\"l\">", f);
		kj_html_esc(f, rows[r].label);
		fputs("</td><td>", f);
		kj_html_fig(f, val, known, 1, NULL);
		fputs("</td><td>", f);
		if (known && hw)
			kj_html_fig(f, 100 * val / wall, 1, 1, "%");
		else if (!known && rows[r].cmd)
			fprintf(f, "<code>%s</code>", rows[r].cmd);
		fputs("</td></tr>\n", f);
	}
	static const struct {
		const char *key, *label;
	} fr[] = {{"explained_fraction", "explained fraction (isolated replays: mean of warm and cold)"},
		  {"explained_fraction_sequence", "explained fraction (in-sequence replays)"},
		  {"naive_fraction", "naive fraction: Σ warm replays / wall"},
		  {"sequence_fraction", "sequence fraction: eager replay / wall"}};
	for (size_t r = 0; r < sizeof(fr) / sizeof(fr[0]); r++) {
		double val = 0;
		int known = kj_html_jnum(x->j, fr[r].key, &val);
		fputs("<tr><td class=\"l\">", f);
		kj_html_esc(f, fr[r].label);
		fputs("</td><td>", f);
		kj_html_fig(f, val, known, 3, NULL);
		fputs("</td><td></td></tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	double left_out = 0;
	if (kj_html_jnum(x->j, "sequence_launches_left_out", &left_out) && left_out > 0)
		fprintf(f, "<p>The whole-iteration replays left out %.0f kernel launch(es) that set a CUDA graph"
			   " conditional node's condition: such a kernel runs only inside its graph, so those"
			   " replays lack its time, and the sums keep it at its traced time.</p>\n", left_out);
	kj_html_source(f, "replay_kernel, replay_sequence (docs/analysis-compare.md defines each)", kj_html_cmd(x, "compare", ""));
	if (!c->n_replay_warm_rows)
		kj_html_missing(f, "kernel replays (Σ warm/cold, explained fraction)", kj_html_cmd(x, "replay", ""));
	if (c->seq_eager_ns < 0 && c->seq_graph_ns < 0)
		kj_html_missing(f, "whole-iteration replays (eager and graph)", kj_html_cmd(x, "replay", "--sequence --graph"));
out:
	fputs("</section>\n", f);
	free(v);
	free(labs);
	free(lab);
	free(dim);
}

struct krow {
	json_t *o;
	double e_iter_mj;
};

static int by_energy(const void *a, const void *b)
{
	double x = ((const struct krow *)a)->e_iter_mj, y = ((const struct krow *)b)->e_iter_mj;
	return x < y ? 1 : x > y ? -1 : 0;
}

static double num(const json_t *o, const char *k)
{
	double v;
	return kj_html_jnum(o, k, &v) ? v : -1;
}

/* top kernels by time and by energy, the replayed-vs-traced scatter, compare's disagreements,
 * and the sortable table of max_table_rows kernels with a line summarising the rest */
static void kernels(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	json_t *top = json_object_get(x->j, "top_kernels");
	size_t n = json_array_size(top), nb = n < 15 ? n : 15;
	struct kj_hbar_row *rows = calloc(nb + 1, sizeof(*rows));
	struct krow *kr = calloc(n + 1, sizeof(*kr));
	struct kj_point *pts = calloc(2 * n + 1, sizeof(*pts));
	fputs("<section id=\"kernels\"><h2>Kernels</h2>\n", f);
	if (!rows || !kr || !pts)
		goto out;
	if (n == 0) {
		kj_html_missing(f, "kernels: the measured iterations launched none", NULL);
		goto out;
	}
	static const char *tn[] = {"traced", "alone, warm L2", "alone, cold L2", "in sequence"};
	static const char *tc[] = {C_BUSY, "#e08a2c", "#6aa5d8", "#3b9e5a"};
	for (size_t i = 0; i < nb; i++) {
		json_t *o = json_array_get(top, i);
		double cnt = num(o, "count_per_iteration");
		rows[i].label = kj_html_jstr(o, "name");
		rows[i].v[0] = num(o, "measured_us");
		rows[i].v[1] = num(o, "replay_warm_us") >= 0 ? cnt * num(o, "replay_warm_us") : -1;
		rows[i].v[2] = num(o, "replay_cold_us") >= 0 ? cnt * num(o, "replay_cold_us") : -1;
		rows[i].v[3] = num(o, "replay_sequence_us") >= 0 ? cnt * num(o, "replay_sequence_us") : -1;
	}
	kj_chart_hbars(f, "chart-top-time", "Top kernels by traced time per iteration, with Σ count × replayed time (µs per iteration)",
		       "µs", tn, tc, 4, rows, nb);
	kj_html_source(f, "kernel (traced), replay_kernel (warm, cold, sequence)", kj_html_cmd(x, "compare", "--top 15"));
	size_t ne = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(top, i);
		double e = num(o, "energy_predicted_mj");
		if (e < 0 && num(o, "energy_mj_per_launch") >= 0)
			e = num(o, "energy_mj_per_launch") * num(o, "count_per_iteration");
		if (e >= 0)
			kr[ne++] = (struct krow){o, e};
	}
	if (ne) {
		qsort(kr, ne, sizeof(*kr), by_energy);
		size_t m = ne < 15 ? ne : 15;
		static const char *en[] = {"predicted from its replays", "in situ (as it ran in the program)"};
		static const char *ec[] = {"#c0392b", "#7d3c98"};
		for (size_t i = 0; i < m; i++) {
			rows[i].label = kj_html_jstr(kr[i].o, "name");
			rows[i].v[0] = kr[i].e_iter_mj;
			rows[i].v[1] = num(kr[i].o, "energy_in_situ_mj");
		}
		kj_chart_hbars(f, "chart-top-energy", "Top kernels by energy per iteration (mJ, idle floor included; in situ: the "
			       "predictions scaled so that all kernels sum to the measured energy less idle)",
			       "mJ", en, ec, 2, rows, m);
		kj_html_source(f, "replay_energy × kernel counts; the measured energy",
			       kj_html_cmd(x, "compare", "--json  (top_kernels[].energy_predicted_mj, energy_in_situ_mj)"));
	} else {
		kj_html_missing(f, "energy per kernel (no replay_energy rows)", kj_html_cmd(x, "replay", "--energy"));
	}
	/* scatter of replayed against traced per launch */
	size_t np = 0;
	for (size_t i = 0; i < n && np < 2000; i++) {
		json_t *o = json_array_get(top, i);
		double t = num(o, "measured_mean_us");
		if (num(o, "replay_warm_us") > 0 && t > 0)
			pts[np++] = (struct kj_point){t, num(o, "replay_warm_us"), 0, kj_html_jstr(o, "name")};
		if (num(o, "replay_sequence_us") > 0 && t > 0)
			pts[np++] = (struct kj_point){t, num(o, "replay_sequence_us"), 1, kj_html_jstr(o, "name")};
	}
	if (np) {
		static const char *sn[] = {"alone, warm L2", "in sequence"};
		static const char *sc[] = {"#e08a2c", "#3b9e5a"};
		kj_chart_scatter(f, "chart-scatter", "Replayed vs traced time per launch, per unique kernel (µs, log-log)",
				 "µs", "µs", sn, sc, 2, pts, np);
		kj_html_source(f, "kernel (traced mean), replay_kernel (median); dashed: ±25 %", kj_html_cmd(x, "kernels", ""));
	} else {
		kj_html_missing(f, "replayed kernel times (the scatter of replayed against traced)", kj_html_cmd(x, "replay", ""));
	}
	json_t *dis = json_object_get(x->j, "replay_disagreements");
	if (json_array_size(dis)) {
		fputs("<h3>Replays that disagree with their traced selves (&gt; 25 % off, ≥ 1 % of kernel time)</h3>"
		      "<table class=\"kj-table\" id=\"disagreements\"><thead><tr><th class=\"l\">kernel</th><th>in situ µs</th>"
		      "<th>in sequence µs</th><th>warm µs</th></tr></thead><tbody>\n", f);
		for (size_t i = 0; i < json_array_size(dis); i++) {
			json_t *o = json_array_get(dis, i);
			fputs("<tr><td class=\"name\">", f);
			kj_html_esc(f, kj_html_jstr(o, "name"));
			fputs("</td>", f);
			static const struct kj_html_col disagree_cols[] = {{"in_situ_mean_us", 3},
				{"replay_sequence_us", 3}, {"replay_warm_us", 3}};
			kj_html_num_cells(f, o, disagree_cols, KJ_HTML_NCOLS(disagree_cols), -1);
			fputs("</tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	json_t *alone = json_object_get(x->j, "not_replayable_alone");
	if (json_array_size(alone)) {
		fputs("<h3>Not replayable alone (kept in every sum at their in-situ time)</h3>"
		      "<table class=\"kj-table\" id=\"not-replayable\"><thead><tr><th class=\"l\">kernel</th>"
		      "<th>launches / iter</th><th>in situ µs</th><th class=\"l\">why</th><th class=\"l\">counted as</th>"
		      "</tr></thead><tbody>\n", f);
		for (size_t i = 0; i < json_array_size(alone); i++) {
			json_t *o = json_array_get(alone, i);
			static const struct kj_html_col alone_cols[] = {{"launches_per_iteration", 1},
				{"in_situ_mean_us", 3}};
			fputs("<tr><td class=\"name\">", f);
			kj_html_esc(f, kj_html_jstr(o, "name"));
			fputs("</td>", f);
			kj_html_num_cells(f, o, alone_cols, KJ_HTML_NCOLS(alone_cols), -1);
			fputs("<td class=\"l\">", f);
			kj_html_esc(f, kj_html_jstr(o, "reason"));
			fputs("</td><td class=\"l\">", f);
			kj_html_esc(f, kj_html_jstr(o, "counted_as"));
			fputs("</td></tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	/* the table */
	size_t lim = x->o->max_table_rows > 0 ? (size_t)x->o->max_table_rows : 300, shown = n < lim ? n : lim;
	fprintf(f, "<h3>Unique kernels launched in the measured iterations (%zu; click a header to sort)</h3>\n", n);
	fputs("<div class=\"scroll\"><table class=\"kj-table sortable\" id=\"kernel-table\"><thead><tr>"
	      "<th>#</th><th class=\"l\">kernel</th><th class=\"l\">tier</th><th>launches / iter</th>"
	      "<th>traced µs / iter</th><th>traced µs / launch</th><th>warm µs</th><th>cold µs</th>"
	      "<th>in-seq µs</th><th>predicted µs / iter</th><th>mJ / launch</th><th>mJ / iter</th>"
	      "<th>in-situ mJ / iter</th><th>% of kernel time</th></tr></thead><tbody>\n", f);
	for (size_t i = 0; i < shown; i++) {
		json_t *o = json_array_get(top, i);
		double e = num(o, "energy_mj_per_launch");
		fprintf(f, "<tr><td data-v=\"%zu\">%zu</td>", i + 1, i + 1);
		kj_html_name_cell(f, kj_html_jstr(o, "name"));
		fputs("<td class=\"l\">", f);
		kj_html_esc(f, kj_html_jstr(o, "tier") ? kj_html_jstr(o, "tier") : "?");
		fputs("</td>", f);
		static const struct kj_html_col top_cols[] = {{"count_per_iteration", 1},
			{"measured_us", 2}, {"measured_mean_us", 3}, {"replay_warm_us", 3},
			{"replay_cold_us", 3}, {"replay_sequence_us", 3}, {"predicted_us", 2},
			{"energy_mj_per_launch", 4}};
		kj_html_num_cells(f, o, top_cols, KJ_HTML_NCOLS(top_cols), -1);
		if (e >= 0)
			fprintf(f, "<td data-v=\"%.6g\">%.3f</td>", e * num(o, "count_per_iteration"),
				e * num(o, "count_per_iteration"));
		else
			fputs("<td data-v=\"-1\"><span class=\"na\">—</span></td>", f);
		kj_html_num_cell(f, o, "energy_in_situ_mj", 3, -1);
		kj_html_num_cell(f, o, "share_of_kernel_sum_pct", 2, -1);
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table></div>\n", f);
	if (n > shown) {
		double rest = 0, share = 0;
		for (size_t i = shown; i < n; i++) {
			rest += fmax(0, num(json_array_get(top, i), "measured_us"));
			share += fmax(0, num(json_array_get(top, i), "share_of_kernel_sum_pct"));
		}
		fprintf(f, "<p>The table shows the %zu kernels with the most time; the other %zu take ", shown, n - shown);
		kj_html_fig(f, rest, 1, 1, "µs");
		fputs(" per iteration together (", f);
		kj_html_fig(f, share, 1, 2, "%");
		fputs(" of kernel time).</p>\n", f);
	}
	fputs("<p>— : not measured (no replay row, or no energy replay).</p>\n", f);
	kj_html_source(f, "kernel, unique_kernel, replay_kernel, replay_energy", kj_html_cmd(x, "kernels", "   /   kjoule compare RUN --json --top 100000"));
out:
	fputs("</section>\n", f);
	free(rows);
	free(kr);
	free(pts);
}

/* compare's nested NVTX regions, 300 rows at most */
static void regions(struct kj_html_ctx *x)
{
	FILE *f = x->f;
	json_t *r = json_object_get(x->j, "regions");
	size_t n = json_array_size(r), m = n < 300 ? n : 300;
	fputs("<section id=\"regions\"><h2>NVTX regions inside an iteration</h2>\n", f);
	if (!n) {
		kj_html_missing(f, "NVTX ranges nested inside the iterations", "mark layers with torch.cuda.nvtx.range_push/pop (or nvtx.annotate) and trace again");
		fputs("</section>\n", f);
		return;
	}
	fputs("<table class=\"kj-table sortable\" id=\"regions-table\"><thead><tr><th class=\"l\">range</th><th>depth</th>"
	      "<th>instances / iter</th><th>time µs / iter</th><th>GPU busy µs / iter</th><th>kernels / iter</th></tr></thead><tbody>\n", f);
	for (size_t i = 0; i < m; i++) {
		json_t *o = json_array_get(r, i);
		fputs("<tr><td class=\"name\">", f);
		kj_html_esc(f, kj_html_jstr(o, "name"));
		fputs("</td>", f);
		static const struct kj_html_col region_cols[] = {{"depth", 0},
			{"instances_per_iteration", 2}, {"time_us", 1}, {"gpu_busy_us", 1},
			{"kernels_per_iteration", 1}};
		kj_html_num_cells(f, o, region_cols, KJ_HTML_NCOLS(region_cols), -1);
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	if (n > m)
		fprintf(f, "<p>%zu more ranges: <code>kjoule compare RUN -o DIR</code> writes regions.csv with all.</p>\n", n - m);
	kj_html_source(f, "nvtx_range, kernel", kj_html_cmd(x, "compare", "-o DIR  (regions.csv)"));
	fputs("</section>\n", f);
}

/* instance kept whole by kjoule run (meta params_iteration "NAME#N", N 1-based) when NAME is
 * the report's region, else -1 */
static long kept_iteration(sqlite3 *db, const struct kj_compare *c)
{
	char buf[512];
	if (kj_db_meta_get(db, "params_iteration", buf, sizeof(buf)) || c->it.whole_run)
		return -1;
	char *hash = strrchr(buf, '#');
	if (!hash)
		return -1;
	*hash = 0;
	long n = strtol(hash + 1, NULL, 10);
	if (strcmp(buf, c->it.region) || n < 1 || (size_t)n > c->it.n)
		return -1;
	return n - 1;
}

int kj_html_report_write(sqlite3 *db, const struct kj_html_opts *o, FILE *f)
{
	struct kj_compare_opts co = {.region = o->region, .skip = o->skip, .top = 1000000, .quiet = o->quiet};
	struct kj_compare *c = NULL;
	int rc = kj_compare_compute(db, &co, &c);
	if (rc)
		return rc;
	struct kj_html_ctx x = {.f = f, .db = db, .c = c, .j = kj_compare_json(c), .o = o,
				.run = o->run_path ? o->run_path : "RUN.kjdb"};
	if (!x.j) {
		kj_compare_free(c);
		return KJ_ENOMEM;
	}
	x.kept_iter = kept_iteration(db, c);
	char title[600];
	snprintf(title, sizeof(title), "kjoule report: %s", x.run);
	kj_html_page_begin(f, title);
	header(&x);
	kj_html_capture(&x);
	summary(&x);
	kj_html_ranks(&x);
	decomposition(&x);
	kj_html_energy(&x);
	rc = kj_html_power(&x);
	if (!rc) {
		kernels(&x);
		kj_html_gantt(&x);
		regions(&x);
		kj_html_story(&x);
		fputs("<footer class=\"src\">Written by kjoule report. Every figure is defined in docs/analysis-compare.md"
		      " and docs/report.md; the page loads nothing from the network.</footer>\n", f);
		kj_html_page_end(f);
	}
	json_decref(x.j);
	kj_compare_free(c);
	if (!rc && ferror(f))
		rc = KJ_EIO;
	return rc;
}
