/* The run database's schema versions: the migration steps that bring an older run up to
 * KJ_SCHEMA_VERSION when it is opened for writing, and the typed answers (struct kj_db_caps) that
 * tell readers of a run opened read-only which later columns and tables it has. docs/schema.md,
 * "Versions and migrations". The only place outside kj_db.c that looks at a run's layout. */
#include "kj_migrate.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_schema.h"

/* 1 when table has the column (0 as well when the table is absent). */
static int has_column(sqlite3 *db, const char *table, const char *column)
{
	sqlite3_stmt *st = NULL;
	int yes = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

/* A column a step adds where the run lacks it (runs of one version differ in age). */
struct add_column {
	const char *table, *column, *type;
};

/* Adds each column of cols (ended by a NULL table) that the run lacks. 0 or KJ_EDB. */
static int add_columns(sqlite3 *db, const struct add_column *cols)
{
	char sql[256], what[128];
	for (; cols->table; cols++) {
		if (has_column(db, cols->table, cols->column))
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", cols->table, cols->column, cols->type);
		snprintf(what, sizeof(what), "migrate: add %s.%s", cols->table, cols->column);
		if (kj_db_exec(db, sql, what))
			return KJ_EDB;
	}
	return 0;
}

/* Schema 1 to 2: the tables and columns added during kjoule 0.1 (every schema 1 layout from the
 * first to the last lacks some of them). Frozen: a later change is a later step. */
static const char step2_tables[] =
    "CREATE TABLE IF NOT EXISTS copy_data(memcpy_id INTEGER PRIMARY KEY, pid INTEGER,"
    " correlation_id INTEGER, bytes INTEGER, data BLOB);\n"
    "CREATE TABLE IF NOT EXISTS host_call(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER, op TEXT,"
    " correlation_id INTEGER, start_ns INTEGER, end_ns INTEGER, status INTEGER, graph_id INTEGER,"
    " graph_exec_id INTEGER);\n"
    "CREATE INDEX IF NOT EXISTS host_call_by_correlation ON host_call(pid, correlation_id);\n"
    "CREATE TABLE IF NOT EXISTS graph_node(pid INTEGER, graph_id INTEGER, node_id INTEGER,"
    " parent_node_id INTEGER, type TEXT, correlation_id INTEGER, PRIMARY KEY(pid, node_id));\n"
    "CREATE TABLE IF NOT EXISTS graph_edge(pid INTEGER, graph_id INTEGER, from_node_id INTEGER,"
    " to_node_id INTEGER, type TEXT, from_port INTEGER, to_port INTEGER);\n"
    "CREATE TABLE IF NOT EXISTS graph_node_clone(pid INTEGER, node_id INTEGER,"
    " original_node_id INTEGER, PRIMARY KEY(pid, node_id));\n"
    "CREATE TABLE IF NOT EXISTS graph_conditional_handle(pid INTEGER, handle INTEGER,"
    " graph_id INTEGER, default_value INTEGER);\n";

static const struct add_column step2_columns[] = {
	{"unique_kernel", "shmem_executed", "INTEGER"}, {"unique_kernel", "carveout", "INTEGER"},
	{"unique_kernel", "cooperative", "INTEGER"},	{"kernel", "capture_range_id", "INTEGER"},
	{"kernel", "shmem_executed", "INTEGER"},	{"kernel", "carveout", "INTEGER"},
	{"kernel", "launch_type", "INTEGER"},		{"memcpy", "launch_tid", "INTEGER"},
	{"memcpy", "launch_ns", "INTEGER"},		{"memcpy", "dst_address", "INTEGER"},
	{"memcpy", "src_address", "INTEGER"},		{"memset", "address", "INTEGER"},
	{"memset", "element_bytes", "INTEGER"},		{"memset", "launch_tid", "INTEGER"},
	{"memset", "launch_ns", "INTEGER"},		{"graph_edge", "type", "TEXT"},
	{"graph_edge", "from_port", "INTEGER"},		{"graph_edge", "to_port", "INTEGER"},
	{"launch_params", "module_id", "INTEGER"},	{"sequence_op", "kernel_id", "INTEGER"},
	{"sequence_op", "memset_id", "INTEGER"},	{"snapshot", "phase", "TEXT"},
	{"snapshot", "copy_correlation_id", "INTEGER"}, {"replay_energy", "sm_clock_mean_mhz", "REAL"},
	{"replay_energy", "sm_clock_min_mhz", "INTEGER"}, {"replay_energy", "sm_clock_max_mhz", "INTEGER"},
	{"replay_energy", "throttle_reasons", "INTEGER"}, {"replay_sequence", "data", "TEXT"},
	{"replay_sequence", "pace_ns", "INTEGER"},	{"replay_sequence", "sm_clock_mean_mhz", "REAL"},
	{"replay_sequence", "sm_clock_min_mhz", "INTEGER"}, {"replay_sequence", "sm_clock_max_mhz", "INTEGER"},
	{"replay_sequence", "throttle_reasons", "INTEGER"}, {NULL, NULL, NULL},
};

static int step2(sqlite3 *db)
{
	return kj_db_exec(db, step2_tables, "migrate: schema 2 tables") ? KJ_EDB : add_columns(db, step2_columns);
}

/* Schema 2 to 3: replay_energy.data (added in 0.10.0), the tables replay used to create on the
 * fly, and replay_kernel.reason filled once from the error text of older rows. Frozen. */
static const char step3_tables[] =
    "CREATE TABLE IF NOT EXISTS replay_verify(unique_id INTEGER PRIMARY KEY, result TEXT,"
    " buffers INTEGER, bytes INTEGER, differing_bytes INTEGER, replayed_at TEXT);\n"
    "CREATE TABLE IF NOT EXISTS replay_energy_cold(unique_id INTEGER PRIMARY KEY, launches INTEGER,"
    " seconds REAL, energy_mj_per_launch REAL, energy_unc_mj REAL, ns_per_launch REAL,"
    " flush_mj REAL, flush_unc_mj REAL, replayed_at TEXT);\n"
    "CREATE TABLE IF NOT EXISTS replay_topology(iteration INTEGER PRIMARY KEY, status TEXT,"
    " graph_launches INTEGER, nodes INTEGER, edges INTEGER, kernel_nodes INTEGER,"
    " kernels_matched INTEGER, not_rebuilt TEXT, reason TEXT, tie TEXT, replayed_at TEXT);\n"
    "CREATE TABLE IF NOT EXISTS replay_graph_node(iteration INTEGER, node_index INTEGER,"
    " node_id INTEGER, type TEXT, unique_id INTEGER, runs INTEGER, min_ns INTEGER,"
    " median_ns INTEGER, max_ns INTEGER, mean_ns REAL, traced_ns INTEGER, replayed_at TEXT,"
    " PRIMARY KEY(iteration, node_index));\n";

static const struct add_column step3_columns[] = {
	{"replay_energy", "data", "TEXT"},
	{"replay_kernel", "reason", "TEXT"},
	{NULL, NULL, NULL},
};

/* The codes of replay_kernel.reason, from the texts replay wrote before the column (kept in
 * step with kj_replay_reason_* in kj_schema.h; the texts are the ones replay writes). */
static const char step3_reasons[] =
    "UPDATE replay_kernel SET reason = '" KJ_REASON_COND_SETTER "' WHERE reason IS NULL AND"
    " error LIKE '%sets the condition of a CUDA graph conditional node%';\n"
    "UPDATE replay_kernel SET reason = '" KJ_REASON_TIMED_OUT "' WHERE reason IS NULL AND"
    " error LIKE '%timed out%';\n";

static int step3(sqlite3 *db)
{
	if (kj_db_exec(db, step3_tables, "migrate: schema 3 tables") || add_columns(db, step3_columns))
		return KJ_EDB;
	return kj_db_exec(db, step3_reasons, "migrate: replay_kernel.reason") ? KJ_EDB : 0;
}

/* Step 3 -> 4: the index that reads the saved buffers' places without their data (replay asks
 * for them once a kernel; a run's whole saved data is read once here), and the one by launch
 * that runs of schema 1 lacked. Frozen. */
static const char step4_indexes[] =
    "CREATE INDEX IF NOT EXISTS snapshot_by_launch ON snapshot(pid, correlation_id);\n"
    "CREATE INDEX IF NOT EXISTS snapshot_places ON snapshot(pid, phase, correlation_id, address, bytes, codec)"
    " WHERE data IS NOT NULL;\n";

static int step4(sqlite3 *db)
{
	return kj_db_exec(db, step4_indexes, "migrate: schema 4 indexes") ? KJ_EDB : 0;
}

/* The steps, in order: steps[i] takes a run from schema i + 1 to i + 2. */
static int (*const steps[])(sqlite3 *) = {step2, step3, step4};

int kj_db_migrate_steps(sqlite3 *db, int from, int to)
{
	for (int v = from; v < to; v++) {
		if (v < 1 || v - 1 >= (int)(sizeof(steps) / sizeof(steps[0])))
			return KJ_EINVAL;
		if (steps[v - 1](db))
			return KJ_EDB;
	}
	return 0;
}

int kj_db_migrate(sqlite3 *db, const char *path)
{
	char sql[64];
	int from = kj_db_schema_version(db);
	if (from < 0)
		return KJ_EDB;
	if (from >= KJ_SCHEMA_VERSION)
		return 0;
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", KJ_SCHEMA_VERSION);
	if (kj_db_exec(db, "BEGIN IMMEDIATE", "migrate: begin"))
		goto fail;
	if (kj_db_migrate_steps(db, from, KJ_SCHEMA_VERSION) || kj_db_exec(db, sql, "migrate: set schema version"))
		goto rollback;
	snprintf(sql, sizeof(sql), "%d", KJ_SCHEMA_VERSION);
	if (kj_db_meta_set(db, "schema_version", sql) || kj_db_exec(db, "COMMIT", "migrate: commit"))
		goto rollback;
	return 0;
rollback:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
fail:
	kj_errorf("%s: cannot bring the run from schema %d to %d; the file is unchanged", path, from,
		  KJ_SCHEMA_VERSION);
	return KJ_EDB;
}

/* Where each answer of struct kj_db_caps comes from: the table and one or two columns it needs. */
static const struct {
	size_t offset;
	const char *table, *column, *column2;
} cap_columns[] = {
#define CAP(field, table, col, col2) {offsetof(struct kj_db_caps, field), table, col, col2}
	CAP(kernel_capture_range_id, "kernel", "capture_range_id", NULL),
	CAP(kernel_shmem_executed, "kernel", "shmem_executed", "carveout"),
	CAP(kernel_launch_type, "kernel", "launch_type", NULL),
	CAP(unique_kernel_shmem_executed, "unique_kernel", "shmem_executed", NULL),
	CAP(unique_kernel_cooperative, "unique_kernel", "cooperative", NULL),
	CAP(launch_params_module_id, "launch_params", "module_id", NULL),
	CAP(module_data, "module", "data", NULL),
	CAP(launch_params_params, "launch_params", "params", NULL),
	CAP(memcpy_launch_ns, "memcpy", "launch_ns", NULL),
	CAP(memcpy_dst_address, "memcpy", "dst_address", NULL),
	CAP(memset_launch_ns, "memset", "launch_ns", NULL),
	CAP(memset_address, "memset", "address", "element_bytes"),
	CAP(copy_data, "copy_data", "data", NULL),
	CAP(sequence_op_kernel_id, "sequence_op", "kernel_id", NULL),
	CAP(host_call, "host_call", "id", NULL),
	CAP(graph_node, "graph_node", "node_id", NULL),
	CAP(graph_edge, "graph_edge", "from_node_id", NULL),
	CAP(graph_edge_type, "graph_edge", "type", "from_port"),
	CAP(graph_node_clone, "graph_node_clone", "node_id", NULL),
	CAP(power_sample_clocks, "power_sample", "throttle_reasons", "sm_clock_mhz"),
	CAP(replay_energy_clocks, "replay_energy", "sm_clock_mean_mhz", "sm_clock_min_mhz"),
	CAP(replay_energy_data, "replay_energy", "data", NULL),
	CAP(replay_energy_cold, "replay_energy_cold", "ns_per_launch", NULL),
	CAP(replay_energy_b2b, "replay_energy_b2b", "sm_clock_mean_mhz", NULL),
	CAP(replay_sequence_clocks, "replay_sequence", "sm_clock_mean_mhz", "sm_clock_min_mhz"),
	CAP(replay_sequence_data, "replay_sequence", "data", NULL),
	CAP(replay_sequence_pace_ns, "replay_sequence", "pace_ns", NULL),
	CAP(replay_kernel_reason, "replay_kernel", "reason", NULL),
	CAP(nccl_call, "nccl_call", "group_depth", NULL),
#undef CAP
};

void kj_db_caps_read(sqlite3 *db, struct kj_db_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	caps->schema_version = kj_db_schema_version(db);
	for (size_t i = 0; i < sizeof(cap_columns) / sizeof(cap_columns[0]); i++)
		*((unsigned char *)caps + cap_columns[i].offset) =
		    has_column(db, cap_columns[i].table, cap_columns[i].column) &&
		    (!cap_columns[i].column2 || has_column(db, cap_columns[i].table, cap_columns[i].column2));
	/* the clocks' other two columns came with the first two */
	caps->replay_energy_clocks = caps->replay_energy_clocks && has_column(db, "replay_energy", "sm_clock_max_mhz") &&
				     has_column(db, "replay_energy", "throttle_reasons");
	caps->replay_sequence_clocks = caps->replay_sequence_clocks &&
				       has_column(db, "replay_sequence", "sm_clock_max_mhz") &&
				       has_column(db, "replay_sequence", "throttle_reasons");
}

/* The answers of the handles kj_db_open and kj_db_create gave out, read once at open. */
#define CAPS_SLOTS 64
static struct {
	sqlite3 *db;
	struct kj_db_caps caps;
} caps_slots[CAPS_SLOTS];
static pthread_mutex_t caps_lock = PTHREAD_MUTEX_INITIALIZER;

void kj_db_caps_remember(sqlite3 *db)
{
	struct kj_db_caps caps;
	kj_db_caps_read(db, &caps);
	pthread_mutex_lock(&caps_lock);
	for (int i = 0; i < CAPS_SLOTS; i++)
		if (!caps_slots[i].db || caps_slots[i].db == db) {
			caps_slots[i].db = db;
			caps_slots[i].caps = caps;
			break;
		}
	pthread_mutex_unlock(&caps_lock);
}

void kj_db_caps_forget(sqlite3 *db)
{
	pthread_mutex_lock(&caps_lock);
	for (int i = 0; i < CAPS_SLOTS; i++)
		if (caps_slots[i].db == db)
			caps_slots[i].db = NULL;
	pthread_mutex_unlock(&caps_lock);
}

const struct kj_db_caps *kj_db_caps(sqlite3 *db)
{
	static _Thread_local struct kj_db_caps unregistered;
	pthread_mutex_lock(&caps_lock);
	for (int i = 0; i < CAPS_SLOTS; i++)
		if (caps_slots[i].db == db) {
			pthread_mutex_unlock(&caps_lock);
			return &caps_slots[i].caps;
		}
	pthread_mutex_unlock(&caps_lock);
	/* a handle opened without kj_db_open (tests, a tool): read now, not kept */
	kj_db_caps_read(db, &unregistered);
	return &unregistered;
}
