/* kjoule-replay-worker: a captured launch from the run database (parameters, layout, the
 * allocations live at its launch, its module and function) and launching it. */
#include "replay_worker.h"

#include "kj_cubin.h"
#include "kj_map.h"
#include "kj_replay_carveout.h"

void cu_fail(struct kj_replay_result *r, const char *what, CUresult e, const char *file, int line)
{
	const char *name = NULL, *text = NULL, *base = strrchr(file, '/');
	cuGetErrorName(e, &name);
	cuGetErrorString(e, &text);
	kj_replay_result_set(r, "failed", "%s: %s (%s) [%s:%d]", what, name ? name : "?",
			     text ? text : "?", base ? base + 1 : file, line);
}

sqlite3_stmt *prepare_quiet(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

void klaunch_free(struct klaunch *k)
{
	free(k->mangled);
	free(k->blob);
	free(k->layout);
	free(k->kparams);
	free(k->ptrs);
	memset(k, 0, sizeof(*k));
}

/* Read the kernel's name, geometry and one captured parameter block (the first launch of a plain
 * capture, before those of --params-iteration captures). */
int load_launch_k(struct replay *R, struct klaunch *k, int64_t lp_id)
{
	sqlite3_stmt *st = NULL;
	int rc = KJ_ENOTFOUND;
	char err[256], sql[1536];
	/* older runs may lack shmem_executed / carveout, cooperative, module_id (asked once per database:
	 * a sequence loads every launch of its iteration here) */
	static sqlite3 *split_db;
	static int have_split, have_module, have_coop;
	if (split_db != R->db) {
		have_split = kj_db_caps(R->db)->unique_kernel_shmem_executed;
		have_coop = kj_db_caps(R->db)->unique_kernel_cooperative;
		have_module = kj_db_caps(R->db)->launch_params_module_id;
		split_db = R->db;
	}

	snprintf(sql, sizeof(sql),
		 "SELECT n.mangled, p.pid, p.launch_ns, p.grid_x, p.grid_y, p.grid_z, p.block_x,"
		 " p.block_y, p.block_z, p.cluster_x, p.cluster_y, p.cluster_z, p.shmem_dynamic,"
		 " p.layout, p.params, u.grid_x, u.grid_y, u.grid_z, u.block_x, u.block_y, u.block_z,"
		 " u.cluster_x, u.cluster_y, u.cluster_z, u.shmem_dynamic, p.correlation_id, u.id,"
		 " p.stream_id, u.registers, u.shmem_static, %s, %s, %s"
		 " FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"
		 " JOIN launch_params p ON p.unique_id = u.id"
		 " WHERE (?2 < 0 AND u.id = ?1) OR p.id = ?2"
		 /* the launch whose buffers were snapshotted, when there is one */
		 " ORDER BY NOT EXISTS (SELECT 1 FROM snapshot s WHERE s.pid = p.pid"
		 " AND s.correlation_id = p.correlation_id),"
		 " (p.iteration IS NOT NULL), p.ordinal, p.id LIMIT 1",
		 have_split ? "u.shmem_executed, u.carveout" : "NULL, NULL",
		 have_module ? "(SELECT l.hash FROM module_load l WHERE l.pid = p.pid AND"
			       " l.cupti_module_id = p.module_id ORDER BY l.load_ns DESC LIMIT 1)" : "NULL",
		 have_coop ? "u.cooperative" : "NULL");
	if (kj_db_prepare(R->db, sql, &st)) {
		kj_replay_result_set(&R->res, "failed", "database: %s", sqlite3_errmsg(R->db));
		return KJ_EDB;
	}
	sqlite3_bind_int64(st, 1, R->o.unique);
	sqlite3_bind_int64(st, 2, lp_id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		if (lp_id >= 0)
			kj_replay_result_set(&R->res, "failed",
					     "launch_params %" PRId64 " missing, or its kernel unknown", lp_id);
		else
			kj_replay_result_set(&R->res, "skipped",
					     "no parameters captured for unique kernel %" PRId64, R->o.unique);
		goto out;
	}
	k->mangled = strdup((const char *)sqlite3_column_text(st, 0));
	k->pid = kj_db_col_i64(st, 1, -1);
	k->launch_ns = kj_db_col_i64(st, 2, -1);
	k->correlation = kj_db_col_i64(st, 25, -1);
	k->unique_id = kj_db_col_i64(st, 26, -1);
	k->stream_id = kj_db_col_i64(st, 27, -1);
	k->regs = (int)kj_db_col_i64(st, 28, -1);
	k->smem_static = (int)kj_db_col_i64(st, 29, -1);
	k->shmem_executed = (int)kj_db_col_i64(st, 30, -1);
	k->carveout = (int)kj_db_col_i64(st, 31, -1);
	k->carveout_set = -1;
	k->cooperative = kj_db_col_i64(st, 33, 0) > 0;
	snprintf(k->module_hash, sizeof(k->module_hash), "%s",
		 sqlite3_column_text(st, 32) ? (const char *)sqlite3_column_text(st, 32) : "");
	for (int i = 0; i < 3; i++) {
		k->grid[i] = (unsigned)kj_db_col_i64(st, 3 + i, kj_db_col_i64(st, 15 + i, 1));
		k->block[i] = (unsigned)kj_db_col_i64(st, 6 + i, kj_db_col_i64(st, 18 + i, 1));
		k->cluster[i] = (unsigned)kj_db_col_i64(st, 9 + i, kj_db_col_i64(st, 21 + i, 0));
	}
	k->shmem = (unsigned)kj_db_col_i64(st, 12, kj_db_col_i64(st, 24, 0));
	k->blob_len = (size_t)sqlite3_column_bytes(st, 14);
	k->blob = malloc(k->blob_len + 8);
	if (!k->blob || !k->mangled) {
		rc = KJ_ENOMEM;
		kj_replay_result_set(&R->res, "failed", "out of memory");
		goto out;
	}
	if (k->blob_len)
		memcpy(k->blob, sqlite3_column_blob(st, 14), k->blob_len);
	rc = kj_replay_layout_parse((const char *)sqlite3_column_text(st, 13), k->blob_len, &k->layout,
				    &k->nlayout, err, sizeof(err));
	if (rc) {
		kj_replay_result_set(&R->res, "failed", "launch_params of unique kernel %" PRId64 ": %s",
				     R->o.unique, err);
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int load_launch(struct replay *R)
{
	return load_launch_k(R, &R->k, -1);
}

/* The allocations of the launching process that were live when the kernel was launched. One at
 * address 0 (CUPTI's record of a graph's memory pool) is no range: every small integer would fall
 * in it and be rewritten as a pointer. */
int load_ranges(struct replay *R)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	if (kj_db_prepare(R->db,
			  "SELECT id, address, bytes FROM allocation WHERE (?1 < 0 OR pid = ?1)"
			  " AND address > 0 AND bytes > 0"
			  " AND (?2 < 0 OR alloc_ns IS NULL OR alloc_ns <= ?2)"
			  " AND (?2 < 0 OR free_ns IS NULL OR free_ns > ?2)"
			  " ORDER BY alloc_ns, id", &st)) {
		kj_replay_result_set(&R->res, "failed", "database: %s", sqlite3_errmsg(R->db));
		return KJ_EDB;
	}
	sqlite3_bind_int64(st, 1, R->k.pid);
	sqlite3_bind_int64(st, 2, R->k.launch_ns);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (R->nranges == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct kj_replay_range *nr = realloc(R->ranges, nc * sizeof(*nr));
			if (!nr) {
				sqlite3_finalize(st);
				return KJ_ENOMEM;
			}
			R->ranges = nr;
			cap = nc;
		}
		R->ranges[R->nranges].id = sqlite3_column_int64(st, 0);
		R->ranges[R->nranges].address = (uint64_t)sqlite3_column_int64(st, 1);
		R->ranges[R->nranges].bytes = (uint64_t)sqlite3_column_int64(st, 2);
		R->nranges++;
	}
	sqlite3_finalize(st);
	R->nranges = kj_replay_ranges_normalize(R->ranges, R->nranges);
	return 0;
}


/* The parameter block fn takes: its size in bytes, and how many parameters (*nparams, may be NULL). */
static size_t fn_param_bytes(CUfunction fn, int *nparams)
{
	size_t bytes = 0, i, off, sz;
	for (i = 0; cuFuncGetParamInfo(fn, i, &off, &sz) == CUDA_SUCCESS; i++)
		bytes = off + sz;
	if (nparams)
		*nparams = (int)i;
	return bytes;
}

/* 1 when fn can be the function the launch ran: the same parameter block layout as captured, and
 * room for the captured block size and shared memory; when strict, also the registers and static
 * shared memory the trace recorded of the function that ran (strict 2: the registers as
 * kj_cubin_regs_match, 1: as kj_cubin_regs_near). JIT compilers (XLA's autotuner,
 * Triton, Inductor) load many modules defining a function of the same name, with other
 * signatures, limits and tile shapes; the first one by name is often not the one that ran, and a
 * variant compiled for another block size refuses the launch (CUDA_ERROR_INVALID_VALUE): req
 * lists the module's functions compiled for one block shape only. */
static int function_fits(const struct klaunch *kl, CUfunction fn, int strict, const struct kj_reqntid *req,
			 size_t nreq)
{
	int threads = 0, v = 0;
	size_t i;
	uint64_t h = nreq ? kj_hash_str(kl->mangled) : 0;
	for (i = 0; i < nreq; i++) /* one block shape only: another shape is refused (INVALID_VALUE) */
		if (req[i].name_hash == h &&
		    (req[i].x != kl->block[0] || req[i].y != kl->block[1] || req[i].z != kl->block[2]))
			return 0;
	for (i = 0;; i++) {
		size_t off = 0, sz = 0;
		if (cuFuncGetParamInfo(fn, i, &off, &sz) != CUDA_SUCCESS)
			break;
		if (kl->nlayout && (i >= kl->nlayout || kl->layout[i].offset != off || kl->layout[i].size != sz))
			return 0;
	}
	if (kl->nlayout && i != kl->nlayout)
		return 0;
	if (cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn) == CUDA_SUCCESS &&
	    (unsigned)threads < kl->block[0] * kl->block[1] * kl->block[2])
		return 0;
	if (strict && kl->regs >= 0 && cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, fn) == CUDA_SUCCESS &&
	    !(strict >= 2 ? kj_cubin_regs_match(kl->regs, v) : kj_cubin_regs_near(kl->regs, v)))
		return 0;
	/* CUPTI's records give 0 static shared memory for functions that have some (XLA's Triton
	 * kernels: 1 KB, a transpose: 8 KB), so only a figure it did give is compared */
	if (strict && kl->smem_static > 0 &&
	    cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn) == CUDA_SUCCESS && v != kl->smem_static)
		return 0;
	return 1;
}

