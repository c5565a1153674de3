/* What a run database holds, as one JSON object (`kjoule info --json`, the HTML report's run
 * section): command, start, duration and end, processes, devices, row counts, the iteration and
 * its candidates, graph launches and node kinds, what was not captured, recorded problems. */
#ifndef KJ_RUN_INFO_H
#define KJ_RUN_INFO_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>

/** @brief The facts of the run in db (path: the file name it reports) as a new JSON object the
 *  caller owns, or NULL when out of memory. shared_gpu (ownership taken, may be NULL) goes in
 *  under "shared_gpu": the reading of the watch for other processes on the run's GPUs, which a
 *  floor above this one makes (kj_shared_json). Missing tables and columns of older runs read as
 *  null or are named under "not_captured"; nothing is written to db. */
json_t *kj_run_info_json(sqlite3 *db, const char *path, json_t *shared_gpu);

/** @brief The i-th key of the object's "counts" (one per table, in the order they are reported),
 *  or NULL past the last; "module_bytes" is not among them. */
const char *kj_run_info_count_key(size_t i);

#endif
