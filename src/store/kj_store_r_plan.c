/* What replay's plan reads of a run (kj_store_r_plan.h). A lookup is its prepared statement. */
#include "kj_store_r_plan.h"

#include <stdio.h>
#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"

static sqlite3_stmt *stmt_of(struct kj_store_r_lookup *q)
{
	return (sqlite3_stmt *)(void *)q;
}

void kj_store_r_lookup_close(struct kj_store_r_lookup *q)
{
	sqlite3_finalize(stmt_of(q));
}

int kj_store_r_has_table(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n == 1;
}

int64_t kj_store_r_launch_params_count(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT count(*) FROM launch_params", 0, 0);
}

int kj_store_r_has_after_snapshot(sqlite3 *db)
{
	return kj_db_has_row(db, "SELECT 1 FROM snapshot WHERE phase = 'after' AND data IS NOT NULL LIMIT 1");
}

int kj_store_r_has_sequence(sqlite3 *db)
{
	return kj_db_has_row(db, "SELECT 1 FROM sequence_op LIMIT 1");
}

int kj_store_r_first_device(sqlite3 *db, struct kj_store_r_device *out)
{
	sqlite3_stmt *st = NULL;
	int found = 0;
	out->name[0] = '\0';
	out->has_cc = 0;
	if (kj_db_prepare(db, "SELECT name, cc_major, cc_minor FROM device ORDER BY id LIMIT 1", &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		snprintf(out->name, sizeof(out->name), "%s", t ? (const char *)t : "");
		if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
			out->has_cc = 1;
			out->cc_major = sqlite3_column_int(st, 1);
			out->cc_minor = sqlite3_column_int(st, 2);
		}
		found = 1;
	}
	sqlite3_finalize(st);
	return found;
}

int64_t kj_store_r_kernel_busy_ns(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT sum(end_ns - start_ns) FROM kernel", 0, 0);
}

int64_t kj_store_r_kernel_count(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT count(*) FROM kernel", 0, 0);
}

int64_t kj_store_r_unique_launches(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT sum(launches) FROM unique_kernel", 0, 0);
}

int kj_store_r_unique_each(sqlite3 *db, const char *run,
			   int (*fn)(void *ctx, const struct kj_store_r_unique *u), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int rc, stop = 0;
	if (kj_db_prepare(db,
			  "SELECT u.id, n.mangled, n.demangled, u.launches,"
			  " (SELECT count(*) FROM kernel k WHERE k.unique_id = u.id),"
			  " (SELECT sum(k.end_ns - k.start_ns) FROM kernel k WHERE k.unique_id = u.id),"
			  " (SELECT count(*) FROM launch_params p WHERE p.unique_id = u.id),"
			  " (SELECT count(*) FROM module_function f WHERE f.mangled = n.mangled),"
			  " (SELECT count(*) FROM module_function f JOIN module m ON m.hash = f.hash"
			  "   WHERE f.mangled = n.mangled AND m.data IS NOT NULL),"
			  " (SELECT group_concat(f.hash, ', ') FROM module_function f WHERE f.mangled = n.mangled)"
			  " FROM unique_kernel u LEFT JOIN kernel_name n ON n.id = u.name_id ORDER BY u.id",
			  &st))
		return KJ_EDB;
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_store_r_unique u = {
			.unique_id = sqlite3_column_int64(st, 0),
			.mangled = (const char *)sqlite3_column_text(st, 1),
			.demangled = (const char *)sqlite3_column_text(st, 2),
			.launches = sqlite3_column_int64(st, 3),
			.kernel_rows = sqlite3_column_int64(st, 4),
			.traced_ns = sqlite3_column_int64(st, 5),
			.params_rows = sqlite3_column_int64(st, 6),
			.functions = sqlite3_column_int64(st, 7),
			.functions_with_data = sqlite3_column_int64(st, 8),
			.hashes = (const char *)sqlite3_column_text(st, 9),
		};
		stop = fn(ctx, &u);
	}
	sqlite3_finalize(st);
	if (stop)
		return stop;
	if (rc != SQLITE_DONE) {
		kj_errorf("%s: reading unique kernels: %s", run, sqlite3_errmsg(db));
		return KJ_EDB;
	}
	return 0;
}

