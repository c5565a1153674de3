/* What the topology replay reads of a run (kj_store_r_topo.h). */
#include "kj_store_r_topo.h"

#include <stdio.h>

#include "kj_db.h"
#include "kj_error.h"

int kj_store_r_seq_ops_each(sqlite3 *db, int64_t iteration,
			    int (*fn)(void *ctx, const struct kj_store_r_seq_op *o), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int stop = 0;
	if (kj_db_prepare(db,
			  "SELECT s.op, coalesce(s.pid, k.pid), s.correlation_id, k.graph_node_id, k.graph_id,"
			  " k.end_ns - k.start_ns, p.unique_id, s.bytes, s.kind FROM sequence_op s"
			  " LEFT JOIN kernel k ON k.id = s.kernel_id LEFT JOIN launch_params p ON p.id = s.launch_params_id"
			  " WHERE s.iteration = ?1 ORDER BY s.ordinal, s.id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, iteration);
	while (!stop && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_seq_op o = {
			.op = (const char *)sqlite3_column_text(st, 0),
			.pid = kj_db_col_i64(st, 1, -1),
			.corr = kj_db_col_i64(st, 2, -1),
			.graph_node = kj_db_col_i64(st, 3, 0),
			.exec_graph = kj_db_col_i64(st, 4, -1),
			.traced_ns = kj_db_col_i64(st, 5, -1),
			.unique_id = kj_db_col_i64(st, 6, -1),
			.bytes = kj_db_col_i64(st, 7, 0),
			.kind = (const char *)sqlite3_column_text(st, 8),
		};
		stop = fn(ctx, &o);
	}
	sqlite3_finalize(st);
	return stop;
}

int kj_store_r_graph_launch_open(sqlite3 *db, struct kj_store_r_lookup **out)
{
	sqlite3_stmt *st = NULL;
	*out = NULL;
	if (kj_db_prepare(db, "SELECT graph_exec_id, start_ns FROM host_call WHERE pid = ?1 AND"
			      " correlation_id = ?2 AND op = 'graph_launch' LIMIT 1", &st))
		return KJ_EDB;
	*out = (struct kj_store_r_lookup *)(void *)st;
	return 0;
}

int kj_store_r_graph_launch_find(struct kj_store_r_lookup *q, int64_t pid, int64_t corr, int64_t *exec_id,
				 int64_t *start_ns)
{
	sqlite3_stmt *st = (sqlite3_stmt *)(void *)q;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, corr);
	if (sqlite3_step(st) != SQLITE_ROW)
		return 0;
	*exec_id = kj_db_col_i64(st, 0, -1);
	*start_ns = kj_db_col_i64(st, 1, 0);
	return 1;
}

int64_t kj_store_r_exec_graph(sqlite3 *db, int64_t pid, int64_t exec_id, int64_t start_ns)
{
	sqlite3_stmt *st = NULL;
	int64_t gid = -1;
	if (kj_db_prepare(db, "SELECT graph_id FROM host_call WHERE pid = ?1 AND op = 'graph_instantiate'"
			      " AND graph_exec_id = ?2 AND graph_id IS NOT NULL"
			      " ORDER BY start_ns <= ?3 DESC, start_ns DESC LIMIT 1", &st))
		return -1;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, exec_id);
	sqlite3_bind_int64(st, 3, start_ns);
	if (sqlite3_step(st) == SQLITE_ROW)
		gid = kj_db_col_i64(st, 0, -1);
	sqlite3_finalize(st);
	return gid;
}

