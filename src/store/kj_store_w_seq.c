/* Readers of kj_store_w_seq.h. */
#include "kj_store_w_seq.h"

#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_store_w_internal.h"

int kj_store_seq_ops_open(sqlite3 *db, int64_t iteration, int64_t first, int64_t last,
			  struct kj_store_rows **out)
{
	/* memset destinations where the run has them (runs before memset.address existed: none); a
	 * graph's memsets share their launch's correlation and are named by row (memset_id) */
	sqlite3_stmt *st = kj_store_prepare_quiet(db,
			   "SELECT s.op, s.stream_id, s.event_id, s.launch_params_id, s.bytes, s.kind,"
			   " (SELECT m.src_kind || ',' || m.dst_kind FROM memcpy m WHERE m.correlation_id ="
			   "  s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1), s.pid, s.correlation_id,"
			   " m.address, m.value, m.element_bytes"
			   " FROM sequence_op s LEFT JOIN memset m ON s.op = 'memset' AND m.id = coalesce(s.memset_id,"
			   "  (SELECT m2.id FROM memset m2 WHERE m2.correlation_id = s.correlation_id"
			   "   AND (s.pid IS NULL OR m2.pid = s.pid) ORDER BY m2.id LIMIT 1))"
			   " WHERE s.iteration = ? AND s.ordinal BETWEEN ? AND ?"
			   " ORDER BY s.ordinal, s.id");
	*out = NULL;
	if (!st)
		st = kj_store_prepare_quiet(db,
			   "SELECT s.op, s.stream_id, s.event_id, s.launch_params_id, s.bytes, s.kind,"
			   " (SELECT m.src_kind || ',' || m.dst_kind FROM memcpy m WHERE m.correlation_id ="
			   "  s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1), s.pid, s.correlation_id,"
			   " (SELECT m.address FROM memset m WHERE m.correlation_id = s.correlation_id"
			   "  AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1),"
			   " (SELECT m.value FROM memset m WHERE m.correlation_id = s.correlation_id"
			   "  AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1),"
			   " (SELECT m.element_bytes FROM memset m WHERE m.correlation_id = s.correlation_id"
			   "  AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1)"
			   " FROM sequence_op s WHERE s.iteration = ? AND s.ordinal BETWEEN ? AND ?"
			   " ORDER BY s.ordinal, s.id");
	if (!st && kj_db_prepare(db,
				 "SELECT s.op, s.stream_id, s.event_id, s.launch_params_id, s.bytes, s.kind,"
				 " (SELECT m.src_kind || ',' || m.dst_kind FROM memcpy m WHERE m.correlation_id ="
				 "  s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1), s.pid, s.correlation_id"
				 " FROM sequence_op s WHERE s.iteration = ? AND s.ordinal BETWEEN ? AND ?"
			   " ORDER BY s.ordinal, s.id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, iteration);
	sqlite3_bind_int64(st, 2, first);
	sqlite3_bind_int64(st, 3, last);
	return (*out = kj_store_rows_of(st)) ? 0 : KJ_ENOMEM;
}

int kj_store_seq_ops_next(struct kj_store_rows *r, struct kj_store_seq_op *o)
{
	sqlite3_stmt *st = kj_store_rows_stmt(r);
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	memset(o, 0, sizeof(*o));
	o->op = (const char *)sqlite3_column_text(st, 0);
	o->kind = (const char *)sqlite3_column_text(st, 5);
	o->host_kinds = (const char *)sqlite3_column_text(st, 6);
	o->stream_id = kj_db_col_i64(st, 1, 0);
	o->event_id = kj_db_col_i64(st, 2, -1);
	o->launch_params_id = kj_db_col_i64(st, 3, -1);
	o->bytes = kj_db_col_i64(st, 4, 0);
	o->has_pid = sqlite3_column_type(st, 7) != SQLITE_NULL;
	o->pid = kj_db_col_i64(st, 7, -1);
	o->correlation = kj_db_col_i64(st, 8, -1);
	o->element_bytes = 1;
	if (sqlite3_column_count(st) > 9 && sqlite3_column_type(st, 9) != SQLITE_NULL) {
		o->has_address = 1;
		o->address = (uint64_t)kj_db_col_i64(st, 9, 0);
		o->value = (uint32_t)kj_db_col_i64(st, 10, 0);
		o->element_bytes = (int)kj_db_col_i64(st, 11, 1);
	}
	return 1;
}

int kj_store_seq_copies_open(sqlite3 *db, struct kj_store_rows **out)
{
	*out = NULL;
	if (!kj_db_caps(db)->memcpy_dst_address)
		return 0;
	*out = kj_store_rows_of(kj_store_prepare_quiet(
		db, kj_db_caps(db)->copy_data
			    ? "SELECT m.dst_address, m.src_address, d.data FROM memcpy m LEFT JOIN copy_data d"
			      " ON d.memcpy_id = m.id WHERE m.correlation_id = ?1 AND (?2 < 0 OR m.pid = ?2)"
			      " AND m.graph_node_id IS NULL ORDER BY m.id LIMIT 1"
			    : "SELECT m.dst_address, m.src_address, NULL FROM memcpy m WHERE m.correlation_id = ?1"
			      " AND (?2 < 0 OR m.pid = ?2) AND m.graph_node_id IS NULL ORDER BY m.id LIMIT 1"));
	return 0;
}

int kj_store_seq_copy_get(struct kj_store_rows *r, int64_t corr, int64_t pid, struct kj_store_copy *c)
{
	sqlite3_stmt *st = kj_store_rows_stmt(r);
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, corr);
	sqlite3_bind_int64(st, 2, pid);
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	c->data_bytes = sqlite3_column_bytes(st, 2);
	c->dst = (uint64_t)kj_db_col_i64(st, 0, 0);
	c->src = (uint64_t)kj_db_col_i64(st, 1, 0);
	c->data_is_blob = sqlite3_column_type(st, 2) == SQLITE_BLOB;
	c->data = c->data_is_blob ? sqlite3_column_blob(st, 2) : NULL;
	return 1;
}

int kj_store_snap_places_open(sqlite3 *db, int64_t pid, int64_t corr, struct kj_store_rows **out)
{
	/* runs made before snapshot phases existed: every row counts as before; runs without a
	 * snapshot table: nothing (neither is an error). The rows' places only: a sort would copy
	 * every blob */
	sqlite3_stmt *st = kj_store_prepare_quiet(db, "SELECT address, bytes, codec, NULL, correlation_id, id FROM snapshot"
						 " WHERE (?1 < 0 OR pid IS NULL OR pid = ?1) AND data IS NOT NULL"
						 " AND (phase IS NULL OR phase = 'before') ORDER BY (correlation_id IS ?2), id");
	if (!st)
		st = kj_store_prepare_quiet(db, "SELECT address, bytes, codec, NULL, correlation_id, id FROM snapshot"
					       " WHERE (?1 < 0 OR pid IS NULL OR pid = ?1) AND data IS NOT NULL"
					       " ORDER BY (correlation_id IS ?2), id");
	*out = NULL;
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, corr);
	*out = kj_store_rows_of(st);
	return 0;
}