struct reqntid_list {
	struct kj_reqntid *v;
	size_t n, cap;
};

static void add_reqntid(const struct kj_cubin_fn *f, void *ud)
{
	struct reqntid_list *l = ud;
	if (!f->reqntid[0])
		return;
	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 8;
		struct kj_reqntid *nv = realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			return;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = (struct kj_reqntid){kj_hash_str(f->name), f->reqntid[0], f->reqntid[1] ? f->reqntid[1] : 1,
					   f->reqntid[2] ? f->reqntid[2] : 1};
}

/* The functions of a module image (an ELF cubin; none for fatbins and PTX) that launch with one
 * block shape only. */
static struct reqntid_list module_reqntid(const uint8_t *img, size_t len)
{
	struct reqntid_list l = {NULL, 0, 0};
	kj_cubin_function_facts(img, len, add_reqntid, &l);
	return l;
}

/* One pass over the captured modules that define the function, the most recently loaded before
 * the launch first (a JIT compiler loads a module and then runs it): 0 with kl->fn set from the
 * first whose function fits the launch (function_fits with strict); what was tried is appended to
 * tried. */
static int load_function_pass(struct replay *R, struct klaunch *kl, int strict, char *tried, size_t tsz,
			      size_t *tlp)
{
	sqlite3_stmt *st = NULL;
	size_t tl = *tlp;
	int rc = KJ_ENOTFOUND;

	if (kj_db_prepare(R->db,
			  "SELECT m.hash, m.format, m.codec, m.bytes, m.data,"
			  " (SELECT max(l.load_ns) FROM module_load l WHERE l.hash = m.hash AND l.load_ns <= ?2) b"
			  " FROM module_function f JOIN module m ON m.hash = f.hash"
			  " WHERE f.mangled = ?1 AND m.data IS NOT NULL"
			  " ORDER BY m.hash IS NOT ?3, b IS NULL, b DESC, m.hash", &st))
		return KJ_EDB;
	sqlite3_bind_text(st, 1, kl->mangled, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, kl->launch_ns >= 0 ? kl->launch_ns : INT64_MAX);
	if (kl->module_hash[0]) /* the module the trace saw it come from, first */
		sqlite3_bind_text(st, 3, kl->module_hash, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 3);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *hash = (const char *)sqlite3_column_text(st, 0);
		const char *format = (const char *)sqlite3_column_text(st, 1);
		const char *codec = (const char *)sqlite3_column_text(st, 2);
		size_t bytes = (size_t)kj_db_col_i64(st, 3, 0);
		const void *data = sqlite3_column_blob(st, 4);
		size_t len = (size_t)sqlite3_column_bytes(st, 4);
		uint8_t *img = NULL;
		size_t img_len = 0;
		CUresult e;

		int loaded = 0;
		/* the module the trace saw the launch's function come from: that function ran, whatever
		 * CUPTI's rounded figures say; only its layout and block size must fit */
		int strict_here = kl->module_hash[0] && !strcmp(hash, kl->module_hash) ? 0 : strict;
		for (size_t c = 0; c < R->nmods; c++)
			if (!strcmp(R->mod_hash[c], hash)) {
				loaded = 1;
				if (cuModuleGetFunction(&kl->fn, R->mods[c], kl->mangled) == CUDA_SUCCESS &&
				    function_fits(kl, kl->fn, strict_here, R->mod_req[c], R->mod_nreq[c])) {
					sqlite3_finalize(st);
					return 0;
				}
			}
		if (loaded)
			continue;

		const char *why = NULL;
		img = kj_cubin_image(codec, data, len, bytes, &img_len, &why);
		if (!img) {
			if (!strcmp(why, "out of memory"))
				break;
			if (strict >= 2)
				tl += (size_t)snprintf(tried + tl, tl < tsz ? tsz - tl : 0, " %.16s: zstd: %s;", hash, why);
			continue;
		}
		(void)format;
		CUmodule mod = NULL;
		int via_lib = 0, kept = 0;
		struct reqntid_list req = module_reqntid(img, img_len);
		e = cuModuleLoadData(&mod, img);
		if (e == CUDA_SUCCESS) {
			if (R->nmods < sizeof(R->mods) / sizeof(R->mods[0])) {
				R->mods[R->nmods] = mod;
				snprintf(R->mod_hash[R->nmods], sizeof(R->mod_hash[0]), "%s", hash);
				R->mod_req[R->nmods] = req.v;
				R->mod_nreq[R->nmods] = req.n;
				R->nmods++;
				kept = 1;
			}
			e = cuModuleGetFunction(&kl->fn, mod, kl->mangled);
		}
		if (e != CUDA_SUCCESS) { /* CUDA 12+ library form (CUkernel handles) */
			CUkernel k;
			if (cuLibraryLoadData(&R->lib, img, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS) {
				if (cuLibraryGetKernel(&k, R->lib, kl->mangled) == CUDA_SUCCESS &&
				    cuKernelGetFunction(&kl->fn, k) == CUDA_SUCCESS)
					e = CUDA_SUCCESS, via_lib = 1;
				else {
					cuLibraryUnload(R->lib);
					R->lib = NULL;
				}
			}
		}
		free(img);
		int fits = e == CUDA_SUCCESS && function_fits(kl, kl->fn, strict_here, req.v, req.n);
		if (!kept)
			free(req.v);
		if (e == CUDA_SUCCESS && !fits) {
			if (strict >= 2 && tl < tsz) { /* what it has instead of the traced figures */
				int r = -1, sm = -1;
				size_t psize = fn_param_bytes(kl->fn, NULL);
				cuFuncGetAttribute(&r, CU_FUNC_ATTRIBUTE_NUM_REGS, kl->fn);
				cuFuncGetAttribute(&sm, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kl->fn);
				/* the traced registers but another parameter block: the trace recorded another
				 * function's parameters (an older tracer kept a freed handle's facts) */
				tl += (size_t)snprintf(tried + tl, tsz - tl, " %.12s: %d regs, static smem %d, %zu-byte"
						       " parameters%s;", hash, r, sm, psize,
						       kj_cubin_regs_match(kl->regs, r) && psize != kl->blob_len ? " (the traced registers:"
						       " the recorded parameters are another function's; trace again)" : "");
			}
			if (via_lib) {
				cuLibraryUnload(R->lib);
				R->lib = NULL;
			}
			if (mod && !kept) /* not the one, and no room to keep it for the next kernel */
				cuModuleUnload(mod);
			if (!strict && tl < tsz)
				tl += (size_t)snprintf(tried + tl, tsz - tl,
						       " %.16s: another function of that name (parameters or block"
						       " size differ);", hash);
			continue;
		}
		if (e == CUDA_SUCCESS) {
			rc = 0;
			break;
		}
		const char *name = NULL;
		cuGetErrorName(e, &name);
		if (strict >= 2 && tl < tsz)
			tl += (size_t)snprintf(tried + tl, tsz - tl, " %.16s (%s): %s;", hash,
					       format ? format : "?", name ? name : "?");
	}
	sqlite3_finalize(st);
	*tlp = tl;
	return rc;
}

