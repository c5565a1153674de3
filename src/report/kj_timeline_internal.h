/* Internals of kjoule timeline shared by its files: the tier tl_styles and lanes the ASCII and SVG
 * views draw with, the selection of what to draw, and the three writers. */
#ifndef KJ_TIMELINE_INTERNAL_H
#define KJ_TIMELINE_INTERNAL_H

#include "kj_timeline.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "kj_acts.h"
#include "kj_escape.h"

struct tier_style {
	const char *tier;
	char ch;
	const char *color;
};

#define N_STYLES 10
extern const struct tier_style *const tl_styles; /* N_STYLES of them */
#define STYLE_UNKNOWN 6 /* "other" */

struct lane {
	int64_t pid, device, stream;
};

/* kj_timeline.c */
size_t tl_lane_find(const struct lane *l, size_t n, const struct kj_act *a);
int tl_pick(const struct kj_acts *acts, const struct kj_iters *it, long sel_iter, int64_t *lo, int64_t *hi, size_t **idx_out, size_t *n_out, struct lane **lanes_out, size_t *nl_out);
/* kj_timeline_ascii.c */
int timeline_ascii(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f, const struct kj_acts *acts, const unsigned char *sty, const struct kj_iters *it, long sel_iter, int64_t t0, int64_t lo, int64_t hi);
/* kj_timeline_chrome.c */
int timeline_chrome(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f, int64_t t0, int64_t t1, int64_t lo, int64_t hi);
/* kj_timeline_svg.c */
int timeline_svg(sqlite3 *db, const struct kj_timeline_opts *o, FILE *f, const struct kj_acts *acts, const unsigned char *sty, const struct kj_names *names, const struct kj_iters *it, long sel_iter, int64_t t0, int64_t lo, int64_t hi);

#endif
