#include "kj_ingest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_map.h"
#include "kj_spool.h"

enum stmt_id {
	S_KERNEL, S_MEMCPY, S_MEMSET, S_API, S_ALLOC, S_FREE, S_NVTX, S_NAME_FIND, S_NAME_ADD,
	S_UNIQUE_FIND, S_UNIQUE_ADD, S_PARAMS, S_MODULE_FIND, S_MODULE_ADD, S_MODFN, S_MODLOAD,
	S_DEVICE_FIND, S_DEVICE_ADD, S_DEVICE_FILL, S_PROCDEV, S_CLOCK, S_SNAPSHOT, S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
	[S_KERNEL] = "INSERT INTO kernel(pid, device_id, context_id, stream_id, correlation_id,"
		     " start_ns, end_ns, name_id, unique_id, grid_x, grid_y, grid_z, block_x, block_y,"
		     " block_z, cluster_x, cluster_y, cluster_z, shmem_dynamic, shmem_static, registers,"
		     " graph_id, graph_node_id, launch_tid, launch_ns)"
		     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_MEMCPY] = "INSERT INTO memcpy(pid, device_id, context_id, stream_id, correlation_id,"
		     " start_ns, end_ns, bytes, kind, src_kind, dst_kind, graph_node_id)"
		     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
	[S_MEMSET] = "INSERT INTO memset(pid, device_id, context_id, stream_id, correlation_id,"
		     " start_ns, end_ns, bytes, value, mem_kind, graph_node_id)"
		     " VALUES(?,?,?,?,?,?,?,?,?,?,?)",
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
		     " shmem_dynamic, stream_id, launch_ns, iteration, layout, params)"
		     " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
	[S_SNAPSHOT] = "INSERT INTO snapshot(pid, address, bytes, correlation_id, codec, data, phase,"
		       " copy_correlation_id) VALUES(?,?,?,?,?,?,?,?)",
};

struct launch_info {
	uint64_t key;        /* unique key, set by classify() */
	int64_t launch_ns;
	int64_t unique_id;
	const struct kj_word_diff *diffs;
	uint32_t group;      /* index into ingest.groups */
	uint32_t tid, stream, correlation, ndiff;
};

struct group_info {
	const struct kj_rec_group *rec;
	const uint32_t *layout;
	const unsigned char *ref;
	uint32_t *param_words; /* word indices that tell work apart */
	uint32_t nparam_words;
	uint32_t launches_kept; /* parameter blocks written so far (first-K capture) */
};

struct range {
	uint64_t base, end;
};

struct marker {
	int64_t t_ns;
	uint32_t id, flags, name_id, domain_id, tid;
};

struct ingest {
	sqlite3 *db;
	const char *path;
	const unsigned char *data;
	size_t n;
	int64_t pid;
	sqlite3_stmt *st[S_COUNT];
	char **strings;
	size_t nstrings;
	int64_t *name_ids;      /* string id -> kernel_name.id (0: not yet) */
	struct launch_info *launches;
	size_t nlaunches, cap_launches;
	struct group_info *groups;
	size_t ngroups, cap_groups;
	struct kj_map *group_index; /* group id -> index into groups */
	struct range *ranges;   /* device allocations ever made, sorted by base */
	size_t nranges, cap_ranges;
	const struct kj_ingest_opts *opts;
	struct kj_map *corr;    /* correlation -> index into launches */
	struct kj_map *nodes;   /* graph node id -> correlation of the launch that made it */
	struct kj_map *clones;  /* cloned node id -> original node id */
	struct kj_map *uniques; /* key -> unique_kernel.id */
	struct kj_map *devices; /* ordinal -> device.id */
	struct kj_map *allocs;  /* address -> open allocation row */
	struct marker *markers;
	size_t nmarkers, cap_markers;
	struct kj_rec_seqop *seqops; /* event records and waits, in file order */
	size_t nseqops, cap_seqops;
	struct kj_rec_memset_dst *msets; /* memset destinations, joined to memset rows at the end */
	size_t nmsets, cap_msets;
	int saw_end, truncated;
	struct kj_ingest_stats *stats;
};