/* Load the function the launch ran: the captured module whose function of that name has the
 * registers (and static shared memory, where CUPTI gave it) the trace recorded of it; failing
 * that (a trace without those figures, or none matches), the first whose function fits. */
int load_function_k(struct replay *R, struct klaunch *kl)
{
	char tried[512] = "";
	size_t tl = 0;
	int rc = load_function_pass(R, kl, 2, tried, sizeof(tried), &tl);
	kl->fn_unmatched = 0;
	kl->unmatched_why[0] = '\0';
	if (rc == KJ_ENOTFOUND && kl->regs >= 0) /* CUPTI's rounded register figure */
		rc = load_function_pass(R, kl, 1, tried, sizeof(tried), &tl);
	if (rc == KJ_ENOTFOUND && (kl->regs >= 0 || kl->smem_static > 0)) { /* else the first pass was this */
		snprintf(kl->unmatched_why, sizeof(kl->unmatched_why), "%s", tried);
		rc = load_function_pass(R, kl, 0, tried, sizeof(tried), &tl);
		kl->fn_unmatched = rc == 0;
	}
	if (rc == KJ_ENOTFOUND)
		kj_replay_result_set(&R->res, "failed", "cannot load %.120s from any captured module:%s",
				     kl->mangled, tl ? tried : " no module with data defines it");
	return rc;
}