int kj_store_r_nvtx_spans(sqlite3 *db, const char *name, struct kj_store_r_span **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (kj_db_prepare(db, "SELECT start_ns, end_ns FROM nvtx_range WHERE name = ? AND"
			      " start_ns IS NOT NULL AND end_ns IS NOT NULL", &st))
		return KJ_EDB;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_span *nv = kj_grow(*out, &cap, *n, sizeof(*nv), 64);
		if (!nv) {
			sqlite3_finalize(st);
			free(*out);
			*out = NULL;
			*n = 0;
			return KJ_ENOMEM;
		}
		*out = nv;
		nv[(*n)++] = (struct kj_store_r_span){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_r_launches_each(sqlite3 *db, int (*fn)(void *ctx, const struct kj_store_r_launch *l), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int stop = 0;
	if (kj_db_prepare(db, "SELECT unique_id, launch_ns, start_ns, end_ns FROM kernel"
			      " WHERE unique_id IS NOT NULL AND start_ns IS NOT NULL AND end_ns >= start_ns", &st))
		return KJ_EDB;
	while (!stop && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_launch l = {sqlite3_column_int64(st, 0), sqlite3_column_type(st, 1) != SQLITE_NULL,
					      sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
					      sqlite3_column_int64(st, 3)};
		stop = fn(ctx, &l);
	}
	sqlite3_finalize(st);
	return stop;
}

int kj_store_r_cond_handles(sqlite3 *db, struct kj_store_r_cond_handle **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT c.pid, c.handle, h.graph_exec_id FROM graph_conditional_handle c"
			       " JOIN host_call h ON h.pid = c.pid AND h.graph_id = c.graph_id"
			       " AND h.op = 'graph_instantiate' AND h.graph_exec_id IS NOT NULL",
			       -1, &st, NULL) != SQLITE_OK)
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_cond_handle *h = kj_grow(*out, &cap, *n, sizeof(*h), 16);
		if (!h) {
			sqlite3_finalize(st);
			free(*out);
			*out = NULL;
			*n = 0;
			return KJ_ENOMEM;
		}
		*out = h;
		h[(*n)++] = (struct kj_store_r_cond_handle){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2),
							    (uint64_t)sqlite3_column_int64(st, 1)};
	}
	sqlite3_finalize(st);
	return 0;
}

struct kj_store_r_lookup *kj_store_r_ran_in_open(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM kernel WHERE unique_id = ?1 AND graph_id = ?2"
			       " AND pid = ?3 LIMIT 1", -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return (struct kj_store_r_lookup *)(void *)st;
}

int kj_store_r_ran_in(struct kj_store_r_lookup *q, int64_t unique_id, int64_t pid, int64_t exec)
{
	sqlite3_stmt *st = stmt_of(q);
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, unique_id);
	sqlite3_bind_int64(st, 2, exec);
	sqlite3_bind_int64(st, 3, pid);
	return sqlite3_step(st) == SQLITE_ROW;
}

int kj_store_r_first_params_open(sqlite3 *db, struct kj_store_r_lookup **out)
{
	sqlite3_stmt *st = NULL;
	*out = NULL;
	if (kj_db_prepare(db, "SELECT pid, params, layout FROM launch_params WHERE unique_id = ?"
			      " ORDER BY id LIMIT 1", &st))
		return KJ_EDB;
	*out = (struct kj_store_r_lookup *)(void *)st;
	return 0;
}

int kj_store_r_first_params(struct kj_store_r_lookup *q, int64_t unique_id, struct kj_store_r_params *out)
{
	sqlite3_stmt *st = stmt_of(q);
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, unique_id);
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	out->pid = sqlite3_column_int64(st, 0);
	out->layout = (const char *)sqlite3_column_text(st, 2);
	out->params = sqlite3_column_blob(st, 1);
	out->len = (size_t)sqlite3_column_bytes(st, 1);
	return 1;
}
