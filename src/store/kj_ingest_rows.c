/* Spool ingest: one row per record (kernels, copies, memsets, allocations, API calls, modules,
 * snapshots, devices, the process, problems); the graph records' rows, and which launch or
 * memset node a graph's work came from, are kj_ingest_graph_rows.c's. */
#include "kj_ingest_internal.h"

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
#include "kj_grow.h"
#include "kj_kernel_class.h"


/* unique_kernel.id for a key, creating the row from d when new. */
int64_t ing_unique_id(struct ingest *in, const struct unique_desc *d)
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
		const char *mangled = ing_str(in, d->name_sid);
		int64_t nid = ing_name_id(in, d->name_sid);
		char *dem = kj_demangle(mangled ? mangled : "?");
		char *layout = NULL;
		st = in->st[S_UNIQUE_ADD];
		sqlite3_bind_text(st, 1, keytext, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, nid);
		ing_bind_dims(st, 3, d->grid, d->block, d->cluster);
		sqlite3_bind_int64(st, 12, d->shmem_dynamic);
		ing_bind_opt_i64(st, 13, d->have_static, d->shmem_static);
		ing_bind_opt_i64(st, 14, d->have_static, d->registers);
		if (d->layout) {
			layout = ing_layout_text(d->layout, d->nparams);
			sqlite3_bind_int64(st, 15, d->param_bytes);
			sqlite3_bind_text(st, 16, layout ? layout : "", -1, SQLITE_TRANSIENT);
		}
		sqlite3_bind_text(st, 17, kj_tier_classify(mangled ? mangled : "?", dem ? dem : ""), -1,
				  SQLITE_STATIC);
		sqlite3_bind_text(st, 18, d->by_params ? "params" : "geometry", -1, SQLITE_STATIC);
		free(dem);
		free(layout);
		if (ing_step_done(in, st) == 0)
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

static const struct launch_info *kernel_launch(struct ingest *in, const struct kj_rec_kernel *k)
{
	uint64_t v;
	if (k->graph_node_id) {
		const struct launch_info *l = ing_node_launch(in, k->graph_node_id);
		return l ? l : ing_launch_by_shape(in, k);
	}
	return kj_map_get(in->corr, k->correlation, &v) ? &in->launches[v] : NULL;
}