void kj_uuid_format(const unsigned char u[16], char out[41])
{
	snprintf(out, 41,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

static int step_done(struct ingest *in, sqlite3_stmt *st)
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

static const char *str(const struct ingest *in, uint32_t id)
{
	return id && id < in->nstrings && in->strings[id] ? in->strings[id] : NULL;
}

static void bind_opt_i64(sqlite3_stmt *st, int col, int have, int64_t v)
{
	if (have)
		sqlite3_bind_int64(st, col, v);
	else
		sqlite3_bind_null(st, col);
}

static int64_t device_id(struct ingest *in, uint32_t ordinal)
{
	uint64_t v;
	return kj_map_get(in->devices, ordinal, &v) ? (int64_t)v : -1;
}

/* kernel_name.id of a mangled name, adding it (with its demangled form) when new. */
static int64_t name_id(struct ingest *in, uint32_t sid)
{
	const char *mangled = str(in, sid);
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
		if (step_done(in, st) == 0)
			id = sqlite3_last_insert_rowid(in->db);
	}
	if (sid < in->nstrings)
		in->name_ids[sid] = id;
	return id;
}

static char *layout_text(const uint32_t *layout, uint32_t n)
{
	char *text = malloc((size_t)n * 24 + 1);
	size_t len = 0;
	if (!text)
		return NULL;
	text[0] = '\0';
	for (uint32_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "%s%u:%u", i ? "," : "", layout[2 * i], layout[2 * i + 1]);
	return text;
}

struct unique_desc {
	uint64_t key;
	int by_params;
	uint32_t name_sid;
	uint32_t grid[3], block[3], cluster[3];
	int64_t shmem_dynamic, shmem_static, registers;
	int have_static;
	const uint32_t *layout;
	uint32_t nparams, param_bytes;
};

/* unique_kernel.id for a key, creating the row from d when new. */
static int64_t unique_id(struct ingest *in, const struct unique_desc *d)
{
	uint64_t mapkey = d->key ^ (d->by_params ? 0 : 0x8000000000000000ULL), v;
	char keytext[24];
	sqlite3_stmt *st;
	int64_t id = 0;
	if (kj_map_get(in->uniques, mapkey, &v))
		return (int64_t)v;
	snprintf(keytext, sizeof(keytext), "%c%016llx", d->by_params ? 'p' : 'g',
		 (unsigned long long)d->key);
	st = in->st[S_UNIQUE_FIND];
	sqlite3_bind_text(st, 1, keytext, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (!id) {
		const char *mangled = str(in, d->name_sid);
		int64_t nid = name_id(in, d->name_sid);
		char *dem = kj_demangle(mangled ? mangled : "?");
		char *layout = NULL;
		st = in->st[S_UNIQUE_ADD];
		sqlite3_bind_text(st, 1, keytext, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, nid);
		for (int i = 0; i < 3; i++) {
			sqlite3_bind_int64(st, 3 + i, d->grid[i]);
			sqlite3_bind_int64(st, 6 + i, d->block[i]);
			sqlite3_bind_int64(st, 9 + i, d->cluster[i]);
		}
		sqlite3_bind_int64(st, 12, d->shmem_dynamic);
		bind_opt_i64(st, 13, d->have_static, d->shmem_static);
		bind_opt_i64(st, 14, d->have_static, d->registers);
		if (d->layout) {
			layout = layout_text(d->layout, d->nparams);
			sqlite3_bind_int64(st, 15, d->param_bytes);
			sqlite3_bind_text(st, 16, layout ? layout : "", -1, SQLITE_TRANSIENT);
		}
		sqlite3_bind_text(st, 17, kj_tier_classify(mangled ? mangled : "?", dem ? dem : ""), -1,
				  SQLITE_STATIC);
		sqlite3_bind_text(st, 18, d->by_params ? "params" : "geometry", -1, SQLITE_STATIC);
		free(dem);
		free(layout);
		if (step_done(in, st) == 0)
			id = sqlite3_last_insert_rowid(in->db);
		in->stats->unique_kernels++;
	}
	kj_map_put(in->uniques, mapkey, (uint64_t)id);
	return id;
}

static uint64_t geometry_key(const char *name, const struct kj_rec_kernel *k)
{
	uint64_t h = 1469598103934665603ULL;
	for (const char *s = name ? name : ""; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	for (int i = 0; i < 3; i++) {
		h = (h ^ (uint32_t)k->grid[i]) * 1099511628211ULL;
		h = (h ^ (uint32_t)k->block[i]) * 1099511628211ULL;
		h = (h ^ k->cluster[i]) * 1099511628211ULL;
	}
	h = (h ^ (uint32_t)k->shmem_dynamic) * 1099511628211ULL;
	return h;
}

/* The launch a kernel activity came from: its own launch, or the launch that created the graph
 * node it ran from (or the node that node was cloned from). NULL when unknown. */
static const struct launch_info *kernel_launch(struct ingest *in, const struct kj_rec_kernel *k)
{
	uint64_t v, corr = 0;
	if (k->graph_node_id) {
		uint64_t node = k->graph_node_id;
		for (int hops = 0; hops < 8 && !corr; hops++) {
			if (kj_map_get(in->nodes, node, &v) && v)
				corr = v;
			else if (!kj_map_get(in->clones, node, &node))
				break;
		}
		if (!corr)
			return NULL;
	} else {
		corr = k->correlation;
	}
	return kj_map_get(in->corr, corr, &v) ? &in->launches[v] : NULL;
}

static int put_kernel(struct ingest *in, const struct kj_rec_kernel *k)
{
	sqlite3_stmt *st = in->st[S_KERNEL];
	const struct launch_info *l = kernel_launch(in, k);
	int64_t launch_ns = -1, uid;
	uint32_t tid = 0;
	if (l && l->unique_id > 0) {
		uid = l->unique_id;
		if (!k->graph_node_id) {
			launch_ns = l->launch_ns;
			tid = l->tid;
		}
	} else {
		struct unique_desc d;
		memset(&d, 0, sizeof(d));
		d.key = geometry_key(str(in, k->name_id), k);
		d.name_sid = k->name_id;
		for (int i = 0; i < 3; i++) {
			d.grid[i] = (uint32_t)k->grid[i];
			d.block[i] = (uint32_t)k->block[i];
			d.cluster[i] = k->cluster[i];
		}
		d.shmem_dynamic = k->shmem_dynamic;
		d.shmem_static = k->shmem_static;
		d.registers = k->registers;
		d.have_static = 1;
		uid = unique_id(in, &d);
	}
	int64_t dev = device_id(in, k->device);
	sqlite3_bind_int64(st, 1, in->pid);
	bind_opt_i64(st, 2, dev >= 0, dev);
	sqlite3_bind_int64(st, 3, k->context);
	sqlite3_bind_int64(st, 4, k->stream);
	sqlite3_bind_int64(st, 5, k->correlation);
	sqlite3_bind_int64(st, 6, k->start_ns);
	sqlite3_bind_int64(st, 7, k->end_ns);
	sqlite3_bind_int64(st, 8, name_id(in, k->name_id));
	sqlite3_bind_int64(st, 9, uid);
	for (int i = 0; i < 3; i++) {
		sqlite3_bind_int64(st, 10 + i, k->grid[i]);
		sqlite3_bind_int64(st, 13 + i, k->block[i]);
		sqlite3_bind_int64(st, 16 + i, k->cluster[i]);
	}
	sqlite3_bind_int64(st, 19, k->shmem_dynamic);
	sqlite3_bind_int64(st, 20, k->shmem_static);
	sqlite3_bind_int64(st, 21, k->registers);
	bind_opt_i64(st, 22, k->graph_node_id != 0, k->graph_id);
	bind_opt_i64(st, 23, k->graph_node_id != 0, (int64_t)k->graph_node_id);
	bind_opt_i64(st, 24, launch_ns >= 0, tid);
	bind_opt_i64(st, 25, launch_ns >= 0, launch_ns);
	in->stats->kernels++;
	return step_done(in, st);
}

static const char *copy_kind(uint8_t k)
{
	static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					    "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

static const char *mem_kind(uint8_t k)
{
	static const char *const names[] = {"unknown", "pageable", "pinned", "device", "array",
					    "managed", "device_static", "managed_static"};
	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

static int put_copy(struct ingest *in, const struct kj_rec_memcpy *m)
{
	int64_t dev = device_id(in, m->device);
	sqlite3_stmt *st = in->st[m->is_memset ? S_MEMSET : S_MEMCPY];
	sqlite3_bind_int64(st, 1, in->pid);
	bind_opt_i64(st, 2, dev >= 0, dev);
	sqlite3_bind_int64(st, 3, m->context);
	sqlite3_bind_int64(st, 4, m->stream);
	sqlite3_bind_int64(st, 5, m->correlation);
	sqlite3_bind_int64(st, 6, m->start_ns);
	sqlite3_bind_int64(st, 7, m->end_ns);
	sqlite3_bind_int64(st, 8, (int64_t)m->bytes);
	if (m->is_memset) {
		sqlite3_bind_int64(st, 9, m->value);
		sqlite3_bind_text(st, 10, mem_kind(m->dst_kind), -1, SQLITE_STATIC);
		bind_opt_i64(st, 11, m->graph_node_id != 0, (int64_t)m->graph_node_id);
		in->stats->memsets++;
	} else {
		sqlite3_bind_text(st, 9, copy_kind(m->copy_kind), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 10, mem_kind(m->src_kind), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 11, mem_kind(m->dst_kind), -1, SQLITE_STATIC);
		bind_opt_i64(st, 12, m->graph_node_id != 0, (int64_t)m->graph_node_id);
		in->stats->memcpys++;
	}
	return step_done(in, st);
}

static int put_memory(struct ingest *in, const struct kj_rec_memory *m)
{
	uint64_t row;
	if (m->op == 1) {
		sqlite3_stmt *st = in->st[S_ALLOC];
		int64_t dev = m->via ? -1 : device_id(in, m->device);
		const char *kind = m->via ? "vmm" : m->pool ? "pool" : mem_kind(m->kind);
		sqlite3_bind_int64(st, 1, in->pid);
		bind_opt_i64(st, 2, dev >= 0, dev);
		sqlite3_bind_int64(st, 3, (int64_t)m->address);
		sqlite3_bind_int64(st, 4, (int64_t)m->bytes);
		sqlite3_bind_text(st, 5, kind, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, m->t_ns);
		bind_opt_i64(st, 7, m->pool != 0, m->stream);
		if (step_done(in, st))
			return KJ_EDB;
		kj_map_put(in->allocs, m->address, (uint64_t)sqlite3_last_insert_rowid(in->db));
		in->stats->allocations++;
		return 0;
	}
	if (kj_map_get(in->allocs, m->address, &row) && row) {
		sqlite3_stmt *st = in->st[S_FREE];
		sqlite3_bind_int64(st, 1, m->t_ns);
		sqlite3_bind_int64(st, 2, (int64_t)row);
		kj_map_put(in->allocs, m->address, 0);
		return step_done(in, st);
	}
	return 0;
}

static int put_api(struct ingest *in, const struct kj_rec_api *a)
{
	sqlite3_stmt *st = in->st[S_API];
	const char *name = str(in, a->name_id);
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, a->tid);
	sqlite3_bind_text(st, 3, a->domain == 1 ? "driver" : "runtime", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, a->cbid);
	if (name)
		sqlite3_bind_text(st, 5, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, a->start_ns);
	sqlite3_bind_int64(st, 7, a->end_ns);
	sqlite3_bind_int64(st, 8, a->correlation);
	sqlite3_bind_int64(st, 9, a->status);
	bind_opt_i64(st, 10, a->bytes >= 0, a->bytes);
	bind_opt_i64(st, 11, a->stream >= 0, a->stream);
	in->stats->api_calls++;
	return step_done(in, st);
}

static void module_hash(const unsigned char *p, size_t n, char out[33])
{
	uint64_t a = 1469598103934665603ULL, b = 0x9e3779b97f4a7c15ULL ^ n;
	for (size_t i = 0; i < n; i++) {
		a = (a ^ p[i]) * 1099511628211ULL;
		b = (b + p[i] + 1) * 0xff51afd7ed558ccdULL;
		b ^= b >> 29;
	}
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

struct modfn_ctx {
	struct ingest *in;
	const char *hash;
};

static void add_module_function(const char *name, void *ud)
{
	struct modfn_ctx *c = ud;
	sqlite3_stmt *st = c->in->st[S_MODFN];
	sqlite3_bind_text(st, 1, c->hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	step_done(c->in, st);
}

static int put_module(struct ingest *in, const struct kj_rec_module *m)
{
	const unsigned char *img = (const unsigned char *)(m + 1);
	char hash[33];
	sqlite3_stmt *st;
	int have = 0;
	if (sizeof(*m) + m->bytes > m->h.size)
		return KJ_EINVAL;
	module_hash(img, m->bytes, hash);
	st = in->st[S_MODULE_FIND];
	sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
	have = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_reset(st);
	if (!have) {
		size_t cap = ZSTD_compressBound(m->bytes);
		void *z = malloc(cap);
		size_t zn;
		struct modfn_ctx c = {in, hash};
		if (!z)
			return KJ_ENOMEM;
		zn = ZSTD_compress(z, cap, img, m->bytes, 3);
		st = in->st[S_MODULE_ADD];
		sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, kj_cubin_format(img, m->bytes), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)m->bytes);
		if (ZSTD_isError(zn)) {
			sqlite3_bind_text(st, 4, "none", -1, SQLITE_STATIC);
			sqlite3_bind_blob64(st, 5, img, m->bytes, SQLITE_STATIC);
		} else {
			sqlite3_bind_text(st, 4, "zstd", -1, SQLITE_STATIC);
			sqlite3_bind_blob64(st, 5, z, zn, SQLITE_STATIC);
		}
		int rc = step_done(in, st);
		free(z);
		if (rc)
			return rc;
		if (kj_cubin_functions(img, m->bytes, add_module_function, &c) < 0) {
			char what[160];
			snprintf(what, sizeof(what), "module %s: function names not readable (%s image)",
				 hash, kj_cubin_format(img, m->bytes));
			kj_db_problem(in->db, in->pid, m->t_ns, "warning", what);
		}
		in->stats->modules++;
		in->stats->module_bytes += (int64_t)m->bytes;
	}
	st = in->st[S_MODLOAD];
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, m->module_id);
	sqlite3_bind_text(st, 3, hash, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, m->t_ns);
	return step_done(in, st);
}

/* A buffer snapshot, compressed with zstd (kept raw when that does not shrink it). */
static int put_snapshot(struct ingest *in, const struct kj_rec_snapshot *r)
{
	const unsigned char *bytes = (const unsigned char *)(r + 1);
	sqlite3_stmt *st = in->st[S_SNAPSHOT];
	size_t cap, zn;
	void *z;
	int rc;
	if (sizeof(*r) + r->bytes > r->h.size)
		return KJ_EINVAL;
	cap = ZSTD_compressBound(r->bytes);
	z = malloc(cap ? cap : 1);
	if (!z)
		return KJ_ENOMEM;
	zn = ZSTD_compress(z, cap, bytes, r->bytes, 1);
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, (int64_t)r->address);
	sqlite3_bind_int64(st, 3, (int64_t)r->bytes);
	sqlite3_bind_int64(st, 4, r->correlation);
	if (ZSTD_isError(zn) || zn >= r->bytes) {
		sqlite3_bind_text(st, 5, "none", -1, SQLITE_STATIC);
		sqlite3_bind_blob64(st, 6, bytes, r->bytes, SQLITE_STATIC);
	} else {
		sqlite3_bind_text(st, 5, "zstd", -1, SQLITE_STATIC);
		sqlite3_bind_blob64(st, 6, z, zn, SQLITE_STATIC);
	}
	sqlite3_bind_text(st, 7, r->phase ? "after" : "before", -1, SQLITE_STATIC);
	bind_opt_i64(st, 8, r->copy_correlation != 0, r->copy_correlation);
	rc = step_done(in, st);
	free(z);
	in->stats->snapshots++;
	in->stats->snapshot_bytes += (int64_t)r->bytes;
	return rc;
}

/* The snapshot's own device-to-host copies are kjoule's, not the program's. */
static int drop_own_copies(struct ingest *in)
{
	char sql[256];
	if (!in->stats->snapshots)
		return 0;
	snprintf(sql, sizeof(sql),
		 "DELETE FROM memcpy WHERE pid = %lld AND correlation_id IN (SELECT copy_correlation_id"
		 " FROM snapshot WHERE pid = %lld AND copy_correlation_id IS NOT NULL)",
		 (long long)in->pid, (long long)in->pid);
	return kj_db_exec(in->db, sql, "leave out the snapshot's own copies");
}

static int put_device(struct ingest *in, const struct kj_rec_device *d)
{
	char uuid[41];
	sqlite3_stmt *st = in->st[S_DEVICE_FIND];
	int64_t id = 0;
	kj_uuid_format(d->uuid, uuid);
	sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (!id) {
		st = in->st[S_DEVICE_ADD];
		sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
		if (step_done(in, st))
			return KJ_EDB;
		id = sqlite3_last_insert_rowid(in->db);
	}
	st = in->st[S_DEVICE_FILL];
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, d->name, (int)strnlen(d->name, sizeof(d->name)), SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, d->cc_major);
	sqlite3_bind_int64(st, 4, d->cc_minor);
	sqlite3_bind_int64(st, 5, d->sm_count);
	sqlite3_bind_int64(st, 6, (int64_t)d->memory_bytes);
	sqlite3_bind_int64(st, 7, d->l2_bytes);
	sqlite3_bind_int64(st, 8, d->clock_khz / 1000);
	sqlite3_bind_int64(st, 9, d->mem_clock_khz / 1000);
	sqlite3_bind_int64(st, 10, d->driver_version);
	sqlite3_bind_text(st, 11, d->pci_bus_id, (int)strnlen(d->pci_bus_id, sizeof(d->pci_bus_id)),
			  SQLITE_STATIC);
	if (step_done(in, st))
		return KJ_EDB;
	kj_map_put(in->devices, d->ordinal, (uint64_t)id);
	st = in->st[S_PROCDEV];
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, d->ordinal);
	sqlite3_bind_int64(st, 3, id);
	return step_done(in, st);
}

