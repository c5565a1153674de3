/* Rows of the watch for other processes (kj_store_e_watch.h). */
#include "kj_store_e_watch.h"

#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_schema.h"

struct kj_store_watch_writer {
	sqlite3 *db;
	sqlite3_stmt *sample, *ins;
};

int kj_store_e_watch_tables(sqlite3 *db)
{
	return kj_db_exec(db, kj_schema_watch_sql, "watch tables");
}

int kj_store_e_processes(sqlite3 *db, int (*fn)(void *ctx, int64_t pid, int64_t start_ns, int64_t end_ns),
			 void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, "SELECT pid, start_ns, end_ns FROM process", &st);
	if (rc)
		return rc;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = fn(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
	return rc;
}

int kj_store_e_traced_spans(sqlite3 *db, int64_t device_id, struct kj_interval **out, size_t *n_out)
{
	sqlite3_stmt *st = NULL;
	struct kj_interval *iv = NULL;
	size_t n = 0, cap = 0;
	int rc = kj_db_prepare(db, "SELECT start_ns, end_ns FROM kernel WHERE device_id = ?1"
			       " UNION ALL SELECT start_ns, end_ns FROM memcpy WHERE device_id = ?1"
			       " UNION ALL SELECT start_ns, end_ns FROM memset WHERE device_id = ?1", &st);
	*out = NULL;
	*n_out = 0;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, device_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_interval *g = kj_grow(iv, &cap, n, sizeof(*g), 2048);
		if (!g) {
			sqlite3_finalize(st);
			free(iv);
			return KJ_ENOMEM;
		}
		iv = g;
		iv[n++] = (struct kj_interval){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
	}
	sqlite3_finalize(st);
	*out = iv;
	*n_out = n;
	return 0;
}

int kj_store_e_watch_writer_open(sqlite3 *db, struct kj_store_watch_writer **out)
{
	struct kj_store_watch_writer *w = calloc(1, sizeof(*w));
	int rc;
	*out = NULL;
	if (!w)
		return KJ_ENOMEM;
	w->db = db;
	rc = kj_db_prepare(db, "INSERT INTO gpu_process_sample(device_id, t_ns, pid, name,"
			   " used_memory_bytes, sm_util_pct, traced) VALUES(?,?,?,?,?,?,?)", &w->sample);
	if (!rc)
		rc = kj_db_prepare(db, "INSERT INTO foreign_activity(device_id, pid, name, start_ns, end_ns,"
				   " source) VALUES(?,?,?,?,?,?)", &w->ins);
	if (rc) {
		kj_store_e_watch_writer_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

void kj_store_e_watch_writer_close(struct kj_store_watch_writer *w)
{
	if (!w)
		return;
	sqlite3_finalize(w->sample);
	sqlite3_finalize(w->ins);
	free(w);
}

int kj_store_e_watch_sample(struct kj_store_watch_writer *w, const struct kj_store_gpu_process_sample *r)
{
	sqlite3_stmt *st = w->sample;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, r->device_id);
	sqlite3_bind_int64(st, 2, r->t_ns);
	sqlite3_bind_int64(st, 3, r->pid);
	if (r->name && r->name[0])
		sqlite3_bind_text(st, 4, r->name, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, 4);
	if (r->used_memory_bytes >= 0)
		sqlite3_bind_int64(st, 5, r->used_memory_bytes);
	else
		sqlite3_bind_null(st, 5);
	if (r->sm_util_pct >= 0)
		sqlite3_bind_int(st, 6, r->sm_util_pct);
	else
		sqlite3_bind_null(st, 6);
	sqlite3_bind_int(st, 7, r->traced);
	if (sqlite3_step(st) != SQLITE_DONE) {
		kj_errorf("gpu_process_sample insert: %s", sqlite3_errmsg(w->db));
		return KJ_EDB;
	}
	return 0;
}

int kj_store_e_watch_foreign(struct kj_store_watch_writer *w, int64_t device_id, int64_t pid,
			     const char *name, int64_t start_ns, int64_t end_ns, const char *source)
{
	sqlite3_stmt *ins = w->ins;
	sqlite3_reset(ins);
	sqlite3_bind_int64(ins, 1, device_id);
	if (pid > 0)
		sqlite3_bind_int64(ins, 2, pid);
	else
		sqlite3_bind_null(ins, 2);
	if (name && *name)
		sqlite3_bind_text(ins, 3, name, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(ins, 3);
	sqlite3_bind_int64(ins, 4, start_ns);
	sqlite3_bind_int64(ins, 5, end_ns);
	sqlite3_bind_text(ins, 6, source, -1, SQLITE_STATIC);
	return sqlite3_step(ins) == SQLITE_DONE ? 0 : KJ_EDB;
}
