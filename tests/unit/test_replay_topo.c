/* The graph topology of a kept iteration (kj_replay_topo): from the shipped graph-launched run
 * (tests/data/gpt_graph_short.kjdb, every count checked against the database itself) and from small
 * runs written here (a child graph flattened between its entry and exit; a conditional node
 * named, never dropped), plus the per-node protocol line and storage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_replay_topo.h"

#include "tmpdir.h"

#define GPT_GRAPH KJ_TEST_DATA "/gpt_graph_short.kjdb"

static int64_t one(sqlite3 *db, const char *sql, int64_t arg)
{
	return kj_db_one_i64(db, sql, arg, -1);
}

/* every dependency names an earlier node; deps ranges tile t->deps */
static void assert_ordered(const struct kj_replay_topo *t)
{
	size_t at = 0;
	for (size_t i = 0; i < t->nnodes; i++) {
		assert_int_equal(t->nodes[i].dep0, at);
		for (size_t d = 0; d < t->nodes[i].ndeps; d++)
			assert_true(t->deps[at + d] < i);
		at += t->nodes[i].ndeps;
	}
	assert_int_equal(at, t->ndeps);
}

static void test_shipped_graph_run(void **state)
{
	(void)state;
	sqlite3 *db = NULL;
	struct kj_replay_topo t;
	if (access(GPT_GRAPH, R_OK)) {
		skip();
		return;
	}
	assert_int_equal(kj_db_open(GPT_GRAPH, 0, &db), 0);
	int64_t it = one(db, "SELECT min(iteration) FROM sequence_op", 0);
	assert_int_equal(kj_replay_topo_load(db, it, &t), 0);
	assert_true(t.rebuildable);
	assert_int_equal(t.nunbuilt, 0);
	/* the launches: distinct graph-launch correlations among the iteration's kernels */
	int64_t launches = one(db, "SELECT count(DISTINCT s.correlation_id) FROM sequence_op s JOIN host_call h"
				   " ON h.pid = s.pid AND h.correlation_id = s.correlation_id AND h.op = 'graph_launch'"
				   " WHERE s.iteration = ?1", it);
	assert_true(launches >= 1);
	assert_int_equal(t.graph_launches, launches);
	/* the instantiated graph's nodes and edges, as recorded */
	int64_t gid = one(db, "SELECT i.graph_id FROM host_call i JOIN host_call l ON l.graph_exec_id = i.graph_exec_id"
			      " AND l.op = 'graph_launch' AND i.op = 'graph_instantiate' JOIN sequence_op s ON"
			      " s.correlation_id = l.correlation_id WHERE s.iteration = ?1 LIMIT 1", it);
	assert_true(gid >= 0);
	if (launches == 1) {
		assert_int_equal(t.graph_nodes, one(db, "SELECT count(*) FROM graph_node WHERE graph_id = ?1", gid));
		assert_int_equal(t.graph_edges, one(db, "SELECT count(*) FROM graph_edge WHERE graph_id = ?1", gid));
		assert_int_equal(t.kernel_nodes, one(db, "SELECT count(*) FROM graph_node WHERE graph_id = ?1"
							 " AND type = 'kernel'", gid));
		assert_int_equal(kj_replay_topo_count(&t, KJ_TOPO_MEMSET),
				 one(db, "SELECT count(*) FROM graph_node WHERE graph_id = ?1 AND type = 'memset'", gid));
	}
	/* every kernel node tied to one kernel op of the iteration, and every kernel op to a node */
	int64_t kops = one(db, "SELECT count(*) FROM sequence_op WHERE iteration = ?1 AND op = 'kernel'", it);
	assert_int_equal(t.kernels_matched, t.kernel_nodes);
	assert_int_equal(t.kernels_matched, kops);
	assert_int_equal((int64_t)kj_replay_topo_count(&t, KJ_TOPO_KERNEL), kops);
	char *seen = calloc((size_t)kops, 1);
	assert_non_null(seen);
	sqlite3_stmt *st = NULL;
	assert_int_equal(kj_db_prepare(db, "SELECT p.unique_id, k.graph_node_id FROM sequence_op s"
					   " JOIN launch_params p ON p.id = s.launch_params_id JOIN kernel k ON k.id = s.kernel_id"
					   " WHERE s.iteration = ?1 AND s.op = 'kernel' ORDER BY s.ordinal, s.id"
					   " LIMIT 1 OFFSET ?2", &st), 0);
	for (size_t i = 0; i < t.nnodes; i++) {
		const struct kj_topo_node *n = &t.nodes[i];
		if (n->kind != KJ_TOPO_KERNEL)
			continue;
		assert_true(n->seq_kernel >= 0 && n->seq_kernel < kops);
		assert_false(seen[n->seq_kernel]);
		seen[n->seq_kernel] = 1;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, it);
		sqlite3_bind_int64(st, 2, n->seq_kernel);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_int_equal(n->unique_id, sqlite3_column_int64(st, 0));
		/* the executed node is the recorded one's clone: same index in CUPTI's numbering */
		assert_int_equal((uint64_t)sqlite3_column_int64(st, 1) & 0xffffffffu, (uint64_t)n->node_id & 0xffffffffu);
		assert_true(n->traced_ns > 0);
	}
	sqlite3_finalize(st);
	free(seen);
	/* the recorded edges, plus one per last node into the launch's join */
	size_t sinks = 0;
	for (size_t i = 0; i < t.nnodes; i++)
		if (!strcmp(t.nodes[i].type, "join"))
			sinks += t.nodes[i].ndeps;
	assert_int_equal((int64_t)t.ndeps, t.graph_edges + (int64_t)sinks);
	assert_ordered(&t);
	kj_replay_topo_free(&t);
	kj_db_close(db);
}