static int put_process(struct ingest *in, const struct kj_rec_process *p)
{
	const char *text = (const char *)(p + 1);
	size_t len = p->text_len;
	char sql[] = "INSERT OR REPLACE INTO process(pid, ppid, exe, args, start_ns, ended_cleanly)"
		     " VALUES(?,?,?,?,?,0)";
	sqlite3_stmt *st;
	char *args;
	if (sizeof(*p) + len > p->h.size)
		return KJ_EINVAL;
	in->pid = p->pid;
	if (kj_db_prepare(in->db, sql, &st))
		return KJ_EDB;
	size_t exe_len = strnlen(text, len);
	args = malloc(len + 1);
	if (!args) {
		sqlite3_finalize(st);
		return KJ_ENOMEM;
	}
	/* /proc/self/cmdline: NUL-separated words; stored space-separated for reading */
	size_t alen = 0;
	for (size_t i = exe_len + 1; i < len; i++)
		args[alen++] = text[i] ? text[i] : ' ';
	while (alen && args[alen - 1] == ' ')
		alen--;
	args[alen] = '\0';
	sqlite3_bind_int64(st, 1, p->pid);
	sqlite3_bind_int64(st, 2, p->ppid);
	sqlite3_bind_text(st, 3, text, (int)exe_len, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, args, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, p->start_ns);
	int rc = step_done(in, st);
	sqlite3_finalize(st);
	free(args);
	in->stats->processes++;
	return rc;
}

