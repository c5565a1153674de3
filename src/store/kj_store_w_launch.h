/* Typed readers of the run database for the replay worker (kjoule-replay-worker): one captured
 * launch, the allocations live at it, the modules that define its function, the memsets before
 * it, and the device it ran on. */
#ifndef KJ_STORE_W_LAUNCH_H
#define KJ_STORE_W_LAUNCH_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_store_w_rows.h"

/** @brief The device of the run's first process (process_device, by pid and ordinal), or dflt
 *  when it lists none. The query failing prints SQLite's message and gives dflt. */
int64_t kj_store_first_process_device(sqlite3 *db, int64_t dflt);

/** One captured launch with its kernel's name and geometry. */
struct kj_store_launch {
	char *mangled;        /* owned */
	int64_t pid, launch_ns, correlation, unique_id, stream_id; /* -1 NULL */
	unsigned grid[3], block[3], cluster[3]; /* the launch's, else its unique kernel's (1, 1, 0) */
	unsigned shmem;       /* dynamic shared memory: the launch's, else the unique kernel's, else 0 */
	int regs, smem_static;         /* -1 unknown */
	int shmem_executed, carveout;  /* -1 unknown (older runs lack the columns) */
	int cooperative;      /* 1 launched cooperatively */
	char module_hash[40]; /* the module its function came from, as traced; "" unknown */
	uint8_t *blob;        /* owned, blob_len + 8 bytes: the parameter block */
	size_t blob_len;
	char *layout;         /* owned; NULL when NULL */
};

/** @brief Launch lp_id's row (lp_id < 0: unique kernel `unique`'s first captured launch, one whose
 *  buffers were snapshotted first, plain captures before --params-iteration ones) into *out.
 *  Columns an older run lacks read as unknown (kj_db_caps).
 *  @return 0 (free with kj_store_launch_free), KJ_ENOTFOUND (no such launch), KJ_EDB (SQLite's
 *  message printed; sqlite3_errmsg(db) still says why) or KJ_ENOMEM; *out is empty on failure. */
int kj_store_launch_read(sqlite3 *db, int64_t unique, int64_t lp_id, struct kj_store_launch *out);

/** @brief Free what kj_store_launch_read allocated in l, and empty it. */
void kj_store_launch_free(struct kj_store_launch *l);

/** Called per allocation; a non-zero return stops the walk and is returned. */
typedef int (*kj_store_alloc_fn)(int64_t id, uint64_t address, uint64_t bytes, void *ud);

/** @brief The allocations of process pid (< 0: any) live at at_ns (< 0: all), with an address and
 *  bytes above 0, by allocation time then id. A graph memory node's allocation (kind 'graph') is
 *  live at any time before its free: it is recorded when its graph is launched, after the
 *  capture-time launches of the kernels that use it.
 *  @return 0, fn's non-zero return, or KJ_EDB (SQLite's message printed; sqlite3_errmsg(db)). */
int kj_store_live_allocations(sqlite3 *db, int64_t pid, int64_t at_ns, kj_store_alloc_fn fn, void *ud);

/** A captured module, as kj_store_modules_next hands it out (valid until the next call). */
struct kj_store_module {
	const char *hash, *format, *codec;
	size_t bytes;         /* its image's size; 0 when NULL */
	const void *data;     /* its stored (maybe compressed) image */
	size_t len;
};

/** @brief The modules with data that define function mangled: module_hash's first (NULL or "":
 *  none), then the most recently loaded at or before before_ns (< 0: any time) first, those never
 *  loaded last, then by hash. @return 0 with *out (close with kj_store_rows_close), or KJ_EDB
 *  (SQLite's message printed). */
int kj_store_modules_open(sqlite3 *db, const char *mangled, int64_t before_ns, const char *module_hash,
			  struct kj_store_rows **out);
/** @brief The next module into *m. @return 1, or 0 at the end. */
int kj_store_modules_next(struct kj_store_rows *r, struct kj_store_module *m);

/** A memset as kj_store_premem_next hands it out. */
struct kj_store_memset {
	uint64_t address;
	uint32_t value;
	int element_bytes;
	size_t bytes;
};

/** @brief The memsets the program made just before a launch (pid, stream, correlation, unique
 *  kernel) on its stream, into buffers: graph 1: those of the same graph launch after the kernel
 *  before it ended and before it started (by start); graph 0: those issued after the previous
 *  kernel on the stream (by correlation). Only memsets with a destination.
 *  @return 0 with *out, which is NULL (quietly) when the run's schema refuses the query. */
int kj_store_premem_open(sqlite3 *db, int graph, int64_t pid, int64_t stream, int64_t corr, int64_t unique,
			 struct kj_store_rows **out);
/** @brief The next memset into *m. @return 1, or 0 at the end. */
int kj_store_premem_next(struct kj_store_rows *r, struct kj_store_memset *m);

/** @brief 1 when a kernel of process pid with correlation corr ran in a graph (a graph node);
 *  0 when none did or the run cannot tell (quiet). */
int kj_store_launch_in_graph(sqlite3 *db, int64_t pid, int64_t corr);

#endif