CUresult launch_k(const struct klaunch *k, CUstream stream)
{
	CUlaunchConfig cfg;
	CUlaunchAttribute attr[2];
	size_t blob_len = k->blob_len;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, k->blob, CU_LAUNCH_PARAM_BUFFER_SIZE,
			 &blob_len, CU_LAUNCH_PARAM_END};
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = k->grid[0];
	cfg.gridDimY = k->grid[1];
	cfg.gridDimZ = k->grid[2];
	cfg.blockDimX = k->block[0];
	cfg.blockDimY = k->block[1];
	cfg.blockDimZ = k->block[2];
	cfg.sharedMemBytes = k->shmem;
	cfg.hStream = stream;
	memset(attr, 0, sizeof(attr));
	cfg.attrs = attr;
	if (k->use_cluster_attr) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[cfg.numAttrs].value.clusterDim.x = k->cluster[0] ? k->cluster[0] : 1;
		attr[cfg.numAttrs].value.clusterDim.y = k->cluster[1] ? k->cluster[1] : 1;
		attr[cfg.numAttrs].value.clusterDim.z = k->cluster[2] ? k->cluster[2] : 1;
		cfg.numAttrs++;
	}
	if (k->cooperative) { /* its blocks may sync grid-wide: all must be resident at once */
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[cfg.numAttrs].value.cooperative = 1;
		cfg.numAttrs++;
	}
	if (k->nlayout || !k->blob_len)
		return cuLaunchKernelEx(&cfg, k->fn, k->nlayout ? k->kparams : NULL, NULL);
	return cuLaunchKernelEx(&cfg, k->fn, NULL, (void **)extra);
}

