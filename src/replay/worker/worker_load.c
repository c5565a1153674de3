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
	struct kj_store_launch l;
	int rc;
	char err[256];

	rc = kj_store_launch_read(R->db, R->o.unique, lp_id, &l);
	if (rc == KJ_EDB) {
		kj_replay_result_set(&R->res, "failed", "database: %s", sqlite3_errmsg(R->db));
		return KJ_EDB;
	}
	if (rc == KJ_ENOTFOUND) {
		if (lp_id >= 0)
			kj_replay_result_set(&R->res, "failed",
					     "launch_params %" PRId64 " missing, or its kernel unknown", lp_id);
		else
			kj_replay_result_set(&R->res, "skipped",
					     "no parameters captured for unique kernel %" PRId64, R->o.unique);
		return rc;
	}
	if (rc) {
		kj_replay_result_set(&R->res, "failed", "out of memory");
		return rc;
	}
	k->mangled = l.mangled;
	k->pid = l.pid;
	k->launch_ns = l.launch_ns;
	k->correlation = l.correlation;
	k->unique_id = l.unique_id;
	k->stream_id = l.stream_id;
	k->regs = l.regs;
	k->smem_static = l.smem_static;
	k->shmem_executed = l.shmem_executed;
	k->carveout = l.carveout;
	k->carveout_set = -1;
	k->cooperative = l.cooperative;
	snprintf(k->module_hash, sizeof(k->module_hash), "%s", l.module_hash);
	memcpy(k->grid, l.grid, sizeof(k->grid));
	memcpy(k->block, l.block, sizeof(k->block));
	memcpy(k->cluster, l.cluster, sizeof(k->cluster));
	k->shmem = l.shmem;
	k->blob_len = l.blob_len;
	k->blob = l.blob;
	rc = kj_replay_layout_parse(l.layout, k->blob_len, &k->layout, &k->nlayout, err, sizeof(err));
	free(l.layout);
	if (rc)
		kj_replay_result_set(&R->res, "failed", "launch_params of unique kernel %" PRId64 ": %s",
				     R->o.unique, err);
	return rc;
}

int load_launch(struct replay *R)
{
	return load_launch_k(R, &R->k, -1);
}

/* load_ranges' list: the worker and the room in R->ranges. */
struct ranges_acc {
	struct replay *R;
	size_t cap;
};

/* One allocation appended to R->ranges. */
static int range_add(int64_t id, uint64_t address, uint64_t bytes, void *ud)
{
	struct ranges_acc *a = ud;
	struct replay *R = a->R;
	if (R->nranges == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 64;
		struct kj_replay_range *nr = realloc(R->ranges, nc * sizeof(*nr));
		if (!nr)
			return KJ_ENOMEM;
		R->ranges = nr;
		a->cap = nc;
	}
	R->ranges[R->nranges].id = id;
	R->ranges[R->nranges].address = address;
	R->ranges[R->nranges].bytes = bytes;
	R->nranges++;
	return 0;
}

/* The allocations of the launching process that were live when the kernel was launched. One at
 * address 0 (CUPTI's record of a graph's memory pool) is no range: every small integer would fall
 * in it and be rewritten as a pointer. */
int load_ranges(struct replay *R)
{
	struct ranges_acc a = {R, 0};
	int rc = kj_store_live_allocations(R->db, R->k.pid, R->k.launch_ns, range_add, &a);
	if (rc == KJ_EDB) {
		kj_replay_result_set(&R->res, "failed", "database: %s", sqlite3_errmsg(R->db));
		return KJ_EDB;
	}
	if (rc)
		return rc;
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
	struct kj_store_rows *st = NULL;
	struct kj_store_module m;
	size_t tl = *tlp;
	int rc = KJ_ENOTFOUND;

	/* the module the trace saw it come from first, then the latest loaded before the launch */
	if ((rc = kj_store_modules_open(R->db, kl->mangled, kl->launch_ns, kl->module_hash, &st)))
		return rc;
	rc = KJ_ENOTFOUND;
	while (kj_store_modules_next(st, &m)) {
		const char *hash = m.hash;
		const char *format = m.format;
		const char *codec = m.codec;
		size_t bytes = m.bytes;
		const void *data = m.data;
		size_t len = m.len;
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
					kj_store_rows_close(st);
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
	kj_store_rows_close(st);
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

