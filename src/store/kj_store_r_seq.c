/* What a whole-iteration replay reads of a run (kj_store_r_seq.h). */
#include "kj_store_r_seq.h"

#include <stdlib.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"

/* The span of the GPU work of iteration ?1: from its few operations to the run's many activities,
 * each table joined on its own. Through the gpu_activity view SQLite scanned every activity of
 * the run against the operations (98 s on a 160,000-kernel decode run, 0.7 s this way). */
#define SEQ_SPAN_SQL \
	"SELECT max(e) - min(b) FROM (" \
	"SELECT k.start_ns AS b, k.end_ns AS e FROM sequence_op s JOIN kernel k" \
	" ON k.correlation_id = s.correlation_id AND (s.pid IS NULL OR s.pid = k.pid) WHERE s.iteration = ?1" \
	" UNION ALL SELECT c.start_ns, c.end_ns FROM sequence_op s JOIN memcpy c" \
	" ON c.correlation_id = s.correlation_id AND (s.pid IS NULL OR s.pid = c.pid) WHERE s.iteration = ?1" \
	" UNION ALL SELECT m.start_ns, m.end_ns FROM sequence_op s JOIN memset m" \
	" ON m.correlation_id = s.correlation_id AND (s.pid IS NULL OR s.pid = m.pid) WHERE s.iteration = ?1)"

int kj_store_r_seq_tables(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN"
			     " ('sequence_op', 'replay_sequence', 'launch_params')", -2, 0) == 3;
}

int64_t kj_store_r_seq_op_count(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT count(*) FROM sequence_op", -2, 0);
}

int64_t kj_store_r_seq_first_iteration(sqlite3 *db)
{
	return kj_db_one_i64(db, "SELECT min(iteration) FROM sequence_op", -2, 0);
}

void kj_store_r_seq_iteration_ops(sqlite3 *db, int64_t iteration, struct kj_store_r_seq_ops *out)
{
	out->ops = kj_db_one_i64(db, "SELECT count(*) FROM sequence_op WHERE iteration = ?", iteration, 0);
	out->kernels = kj_db_one_i64(db, "SELECT count(*) FROM sequence_op WHERE iteration = ? AND op = 'kernel'", iteration, 0);
	out->copies = kj_db_one_i64(db, "SELECT count(*) FROM sequence_op WHERE iteration = ? AND op = 'memcpy'", iteration, 0);
	out->memsets = kj_db_one_i64(db, "SELECT count(*) FROM sequence_op WHERE iteration = ? AND op = 'memset'", iteration, 0);
	out->events = kj_db_one_i64(db, "SELECT count(*) FROM sequence_op WHERE iteration = ? AND op LIKE 'event%'", iteration, 0);
}

void kj_store_r_seq_traced(sqlite3 *db, int64_t iteration, int64_t *busy_ns, int64_t *span_ns)
{
	/* graph kernels share their graph launch's correlation: sequence ops name their kernel row
	 * (kernel_id) in runs recorded since graphs were; older runs join by correlation */
	if (kj_db_caps(db)->sequence_op_kernel_id) {
		*busy_ns = kj_db_one_i64(db,
			"SELECT sum(k.end_ns - k.start_ns) FROM sequence_op s JOIN kernel k"
			" ON k.id = s.kernel_id WHERE s.iteration = ?1 AND s.op = 'kernel' AND s.kernel_id IS NOT NULL",
			iteration, 0) + kj_db_one_i64(db,
			"SELECT sum(k.end_ns - k.start_ns) FROM kernel k JOIN sequence_op s"
			" ON s.correlation_id = k.correlation_id AND (s.pid IS NULL OR s.pid = k.pid)"
			" WHERE s.iteration = ?1 AND s.op = 'kernel' AND s.kernel_id IS NULL", iteration, 0);
	} else {
		*busy_ns = kj_db_one_i64(db,
			"SELECT sum(k.end_ns - k.start_ns) FROM kernel k JOIN sequence_op s"
			" ON s.correlation_id = k.correlation_id AND (s.pid IS NULL OR s.pid = k.pid)"
			" WHERE s.iteration = ? AND s.op = 'kernel'", iteration, 0);
	}
	*span_ns = kj_db_one_i64(db, SEQ_SPAN_SQL, iteration, 0);
}

