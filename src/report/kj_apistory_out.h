/* kjoule api's outputs: the story object of kj_api_story() (kj_apistory.h) as text, and every
 * event of a run as JSON lines. */
#ifndef KJ_APISTORY_OUT_H
#define KJ_APISTORY_OUT_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>

#include "kj_apistory.h"

/** @brief The text report of a story object from kj_api_story(). */
void kj_api_print(const json_t *story, FILE *f);

/** @brief Every API call, kernel, copy, memset, NVTX range and allocation as one JSON object
 *  per line: {type, name, ts (us after the run's first event), duration_us, size, stream}.
 *  Streams row by row. @return 0, KJ_ENOTFOUND, KJ_EDB, KJ_EIO. */
int kj_api_jsonl(sqlite3 *db, FILE *f);

#endif
