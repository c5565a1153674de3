/* kjoule timeline: Chrome/Perfetto trace JSON (streamed), terminal ASCII and SVG gantt. */
#ifndef KJ_TIMELINE_H
#define KJ_TIMELINE_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

enum kj_timeline_format { KJ_TL_CHROME, KJ_TL_ASCII, KJ_TL_SVG };

struct kj_timeline_opts {
	int format;            /* enum kj_timeline_format */
	int has_from, has_to;  /* window bounds given (ns after the run's first event) */
	int64_t from_ns, to_ns;
	long iteration;        /* >= 0: the window of that iteration (0-based, warm-up included) */
	const char *region;    /* iteration region (NULL: default, as compare) */
	int width;             /* ascii: columns (default 100); svg: pixels (default 1400) */
	int quiet;
	const char *run_path;  /* for titles and metadata */
};

/**
 * @brief Write the timeline of a run in the chosen format to f.
 * chrome streams row by row (memory does not grow with the run except for a launch map of
 * correlation ids); ascii and svg show one window (default: the first measured iteration).
 * @return 0, KJ_ENOTFOUND (empty run, iteration absent), KJ_EINVAL, KJ_EDB, KJ_ENOMEM, KJ_EIO.
 */
int kj_timeline_write(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f);

#endif
