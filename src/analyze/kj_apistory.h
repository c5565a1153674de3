/* kjoule api: the CUDA API-call story of a run (the tracing guide's questions), computed as one
 * JSON object; report's kj_apistory_out.h writes it. */
#ifndef KJ_APISTORY_H
#define KJ_APISTORY_H

#include <jansson.h>
#include <sqlite3.h>

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

#endif