static int put_text(struct ingest *in, const struct kj_rec_text *t, const char *severity)
{
	char *what;
	int rc;
	if (sizeof(*t) + t->len > t->h.size)
		return KJ_EINVAL;
	what = strndup((const char *)(t + 1), t->len);
	if (!what)
		return KJ_ENOMEM;
	rc = kj_db_problem(in->db, in->pid, t->t_ns, severity, what);
	free(what);
	return rc;
}

static int add_string(struct ingest *in, const struct kj_rec_string *s)
{
	if (sizeof(*s) + s->len > s->h.size || s->id > 100000000)
		return KJ_EINVAL;
	if (s->id >= in->nstrings) {
		size_t n = in->nstrings ? in->nstrings : 256;
		while (n <= s->id)
			n *= 2;
		char **ns = realloc(in->strings, n * sizeof(*ns));
		int64_t *ni = realloc(in->name_ids, n * sizeof(*ni));
		if (ns)
			in->strings = ns;
		if (ni)
			in->name_ids = ni;
		if (!ns || !ni)
			return KJ_ENOMEM;
		memset(in->strings + in->nstrings, 0, (n - in->nstrings) * sizeof(*ns));
		memset(in->name_ids + in->nstrings, 0, (n - in->nstrings) * sizeof(*ni));
		in->nstrings = n;
	}
	free(in->strings[s->id]);
	in->strings[s->id] = strndup((const char *)(s + 1), s->len);
	return in->strings[s->id] ? 0 : KJ_ENOMEM;
}

static int add_launch(struct ingest *in, const struct kj_rec_launch *l)
{
	uint64_t gi;
	if (sizeof(*l) + (size_t)l->ndiff * sizeof(struct kj_word_diff) > l->h.size)
		return KJ_EINVAL;
	if (!kj_map_get(in->group_index, l->group, &gi))
		return 0; /* a group record always comes first; without it the launch is not keyed */
	if (in->nlaunches == in->cap_launches) {
		size_t n = in->cap_launches ? in->cap_launches * 2 : 4096;
		struct launch_info *nl = realloc(in->launches, n * sizeof(*nl));
		if (!nl)
			return KJ_ENOMEM;
		in->launches = nl;
		in->cap_launches = n;
	}
	struct launch_info *li = &in->launches[in->nlaunches];
	memset(li, 0, sizeof(*li));
	li->launch_ns = l->launch_ns;
	li->tid = l->tid;
	li->stream = l->stream;
	li->correlation = l->correlation;
	li->group = (uint32_t)gi;
	li->ndiff = l->ndiff;
	li->diffs = (const struct kj_word_diff *)(l + 1);
	return kj_map_put(in->corr, l->correlation, in->nlaunches++);
}

static int add_group(struct ingest *in, const struct kj_rec_group *g)
{
	size_t head = sizeof(*g) + (size_t)g->nparams * 2 * sizeof(uint32_t);
	if (head + g->blob_len > g->h.size)
		return KJ_EINVAL;
	if (in->ngroups == in->cap_groups) {
		size_t n = in->cap_groups ? in->cap_groups * 2 : 256;
		struct group_info *ng = realloc(in->groups, n * sizeof(*ng));
		if (!ng)
			return KJ_ENOMEM;
		in->groups = ng;
		in->cap_groups = n;
	}
	struct group_info *gi = &in->groups[in->ngroups];
	memset(gi, 0, sizeof(*gi));
	gi->rec = g;
	gi->layout = (const uint32_t *)(g + 1);
	gi->ref = g->blob_len ? (const unsigned char *)g + head : NULL;
	return kj_map_put(in->group_index, g->group, in->ngroups++);
}

static int add_range(struct ingest *in, const struct kj_rec_memory *m)
{
	if (m->op != 1 || !m->bytes)
		return 0;
	if (in->nranges == in->cap_ranges) {
		size_t n = in->cap_ranges ? in->cap_ranges * 2 : 256;
		struct range *nr = realloc(in->ranges, n * sizeof(*nr));
		if (!nr)
			return KJ_ENOMEM;
		in->ranges = nr;
		in->cap_ranges = n;
	}
	in->ranges[in->nranges++] = (struct range){m->address, m->address + m->bytes};
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->base < y->base ? -1 : x->base > y->base ? 1 : 0;
}

