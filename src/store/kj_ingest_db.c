/* The database side of the spool ingest: the statements every row writer binds, the helpers that
 * bind and step them, and the fixes made once a file's rows are in (launch counts, a warning
 * when one unique kernel holds two functions). kj_ingest.c reads the spool. */
#include "kj_ingest_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_kernel_class.h"

static const char *const stmt_sql[S_COUNT] = {
	[S_KERNEL] = "INSERT INTO kernel(pid, device_id, context_id, stream_id, correlation_id,"
		     " start_ns, end_ns, name_id, unique_id, grid_x, grid_y, grid_z, block_x, block_y,"
		     " block_z, cluster_x, cluster_y, cluster_z, shmem_dynamic, shmem_static, registers,"
		     " graph_id, graph_node_id, launch_tid, launch_ns, shmem_executed, carveout, launch_type)"
		     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_MEMCPY] = "INSERT INTO memcpy(pid, device_id, context_id, stream_id, correlation_id,"
		     " start_ns, end_ns, bytes, kind, src_kind, dst_kind, graph_node_id, launch_tid,"
		     " launch_ns, dst_address, src_address) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_MEMSET] = "INSERT INTO memset(pid, device_id, context_id, stream_id, correlation_id,"
		     " start_ns, end_ns, bytes, value, mem_kind, graph_node_id, address, element_bytes,"
		     " launch_tid, launch_ns) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_API] = "INSERT INTO api_call(pid, tid, domain, cbid, name, start_ns, end_ns, correlation_id,"
		  " status, bytes, stream_id) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
	[S_ALLOC] = "INSERT INTO allocation(pid, device_id, address, bytes, kind, alloc_ns, stream_id)"
		    " VALUES(?,?,?,?,?,?,?)",
	[S_FREE] = "UPDATE allocation SET free_ns = ? WHERE id = ?",
	[S_NVTX] = "INSERT INTO nvtx_range(id, pid, tid, domain, name, start_ns, end_ns, depth,"
		   " parent_id, kind) VALUES(?,?,?,?,?,?,?,?,?,?)",
	[S_NAME_FIND] = "SELECT id FROM kernel_name WHERE mangled = ?",
	[S_NAME_ADD] = "INSERT INTO kernel_name(mangled, demangled) VALUES(?, ?)",
	[S_UNIQUE_FIND] = "SELECT id FROM unique_kernel WHERE key = ?",
	[S_UNIQUE_ADD] = "INSERT INTO unique_kernel(key, name_id, grid_x, grid_y, grid_z, block_x,"
			 " block_y, block_z, cluster_x, cluster_y, cluster_z, shmem_dynamic, shmem_static,"
			 " registers, param_bytes, param_layout, tier, launches, keyed_by)"
			 " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,?)",
	[S_PARAMS] = "INSERT INTO launch_params(unique_id, pid, correlation_id, ordinal, handle_kind,"
		     " grid_x, grid_y, grid_z, block_x, block_y, block_z, cluster_x, cluster_y, cluster_z,"
		     " shmem_dynamic, stream_id, launch_ns, iteration, layout, params, module_id)"
		     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_MODULE_FIND] = "SELECT 1 FROM module WHERE hash = ?",
	[S_MODULE_ADD] = "INSERT INTO module(hash, format, bytes, codec, data) VALUES(?,?,?,?,?)",
	[S_MODFN] = "INSERT OR IGNORE INTO module_function(hash, mangled) VALUES(?, ?)",
	[S_MODLOAD] = "INSERT INTO module_load(pid, cupti_module_id, hash, load_ns) VALUES(?,?,?,?)",
	[S_DEVICE_FIND] = "SELECT id FROM device WHERE uuid = ?",
	[S_DEVICE_ADD] = "INSERT INTO device(uuid) VALUES(?)",
	[S_DEVICE_FILL] = "UPDATE device SET name = coalesce(name, ?2), cc_major = ?3, cc_minor = ?4,"
			  " sm_count = ?5, memory_bytes = ?6, l2_bytes = ?7,"
			  " sm_clock_max_mhz = coalesce(sm_clock_max_mhz, ?8),"
			  " mem_clock_max_mhz = coalesce(mem_clock_max_mhz, ?9),"
			  " cuda_version = ?10, pci_bus_id = coalesce(pci_bus_id, ?11) WHERE id = ?1",
	[S_PROCDEV] = "INSERT OR REPLACE INTO process_device(pid, ordinal, device_id) VALUES(?,?,?)",
	[S_CLOCK] = "INSERT INTO clock_sync(pid, trace_ns, monotonic_ns, realtime_ns) VALUES(?,?,?,?)",
	[S_HOSTCALL] = "INSERT INTO host_call(pid, tid, op, correlation_id, start_ns, end_ns, status,"
		       " graph_id, graph_exec_id) VALUES(?,?,?,?,?,?,?,?,?)",
	[S_GNODE] = "INSERT OR REPLACE INTO graph_node(pid, graph_id, node_id, parent_node_id, type,"
		    " correlation_id) VALUES(?,?,?,?,?,?)",
	[S_GEDGE] = "INSERT INTO graph_edge(pid, graph_id, from_node_id, to_node_id, type, from_port, to_port)"
		    " VALUES(?,?,?,?,?,?,?)",
	[S_CHANDLE] = "INSERT INTO graph_conditional_handle(pid, handle, graph_id, default_value) VALUES(?,?,?,?)",
	[S_GCLONE] = "INSERT OR REPLACE INTO graph_node_clone(pid, node_id, original_node_id) VALUES(?,?,?)",
	[S_SNAPSHOT] = "INSERT INTO snapshot(pid, address, bytes, correlation_id, codec, data, phase,"
		       " copy_correlation_id) VALUES(?,?,?,?,?,?,?,?)",
	[S_COPYDATA] = "INSERT INTO copy_data(memcpy_id, pid, correlation_id, bytes, data) VALUES(?,?,?,?,?)",
};