/* A run with one graph launch of: k1 -> child graph {k2a, k2b} -> k3, plus what extra adds. */
static sqlite3 *make_run(const char *name, const char *extra)
{
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	assert_int_equal(kj_db_exec(db,
		"INSERT INTO host_call(pid, op, correlation_id, start_ns, graph_id, graph_exec_id) VALUES"
		" (7, 'graph_instantiate', 5, 10, 1, 9), (7, 'graph_launch', 6, 20, NULL, 9);"
		"INSERT INTO graph_node(pid, graph_id, node_id, parent_node_id, type) VALUES"
		" (7, 1, 101, NULL, 'kernel'), (7, 1, 102, NULL, 'graph'), (7, 1, 103, NULL, 'kernel'),"
		" (7, 2, 201, 102, 'kernel'), (7, 2, 202, 102, 'kernel');"
		"INSERT INTO graph_edge(pid, graph_id, from_node_id, to_node_id) VALUES (7, 1, 101, 102), (7, 1, 102, 103);"
		/* the exec's nodes, cloned from the recorded ones (child nodes twice: into the parent, then the exec) */
		"INSERT INTO graph_node_clone(pid, node_id, original_node_id) VALUES (7, 901, 101), (7, 903, 103),"
		" (7, 801, 201), (7, 902, 801), (7, 904, 202);"
		"INSERT INTO launch_params(id, unique_id, pid, correlation_id) VALUES (1, 11, 7, 1), (2, 12, 7, 2),"
		" (3, 13, 7, 3), (4, 14, 7, 4);"
		"INSERT INTO kernel(id, pid, correlation_id, start_ns, end_ns, graph_id, graph_node_id) VALUES"
		" (1, 7, 6, 100, 110, 9, 901), (2, 7, 6, 110, 130, 9, 902), (3, 7, 6, 110, 140, 9, 904),"
		" (4, 7, 6, 140, 150, 9, 903);"
		"INSERT INTO sequence_op(iteration, ordinal, pid, op, correlation_id, launch_params_id, kernel_id)"
		" VALUES (1, 0, 7, 'kernel', 6, 1, 1), (1, 1, 7, 'kernel', 6, 2, 2), (1, 2, 7, 'kernel', 6, 3, 3),"
		" (1, 3, 7, 'kernel', 6, 4, 4);", "fill"), 0);
	if (extra)
		assert_int_equal(kj_db_exec(db, extra, "extra"), 0);
	return db;
}

static size_t by_node(const struct kj_replay_topo *t, int64_t id, const char *type)
{
	for (size_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].node_id == id && !strcmp(t->nodes[i].type, type))
			return i;
	fail_msg("node %lld (%s) missing", (long long)id, type);
	return 0;
}

static int depends(const struct kj_replay_topo *t, size_t on, size_t i)
{
	for (size_t d = 0; d < t->nodes[i].ndeps; d++)
		if (t->deps[t->nodes[i].dep0 + d] == on)
			return 1;
	return 0;
}

