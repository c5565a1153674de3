/* A --capture run in words and JSON (kjoule info, compare): the captured iterations beside the
 * whole run's, and every run's trace size per launch. */
#ifndef KJ_CAPTURE_OUT_H
#define KJ_CAPTURE_OUT_H

#include <jansson.h>
#include <stdio.h>

#include "kj_capture_stats.h"

/** @brief What a capture status means, in the words info and the report page use ("nothing was
 *  captured …" for never_opened); NULL for "captured" or a status not known. */
const char *kj_capture_status_words(const char *status);
/** @brief The trace size line (every run) and, for a --capture run, its capture block. */
void kj_capture_print(const struct kj_capture_stats *s, FILE *f);

/** The verdict on the captured iterations' energy against the whole run's, in words (the text,
 *  the page and the JSON say the same): within their bounds, not judged (bounds too wide), or
 *  outside them, and then why where it can be told: the captured iterations ran slower than the
 *  run's by more than the bounds (tracing's cost inside the window), or they are not the run's
 *  typical ones. Only for s->agreement_known. */
const char *kj_capture_agreement_words(const struct kj_capture_stats *s);
/** @brief The same as JSON: {"trace_size": {...}, "capture": {...} (capture runs only)}; values
 *  not measured are null with a "why". Returns a new reference, NULL when out of memory. */
json_t *kj_capture_json(const struct kj_capture_stats *s);

#endif
