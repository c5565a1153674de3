/* Replay results written into the run (kj_store_r_results.h). */
#include "kj_store_r_results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"

struct kj_store_r_batch {
	sqlite3 *db;
	sqlite3_stmt *k, *e, *v, *ec, *ecd, *eb, *ebd;
	char when[32];
};

/* Text, or NULL when s is NULL or empty. */
static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s && *s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* A window's clock state into parameters first..first+3, NULL where not read. */
static void bind_clocks(sqlite3_stmt *st, int first, const struct kj_store_r_clocks *c)
{
	if (c->sm_mean_mhz > 0 && isfinite(c->sm_mean_mhz))
		sqlite3_bind_double(st, first, c->sm_mean_mhz);
	else
		sqlite3_bind_null(st, first);
	if (c->sm_min_mhz > 0)
		sqlite3_bind_int(st, first + 1, c->sm_min_mhz);
	else
		sqlite3_bind_null(st, first + 1);
	if (c->sm_max_mhz > 0)
		sqlite3_bind_int(st, first + 2, c->sm_max_mhz);
	else
		sqlite3_bind_null(st, first + 2);
	if (c->throttle_reasons >= 0)
		sqlite3_bind_int64(st, first + 3, c->throttle_reasons);
	else
		sqlite3_bind_null(st, first + 3);
}

/* Step a bound insert; 0, or KJ_EDB with "storing TABLE" and SQLite's message. */
static int step_done(sqlite3 *db, sqlite3_stmt *st, const char *table)
{
	if (sqlite3_step(st) == SQLITE_DONE)
		return 0;
	kj_errorf("database: storing %s: %s", table, sqlite3_errmsg(db));
	return KJ_EDB;
}

int kj_store_r_batch_begin(sqlite3 *db, const char *when, struct kj_store_r_batch **out)
{
	struct kj_store_r_batch *b;
	*out = NULL;
	/* the run was opened for writing, so migrated: the clock state and data columns are there */
	if (kj_db_exec(db, "BEGIN IMMEDIATE", "begin replay results"))
		return KJ_EDB;
	if (!(b = calloc(1, sizeof(*b)))) {
		kj_db_exec(db, "ROLLBACK", "rollback replay results");
		return KJ_EDB;
	}
	b->db = db;
	snprintf(b->when, sizeof(b->when), "%s", when);
	if (kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_kernel(unique_id, cache, runs, min_ns, median_ns,"
			  " mean_ns, max_ns, stdev_ns, status, error, replayed_at, reason)"
			  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", &b->k) ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_energy(unique_id, unroll, launches, seconds,"
			  " energy_mj_per_launch, energy_unc_mj, power_mw, idle_mw, dynamic_mj_per_launch,"
			  " method, replayed_at, sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz,"
			  " throttle_reasons, data)"
			  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
			  &b->e) ||
	    kj_db_exec(db, KJ_REPLAY_VERIFY_TABLE, "create replay_verify") ||
	    kj_db_exec(db, KJ_REPLAY_ENERGY_COLD_TABLE, "create replay_energy_cold") ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_energy_cold(unique_id, launches, seconds,"
			  " energy_mj_per_launch, energy_unc_mj, ns_per_launch, flush_mj, flush_unc_mj,"
			  " replayed_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", &b->ec) ||
	    kj_db_prepare(db, "DELETE FROM replay_energy_cold WHERE unique_id = ?1", &b->ecd) ||
	    kj_db_exec(db, KJ_REPLAY_ENERGY_B2B_TABLE, "create replay_energy_b2b") ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_energy_b2b(unique_id, ns_per_launch,"
			  " energy_mj_per_launch, sm_clock_mean_mhz, replayed_at) VALUES(?1, ?2, ?3, ?4, ?5)",
			  &b->eb) ||
	    kj_db_prepare(db, "DELETE FROM replay_energy_b2b WHERE unique_id = ?1", &b->ebd) ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_verify(unique_id, result, buffers, bytes,"
			  " differing_bytes, replayed_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6)", &b->v)) {
		kj_store_r_batch_end(b, 0);
		return KJ_EDB;
	}
	*out = b;
	return 0;
}