static void test_child_graph(void **state)
{
	(void)state;
	struct kj_replay_topo t;
	sqlite3 *db = make_run("child.kjdb", NULL);
	assert_int_equal(kj_replay_topo_load(db, 1, &t), 0);
	assert_true(t.rebuildable);
	assert_int_equal(t.graph_nodes, 5);
	assert_int_equal(t.kernel_nodes, 4);
	assert_int_equal(t.kernels_matched, 4);
	assert_string_equal(t.tie, "clones");
	assert_ordered(&t);
	size_t k1 = by_node(&t, 101, "kernel"), in = by_node(&t, 102, "graph"), out = by_node(&t, 102, "graph_end");
	size_t a = by_node(&t, 201, "kernel"), b = by_node(&t, 202, "kernel"), k3 = by_node(&t, 103, "kernel");
	assert_true(depends(&t, k1, in));
	assert_true(depends(&t, in, a) && depends(&t, in, b));
	assert_false(depends(&t, a, b) || depends(&t, b, a)); /* side by side, as recorded */
	assert_true(depends(&t, a, out) && depends(&t, b, out));
	assert_true(depends(&t, out, k3));
	assert_int_equal(t.nodes[a].seq_kernel, 1);
	assert_int_equal(t.nodes[b].seq_kernel, 2);
	assert_int_equal(t.nodes[b].unique_id, 13);
	assert_int_equal(t.nodes[b].traced_ns, 30);
	kj_replay_topo_free(&t);
	kj_db_close(db);
}

/* An exec that flattens its child graph, as XLA's command buffers showed: the top-level nodes are
 * the exec's clones (CUPTI's numbering, graph id << 32 | index), the child graph's memset and
 * kernel run as the exec's next indices with no clone record. They are tied by that order, their
 * kind checked; a record whose index names a node of another kind is not. */
#define N(g, i) (((int64_t)(g) << 32) | (i))
static void test_flattened_child_graph(void **state)
{
	(void)state;
	struct kj_replay_topo t;
	char sql[2048];
	char p[256];
	sqlite3 *db = NULL;
	snprintf(p, sizeof(p), "%s/flat.kjdb", dir);
	unlink(p);
	assert_int_equal(kj_db_create(p, &db), 0);
	snprintf(sql, sizeof(sql),
		"INSERT INTO host_call(pid, op, correlation_id, start_ns, graph_id, graph_exec_id) VALUES"
		" (7, 'graph_instantiate', 5, 10, 1, 9), (7, 'graph_launch', 6, 20, NULL, 9);"
		"INSERT INTO graph_node(pid, graph_id, node_id, parent_node_id, type) VALUES"
		" (7, 1, %lld, NULL, 'kernel'), (7, 1, %lld, NULL, 'graph'), (7, 1, %lld, NULL, 'kernel'),"
		" (7, 2, %lld, %lld, 'memset'), (7, 2, %lld, %lld, 'kernel');"
		"INSERT INTO graph_edge(pid, graph_id, from_node_id, to_node_id) VALUES (7, 1, %lld, %lld),"
		" (7, 1, %lld, %lld), (7, 2, %lld, %lld);"
		"INSERT INTO graph_node_clone(pid, node_id, original_node_id) VALUES (7, %lld, %lld), (7, %lld, %lld),"
		" (7, %lld, %lld);"
		"INSERT INTO launch_params(id, unique_id, pid, correlation_id) VALUES (1, 11, 7, 1), (2, 12, 7, 2),"
		" (3, 13, 7, 3);"
		"INSERT INTO kernel(id, pid, correlation_id, start_ns, end_ns, graph_id, graph_node_id) VALUES"
		" (1, 7, 6, 100, 110, 9, %lld), (2, 7, 6, 112, 130, 9, %lld), (3, 7, 6, 130, 140, 9, %lld);"
		"INSERT INTO memset(pid, correlation_id, start_ns, end_ns, bytes, value, graph_node_id, address,"
		" element_bytes) VALUES (7, 6, 110, 112, 64, 0, %lld, 4096, 1);"
		"INSERT INTO sequence_op(iteration, ordinal, pid, op, correlation_id, launch_params_id, kernel_id)"
		" VALUES (1, 0, 7, 'kernel', 6, 1, 1), (1, 2, 7, 'kernel', 6, 2, 2), (1, 3, 7, 'kernel', 6, 3, 3);",
		(long long)N(1, 0), (long long)N(1, 1), (long long)N(1, 2), (long long)N(2, 0), (long long)N(1, 1),
		(long long)N(2, 1), (long long)N(1, 1), (long long)N(1, 0), (long long)N(1, 1), (long long)N(1, 1),
		(long long)N(1, 2), (long long)N(2, 0), (long long)N(2, 1), (long long)N(9, 0), (long long)N(1, 0),
		(long long)N(9, 1), (long long)N(1, 1), (long long)N(9, 2), (long long)N(1, 2), (long long)N(9, 0),
		(long long)N(9, 4), (long long)N(9, 2), (long long)N(9, 3));
	assert_int_equal(kj_db_exec(db, sql, "fill"), 0);
	assert_int_equal(kj_replay_topo_load(db, 1, &t), 0);
	assert_true(t.rebuildable);
	assert_string_equal(t.tie, "clones+child-order");
	assert_int_equal(t.kernels_matched, 3);
	assert_int_equal(kj_replay_topo_count(&t, KJ_TOPO_MEMSET), 1);
	size_t ms = by_node(&t, N(2, 0), "memset"), ck = by_node(&t, N(2, 1), "kernel");
	assert_int_equal(t.nodes[ms].kind, KJ_TOPO_MEMSET);
	assert_int_equal(t.nodes[ms].address, 4096);
	assert_int_equal(t.nodes[ck].kind, KJ_TOPO_KERNEL);
	assert_int_equal(t.nodes[ck].unique_id, 12);
	assert_true(depends(&t, ms, ck));
	assert_ordered(&t);
	kj_replay_topo_free(&t);
	/* the child kernel's record names the memset's index: not tied, and the launch is not rebuilt */
	snprintf(sql, sizeof(sql), "UPDATE kernel SET graph_node_id = %lld WHERE id = 2;", (long long)N(9, 3));
	assert_int_equal(kj_db_exec(db, sql, "mismatch"), 0);
	assert_int_equal(kj_replay_topo_load(db, 1, &t), 0);
	assert_false(t.rebuildable);
	assert_non_null(strstr(t.reason, "records of no recorded node"));
	kj_replay_topo_free(&t);
	kj_db_close(db);
}
#undef N

