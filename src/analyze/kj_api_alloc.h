/* kjoule api's allocation figures and its microsecond values (shared by kj_apistory.c). */
#ifndef KJ_API_ALLOC_H
#define KJ_API_ALLOC_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

/** @brief ns as microseconds rounded to whole ns (JSON real), or null when not finite. */
json_t *kj_api_us_json(double ns);

/**
 * @brief The run's allocations as kjoule api's "allocations" object: counts, bytes, the peak of
 *        live bytes and when (us after t0), the live bytes after loading (at load_end; null when
 *        load_end < 0 or nothing was live by then), at the end, and up to 20 timeline points.
 *        An empty object when the allocations cannot be read.
 */
json_t *kj_api_allocations_json(sqlite3 *db, int64_t t0, int64_t load_end);

#endif