void kj_uuid_format(const unsigned char u[16], char out[41])
{
	snprintf(out, 41,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

int ing_step_done(struct ingest *in, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		kj_errorf("%s: database: %s", in->path, sqlite3_errmsg(in->db));
		return KJ_EDB;
	}
	return 0;
}

const char *ing_str(const struct ingest *in, uint32_t id)
{
	return id && id < in->nstrings && in->strings[id] ? in->strings[id] : NULL;
}

void ing_bind_opt_i64(sqlite3_stmt *st, int col, int have, int64_t v)
{
	if (have)
		sqlite3_bind_int64(st, col, v);
	else
		sqlite3_bind_null(st, col);
}

void ing_bind_dims(sqlite3_stmt *st, int col, const uint32_t grid[3], const uint32_t block[3],
		   const uint32_t cluster[3])
{
	for (int i = 0; i < 3; i++) {
		sqlite3_bind_int64(st, col + i, grid[i]);
		sqlite3_bind_int64(st, col + 3 + i, block[i]);
		sqlite3_bind_int64(st, col + 6 + i, cluster[i]);
	}
}

int64_t ing_device_id(struct ingest *in, uint32_t ordinal)
{
	uint64_t v;
	return kj_map_get(in->devices, ordinal, &v) ? (int64_t)v : -1;
}

/* kernel_name.id of a mangled name, adding it (with its demangled form) when new. */
int64_t ing_name_id(struct ingest *in, uint32_t sid)
{
	const char *mangled = ing_str(in, sid);
	sqlite3_stmt *st;
	int64_t id = 0;
	if (!mangled)
		mangled = "?";
	if (sid < in->nstrings && in->name_ids[sid])
		return in->name_ids[sid];
	st = in->st[S_NAME_FIND];
	sqlite3_bind_text(st, 1, mangled, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (!id) {
		char *dem = kj_demangle(mangled);
		st = in->st[S_NAME_ADD];
		sqlite3_bind_text(st, 1, mangled, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, dem ? dem : mangled, -1, SQLITE_TRANSIENT);
		free(dem);
		if (ing_step_done(in, st) == 0)
			id = sqlite3_last_insert_rowid(in->db);
	}
	if (sid < in->nstrings)
		in->name_ids[sid] = id;
	return id;
}

int ing_prepare(struct ingest *in)
{
	int rc;
	for (int i = 0; i < S_COUNT; i++)
		if ((rc = kj_db_prepare(in->db, stmt_sql[i], &in->st[i])) != 0)
			return rc;
	return 0;
}

/* unique_kernel.launches and the per-kernel facts a first capture could not know */
static int count_launches(sqlite3 *db)
{
	return kj_db_exec(db,
		       "UPDATE unique_kernel SET launches = (SELECT count(*) FROM kernel k"
		       " WHERE k.unique_id = unique_kernel.id);"
		       "UPDATE unique_kernel SET shmem_static = (SELECT shmem_static FROM kernel k"
		       " WHERE k.unique_id = unique_kernel.id LIMIT 1),"
		       " registers = (SELECT registers FROM kernel k WHERE k.unique_id = unique_kernel.id"
		       " LIMIT 1) WHERE registers IS NULL;"
		       "UPDATE unique_kernel SET shmem_executed = (SELECT shmem_executed FROM kernel k"
		       " WHERE k.unique_id = unique_kernel.id AND k.shmem_executed IS NOT NULL LIMIT 1),"
		       " carveout = (SELECT carveout FROM kernel k WHERE k.unique_id = unique_kernel.id"
		       " AND k.carveout IS NOT NULL LIMIT 1),"
		       /* cooperative when any launch was (CUPTI's launch types 1 and 2) */
		       " cooperative = (SELECT max(k.launch_type IN (1, 2)) FROM kernel k"
		       " WHERE k.unique_id = unique_kernel.id AND k.launch_type IS NOT NULL);",
		       "unique kernel counts");
}

/* A problem row when one unique kernel of this process holds kernels of different register
 * counts: two functions of one name and geometry were grouped as one (an older tracer
 * kept a launch group per name and geometry), and its parameters and replays speak for one of them. */
static int flag_mixed_functions(sqlite3 *db, int64_t pid)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	char example[200] = "";
	if (kj_db_prepare(db, "SELECT count(*) OVER (), n.mangled, min(k.registers), max(k.registers)"
			      " FROM kernel k JOIN kernel_name n ON n.id = k.name_id WHERE k.pid = ?1 AND"
			      " k.unique_id IS NOT NULL AND k.registers IS NOT NULL GROUP BY k.unique_id"
			      " HAVING min(k.registers) <> max(k.registers) LIMIT 1", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, pid);
	if (sqlite3_step(st) == SQLITE_ROW) {
		n = sqlite3_column_int64(st, 0);
		snprintf(example, sizeof(example), "%.120s: %lld and %lld", (const char *)sqlite3_column_text(st, 1),
			 (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3));
	}
	sqlite3_finalize(st);
	if (!n)
		return 0;
	char what[512];
	snprintf(what, sizeof(what),
		 "%lld unique kernel(s) hold kernels of different register counts (%s): launches of two "
		 "functions of one name and geometry were grouped as one, so their parameters and replays "
		 "speak for one of them; trace again with this version", (long long)n, example);
	return kj_db_problem(db, pid, -1, "warning", what);
}

int ing_finish_rows(struct ingest *in)
{
	int rc;
	if ((rc = count_launches(in->db)) != 0 || (rc = flag_mixed_functions(in->db, in->pid)) != 0)
		return rc;
	return 0;
}