static unsigned kind_of(const struct kj_replay_topo *t, size_t on, size_t i)
{
	for (size_t d = 0; d < t->nodes[i].ndeps; d++)
		if (t->deps[t->nodes[i].dep0 + d] == on)
			return t->dep_kind[t->nodes[i].dep0 + d];
	fail_msg("node %zu does not depend on %zu", i, on);
	return 99;
}

/* Programmatic edges (PDL) between kernel nodes are rebuilt as such, with their port; one to or
 * from a child graph's node becomes a full dependency; runs without the columns load all full. */
static void test_programmatic_edges(void **state)
{
	(void)state;
	struct kj_replay_topo t;
	char line[512];
	sqlite3 *db = make_run("pdl.kjdb",
		"UPDATE graph_edge SET type = 'programmatic', from_port = 1 WHERE from_node_id = 101;"
		"INSERT INTO graph_edge(pid, graph_id, from_node_id, to_node_id, type, from_port) VALUES"
		" (7, 2, 201, 202, 'programmatic', 1);");
	assert_int_equal(kj_replay_topo_load(db, 1, &t), 0);
	assert_true(t.rebuildable);
	size_t in = by_node(&t, 102, "graph"), k1 = by_node(&t, 101, "kernel");
	size_t a = by_node(&t, 201, "kernel"), b = by_node(&t, 202, "kernel");
	assert_int_equal(t.programmatic_edges, 1);
	assert_int_equal(kind_of(&t, a, b) & 3u, KJ_TOPO_EDGE_PROGRAMMATIC);
	assert_int_equal(KJ_TOPO_EDGE_PORT(kind_of(&t, a, b)), 1);
	assert_int_equal(kind_of(&t, k1, in), KJ_TOPO_EDGE_FULL); /* into a child graph: full */
	FILE *f = fmemopen(line, sizeof(line), "w");
	kj_replay_topo_print(f, &t);
	fclose(f);
	assert_non_null(strstr(line, "1 programmatic"));
	kj_replay_topo_free(&t);
	/* a run recorded before edge types: every edge full */
	assert_int_equal(kj_db_exec(db, "ALTER TABLE graph_edge DROP COLUMN to_port;"
					"ALTER TABLE graph_edge DROP COLUMN from_port;"
					"ALTER TABLE graph_edge DROP COLUMN type;", "old"), 0);
	kj_db_close(db); /* what a run holds is read at open */
	char p[256];
	snprintf(p, sizeof(p), "%s/pdl.kjdb", dir);
	assert_int_equal(kj_db_open(p, 0, &db), 0);
	assert_int_equal(kj_replay_topo_load(db, 1, &t), 0);
	assert_int_equal(t.programmatic_edges, 0);
	a = by_node(&t, 201, "kernel"), b = by_node(&t, 202, "kernel");
	assert_int_equal(kind_of(&t, a, b), KJ_TOPO_EDGE_FULL);
	kj_replay_topo_free(&t);
	kj_db_close(db);
}