/* 1 if v falls inside a device allocation made at any time in this process. */
static int is_device_pointer(const struct ingest *in, uint64_t v)
{
	size_t lo = 0, hi = in->nranges;
	while (lo < hi) { /* first range with base > v */
		size_t mid = (lo + hi) / 2;
		if (in->ranges[mid].base <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges may nest (pools, VMM): look back over a few for one that contains v */
	for (size_t i = lo, back = 0; i > 0 && back < 64; i--, back++)
		if (v < in->ranges[i - 1].end)
			return 1;
	return 0;
}

/* Stack and mmap addresses (0x7f..........), and the heap-sized values junk words carry. */
static int looks_like_host_address(uint64_t v)
{
	return (v >> 40) == 0x7f || (v >> 40) == 0x55 || (v >> 40) == 0x56 ||
	       (v >= 0x1000000 && v < 0x100000000ULL && (v & 0xf) == 0);
}

#define KJ_MAX_WORD_VALUES 8

struct word_stat {
	uint64_t values[KJ_MAX_WORD_VALUES + 1];
	int n;            /* distinct values seen (capped at KJ_MAX_WORD_VALUES + 1) */
	int all_pointer;  /* every value is a device pointer */
	int any_host;     /* some value (the reference included) looks like a host address */
};

static uint64_t word_value(const struct group_info *g, const struct launch_info *l, uint32_t w)
{
	uint64_t v = 0;
	for (uint32_t i = 0; i < l->ndiff; i++)
		if (l->diffs[i].word == w)
			return l->diffs[i].value;
	if (g->ref) {
		uint32_t len = g->rec->blob_len;
		uint32_t n = len - w * 8 < 8 ? len - w * 8 : 8;
		memcpy(&v, g->ref + w * 8, n);
	}
	return v;
}

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* Decide, per group, which parameter words tell work apart (see kj_ingest.h), then give every
 * launch its unique key. Runs between the two passes. */
static int classify(struct ingest *in)
{
	struct kj_map *index = kj_map_new();
	struct word_stat *stats = NULL;
	size_t nstats = 0, cap = 0;
	int rc = 0;
	if (!index)
		return KJ_ENOMEM;
	qsort(in->ranges, in->nranges, sizeof(*in->ranges), cmp_range);
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		const struct launch_info *l = &in->launches[i];
		const struct group_info *g = &in->groups[l->group];
		for (uint32_t d = 0; d < l->ndiff; d++) {
			uint64_t wkey = ((uint64_t)l->group << 24) | l->diffs[d].word, si;
			uint64_t v = l->diffs[d].value;
			struct word_stat *ws;
			if (l->diffs[d].word >= (1u << 24) || !g->ref || l->diffs[d].word * 8 >= g->rec->blob_len)
				continue;
			if (!kj_map_get(index, wkey, &si)) {
				if (nstats == cap) {
					cap = cap ? cap * 2 : 1024;
					struct word_stat *n = realloc(stats, cap * sizeof(*n));
					if (!n) {
						rc = KJ_ENOMEM;
						break;
					}
					stats = n;
				}
				si = nstats++;
				ws = &stats[si];
				memset(ws, 0, sizeof(*ws));
				struct launch_info none;
				memset(&none, 0, sizeof(none));
				ws->values[0] = word_value(g, &none, l->diffs[d].word);
				ws->n = 1;
				ws->all_pointer = is_device_pointer(in, ws->values[0]);
				ws->any_host = !ws->all_pointer && looks_like_host_address(ws->values[0]);
				if ((rc = kj_map_put(index, wkey, si)) != 0)
					break;
			}
			ws = &stats[si];
			if (ws->n > KJ_MAX_WORD_VALUES)
				continue;
			int seen = 0;
			for (int j = 0; j < ws->n && !seen; j++)
				seen = ws->values[j] == v;
			if (seen)
				continue;
			ws->values[ws->n++] = v;
			if (ws->all_pointer && !is_device_pointer(in, v))
				ws->all_pointer = 0;
			if (!ws->any_host && looks_like_host_address(v) && !is_device_pointer(in, v))
				ws->any_host = 1;
		}
	}
	/* the parameter words of each group: varying, not pointers, not junk */
	for (size_t gi = 0; gi < in->ngroups && !rc; gi++) {
		struct group_info *g = &in->groups[gi];
		uint32_t words = g->ref ? (g->rec->blob_len + 7) / 8 : 0;
		for (uint32_t w = 0; w < words; w++) {
			uint64_t si;
			if (!kj_map_get(index, ((uint64_t)gi << 24) | w, &si))
				continue;
			const struct word_stat *ws = &stats[si];
			if (ws->all_pointer || ws->n > KJ_MAX_WORD_VALUES || ws->any_host)
				continue;
			uint32_t *pw = realloc(g->param_words, (g->nparam_words + 1) * sizeof(*pw));
			if (!pw) {
				rc = KJ_ENOMEM;
				break;
			}
			g->param_words = pw;
			pw[g->nparam_words++] = w;
		}
	}
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		struct launch_info *l = &in->launches[i];
		const struct group_info *g = &in->groups[l->group];
		uint64_t h = g->rec->group;
		for (uint32_t j = 0; j < g->nparam_words; j++)
			h = mix64(mix64(h, g->param_words[j]), word_value(g, l, g->param_words[j]));
		l->key = h;
	}
	free(stats);
	kj_map_free(index);
	return rc;
}

/* Write one launch's full parameter block (its group's reference with its words applied). */
static int put_launch_params(struct ingest *in, const struct launch_info *l, int64_t ordinal,
			     int iteration)
{
	const struct group_info *g = &in->groups[l->group];
	const struct kj_rec_group *r = g->rec;
	unsigned char *blob;
	char *layout;
	sqlite3_stmt *st = in->st[S_PARAMS];
	int rc;
	if (!g->ref)
		return 0;
	blob = malloc(r->blob_len);
	layout = layout_text(g->layout, r->nparams);
	if (!blob || !layout) {
		free(blob);
		free(layout);
		return KJ_ENOMEM;
	}
	memcpy(blob, g->ref, r->blob_len);
	for (uint32_t d = 0; d < l->ndiff; d++) {
		uint32_t w = l->diffs[d].word;
		if ((uint64_t)w * 8 >= r->blob_len)
			continue;
		uint32_t n = r->blob_len - w * 8 < 8 ? r->blob_len - w * 8 : 8;
		memcpy(blob + w * 8, &l->diffs[d].value, n);
	}
	sqlite3_bind_int64(st, 1, l->unique_id);
	sqlite3_bind_int64(st, 2, in->pid);
	sqlite3_bind_int64(st, 3, l->correlation);
	bind_opt_i64(st, 4, ordinal >= 0, ordinal);
	sqlite3_bind_text(st, 5, r->handle_kind == 1 ? "function" : r->handle_kind == 2 ? "kernel" : "unknown",
			  -1, SQLITE_STATIC);
	for (int i = 0; i < 3; i++) {
		sqlite3_bind_int64(st, 6 + i, r->grid[i]);
		sqlite3_bind_int64(st, 9 + i, r->block[i]);
		sqlite3_bind_int64(st, 12 + i, r->cluster[i]);
	}
	sqlite3_bind_int64(st, 15, r->shmem_dynamic);
	sqlite3_bind_int64(st, 16, l->stream);
	sqlite3_bind_int64(st, 17, l->launch_ns);
	bind_opt_i64(st, 18, iteration > 0, iteration);
	sqlite3_bind_text(st, 19, layout, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 20, blob, (int)r->blob_len, SQLITE_TRANSIENT);
	rc = step_done(in, st);
	free(blob);
	free(layout);
	in->stats->params++;
	return rc;
}

/* Unique-kernel rows for every keyed launch, and the first K parameter blocks of each. */
static int put_uniques(struct ingest *in)
{
	struct kj_map *kept = kj_map_new();
	int k = in->opts ? in->opts->params_k : 1;
	int rc = 0;
	if (!kept)
		return KJ_ENOMEM;
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		struct launch_info *l = &in->launches[i];
		const struct group_info *g = &in->groups[l->group];
		const struct kj_rec_group *r = g->rec;
		struct unique_desc d;
		uint64_t n = 0;
		memset(&d, 0, sizeof(d));
		d.key = l->key;
		d.by_params = g->ref != NULL;
		d.name_sid = r->name_id;
		memcpy(d.grid, r->grid, sizeof(d.grid));
		memcpy(d.block, r->block, sizeof(d.block));
		memcpy(d.cluster, r->cluster, sizeof(d.cluster));
		d.shmem_dynamic = r->shmem_dynamic;
		d.layout = g->layout;
		d.nparams = r->nparams;
		d.param_bytes = r->blob_len;
		l->unique_id = unique_id(in, &d);
		if (l->unique_id <= 0) {
			rc = KJ_EDB;
			break;
		}
		kj_map_get(kept, (uint64_t)l->unique_id, &n);
		if ((int64_t)n < k && g->ref) {
			rc = put_launch_params(in, l, (int64_t)n, 0);
			kj_map_put(kept, (uint64_t)l->unique_id, n + 1);
		}
	}
	kj_map_free(kept);
	return rc;
}