int kj_store_r_batch_kernel(struct kj_store_r_batch *b, const struct kj_store_r_kernel *r)
{
	sqlite3_stmt *k = b->k;
	sqlite3_reset(k);
	sqlite3_bind_int64(k, 1, r->unique_id);
	sqlite3_bind_text(k, 2, r->cache, -1, SQLITE_TRANSIENT);
	if (r->t.runs > 0) {
		sqlite3_bind_int(k, 3, r->t.runs);
		sqlite3_bind_int64(k, 4, r->t.min_ns);
		sqlite3_bind_int64(k, 5, r->t.median_ns);
		sqlite3_bind_double(k, 6, r->t.mean_ns);
		sqlite3_bind_int64(k, 7, r->t.max_ns);
		sqlite3_bind_double(k, 8, r->t.stdev_ns);
	} else {
		for (int i = 3; i <= 8; i++)
			sqlite3_bind_null(k, i);
	}
	sqlite3_bind_text(k, 9, r->status, -1, SQLITE_TRANSIENT);
	bind_text_or_null(k, 10, r->error);
	sqlite3_bind_text(k, 11, b->when, -1, SQLITE_STATIC);
	bind_text_or_null(k, 12, r->reason);
	return step_done(b->db, k, "replay_kernel");
}

int kj_store_r_batch_verify(struct kj_store_r_batch *b, const struct kj_store_r_verify *r)
{
	sqlite3_stmt *v = b->v;
	sqlite3_reset(v);
	sqlite3_bind_int64(v, 1, r->unique_id);
	sqlite3_bind_text(v, 2, r->result, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(v, 3, r->buffers);
	sqlite3_bind_int64(v, 4, r->bytes);
	sqlite3_bind_int64(v, 5, r->differing_bytes);
	sqlite3_bind_text(v, 6, b->when, -1, SQLITE_STATIC);
	return step_done(b->db, v, "replay_verify");
}

int kj_store_r_batch_energy(struct kj_store_r_batch *b, const struct kj_store_r_energy *r)
{
	sqlite3_stmt *e = b->e;
	sqlite3_reset(e);
	sqlite3_bind_int64(e, 1, r->unique_id);
	sqlite3_bind_int(e, 2, r->unroll);
	sqlite3_bind_int64(e, 3, r->launches);
	sqlite3_bind_double(e, 4, r->seconds);
	sqlite3_bind_double(e, 5, r->energy_mj_per_launch);
	sqlite3_bind_double(e, 6, r->energy_unc_mj);
	sqlite3_bind_double(e, 7, r->power_mw);
	if (r->idle_mw >= 0 && !isnan(r->idle_mw))
		sqlite3_bind_double(e, 8, r->idle_mw);
	else
		sqlite3_bind_null(e, 8);
	if (!isnan(r->dynamic_mj_per_launch))
		sqlite3_bind_double(e, 9, r->dynamic_mj_per_launch);
	else
		sqlite3_bind_null(e, 9);
	sqlite3_bind_text(e, 10, r->method, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(e, 11, b->when, -1, SQLITE_STATIC);
	bind_clocks(e, 12, &r->clocks);
	bind_text_or_null(e, 16, r->data);
	return step_done(b->db, e, "replay_energy");
}

int kj_store_r_batch_energy_cold(struct kj_store_r_batch *b, const struct kj_store_r_energy_cold *r)
{
	sqlite3_stmt *ec = b->ec;
	sqlite3_reset(ec);
	sqlite3_bind_int64(ec, 1, r->unique_id);
	sqlite3_bind_int64(ec, 2, r->launches);
	sqlite3_bind_double(ec, 3, r->seconds);
	sqlite3_bind_double(ec, 4, r->energy_mj_per_launch);
	sqlite3_bind_double(ec, 5, r->energy_unc_mj);
	sqlite3_bind_double(ec, 6, r->ns_per_launch);
	sqlite3_bind_double(ec, 7, r->flush_mj);
	sqlite3_bind_double(ec, 8, r->flush_unc_mj);
	sqlite3_bind_text(ec, 9, b->when, -1, SQLITE_STATIC);
	return step_done(b->db, ec, "replay_energy_cold");
}

/* One unique kernel's row out of table, by its prepared DELETE st. */
static int drop_row(struct kj_store_r_batch *b, sqlite3_stmt *st, int64_t unique_id, const char *table)
{
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, unique_id);
	return step_done(b->db, st, table);
}

int kj_store_r_batch_drop_energy_cold(struct kj_store_r_batch *b, int64_t unique_id)
{
	return drop_row(b, b->ecd, unique_id, "replay_energy_cold");
}

int kj_store_r_batch_energy_b2b(struct kj_store_r_batch *b, const struct kj_store_r_energy_b2b *r)
{
	sqlite3_stmt *eb = b->eb;
	sqlite3_reset(eb);
	sqlite3_bind_int64(eb, 1, r->unique_id);
	sqlite3_bind_double(eb, 2, r->ns_per_launch);
	sqlite3_bind_double(eb, 3, r->energy_mj_per_launch);
	sqlite3_bind_double(eb, 4, r->sm_clock_mean_mhz);
	sqlite3_bind_text(eb, 5, b->when, -1, SQLITE_STATIC);
	return step_done(b->db, eb, "replay_energy_b2b");
}

int kj_store_r_batch_drop_energy_b2b(struct kj_store_r_batch *b, int64_t unique_id)
{
	return drop_row(b, b->ebd, unique_id, "replay_energy_b2b");
}

int kj_store_r_batch_end(struct kj_store_r_batch *b, int commit)
{
	if (!b)
		return 0;
	sqlite3 *db = b->db;
	sqlite3_finalize(b->k);
	sqlite3_finalize(b->e);
	sqlite3_finalize(b->v);
	sqlite3_finalize(b->ec);
	sqlite3_finalize(b->ecd);
	sqlite3_finalize(b->eb);
	sqlite3_finalize(b->ebd);
	free(b);
	if (!commit) {
		kj_db_exec(db, "ROLLBACK", "rollback replay results");
		return 0;
	}
	return kj_db_exec(db, "COMMIT", "commit replay results") ? KJ_EDB : 0;
}

/* The in-sequence kernel times as replay_kernel rows with cache 'sequence'. */
static int seq_kernels(sqlite3 *db, const struct kj_store_r_seq_kernel *k, size_t n, const char *when)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (!n)
		return 0;
	if (kj_db_prepare(db, "INSERT OR REPLACE INTO replay_kernel(unique_id, cache, runs, min_ns,"
			      " median_ns, mean_ns, max_ns, stdev_ns, status, error, replayed_at)"
			      " VALUES(?1, 'sequence', ?2, ?3, ?4, ?5, ?6, ?7, 'ok', NULL, ?8)", &st))
		return KJ_EDB;
	for (size_t i = 0; i < n && !rc; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, k[i].unique_id);
		sqlite3_bind_int(st, 2, k[i].t.runs);
		sqlite3_bind_int64(st, 3, k[i].t.min_ns);
		sqlite3_bind_int64(st, 4, k[i].t.median_ns);
		sqlite3_bind_double(st, 5, k[i].t.mean_ns);
		sqlite3_bind_int64(st, 6, k[i].t.max_ns);
		sqlite3_bind_double(st, 7, k[i].t.stdev_ns);
		sqlite3_bind_text(st, 8, when, -1, SQLITE_STATIC);
		rc = step_done(db, st, "in-sequence kernel times");
	}
	sqlite3_finalize(st);
	return rc;
}

