/* Internals of the HTML writers (report and diff pages): escaping, numbers, the page frame,
 * and the SVG chart primitives. */
#ifndef KJ_HTML_INTERNAL_H
#define KJ_HTML_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "kj_escape.h" /* kj_html_esc */

/* ---- kj_html_page.c ---- */

/** @brief The number of a JSON member (integer or real) into *v; 0 when null/absent. */
int kj_html_jnum(const json_t *o, const char *key, double *v);
/** @brief The string member key of o, or NULL when absent or not a string. */
const char *kj_html_jstr(const json_t *o, const char *key);
/** @brief A sortable table cell with the number member key of o (prec decimals, thousands
 *  grouped), or a dash when absent; data-v holds the number, or na_key to sort the dash by. */
void kj_html_num_cell(FILE *f, const json_t *o, const char *key, int prec, double na_key);
/** A numeric column of a table: the member of each row's object and its decimals. */
struct kj_html_col {
	const char *key;
	int prec;
};
/** @brief kj_html_num_cell for each of the n columns, in order. */
void kj_html_num_cells(FILE *f, const json_t *o, const struct kj_html_col *cols, size_t n, double na_key);
#define KJ_HTML_NCOLS(a) (sizeof(a) / sizeof((a)[0]))
/** @brief A figure: "12,345.6 unit" with prec decimals, or "not measured" when !known or
 *  not finite. */
void kj_html_fig(FILE *f, double v, int known, int prec, const char *unit);
/** @brief The page's head (title, inline CSS, no external resource) and opening body. */
void kj_html_page_begin(FILE *f, const char *title);
/** @brief The sorting/hover script, the self-check, and the closing tags. */
void kj_html_page_end(FILE *f);
/** @brief A note box saying what is missing and the command that gets it (cmd may be NULL). */
void kj_html_missing(FILE *f, const char *what, const char *cmd);
/** @brief A table cell with a kernel name: cut to 110 characters, the whole name on hover. */
void kj_html_name_cell(FILE *f, const char *name);
/** @brief "Source: table … — re-create: cmd" line under a chart. */
void kj_html_source(FILE *f, const char *tables, const char *cmd);

/* ---- kj_html_chart.c ---- */

/** One series of a stacked bar: its name and colour. */
struct kj_stack_part {
	const char *name, *color;
};

/**
 * @brief Vertical stacked bars, one per column: v[col * n_parts + part] >= 0 (values not finite
 *        are drawn as 0 and flagged in the title), width in pixels. label[col] under every bar when they fit;
 *        dim[col] != 0 draws the bar faded (warm-up). The y axis is in unit.
 */
void kj_chart_stacked(FILE *f, const char *id, const char *title, const char *unit, double width,
		      const struct kj_stack_part *parts, size_t n_parts, const double *v,
		      const char *const *label, const int *dim, size_t n_cols);

/** One bar group of a horizontal grouped-bar chart: a label and up to 4 values (< 0: none). */
struct kj_hbar_row {
	const char *label;
	double v[4];
};

/** @brief Horizontal grouped bars (one row per label, series named by names/colors). */
void kj_chart_hbars(FILE *f, const char *id, const char *title, const char *unit,
		    const char *const *names, const char *const *colors, size_t n_series,
		    const struct kj_hbar_row *rows, size_t n_rows);

/** One point of a scatter: x, y > 0 (log axes), a series index and a label. */
struct kj_point {
	double x, y;
	int series;
	const char *label;
};

/** @brief Log-log scatter with the y = x line and a ±25 % band; points <= 0 are left out. */
void kj_chart_scatter(FILE *f, const char *id, const char *title, const char *xunit,
		      const char *yunit, const char *const *series, const char *const *colors,
		      size_t n_series, const struct kj_point *p, size_t n);

/** @brief Opens a chart: <svg class="kj-chart" id=…> w by h pixels, with its title on it. */
void kj_chart_begin(FILE *f, const char *id, const char *title, double w, double h);
/** @brief Horizontal grid lines and their labels every step from 0 to top, for a plot area
 *  x0..x0+pw wide and y0..y0+ph high (0 at the bottom). */
void kj_chart_y_grid(FILE *f, double x0, double pw, double y0, double ph, double top, double step);
/** @brief The y axis' unit, written upwards at the left of a plot area y0..y0+ph high. */
void kj_chart_y_unit(FILE *f, double y0, double ph, const char *unit);

/** @brief "nice" tick step for a range of length span with about n ticks. */
double kj_chart_tick(double span, int n);

/* ---- the report page (kj_html_report.c and its sections, kj_html_<section>.c) ---- */
#include <sqlite3.h>
struct kj_compare;
struct kj_html_opts;

/** What every section of the report page reads. */
struct kj_html_ctx {
	FILE *f;
	sqlite3 *db;
	const struct kj_compare *c;
	json_t *j;          /* kj_compare_json(c) */
	const struct kj_html_opts *o;
	const char *run;    /* run path as given */
	long kept_iter;     /* 0-based instance kept whole by kjoule run, or -1 */
};

/** @brief "kjoule SUB RUN ARGS" for source lines (args NULL or "": none); a static buffer,
 *  valid until the next call. */
const char *kj_html_cmd(const struct kj_html_ctx *x, const char *sub, const char *args);
/** @brief The capture section of a --capture run (what was captured, its status, the whole
 *  run's iterations beside the captured ones); nothing for other runs. */
void kj_html_capture(struct kj_html_ctx *x);
/** @brief The ranks and job section of a run with two GPU processes or more (compare's job);
 *  nothing for other runs. */
void kj_html_ranks(struct kj_html_ctx *x);
/** @brief The gantt of the kept iteration (else the first measured), or a note why not. */
void kj_html_gantt(struct kj_html_ctx *x);
/** @brief The run's story: stages, CUDA API calls by time, longest GPU idle periods. */
void kj_html_story(struct kj_html_ctx *x);
/** @brief The energy section: measured per iteration against predicted, split by tier + idle. */
void kj_html_energy(struct kj_html_ctx *x);
/** @brief The power-trace section (whole run and the iterations' window), iterations marked. */
int kj_html_power(struct kj_html_ctx *x);

#endif