static int add_marker(struct ingest *in, const struct kj_rec_marker *m)
{
	if (in->nmarkers == in->cap_markers) {
		size_t n = in->cap_markers ? in->cap_markers * 2 : 1024;
		struct marker *nm = realloc(in->markers, n * sizeof(*nm));
		if (!nm)
			return KJ_ENOMEM;
		in->markers = nm;
		in->cap_markers = n;
	}
	in->markers[in->nmarkers++] = (struct marker){m->t_ns, m->id, m->flags, m->name_id, m->domain_id, m->tid};
	return 0;
}

/* Room for one more element in a growing array (*v of *cap elements, n used): 0 or KJ_ENOMEM. */
static int reserve_one(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : first;
	void *nv = realloc(*v, c * elem);
	if (!nv)
		return KJ_ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

static int add_seqop(struct ingest *in, const struct kj_rec_seqop *r)
{
	if (reserve_one((void **)&in->seqops, &in->cap_seqops, in->nseqops, sizeof(*r), 256))
		return KJ_ENOMEM;
	in->seqops[in->nseqops++] = *r;
	return 0;
}

static int add_memset_dst(struct ingest *in, const struct kj_rec_memset_dst *r)
{
	if (reserve_one((void **)&in->msets, &in->cap_msets, in->nmsets, sizeof(*r), 256))
		return KJ_ENOMEM;
	in->msets[in->nmsets++] = *r;
	return 0;
}

/* memset rows get the destination and element size their API call had */
static int put_memset_dsts(struct ingest *in)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (!in->nmsets)
		return 0;
	if (kj_db_prepare(in->db, "UPDATE memset SET address = ?1, element_bytes = ?2"
				  " WHERE pid = ?3 AND correlation_id = ?4", &st))
		return KJ_EDB;
	for (size_t i = 0; i < in->nmsets && !rc; i++) {
		sqlite3_bind_int64(st, 1, (int64_t)in->msets[i].address);
		sqlite3_bind_int64(st, 2, in->msets[i].element_bytes);
		sqlite3_bind_int64(st, 3, in->pid);
		sqlite3_bind_int64(st, 4, in->msets[i].correlation);
		rc = step_done(in, st);
	}
	sqlite3_finalize(st);
	return rc;
}

static int cmp_marker(const void *a, const void *b)
{
	const struct marker *x = a, *y = b;
	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns ? 1 : 0;
}

struct open_range {
	uint32_t id, tid;
	int64_t row, start_ns;
	int depth;
	int64_t parent;
	uint32_t name_id, domain_id;
};

/* Pair NVTX start and end markers into ranges; depth and parent come from the ranges open on
 * the same thread when one starts. A range that never ends keeps end_ns NULL. */
static int put_ranges(struct ingest *in)
{
	struct open_range *open = NULL;
	size_t nopen = 0, cap = 0;
	int64_t next_row;
	int rc = 0;
	sqlite3_stmt *st = in->st[S_NVTX];
	sqlite3_stmt *q;
	if (!in->nmarkers)
		return 0;
	qsort(in->markers, in->nmarkers, sizeof(*in->markers), cmp_marker);
	if (kj_db_prepare(in->db, "SELECT coalesce(max(id), 0) + 1 FROM nvtx_range", &q))
		return KJ_EDB;
	sqlite3_step(q);
	next_row = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	for (size_t i = 0; i < in->nmarkers && !rc; i++) {
		const struct marker *m = &in->markers[i];
		if (m->flags & 2) { /* start */
			if (nopen == cap) {
				cap = cap ? cap * 2 : 64;
				struct open_range *n = realloc(open, cap * sizeof(*n));
				if (!n) {
					rc = KJ_ENOMEM;
					break;
				}
				open = n;
			}
			struct open_range *o = &open[nopen++];
			o->id = m->id;
			o->tid = m->tid;
			o->row = next_row++;
			o->start_ns = m->t_ns;
			o->name_id = m->name_id;
			o->domain_id = m->domain_id;
			o->depth = 0;
			o->parent = 0;
			for (size_t j = nopen - 1; j-- > 0;)
				if (open[j].tid == m->tid) {
					o->depth = open[j].depth + 1;
					o->parent = open[j].row;
					break;
				}
		} else if (m->flags & 4) { /* end */
			size_t j = nopen;
			while (j-- > 0)
				if (open[j].id == m->id)
					break;
			if (j == (size_t)-1)
				continue;
			struct open_range o = open[j];
			memmove(open + j, open + j + 1, (nopen - j - 1) * sizeof(*open));
			nopen--;
			sqlite3_bind_int64(st, 1, o.row);
			sqlite3_bind_int64(st, 2, in->pid);
			sqlite3_bind_int64(st, 3, o.tid);
			if (str(in, o.domain_id))
				sqlite3_bind_text(st, 4, str(in, o.domain_id), -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 5, str(in, o.name_id) ? str(in, o.name_id) : "", -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 6, o.start_ns);
			sqlite3_bind_int64(st, 7, m->t_ns);
			sqlite3_bind_int64(st, 8, o.depth);
			bind_opt_i64(st, 9, o.parent != 0, o.parent);
			sqlite3_bind_text(st, 10, "range", -1, SQLITE_STATIC);
			rc = step_done(in, st);
			in->stats->nvtx_ranges++;
		}
	}
	for (size_t j = 0; j < nopen && !rc; j++) { /* never closed */
		const struct open_range *o = &open[j];
		sqlite3_bind_int64(st, 1, o->row);
		sqlite3_bind_int64(st, 2, in->pid);
		sqlite3_bind_int64(st, 3, o->tid);
		if (str(in, o->domain_id))
			sqlite3_bind_text(st, 4, str(in, o->domain_id), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, str(in, o->name_id) ? str(in, o->name_id) : "", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, o->start_ns);
		sqlite3_bind_int64(st, 8, o->depth);
		bind_opt_i64(st, 9, o->parent != 0, o->parent);
		sqlite3_bind_text(st, 10, "range", -1, SQLITE_STATIC);
		rc = step_done(in, st);
		in->stats->nvtx_ranges++;
	}
	free(open);
	return rc;
}

/* A launch's stream, from its kernel's activity record (the launch callback does not ask CUPTI
 * for the stream id: that would cost every launch): launch_params and iteration sequences need
 * it to keep kernels, copies and memsets on their streams. */
static void fill_launch_streams(struct ingest *in)
{
	size_t off = sizeof(struct kj_rec_file);
	while (off + sizeof(struct kj_rec_hdr) <= in->n) {
		const struct kj_rec_hdr *h = (const void *)(in->data + off);
		if (h->size < sizeof(*h) || h->size % 8 || h->size > in->n - off)
			break;
		if (h->type == KJ_REC_KERNEL && h->size >= sizeof(struct kj_rec_kernel)) {
			const struct kj_rec_kernel *k = (const void *)h;
			uint64_t v;
			if (!k->graph_node_id && kj_map_get(in->corr, k->correlation, &v) && !in->launches[v].stream)
				in->launches[v].stream = k->stream;
		}
		off += h->size;
	}
}

/* Walk the records of the file; pass 1 collects strings, launches and graph nodes, pass 2
 * writes rows. Returns the offset of the first incomplete record (== n when none). */