int kj_store_r_seq_put(sqlite3 *db, const char *when, const struct kj_store_r_seq *s, size_t n,
		       const struct kj_store_r_seq_kernel *k, size_t nk)
{
	sqlite3_stmt *st = NULL;
	int rc = KJ_EDB;

	/* the run was opened for writing, so migrated: data, pace_ns and the clocks are there (NULL in
	 * rows written before them) */
	if (kj_db_exec(db, "BEGIN IMMEDIATE", "begin replay_sequence"))
		return KJ_EDB;
	if (kj_db_prepare(db, "INSERT OR REPLACE INTO replay_sequence(iteration, mode, runs, launches,"
			      " median_ns, min_ns, max_ns, energy_mj, energy_unc_mj, replayed_at, data, pace_ns,"
			      " sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz, throttle_reasons)"
			      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)", &st))
		goto out;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, s[i].iteration);
		sqlite3_bind_text(st, 2, s[i].mode, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 3, s[i].runs);
		sqlite3_bind_int64(st, 4, s[i].launches);
		if (s[i].has_times) {
			sqlite3_bind_int64(st, 5, s[i].median_ns);
			sqlite3_bind_int64(st, 6, s[i].min_ns);
			sqlite3_bind_int64(st, 7, s[i].max_ns);
		} else {
			sqlite3_bind_null(st, 5);
			sqlite3_bind_null(st, 6);
			sqlite3_bind_null(st, 7);
		}
		if (s[i].has_energy) {
			sqlite3_bind_double(st, 8, s[i].energy_mj);
			sqlite3_bind_double(st, 9, s[i].energy_unc_mj);
		} else {
			sqlite3_bind_null(st, 8);
			sqlite3_bind_null(st, 9);
		}
		sqlite3_bind_text(st, 10, when, -1, SQLITE_STATIC);
		bind_text_or_null(st, 11, s[i].data);
		if (s[i].pace_ns > 0)
			sqlite3_bind_int64(st, 12, s[i].pace_ns);
		else
			sqlite3_bind_null(st, 12);
		bind_clocks(st, 13, &s[i].clocks);
		if (step_done(db, st, "replay_sequence"))
			goto out;
	}
	rc = seq_kernels(db, k, nk, when);
