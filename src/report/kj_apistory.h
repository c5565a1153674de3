/* kjoule api: the CUDA API-call story of a run (the tracing guide's questions). */
#ifndef KJ_APISTORY_H
#define KJ_APISTORY_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>

struct kj_api_opts {
	const char *region; /* iteration region (NULL: default, as compare) */
	int skip;           /* warm-up iterations (< 0: default) */
	int gaps;           /* longest GPU idle periods to list (default 10) */
	int quiet;
};

/**
 * @brief Answer the tracing guide's questions from a run: calls during loading, kernels per
 *        iteration, bytes copied each way, time per stage, synchronisation, longest GPU idle
 *        periods with the CPU's API calls meanwhile, allocations, counts and time per API.
 *        Runs traced without --api get every answer that kernels, copies and allocations give.
 * @param out receives a JSON object (docs/analysis-compare.md); caller owns it.
 * @return 0, KJ_ENOTFOUND (empty run), KJ_EINVAL, KJ_EDB, KJ_ENOMEM.
 */
int kj_api_story(sqlite3 *db, const struct kj_api_opts *o, json_t **out);

/** @brief The text report of a story object from kj_api_story(). */
void kj_api_print(const json_t *story, FILE *f);

/** @brief Every API call, kernel, copy, memset, NVTX range and allocation as one JSON object
 *  per line: {type, name, ts (us after the run's first event), duration_us, size, stream}.
 *  Streams row by row. @return 0, KJ_ENOTFOUND, KJ_EDB, KJ_EIO. */
int kj_api_jsonl(sqlite3 *db, FILE *f);

#endif