/* One number of a query, -1 when NULL or failing; it binds ?1 where the query has one. */
static double q_dbl(sqlite3 *db, const char *sql, int64_t it)
{
	sqlite3_stmt *st = NULL;
	double v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, it);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

void kj_store_r_seq_sums(sqlite3 *db, int64_t iteration, struct kj_store_r_seq_sums *out)
{
	out->kernels = q_dbl(db, "SELECT count(*) FROM replay_kernel WHERE cache = 'sequence'", 0);
	out->iter_sum_ns = q_dbl(db,
		"SELECT sum(r.median_ns) FROM sequence_op s JOIN launch_params p ON p.id = s.launch_params_id"
		" JOIN replay_kernel r ON r.unique_id = p.unique_id AND r.cache = 'sequence'"
		" WHERE s.iteration = ?1 AND s.op = 'kernel'", iteration);
	out->run_sum_ns = q_dbl(db,
		"SELECT sum(u.launches * r.median_ns) FROM replay_kernel r JOIN unique_kernel u ON u.id = r.unique_id"
		" WHERE r.cache = 'sequence'", 0);
	out->run_traced_ns = q_dbl(db,
		"SELECT sum(end_ns - start_ns) FROM kernel WHERE unique_id IN"
		" (SELECT unique_id FROM replay_kernel WHERE cache = 'sequence')", 0);
	out->run_traced_all_ns = q_dbl(db, "SELECT sum(end_ns - start_ns) FROM kernel", 0);
}

int kj_store_r_iteration_graph_launches(sqlite3 *db, int64_t iteration, struct kj_store_r_graph_launch out[2])
{
	sqlite3_stmt *st = NULL;
	int n = 0;
	if (kj_db_prepare(db, "SELECT DISTINCT h.pid, h.graph_exec_id, h.correlation_id FROM sequence_op s"
			      " JOIN kernel k ON k.id = s.kernel_id JOIN host_call h ON h.pid = k.pid AND"
			      " h.correlation_id = k.correlation_id AND h.op = 'graph_launch'"
			      " WHERE s.iteration = ?1 AND k.graph_id IS NOT NULL LIMIT 2", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, iteration);
	while (n < 2 && sqlite3_step(st) == SQLITE_ROW) {
		out[n].pid = kj_db_col_i64(st, 0, -1);
		out[n].exec = kj_db_col_i64(st, 1, -1);
		n++;
	}
	sqlite3_finalize(st);
	return n;
}

int kj_store_r_exec_launches(sqlite3 *db, int64_t pid, int64_t exec, struct kj_store_r_launch_span **out,
			     size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc = 0;
	*out = NULL;
	*n = 0;
	/* every launch of that graph, with its kernels' GPU span (one pass over the graph kernels) */
	if (kj_db_prepare(db, "SELECT h.start_ns, g.f, g.l FROM host_call h JOIN (SELECT correlation_id c,"
			      " min(start_ns) f, max(end_ns) l FROM kernel WHERE pid = ?1 AND graph_id IS NOT NULL"
			      " GROUP BY correlation_id) g ON g.c = h.correlation_id WHERE h.pid = ?1 AND"
			      " h.op = 'graph_launch' AND h.graph_exec_id = ?2 ORDER BY h.start_ns", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, exec);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct kj_store_r_launch_span *g = kj_grow(*out, &cap, *n, sizeof(*g), 256);
		if (!g) {
			rc = KJ_ENOMEM;
			break;
		}
		*out = g;
		g[(*n)++] = (struct kj_store_r_launch_span){kj_db_col_i64(st, 0, 0), kj_db_col_i64(st, 1, 0),
							    kj_db_col_i64(st, 2, 0)};
	}
	sqlite3_finalize(st);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