out:
	sqlite3_finalize(st);
	if (rc) {
		kj_db_exec(db, "ROLLBACK", "rollback replay_sequence");
		return rc;
	}
	return kj_db_exec(db, "COMMIT", "commit replay_sequence");
}

int kj_store_r_topo_put(sqlite3 *db, const char *when, const struct kj_store_r_topology *t,
			const struct kj_store_r_graph_node *nodes, size_t n)
{
	sqlite3_stmt *st = NULL, *del = NULL;
	int rc = KJ_EDB;
	if (kj_db_exec(db, "BEGIN IMMEDIATE", "begin replay_topology"))
		return KJ_EDB;
	if (kj_db_exec(db, KJ_REPLAY_TOPO_TABLES, "create replay_topology") ||
	    kj_db_prepare(db, "INSERT OR REPLACE INTO replay_topology(iteration, status, graph_launches,"
			      " nodes, edges, kernel_nodes, kernels_matched, not_rebuilt, reason, tie, replayed_at)"
			      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", &st))
		goto out;
	sqlite3_bind_int64(st, 1, t->iteration);
	sqlite3_bind_text(st, 2, t->status, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, t->graph_launches);
	sqlite3_bind_int64(st, 4, t->nodes);
	sqlite3_bind_int64(st, 5, t->edges);
	sqlite3_bind_int64(st, 6, t->kernel_nodes);
	sqlite3_bind_int64(st, 7, t->kernels_matched);
	bind_text_or_null(st, 8, t->not_rebuilt);
	bind_text_or_null(st, 9, t->reason);
	bind_text_or_null(st, 10, t->tie);
	sqlite3_bind_text(st, 11, when, -1, SQLITE_STATIC);
	if (step_done(db, st, "replay_topology"))
		goto out;
	sqlite3_finalize(st);
	st = NULL;
	if (kj_db_prepare(db, "DELETE FROM replay_graph_node WHERE iteration = ?1", &del))
		goto out;
	sqlite3_bind_int64(del, 1, t->iteration);
	if (sqlite3_step(del) != SQLITE_DONE)
		goto out;
	if (kj_db_prepare(db, "INSERT OR REPLACE INTO replay_graph_node(iteration, node_index, node_id, type,"
			      " unique_id, runs, min_ns, median_ns, max_ns, mean_ns, traced_ns, replayed_at)"
			      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", &st))
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct kj_store_r_graph_node *g = &nodes[i];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, t->iteration);
		sqlite3_bind_int64(st, 2, g->node_index);
		if (g->node_id)
			sqlite3_bind_int64(st, 3, g->node_id);
		else
			sqlite3_bind_null(st, 3);
		sqlite3_bind_text(st, 4, g->type, -1, SQLITE_TRANSIENT);
		if (g->unique_id >= 0)
			sqlite3_bind_int64(st, 5, g->unique_id);
		else
			sqlite3_bind_null(st, 5);
		sqlite3_bind_int(st, 6, g->runs);
		sqlite3_bind_int64(st, 7, g->min_ns);
		sqlite3_bind_int64(st, 8, g->median_ns);
		sqlite3_bind_int64(st, 9, g->max_ns);
		sqlite3_bind_double(st, 10, g->mean_ns);
		if (g->traced_ns >= 0)
			sqlite3_bind_int64(st, 11, g->traced_ns);
		else
			sqlite3_bind_null(st, 11);
		sqlite3_bind_text(st, 12, when, -1, SQLITE_STATIC);
		if (step_done(db, st, "replay_graph_node"))
			goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(del);
	if (rc) {
		kj_db_exec(db, "ROLLBACK", "rollback replay_topology");
		return rc;
	}
	return kj_db_exec(db, "COMMIT", "commit replay_topology");
}