static int walk(struct ingest *in, int pass, size_t *stop)
{
	size_t off = sizeof(struct kj_rec_file);
	int rc = 0;
	while (off + sizeof(struct kj_rec_hdr) <= in->n && !rc) {
		const struct kj_rec_hdr *h = (const void *)(in->data + off);
		if (h->size < sizeof(*h) || h->size % 8 || h->size > in->n - off)
			break;
		const void *r = h;
		switch (h->type) {
		case KJ_REC_STRING:
			if (pass == 1)
				rc = add_string(in, r);
			break;
		case KJ_REC_GROUP:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_group))
				rc = add_group(in, r);
			break;
		case KJ_REC_LAUNCH:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_launch))
				rc = add_launch(in, r);
			break;
		case KJ_REC_GRAPHNODE:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_graphnode)) {
				const struct kj_rec_graphnode *g = r;
				if (g->original_node_id)
					rc = kj_map_put(in->clones, g->node_id, g->original_node_id);
				else
					rc = kj_map_put(in->nodes, g->node_id, g->correlation);
			}
			break;
		case KJ_REC_PROCESS: /* written by walk_process() */
			break;
		case KJ_REC_DEVICE:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_device))
				rc = put_device(in, r);
			break;
		case KJ_REC_KERNEL:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_kernel))
				rc = put_kernel(in, r);
			break;
		case KJ_REC_MEMCPY:
		case KJ_REC_MEMSET:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_memcpy))
				rc = put_copy(in, r);
			break;
		case KJ_REC_MEMORY:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_memory))
				rc = add_range(in, r);
			if (pass == 2 && h->size >= sizeof(struct kj_rec_memory))
				rc = put_memory(in, r);
			break;
		case KJ_REC_MARKER:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_marker))
				rc = add_marker(in, r);
			break;
		case KJ_REC_API:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_api))
				rc = put_api(in, r);
			break;
		case KJ_REC_MODULE:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_module))
				rc = put_module(in, r);
			break;
		case KJ_REC_MEMSET_DST:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_memset_dst))
				rc = add_memset_dst(in, r);
			break;
		case KJ_REC_SEQOP:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_seqop))
				rc = add_seqop(in, r);
			break;
		case KJ_REC_SNAPSHOT:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_snapshot))
				rc = put_snapshot(in, r);
			break;
		case KJ_REC_CLOCK:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_clock)) {
				const struct kj_rec_clock *c = r;
				sqlite3_stmt *st = in->st[S_CLOCK];
				sqlite3_bind_int64(st, 1, in->pid);
				sqlite3_bind_int64(st, 2, c->trace_ns);
				sqlite3_bind_int64(st, 3, c->monotonic_ns);
				sqlite3_bind_int64(st, 4, c->realtime_ns);
				rc = step_done(in, st);
			}
			break;
		case KJ_REC_PROBLEM:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_text))
				rc = put_text(in, r, "warning");
			break;
		case KJ_REC_DROPPED:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_dropped)) {
				const struct kj_rec_dropped *d = r;
				char what[128];
				snprintf(what, sizeof(what), "CUPTI dropped %llu activity records",
					 (unsigned long long)d->count);
				in->stats->dropped_records += (int64_t)d->count;
				rc = kj_db_problem(in->db, in->pid, -1, "error", what);
			}
			break;
		case KJ_REC_END:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_text)) {
				const struct kj_rec_text *t = r;
				char sql[160];
				in->saw_end = 1;
				snprintf(sql, sizeof(sql),
					 "UPDATE process SET ended_cleanly = 1, end_ns = %lld WHERE pid = %lld",
					 (long long)t->t_ns, (long long)in->pid);
				rc = kj_db_exec(in->db, sql, "process end");
			}
			break;
		default:
			break; /* unknown record types of newer injection libraries are skipped */
		}
		off += h->size;
	}
	*stop = off;
	return rc;
}

/* The process record, read ahead of pass 2 so every row can carry the pid. */
static int walk_process(struct ingest *in)
{
	size_t off = sizeof(struct kj_rec_file);
	while (off + sizeof(struct kj_rec_hdr) <= in->n) {
		const struct kj_rec_hdr *h = (const void *)(in->data + off);
		if (h->size < sizeof(*h) || h->size % 8 || h->size > in->n - off)
			break;
		if (h->type == KJ_REC_PROCESS && h->size >= sizeof(struct kj_rec_process))
			return put_process(in, (const void *)h);
		off += h->size;
	}
	return 0;
}

static int64_t query_int(sqlite3 *db, const char *sql, int64_t pid, const char *text, int64_t arg)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (kj_db_prepare(db, sql, &st))
		return -1;
	sqlite3_bind_int64(st, 1, pid);
	if (text)
		sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, arg);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* --params-iteration N: every launch inside the N-th instance of the iteration range keeps its
 * parameters, and the iteration's kernels, copies and memsets become sequence_op rows in issue
 * (correlation) order, for whole-iteration replay. */
