/* kjoule diff's outputs: the object of kj_diff_compute() (kj_diff.h) as text and as one HTML
 * page. */
#ifndef KJ_DIFF_OUT_H
#define KJ_DIFF_OUT_H

#include <jansson.h>
#include <stdio.h>

#include "kj_diff.h"

/** @brief The text form of a diff object. */
void kj_diff_print(const json_t *d, FILE *f);

/** @brief The diff as one self-contained HTML page. @return 0 or KJ_EIO. */
int kj_diff_html(const json_t *d, FILE *f);

#endif