int ing_put_kernel(struct ingest *in, const struct kj_rec_kernel *k, int full)
{
	sqlite3_stmt *st = in->st[S_KERNEL];
	const struct launch_info *l = kernel_launch(in, k);
	int64_t launch_ns = -1, uid = -1;
	uint32_t tid = 0;
	if (l && l->unique_id > 0) {
		uid = l->unique_id;
		if (!k->graph_node_id) {
			launch_ns = l->launch_ns;
			tid = l->tid;
		}
	}
	if (k->graph_node_id) {
		/* a graph's kernel was issued by the cuGraphLaunch that shares its correlation */
		const struct kj_rec_issue *g = ing_issue(in, k->correlation);
		if (g && g->op == KJ_ISSUE_GRAPH_LAUNCH) {
			launch_ns = g->start_ns;
			tid = g->tid;
		}
	}
	if (!(l && l->unique_id > 0)) {
		struct unique_desc d;
		memset(&d, 0, sizeof(d));
		d.key = geometry_key(ing_str(in, k->name_id), k);
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
		uid = ing_unique_id(in, &d);
	}
	int64_t dev = ing_device_id(in, k->device);
	sqlite3_bind_int64(st, 1, in->pid);
	ing_bind_opt_i64(st, 2, dev >= 0, dev);
	sqlite3_bind_int64(st, 3, k->context);
	sqlite3_bind_int64(st, 4, k->stream);
	sqlite3_bind_int64(st, 5, k->correlation);
	sqlite3_bind_int64(st, 6, k->start_ns);
	sqlite3_bind_int64(st, 7, k->end_ns);
	sqlite3_bind_int64(st, 8, ing_name_id(in, k->name_id));
	sqlite3_bind_int64(st, 9, uid);
	for (int i = 0; i < 3; i++) { /* the activity record's grid and block are signed */
		sqlite3_bind_int64(st, 10 + i, k->grid[i]);
		sqlite3_bind_int64(st, 13 + i, k->block[i]);
		sqlite3_bind_int64(st, 16 + i, k->cluster[i]);
	}
	sqlite3_bind_int64(st, 19, k->shmem_dynamic);
	sqlite3_bind_int64(st, 20, k->shmem_static);
	sqlite3_bind_int64(st, 21, k->registers);
	ing_bind_opt_i64(st, 22, k->graph_node_id != 0, k->graph_id);
	ing_bind_opt_i64(st, 23, k->graph_node_id != 0, (int64_t)k->graph_node_id);
	ing_bind_opt_i64(st, 24, launch_ns >= 0, tid);
	ing_bind_opt_i64(st, 25, launch_ns >= 0, launch_ns);
	/* older spools' records end before these (KJ_REC_KERNEL_MIN_SIZE) */
	ing_bind_opt_i64(st, 26, full, full ? k->shmem_executed : 0);
	ing_bind_opt_i64(st, 27, full && k->carveout != KJ_CARVEOUT_NONE, full ? k->carveout : 0);
	/* CUPTI's records of a graph's kernels say regular even where the node is cooperative: the
	 * node's own attribute, read at instantiation, says so in its launch group */
	int node_coop = k->graph_node_id && l && l->group < in->ngroups && in->groups[l->group].rec &&
			(in->groups[l->group].rec->flags & KJ_GROUP_COOPERATIVE);
	ing_bind_opt_i64(st, 28, full, node_coop && !k->launch_type ? 1 : full ? k->launch_type : 0);
	in->stats->kernels++;
	int rc = ing_step_done(in, st);
	/* the kept iteration's sequence needs each graph kernel's launch (its parameters) */
	if (!rc && k->graph_node_id && l) {
		int64_t row = sqlite3_last_insert_rowid(in->db), li = l - in->launches;
		int64_t(*v)[2] = kj_grow(in->graph_row_list, &in->cap_graph_rows, in->ngraph_rows,
					 sizeof(*v), 1024);
		if (!v || kj_map_put(in->graph_rows, (uint64_t)row, (uint64_t)li + 1))
			return KJ_ENOMEM;
		in->graph_row_list = v;
		in->graph_row_list[in->ngraph_rows][0] = row;
		in->graph_row_list[in->ngraph_rows][1] = li;
		in->ngraph_rows++;
	}
	return rc;
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

/* The bytes a host-to-device copy carried, beside its memcpy row. */
static int put_copy_data(struct ingest *in, int64_t memcpy_id, const struct kj_rec_copy_args *a)
{
	sqlite3_stmt *st = in->st[S_COPYDATA];
	sqlite3_bind_int64(st, 1, memcpy_id);
	sqlite3_bind_int64(st, 2, in->pid);
	sqlite3_bind_int64(st, 3, a->correlation);
	sqlite3_bind_int64(st, 4, (int64_t)a->data_bytes);
	sqlite3_bind_blob(st, 5, a + 1, (int)a->data_bytes, SQLITE_STATIC);
	return ing_step_done(in, st);
}

int ing_put_copy(struct ingest *in, const struct kj_rec_memcpy *m)
{
	int64_t dev = ing_device_id(in, m->device);
	sqlite3_stmt *st = in->st[m->is_memset ? S_MEMSET : S_MEMCPY];
	/* the call that issued it: its own copy or memset call, or the graph launch it ran in */
	const struct kj_rec_issue *by = ing_issue(in, m->correlation);
	int col = m->is_memset ? 14 : 13;
	ing_bind_opt_i64(st, col, by != NULL, by ? by->tid : 0);
	ing_bind_opt_i64(st, col + 1, by != NULL, by ? by->start_ns : 0);
	sqlite3_bind_int64(st, 1, in->pid);
	ing_bind_opt_i64(st, 2, dev >= 0, dev);
	sqlite3_bind_int64(st, 3, m->context);
	sqlite3_bind_int64(st, 4, m->stream);
	sqlite3_bind_int64(st, 5, m->correlation);
	sqlite3_bind_int64(st, 6, m->start_ns);
	sqlite3_bind_int64(st, 7, m->end_ns);
	sqlite3_bind_int64(st, 8, (int64_t)m->bytes);
	if (m->is_memset) {
		sqlite3_bind_int64(st, 9, m->value);
		sqlite3_bind_text(st, 10, mem_kind(m->dst_kind), -1, SQLITE_STATIC);
		ing_bind_opt_i64(st, 11, m->graph_node_id != 0, (int64_t)m->graph_node_id);
		/* where it wrote and in what width, from its API call (pass 1 gathered them) */
		uint64_t at, address = 0;
		uint32_t element_bytes = 0;
		const struct kj_rec_graph_memset *g;
		if (!m->graph_node_id && kj_map_get(in->mset_index, m->correlation, &at)) {
			address = in->msets[at].address;
			element_bytes = in->msets[at].element_bytes;
		} else if (m->graph_node_id && (g = ing_graph_memset_of(in, m->graph_node_id)) != NULL) {
			address = g->address;
			element_bytes = g->element_bytes;
		}
		ing_bind_opt_i64(st, 12, address != 0, (int64_t)address);
		ing_bind_opt_i64(st, 13, address != 0, element_bytes);
		in->stats->memsets++;
	} else {
		sqlite3_bind_text(st, 9, copy_kind(m->copy_kind), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 10, mem_kind(m->src_kind), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 11, mem_kind(m->dst_kind), -1, SQLITE_STATIC);
		ing_bind_opt_i64(st, 12, m->graph_node_id != 0, (int64_t)m->graph_node_id);
		in->stats->memcpys++;
		/* the device addresses (and a small host-to-device copy's bytes) its call recorded */
		const struct kj_rec_copy_args *a = m->graph_node_id ? NULL : ing_copy_args(in, m->correlation);
		if (a && a->bytes == m->bytes) {
			ing_bind_opt_i64(st, 15, a->dst != 0, (int64_t)a->dst);
			ing_bind_opt_i64(st, 16, a->src != 0, (int64_t)a->src);
			int rc = ing_step_done(in, st);
			if (rc || !a->data_bytes || a->data_bytes != a->bytes) /* none kept, or not the whole copy */
				return rc;
			return put_copy_data(in, sqlite3_last_insert_rowid(in->db), a);
		}
	}
	return ing_step_done(in, st);
}

int ing_put_memory(struct ingest *in, const struct kj_rec_memory *m)
{
	uint64_t row;
	if (m->op == 1) {
		sqlite3_stmt *st = in->st[S_ALLOC];
		int64_t dev = m->via != KJ_MEM_VIA_ACTIVITY ? -1 : ing_device_id(in, m->device);
		const char *kind = m->via == KJ_MEM_VIA_GRAPH ? "graph" : m->via == KJ_MEM_VIA_VMM ? "vmm"
				 : m->pool ? "pool" : mem_kind(m->kind);
		sqlite3_bind_int64(st, 1, in->pid);
		ing_bind_opt_i64(st, 2, dev >= 0, dev);
		sqlite3_bind_int64(st, 3, (int64_t)m->address);
		sqlite3_bind_int64(st, 4, (int64_t)m->bytes);
		sqlite3_bind_text(st, 5, kind, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, m->t_ns);
		ing_bind_opt_i64(st, 7, m->pool != 0, m->stream);
		if (ing_step_done(in, st))
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
		return ing_step_done(in, st);
	}
	return 0;
}

int ing_put_api(struct ingest *in, const struct kj_rec_api *a)
{
	sqlite3_stmt *st = in->st[S_API];
	const char *name = ing_str(in, a->name_id);
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
	ing_bind_opt_i64(st, 10, a->bytes >= 0, a->bytes);
	ing_bind_opt_i64(st, 11, a->stream >= 0, a->stream);
	in->stats->api_calls++;
	return ing_step_done(in, st);
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
	ing_step_done(c->in, st);
}

/* Binds codec (column `col`) and data (column col + 1): the n bytes compressed with zstd at
 * `level`, or raw where compression fails (or, with raw_unless_smaller, does not shrink them).
 * *z: the compressed copy, for the caller to free after the statement ran. */
static int bind_compressed(sqlite3_stmt *st, int col, const void *data, size_t n, int level,
			   int raw_unless_smaller, void **z)
{
	size_t cap = ZSTD_compressBound(n), zn;
	*z = malloc(cap ? cap : 1);
	if (!*z)
		return KJ_ENOMEM;
	zn = ZSTD_compress(*z, cap, data, n, level);
	if (ZSTD_isError(zn) || (raw_unless_smaller && zn >= n)) {
		sqlite3_bind_text(st, col, "none", -1, SQLITE_STATIC);
		sqlite3_bind_blob64(st, col + 1, data, n, SQLITE_STATIC);
	} else {
		sqlite3_bind_text(st, col, "zstd", -1, SQLITE_STATIC);
		sqlite3_bind_blob64(st, col + 1, *z, zn, SQLITE_STATIC);
	}
	return 0;
}

int ing_put_module(struct ingest *in, const struct kj_rec_module *m)
{
	const unsigned char *img = (const unsigned char *)(m + 1);
	char hash[33];
	sqlite3_stmt *st;
	int have = 0;
	if (!ing_payload_fits(&m->h, sizeof(*m), m->bytes))
		return KJ_EINVAL;
	module_hash(img, m->bytes, hash);
	st = in->st[S_MODULE_FIND];
	sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
	have = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_reset(st);
	if (!have) {
		void *z;
		struct modfn_ctx c = {in, hash};
		st = in->st[S_MODULE_ADD];
		sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, kj_cubin_format(img, m->bytes), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)m->bytes);
		if (bind_compressed(st, 4, img, m->bytes, 3, 0, &z))
			return KJ_ENOMEM;
		int rc = ing_step_done(in, st);
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
	return ing_step_done(in, st);
}

