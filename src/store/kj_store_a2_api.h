/* Typed readers for `kjoule api` (src/analyze/kj_apistory.c): the run's first API call, first
 * allocation and process start, the token/decode NVTX ranges, the API calls and the allocations.
 * Readers that take a callback call it once per row and stop at (and return) its first non-zero
 * return. */
#ifndef KJ_STORE_A2_API_H
#define KJ_STORE_A2_API_H

#include <sqlite3.h>
#include <stdint.h>

/** The run's boundaries `kjoule api` starts its stages from; each -1 where unknown. */
struct kj_store_a2_api_bounds {
	int64_t first_api_ns;      /* the first API call's start */
	int64_t first_alloc_ns;    /* the first allocation, else the first API call named *Alloc* or *MemCreate* */
	int64_t process_start_ns;  /* the first process's start */
};

/** @brief Fill *b (quiet: a table an older run lacks reads as unknown). */
void kj_store_a2_api_bounds(sqlite3 *db, struct kj_store_a2_api_bounds *b);

/**
 * @brief The closed NVTX ranges whose name holds "token" or "decode" (any case), by start: name
 *        (valid during the callback) and duration.
 * @return 0, the callback's return, or KJ_EDB (message printed).
 */
int kj_store_a2_token_ranges_each(sqlite3 *db, int (*fn)(void *ud, const char *name, int64_t duration_ns),
				  void *ud);

/**
 * @brief The API calls with a start, by start: name (or NULL; valid during the callback), start,
 *        and end (the start where NULL).
 * @return 0, also when a row cannot be read (the read stops and "database: reading API calls:
 *         ..." is printed); the callback's return; KJ_EDB when the query cannot be prepared.
 */
int kj_store_a2_api_calls_each(sqlite3 *db, int (*fn)(void *ud, const char *name, int64_t start_ns,
						       int64_t end_ns),
			       void *ud);

/**
 * @brief The allocations with an allocation time: alloc_ns, whether it was freed (and free_ns),
 *        bytes (0 where NULL).
 * @return 0, the callback's return, or KJ_EDB (message printed).
 */
int kj_store_a2_allocations_each(sqlite3 *db, int (*fn)(void *ud, int64_t alloc_ns, int has_free, int64_t free_ns,
							 int64_t bytes),
				 void *ud);

#endif