static void test_unbuildable_named(void **state)
{
	(void)state;
	struct kj_replay_topo t;
	char text[256];
	sqlite3 *db = make_run("cond.kjdb",
		"INSERT INTO graph_node(pid, graph_id, node_id, parent_node_id, type) VALUES"
		" (7, 1, 104, NULL, 'conditional'), (7, 1, 105, NULL, 'host'), (7, 1, 106, NULL, 'host'),"
		" (7, 1, 107, NULL, 'event_record');"
		"INSERT INTO graph_edge(pid, graph_id, from_node_id, to_node_id) VALUES (7, 1, 103, 104), (7, 1, 103, 999);");
	assert_int_equal(kj_replay_topo_load(db, 1, &t), 0);
	assert_false(t.rebuildable);
	kj_replay_topo_unbuilt_text(&t, text, sizeof(text));
	assert_non_null(strstr(text, "conditional 1"));
	assert_non_null(strstr(text, "host 2"));
	assert_non_null(strstr(text, "edges to unrecorded nodes 1"));
	assert_null(strstr(text, "event_record")); /* a dependency only: rebuilt as an empty node */
	assert_non_null(strstr(t.reason, "linear chain"));
	/* stored with the kinds, and the per-node line round-trips */
	struct kj_topo_node_time nt = {3, 13, 20, 28, 30, 33, 30.5}, back;
	char line[256];
	FILE *f = fmemopen(line, sizeof(line), "w");
	kj_replay_topo_emit_node(f, &nt);
	fclose(f);
	assert_int_equal(kj_replay_parse_topo_node(line, &back), 1);
	assert_int_equal(back.node, 3);
	assert_int_equal(back.median_ns, 30);
	assert_int_equal(kj_replay_parse_topo_node("KJ_NODE\tnode=x", &back), KJ_EINVAL);
	assert_int_equal(kj_replay_parse_topo_node("KJ_SEQ\tmode=graph", &back), 0);
	assert_int_equal(kj_replay_topo_store(db, &t, "fallback", t.reason, NULL, 0), 0);
	assert_int_equal(kj_db_one_i64(db, "SELECT count(*) FROM replay_topology WHERE status = 'fallback' AND"
					   " not_rebuilt LIKE '%host 2%'", 0, -1), 1);
	kj_replay_topo_free(&t);
	/* a kernel that ran in the launch but whose node the run lacks: named too */
	assert_int_equal(kj_db_exec(db, "DELETE FROM graph_node_clone WHERE node_id = 904", "x"), 0);
	assert_int_equal(kj_replay_topo_load(db, 1, &t), 0);
	kj_replay_topo_unbuilt_text(&t, text, sizeof(text));
	assert_non_null(strstr(text, "records of no recorded node 1"));
	assert_non_null(strstr(text, "kernel without a record 1"));
	kj_replay_topo_free(&t);
	kj_db_close(db);
}

static void test_not_graph_launched(void **state)
{
	(void)state;
	struct kj_replay_topo t;
	sqlite3 *db = make_run("eager.kjdb", "DELETE FROM host_call WHERE op = 'graph_launch';"
					     "UPDATE kernel SET graph_node_id = NULL, graph_id = NULL;");
	assert_int_equal(kj_replay_topo_load(db, 1, &t), KJ_ENOTFOUND);
	assert_non_null(strstr(t.reason, "no graph launch"));
	kj_replay_topo_free(&t);
	kj_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_graph_run),
		cmocka_unit_test(test_child_graph),
		cmocka_unit_test(test_flattened_child_graph),
		cmocka_unit_test(test_programmatic_edges),
		cmocka_unit_test(test_unbuildable_named),
		cmocka_unit_test(test_not_graph_launched),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