int kj_store_r_graph_clones_each(sqlite3 *db, int64_t pid, int (*fn)(void *ctx, int64_t node, int64_t original),
				 void *ctx)
{
	sqlite3_stmt *st = NULL;
	int stop = 0;
	if (kj_db_prepare(db, "SELECT node_id, original_node_id FROM graph_node_clone WHERE pid = ?1", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	while (!stop && sqlite3_step(st) == SQLITE_ROW)
		stop = fn(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return stop;
}

/* Call fn per row of a prepared, bound node query (node_id, type, graph_id). */
static int nodes_each(sqlite3_stmt *st, int (*fn)(void *ctx, const struct kj_store_r_graph_node_rec *g),
		      void *ctx)
{
	int stop = 0;
	while (!stop && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_graph_node_rec g = {sqlite3_column_int64(st, 0),
						      (const char *)sqlite3_column_text(st, 1),
						      sqlite3_column_int64(st, 2)};
		stop = fn(ctx, &g);
	}
	sqlite3_finalize(st);
	return stop;
}

int kj_store_r_graph_top_nodes_each(sqlite3 *db, int64_t pid, int64_t gid,
				    int (*fn)(void *ctx, const struct kj_store_r_graph_node_rec *g), void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT node_id, type, graph_id FROM graph_node WHERE pid = ?1 AND"
			      " graph_id = ?2 AND parent_node_id IS NULL ORDER BY node_id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, gid);
	return nodes_each(st, fn, ctx);
}

int kj_store_r_graph_child_nodes_each(sqlite3 *db, int64_t pid, int64_t parent,
				      int (*fn)(void *ctx, const struct kj_store_r_graph_node_rec *g), void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT node_id, type, graph_id FROM graph_node WHERE pid = ?1 AND"
			      " parent_node_id = ?2 ORDER BY node_id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, parent);
	return nodes_each(st, fn, ctx);
}

int kj_store_r_graph_edges_each(sqlite3 *db, int64_t pid, int64_t gid,
				int (*fn)(void *ctx, const struct kj_store_r_graph_edge *e), void *ctx)
{
	sqlite3_stmt *st = NULL;
	int stop = 0;
	if (kj_db_prepare(db, kj_db_caps(db)->graph_edge_type
				  ? "SELECT from_node_id, to_node_id, type = 'programmatic',"
				    " from_port FROM graph_edge WHERE pid = ?1 AND graph_id = ?2"
				  : "SELECT from_node_id, to_node_id, 0, 0 FROM graph_edge"
				    " WHERE pid = ?1 AND graph_id = ?2", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, gid);
	while (!stop && sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_graph_edge e = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
						  sqlite3_column_int(st, 2), sqlite3_column_int(st, 3)};
		stop = fn(ctx, &e);
	}
	sqlite3_finalize(st);
	return stop;
}

int kj_store_r_launch_memsets_each(sqlite3 *db, int64_t pid, int64_t corr,
				   void (*fn)(void *ctx, const struct kj_store_r_launch_op *o), void *ctx)
{
	sqlite3_stmt *st = NULL;
	char sql[400];
	int mdst = kj_db_caps(db)->memset_address;
	snprintf(sql, sizeof(sql), "SELECT graph_node_id, bytes, end_ns - start_ns, value, %s, %s"
				   " FROM memset WHERE pid = ?1 AND correlation_id = ?2 ORDER BY start_ns",
		 mdst ? "address" : "NULL", mdst ? "element_bytes" : "NULL");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, corr);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_launch_op o = {kj_db_col_i64(st, 0, 0), kj_db_col_i64(st, 1, 0),
						 kj_db_col_i64(st, 2, -1), kj_db_col_i64(st, 3, 0),
						 kj_db_col_i64(st, 4, 0), kj_db_col_i64(st, 5, 1), NULL};
		fn(ctx, &o);
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_r_launch_copies_each(sqlite3 *db, int64_t pid, int64_t corr,
				  void (*fn)(void *ctx, const struct kj_store_r_launch_op *o), void *ctx)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT graph_node_id, bytes, end_ns - start_ns, kind"
			      " FROM memcpy WHERE pid = ?1 AND correlation_id = ?2 ORDER BY start_ns", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, corr);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_launch_op o = {kj_db_col_i64(st, 0, 0), kj_db_col_i64(st, 1, 0),
						 kj_db_col_i64(st, 2, -1), 0, 0, 1,
						 (const char *)sqlite3_column_text(st, 3)};
		fn(ctx, &o);
	}
	sqlite3_finalize(st);
	return 0;
}

int kj_store_r_memset_find(sqlite3 *db, int64_t pid, int64_t corr, struct kj_store_r_launch_op *out)
{
	sqlite3_stmt *st = NULL;
	int found = 0;
	if (!kj_db_caps(db)->memset_address)
		return 0;
	if (kj_db_prepare(db, "SELECT address, value, element_bytes FROM memset WHERE pid = ?1"
			      " AND correlation_id = ?2 LIMIT 1", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, corr);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*out = (struct kj_store_r_launch_op){.address = kj_db_col_i64(st, 0, 0),
						     .value = kj_db_col_i64(st, 1, 0),
						     .element_bytes = kj_db_col_i64(st, 2, 1)};
		found = 1;
	}
	sqlite3_finalize(st);
	return found;
}
