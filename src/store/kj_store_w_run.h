/* Typed writers and readers of the run database for the commands that make or extend a run
 * (`kjoule run`, ingest, power) and for the run facts that predict and pipeline read: the
 * transaction a command writes in, the series' run ranges, the device names, the idle power. */
#ifndef KJ_STORE_W_RUN_H
#define KJ_STORE_W_RUN_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/** @brief Open the transaction a command writes its rows in (BEGIN). Prints SQLite's message on
 *  failure. @return 0 or KJ_EDB. */
int kj_write_begin(sqlite3 *db);

/** @brief Open it for a bulk load into a new file nobody else reads: no journal, no sync, then
 *  BEGIN, in one step. Prints SQLite's message on failure. @return 0 or KJ_EDB. */
int kj_write_begin_bulk(sqlite3 *db);

/** @brief No journal and no sync for the rest of this handle's life (a new file that is renamed
 *  into place only when complete). Prints SQLite's message on failure. @return 0 or KJ_EDB. */
int kj_write_unjournaled(sqlite3 *db);

/** @brief Commit what kj_write_begin* opened. Prints SQLite's message on failure.
 *  @return 0 or KJ_EDB. */
int kj_write_commit(sqlite3 *db);

/** One run of a `kjoule run --runs N --warmup W` series, as a top-level NVTX range. */
struct kj_store_run_range {
	int64_t pid;      /* the run's process (also its thread) */
	int64_t start_ns, end_ns;
	int warmup;       /* 1: named kjoule.warmup, else kjoule.run */
};

/** @brief Insert the runs of a series into nvtx_range (domain kjoule, depth 0, kind 'run'), so
 *  that compare takes them as iterations. A row SQLite refuses is skipped quietly.
 *  @return 0, or KJ_EDB (with SQLite's message printed) when the statement cannot be prepared. */
int kj_store_run_ranges_add(sqlite3 *db, const struct kj_store_run_range *r, size_t n);

/** @brief The run's distinct GPU names in device id order, joined by ", ", into buf; "" when the
 *  run lists none or the query fails (SQLite's message printed then). */
void kj_store_device_names(sqlite3 *db, char *buf, size_t len);

/** The first idle_power row (by device id). */
struct kj_store_idle {
	double median_mw;  /* 0 when the column is NULL */
	char source[256];  /* "" when NULL */
};

/** @brief The first idle_power row (by device id) into *out.
 *  @return 1 with *out filled, 0 when the table is empty, KJ_EDB when it cannot be read (SQLite's
 *  message printed). */
int kj_store_idle_first(sqlite3 *db, struct kj_store_idle *out);

#endif