int kj_store_snap_places_next(struct kj_store_rows *r, struct kj_store_snap_row *s)
{
	sqlite3_stmt *st = kj_store_rows_stmt(r);
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	memset(s, 0, sizeof(*s));
	s->address = (uint64_t)sqlite3_column_int64(st, 0);
	s->bytes = (size_t)sqlite3_column_int64(st, 1);
	s->id = sqlite3_column_int64(st, 5);
	s->has_correlation = sqlite3_column_type(st, 4) != SQLITE_NULL;
	s->correlation = sqlite3_column_int64(st, 4);
	return 1;
}

int kj_store_snap_data_open(sqlite3 *db, struct kj_store_rows **out)
{
	*out = kj_store_rows_of(kj_store_prepare_quiet(db, "SELECT address, bytes, codec, data FROM snapshot WHERE id = ?1"));
	return 0;
}

/* Columns 0..3 of a snapshot statement (address, bytes, codec, data) into *s. */
static void snap_row(sqlite3_stmt *st, struct kj_store_snap_row *s)
{
	s->address = (uint64_t)sqlite3_column_int64(st, 0);
	s->bytes = (size_t)sqlite3_column_int64(st, 1);
	s->codec = (const char *)sqlite3_column_text(st, 2);
	s->data = sqlite3_column_blob(st, 3);
	s->len = (size_t)sqlite3_column_bytes(st, 3);
}

int kj_store_snap_data_get(struct kj_store_rows *r, int64_t id, struct kj_store_snap_row *s)
{
	sqlite3_stmt *st = kj_store_rows_stmt(r);
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	memset(s, 0, sizeof(*s));
	s->id = id;
	snap_row(st, s);
	return 1;
}

int kj_store_snap_after_open(sqlite3 *db, int64_t pid, int64_t corr, struct kj_store_rows **out)
{
	sqlite3_stmt *st = NULL;
	*out = NULL;
	if (kj_db_prepare(db, "SELECT address, bytes, codec, data FROM snapshot"
			      " WHERE pid = ?1 AND correlation_id = ?2 AND phase = 'after'"
			      " AND data IS NOT NULL ORDER BY id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, corr);
	return (*out = kj_store_rows_of(st)) ? 0 : KJ_ENOMEM;
}

int kj_store_snap_after_next(struct kj_store_rows *r, struct kj_store_snap_row *s)
{
	sqlite3_stmt *st = kj_store_rows_stmt(r);
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	memset(s, 0, sizeof(*s));
	snap_row(st, s);
	return 1;
}