CUresult launch(struct replay *R)
{
	CUresult e = run_premem(R, R->stream);
	return e ? e : launch_k(&R->k, R->stream);
}

int load_function(struct replay *R)
{
	return load_function_k(R, &R->k);
}

/* The carveout (%) to ask of the function (kj_replay_carveout.h), -1 none. */
static int replay_carveout(const struct klaunch *k)
{
	int per_sm = 0;
	CUdevice d;
	if (cuCtxGetDevice(&d) != CUDA_SUCCESS ||
	    cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, d) != CUDA_SUCCESS)
		per_sm = 0;
	return kj_replay_carveout(getenv("KJ_REPLAY_CARVEOUT"), k->carveout, k->shmem_executed,
				  k->shmem > 0 || k->smem_static > 0, per_sm);
}

/* Parameter pointers and function attributes of one launch; probes the cluster attribute with a
 * launch on stream when check (then synchronizes and reports a failing kernel). */
int prepare_k(struct replay *R, struct klaunch *k, CUstream stream, int check)
{
	k->kparams = calloc(k->nlayout + 1, sizeof(*k->kparams));
	if (!k->kparams)
		return KJ_ENOMEM;
	for (size_t i = 0; i < k->nlayout; i++)
		k->kparams[i] = k->blob + k->layout[i].offset;
	if (k->shmem > 48 * 1024)
		CU(cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k->shmem));
	k->carveout_set = replay_carveout(k);
	if (k->carveout_set >= 0)
		CU(cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, k->carveout_set));
	unsigned csize = (k->cluster[0] ? k->cluster[0] : 1) * (k->cluster[1] ? k->cluster[1] : 1) *
			 (k->cluster[2] ? k->cluster[2] : 1);
	k->use_cluster_attr = csize > 1;
	if (csize > 8)
		CU(cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
	if (!check)
		return 0;
	CUresult e = launch_k(k, stream);
	if (e != CUDA_SUCCESS && k->use_cluster_attr) {
		/* a compile-time cluster size can refuse the launch attribute */
		k->use_cluster_attr = 0;
		if (launch_k(k, stream) != CUDA_SUCCESS)
			k->use_cluster_attr = 1;
		else
			e = CUDA_SUCCESS;
	}
	if (e != CUDA_SUCCESS) {
		/* the launch as it was asked for, and what the function says of itself: enough to tell
		 * a refused shared-memory size, cluster shape or parameter block apart */
		int regs = -1, smem_static = -1, smem_max = -1, threads_max = -1, cw = -1, nparams_fn = -1;
		size_t psize = 0;
		char what[768];
		cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn);
		cuFuncGetAttribute(&smem_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn);
		cuFuncGetAttribute(&smem_max, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k->fn);
		cuFuncGetAttribute(&threads_max, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn);
		cuFuncGetAttribute(&cw, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, k->fn);
		psize = fn_param_bytes(k->fn, &nparams_fn);
		snprintf(what, sizeof(what),
			 "%sfirst launch (grid %u,%u,%u block %u,%u,%u dyn smem %u cluster %u,%u,%u; function: "
			 "%d regs, static smem %d, max dyn smem %d, max threads %d, cluster width %d, %d params"
			 " in %zu bytes; captured %zu params in %zu bytes; the traced function had %d regs,"
			 " static smem %d)",
			 k->fn_unmatched ? "no captured module holds a loadable function of this name with the traced"
					   " registers; the one of that name that fits refused its " : "",
			 k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->shmem,
			 k->cluster[0], k->cluster[1], k->cluster[2], regs, smem_static, smem_max, threads_max,
			 cw, nparams_fn, psize, k->nlayout, k->blob_len, k->regs, k->smem_static);
		if (k->fn_unmatched && k->unmatched_why[0]) { /* what the candidates with other figures had */
			size_t wl = strlen(what);
			snprintf(what + wl, sizeof(what) - wl, "; candidates:%s", k->unmatched_why);
		}
		cu_fail(&R->res, what, e, __FILE__, __LINE__);
		return KJ_EGPU;
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((e = cuStreamQuery(stream)) == CUDA_ERROR_NOT_READY) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > R->o.hang_s) {
			kj_replay_result_set(&R->res, "failed",
					     "hung: the first launch did not finish within %.0f s on this data",
					     R->o.hang_s);
			R->poisoned = 1;
			return KJ_EGPU;
		}
		struct timespec nap = {0, 200000};
		nanosleep(&nap, NULL);
	}
	if (e != CUDA_SUCCESS) {
		cu_fail(&R->res, "first launch (kernel ran and failed)", e, __FILE__, __LINE__);
		return KJ_EGPU;
	}
	return 0;
}

int prepare_launch(struct replay *R)
{
	CUresult e = run_premem(R, R->stream);
	if (e) {
		cu_fail(&R->res, "memsets before the launch", e, __FILE__, __LINE__);
		return KJ_EGPU;
	}
	return prepare_k(R, &R->k, R->stream, 1);
}

