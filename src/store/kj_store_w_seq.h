/* Typed readers of the run database for the replay worker's --sequence (an iteration's operations
 * in order, its copies' addresses and kept bytes) and its --snapshot and --verify (the device
 * buffers a run saved before and after launches). */
#ifndef KJ_STORE_W_SEQ_H
#define KJ_STORE_W_SEQ_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_store_w_rows.h"

/** One operation of an iteration (sequence_op), as kj_store_seq_ops_next hands it out; the
 *  strings live until the next call. */
struct kj_store_seq_op {
	const char *op;         /* kernel, memcpy, memset, event_record, event_wait; NULL when NULL */
	const char *kind;       /* a copy's kind (HtoD, DtoH, ...); NULL when NULL */
	const char *host_kinds; /* its memcpy's "src_kind,dst_kind"; NULL when unknown */
	int64_t stream_id;      /* 0 when NULL */
	int64_t event_id;       /* -1 when NULL */
	int64_t launch_params_id; /* -1 when NULL */
	int64_t bytes;          /* 0 when NULL */
	int64_t pid;            /* -1 when NULL */
	int has_pid;            /* pid not NULL */
	int64_t correlation;    /* -1 when NULL */
	int has_address;        /* a memset's destination is known (runs before memset.address: never) */
	uint64_t address;       /* then: its destination, value and element size (NULL: 0, 0, 1) */
	uint32_t value;
	int element_bytes;
};

/** @brief The operations of iteration with ordinals first..last, by ordinal then id, with each
 *  memset's destination where the run has them (a graph's memsets named by row, memset_id).
 *  @return 0 with *out (close with kj_store_rows_close), KJ_EDB (SQLite's message printed) or
 *  KJ_ENOMEM. */
int kj_store_seq_ops_open(sqlite3 *db, int64_t iteration, int64_t first, int64_t last,
			  struct kj_store_rows **out);
/** @brief The next operation into *o. @return 1, or 0 at the end. */
int kj_store_seq_ops_next(struct kj_store_rows *r, struct kj_store_seq_op *o);

/** An eager copy's recorded addresses and kept bytes, as kj_store_seq_copy_get hands it out. */
struct kj_store_copy {
	uint64_t dst, src;     /* 0 when NULL */
	const void *data;      /* the bytes the run kept (copy_data), valid until the next get */
	int data_bytes;        /* their size (0 when none) */
	int data_is_blob;      /* 1 when the kept bytes are a blob */
};

/** @brief A lookup of eager copies (not of a graph) by correlation: *out NULL (quietly) when the
 *  run records no copy addresses (memcpy.dst_address) or its schema refuses the query.
 *  @return 0 (close *out with kj_store_rows_close). */
int kj_store_seq_copies_open(sqlite3 *db, struct kj_store_rows **out);
/** @brief The first copy (by id) with correlation corr of process pid (< 0: any) into *c.
 *  @return 1, or 0 when there is none. */
int kj_store_seq_copy_get(struct kj_store_rows *r, int64_t corr, int64_t pid, struct kj_store_copy *c);

/** A saved device buffer (snapshot row); codec and data live until the next call. */
struct kj_store_snap_row {
	int64_t id;
	uint64_t address;
	size_t bytes;          /* the buffer's size (decompressed) */
	int has_correlation;   /* the launch it was saved around is known */
	int64_t correlation;
	const char *codec;     /* "zstd" or NULL (raw) */
	const void *data;      /* as stored */
	size_t len;
};

/** @brief Where the saved before-launch buffers of process pid (< 0: any; rows without a pid
 *  count for all) lie, without their data: those of the launch with correlation corr last, then
 *  by id (runs before snapshot phases: every row). *out NULL (quietly) when the run has no
 *  snapshot table. @return 0 (close *out with kj_store_rows_close). */
int kj_store_snap_places_open(sqlite3 *db, int64_t pid, int64_t corr, struct kj_store_rows **out);
/** @brief The next place into *s (id, address, bytes, correlation; no data). @return 1, or 0. */
int kj_store_snap_places_next(struct kj_store_rows *r, struct kj_store_snap_row *s);

/** @brief A lookup of snapshot rows' data by id; *out NULL (quietly) when the run has none.
 *  @return 0 (close *out with kj_store_rows_close). */
int kj_store_snap_data_open(sqlite3 *db, struct kj_store_rows **out);
/** @brief Row id's address, bytes, codec and data into *s. @return 1, or 0 when there is none. */
int kj_store_snap_data_get(struct kj_store_rows *r, int64_t id, struct kj_store_snap_row *s);

/** @brief The buffers saved after the launch (pid, corr), with data, by id.
 *  @return 0 with *out, KJ_EDB (SQLite's message printed: a run without the table) or KJ_ENOMEM. */
int kj_store_snap_after_open(sqlite3 *db, int64_t pid, int64_t corr, struct kj_store_rows **out);
/** @brief The next buffer into *s (address, bytes, codec, data). @return 1, or 0 at the end. */
int kj_store_snap_after_next(struct kj_store_rows *r, struct kj_store_snap_row *s);

#endif