/* A buffer snapshot, compressed with zstd (kept raw when that does not shrink it). */
int ing_put_snapshot(struct ingest *in, const struct kj_rec_snapshot *r)
{
	const unsigned char *bytes = (const unsigned char *)(r + 1);
	sqlite3_stmt *st = in->st[S_SNAPSHOT];
	void *z;
	int rc;
	if (!ing_payload_fits(&r->h, sizeof(*r), r->bytes))
		return KJ_EINVAL;
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, (int64_t)r->address);
	sqlite3_bind_int64(st, 3, (int64_t)r->bytes);
	sqlite3_bind_int64(st, 4, r->correlation);
	if (bind_compressed(st, 5, bytes, r->bytes, 1, 1, &z))
		return KJ_ENOMEM;
	sqlite3_bind_text(st, 7, r->phase ? "after" : "before", -1, SQLITE_STATIC);
	ing_bind_opt_i64(st, 8, r->copy_correlation != 0, r->copy_correlation);
	rc = ing_step_done(in, st);
	free(z);
	in->stats->snapshots++;
	in->nsnapshots++;
	return rc;
}

/* The snapshot's own device-to-host copies are kjoule's, not the program's. */
int ing_drop_own_copies(struct ingest *in)
{
	char sql[256];
	if (!in->nsnapshots) /* this process's file; stats add up over a run's files */
		return 0;
	snprintf(sql, sizeof(sql),
		 "DELETE FROM memcpy WHERE pid = %lld AND correlation_id IN (SELECT copy_correlation_id"
		 " FROM snapshot WHERE pid = %lld AND copy_correlation_id IS NOT NULL)",
		 (long long)in->pid, (long long)in->pid);
	return kj_db_exec(in->db, sql, "leave out the snapshot's own copies");
}

int ing_put_device(struct ingest *in, const struct kj_rec_device *d)
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
		if (ing_step_done(in, st))
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
	if (ing_step_done(in, st))
		return KJ_EDB;
	kj_map_put(in->devices, d->ordinal, (uint64_t)id);
	st = in->st[S_PROCDEV];
	sqlite3_bind_int64(st, 1, in->pid);
	sqlite3_bind_int64(st, 2, d->ordinal);
	sqlite3_bind_int64(st, 3, id);
	return ing_step_done(in, st);
}

int ing_put_process(struct ingest *in, const struct kj_rec_process *p)
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
	int rc = ing_step_done(in, st);
	sqlite3_finalize(st);
	free(args);
	in->stats->processes++;
	return rc;
}

int ing_put_text(struct ingest *in, const struct kj_rec_text *t, const char *severity)
{
	char *what;
	int rc;
	if (!ing_payload_fits(&t->h, sizeof(*t), t->len))
		return KJ_EINVAL;
	what = strndup((const char *)(t + 1), t->len);
	if (!what)
		return KJ_ENOMEM;
	rc = kj_db_problem(in->db, in->pid, t->t_ns, severity, what);
	free(what);
	return rc;
}


