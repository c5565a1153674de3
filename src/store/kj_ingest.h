/* Ingest: turns the spool files the injection library wrote (one per traced process) into rows
 * of a run database. Runs in the `kjoule run` parent, never inside the traced program. */
#ifndef KJ_INGEST_H
#define KJ_INGEST_H

#include <sqlite3.h>
#include <stdint.h>

struct kj_ingest_stats {
	int64_t processes, kernels, memcpys, memsets, api_calls, allocations, nvtx_ranges;
	int64_t modules, module_bytes, params, unique_kernels, truncated_files, dropped_records;
};

/**
 * @brief Ingest one spool file into db (the caller holds the transaction).
 * Every complete record is kept; a file cut short inside a record (the process was killed) is
 * counted in stats->truncated_files and noted in the problem table.
 * @return 0, KJ_EIO (unreadable file), KJ_EINVAL (not a spool file), KJ_EDB.
 */
int kj_ingest_file(sqlite3 *db, const char *path, struct kj_ingest_stats *stats);

/**
 * @brief Ingest every p<pid>.spool file of a directory, then fill unique_kernel.launches.
 * @return 0 or the first error; files that fail are named on stderr and the rest still ingested.
 */
int kj_ingest_dir(sqlite3 *db, const char *dir, struct kj_ingest_stats *stats);

/** @brief Format a 16-byte CUDA/NVML UUID as NVML does: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
void kj_uuid_format(const unsigned char uuid[16], char out[41]);

#endif
