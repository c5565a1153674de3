/* kjoule report: one self-contained HTML page per run (inline SVG charts, a little plain JS, no
 * network), built from compare's figures, the run's power samples, the gantt and the API story. */
#ifndef KJ_HTML_H
#define KJ_HTML_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>

struct kj_html_opts {
	const char *run_path;  /* shown in the title and in every "re-create with" command */
	const char *region;    /* iteration region (NULL: compare's default) */
	int skip;              /* warm-up instances (< 0: compare's default) */
	int whole_skip;        /* a --capture run's whole-run set: first instances left out (< 0: skip) */
	const json_t *info;    /* `kjoule info --json` object for the header, or NULL */
	int max_table_rows;    /* kernel-table rows written (<= 0: 300); the rest are summarised */
	int quiet;             /* 1: compare's warnings off */
};

/**
 * @brief Write the report page of a run to f. Every chart says its unit and the command that
 *        re-creates its numbers; a part the run lacks (replays, power, iterations, API calls)
 *        becomes a note naming the command that would measure it. No NaN or inf is written.
 * @return 0, or the error of kj_compare_compute (message printed), KJ_ENOMEM, KJ_EDB, KJ_EIO.
 */
int kj_html_report_write(sqlite3 *db, const struct kj_html_opts *o, FILE *f);

#endif