static int put_iteration(struct ingest *in)
{
	char name[256] = "", what[2048];
	sqlite3_stmt *st = NULL;
	int n = in->opts ? in->opts->params_iteration : 0;
	int64_t start = -1, end = -1, seq = 0, min_corr = INT64_MAX, max_corr = -1;
	int rc = 0;
	if (n <= 0 || in->pid < 0)
		return 0;
	if (in->opts->iteration_range) {
		snprintf(name, sizeof(name), "%s", in->opts->iteration_range);
	} else if (kj_db_prepare(in->db, "SELECT name FROM nvtx_range WHERE pid = ? AND depth = 0 AND"
				 " end_ns IS NOT NULL GROUP BY name ORDER BY count(*) DESC LIMIT 1", &st) == 0) {
		sqlite3_bind_int64(st, 1, in->pid);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			snprintf(name, sizeof(name), "%s", (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	start = query_int(in->db, "SELECT start_ns FROM nvtx_range WHERE pid = ?1 AND name = ?2 AND"
			  " end_ns IS NOT NULL ORDER BY start_ns LIMIT 1 OFFSET ?3 - 1", in->pid, name, n);
	end = query_int(in->db, "SELECT end_ns FROM nvtx_range WHERE pid = ?1 AND name = ?2 AND"
			" end_ns IS NOT NULL ORDER BY start_ns LIMIT 1 OFFSET ?3 - 1", in->pid, name, n);
	if (!name[0] || start < 0 || end < 0) {
		snprintf(what, sizeof(what), "--params-iteration %d: process %lld has no instance %d of "
			 "the iteration range '%s'", n, (long long)in->pid, n, name[0] ? name : "(none)");
		return kj_db_problem(in->db, in->pid, -1, "warning", what);
	}
	if (kj_db_prepare(in->db, "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op,"
			  " correlation_id, launch_params_id, bytes, kind) VALUES(?,?,?,?,?,?,?,?,?)", &st))
		return KJ_EDB;
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		const struct launch_info *l = &in->launches[i];
		if (l->launch_ns < start || l->launch_ns > end)
			continue;
		if ((rc = put_launch_params(in, l, -1, n)) != 0)
			break;
		sqlite3_bind_int64(st, 1, n);
		sqlite3_bind_int64(st, 2, seq++);
		sqlite3_bind_int64(st, 3, in->pid);
		sqlite3_bind_int64(st, 4, l->stream);
		sqlite3_bind_text(st, 5, "kernel", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, l->correlation);
		sqlite3_bind_int64(st, 7, sqlite3_last_insert_rowid(in->db));
		rc = step_done(in, st);
		if (l->correlation < min_corr)
			min_corr = l->correlation;
		if (l->correlation > max_corr)
			max_corr = l->correlation;
	}
	sqlite3_finalize(st);
	if (rc || max_corr < 0)
		return rc;
	/* the event records and waits made during the iteration: they order its streams */
	if (in->nseqops) {
		if (kj_db_prepare(in->db, "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op,"
				  " correlation_id, event_id) VALUES(?,0,?,?,?,?,?)", &st))
			return KJ_EDB;
		for (size_t i = 0; i < in->nseqops && !rc; i++) {
			const struct kj_rec_seqop *e = &in->seqops[i];
			if (e->t_ns < start || e->t_ns > end || (e->op != 1 && e->op != 2))
				continue;
			sqlite3_bind_int64(st, 1, n);
			sqlite3_bind_int64(st, 2, in->pid);
			sqlite3_bind_int64(st, 3, e->stream);
			sqlite3_bind_text(st, 4, e->op == 1 ? "event_record" : "event_wait", -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 5, e->correlation);
			sqlite3_bind_int64(st, 6, (int64_t)e->event);
			rc = step_done(in, st);
		}
		sqlite3_finalize(st);
		if (rc)
			return rc;
	}
	snprintf(what, sizeof(what),
		 "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op, correlation_id, bytes, kind)"
		 " SELECT %d, 0, pid, stream_id, 'memcpy', correlation_id, bytes, kind FROM memcpy"
		 " WHERE pid = %lld AND correlation_id BETWEEN %lld AND %lld"
		 " UNION ALL SELECT %d, 0, pid, stream_id, 'memset', correlation_id, bytes, NULL FROM memset"
		 " WHERE pid = %lld AND correlation_id BETWEEN %lld AND %lld;"
		 "UPDATE sequence_op SET ordinal = (SELECT rn FROM (SELECT id, row_number() OVER"
		 " (ORDER BY correlation_id, id) - 1 AS rn FROM sequence_op WHERE iteration = %d AND pid = %lld) t"
		 " WHERE t.id = sequence_op.id) WHERE iteration = %d AND pid = %lld;",
		 n, (long long)in->pid, (long long)min_corr, (long long)max_corr, n, (long long)in->pid,
		 (long long)min_corr, (long long)max_corr, n, (long long)in->pid, n, (long long)in->pid);
	rc = kj_db_exec(in->db, what, "iteration sequence");
	if (!rc) {
		snprintf(what, sizeof(what), "%s#%d", name, n);
		kj_db_meta_set(in->db, "params_iteration", what);
	}
	return rc;
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
		       " LIMIT 1) WHERE registers IS NULL;",
		       "unique kernel counts");
}

static void ingest_free(struct ingest *in)
{
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(in->st[i]);
	for (size_t i = 0; i < in->nstrings; i++)
		free(in->strings[i]);
	free(in->strings);
	free(in->name_ids);
	free(in->launches);
	for (size_t i = 0; i < in->ngroups; i++)
		free(in->groups[i].param_words);
	free(in->groups);
	free(in->ranges);
	kj_map_free(in->group_index);
	free(in->markers);
	free(in->seqops);
	free(in->msets);
	kj_map_free(in->corr);
	kj_map_free(in->nodes);
	kj_map_free(in->clones);
	kj_map_free(in->uniques);
	kj_map_free(in->devices);
	kj_map_free(in->allocs);
}

int kj_ingest_file(sqlite3 *db, const char *path, const struct kj_ingest_opts *opts,
		   struct kj_ingest_stats *stats)
{
	struct ingest in;
	struct stat sb;
	struct kj_ingest_stats dummy;
	const struct kj_rec_file *f;
	size_t stop = 0;
	int fd, rc = 0;

	memset(&in, 0, sizeof(in));
	memset(&dummy, 0, sizeof(dummy));
	in.db = db;
	in.path = path;
	in.pid = -1;
	in.opts = opts;
	in.stats = stats ? stats : &dummy;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		kj_errorf("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return KJ_EIO;
	}
	in.n = (size_t)sb.st_size;
	if (in.n < sizeof(struct kj_rec_file)) {
		close(fd);
		kj_warnf("%s: empty trace file (the process ended before CUDA started)", path);
		return 0;
	}
	in.data = mmap(NULL, in.n, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (in.data == MAP_FAILED) {
		kj_errorf("%s: mmap: %s", path, strerror(errno));
		return KJ_EIO;
	}
	f = (const void *)in.data;
	if (f->h.type != KJ_REC_FILE || f->magic != KJ_SPOOL_MAGIC) {
		kj_errorf("%s: not a kjoule trace spool file", path);
		rc = KJ_EINVAL;
		goto out;
	}
	if (f->version > KJ_SPOOL_VERSION) {
		kj_errorf("%s: spool version %u is newer than this kjoule (%u)", path, f->version,
			  KJ_SPOOL_VERSION);
		rc = KJ_EINVAL;
		goto out;
	}
	in.corr = kj_map_new();
	in.nodes = kj_map_new();
	in.clones = kj_map_new();
	in.uniques = kj_map_new();
	in.devices = kj_map_new();
	in.allocs = kj_map_new();
	in.group_index = kj_map_new();
	if (!in.corr || !in.nodes || !in.clones || !in.uniques || !in.devices || !in.allocs ||
	    !in.group_index) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (int i = 0; i < S_COUNT; i++)
		if ((rc = kj_db_prepare(db, stmt_sql[i], &in.st[i])) != 0)
			goto out;
	if ((rc = walk(&in, 1, &stop)) != 0 || (rc = classify(&in)) != 0)
		goto out;
	fill_launch_streams(&in);
	/* the process row first: unique kernels and parameters carry its pid */
	if ((rc = walk_process(&in)) != 0 || (rc = put_uniques(&in)) != 0 ||
	    (rc = walk(&in, 2, &stop)) != 0 || (rc = put_ranges(&in)) != 0 ||
	    (rc = put_iteration(&in)) != 0 || (rc = drop_own_copies(&in)) != 0 ||
	    (rc = put_memset_dsts(&in)) != 0)
		goto out;
	if ((rc = count_launches(db)) != 0)
		goto out;
	if (stop != in.n) {
		char what[256];
		snprintf(what, sizeof(what),
			 "trace of process %lld cut short after %zu of %zu bytes: the process was killed "
			 "or crashed; records up to then are kept", (long long)in.pid, stop, in.n);
		kj_db_problem(db, in.pid, -1, "warning", what);
		in.stats->truncated_files++;
	} else if (!in.saw_end) {
		char what[200];
		snprintf(what, sizeof(what),
			 "process %lld ended without closing its trace (killed, crashed or _exit): "
			 "the last second of activity may be missing", (long long)in.pid);
		kj_db_problem(db, in.pid, -1, "warning", what);
	}
out:
	ingest_free(&in);
	munmap((void *)in.data, in.n);
	return rc;
}

int kj_ingest_dir(sqlite3 *db, const char *dir, const struct kj_ingest_opts *opts,
		  struct kj_ingest_stats *stats)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int first = 0;
	if (!d) {
		kj_errorf("%s: %s", dir, strerror(errno));
		return KJ_EIO;
	}
	while ((e = readdir(d)) != NULL) {
		char path[4096];
		size_t len = strlen(e->d_name);
		if (e->d_name[0] != 'p' || len < 7 || strcmp(e->d_name + len - 6, ".spool"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		int rc = kj_ingest_file(db, path, opts, stats);
		if (rc && !first)
			first = rc;
	}
	closedir(d);
	return first;
}
