/* kjoule-replay-worker: replays ONE unique kernel of a run database on the GPU and prints its
 * results on stdout in the protocol of kj_replay_emit() (kj_replay.h). `kjoule replay` runs one
 * worker process per unique kernel, so a kernel that faults poisons only its own context.
 *
 * Steps: context on the device; the recorded allocations that the kernel's parameters point into
 * re-created at their original virtual addresses (cuMemAddressReserve with the address as the
 * hint, cuMemCreate, cuMemMap, cuMemSetAccess), relocating the pointer words where an address is
 * taken; buffers filled with random non-zero data (or the run's snapshot); the module loaded from
 * the database; one checked launch; timing warm and/or cold (CUPTI kernel timestamps, or CUDA
 * events); energy through a CUDA graph of U launches measured by kj_amortize_measure().
 *
 * usage: kjoule-replay-worker --probe [--device D]
 *        kjoule-replay-worker --db RUN --unique ID [--runs N] [--warmup W] [--cache warm|cold|both]
 *                             [--energy] [--unroll U] [--energy-seconds S] [--device D]
 *                             [--timer cupti|events] [--relocate]
 * Exit code: 0 when a KJ_RESULT line was printed (whatever its status), 2 usage, 1 otherwise. */
#include <cuda.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#ifdef KJ_WITH_CUPTI
#include <cupti.h>
#endif

#include "kj_db.h"
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_replay.h"

struct opts {
	const char *db;
	int64_t unique;
	int runs, warmup, warm, cold, energy, unroll, device, relocate, use_cupti;
	double energy_s;
	int probe;
};

/* Everything one replay holds; released by replay_close(). */
struct replay {
	struct opts o;
	sqlite3 *db;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUmodule mod;
	CUlibrary lib;
	CUfunction fn;
	char *mangled;
	int64_t pid, launch_ns, device_id;
	unsigned grid[3], block[3], cluster[3], shmem;
	uint8_t *blob;
	size_t blob_len;
	struct kj_replay_param *layout;
	size_t nlayout;
	void **kparams;
	struct kj_replay_range *ranges;
	size_t nranges;
	struct kj_replay_ptr *ptrs;
	size_t nptrs;
	struct kj_replay_region *regions;
	size_t nregions;
	int *region_of;
	CUdeviceptr *region_va;
	CUmemGenericAllocationHandle *region_h;
	int *region_moved;
	uint64_t gran;
	int use_cluster_attr;
	CUdeviceptr flush;
	size_t flush_bytes;
	struct kj_replay_result res;
};

static void cu_fail(struct kj_replay_result *r, const char *what, CUresult e, int line)
{
	const char *name = NULL, *text = NULL;
	cuGetErrorName(e, &name);
	cuGetErrorString(e, &text);
	kj_replay_result_set(r, "failed", "%s: %s (%s) [worker line %d]", what, name ? name : "?",
			     text ? text : "?", line);
}

#define CU(call)                                                   \
	do {                                                       \
		CUresult e_ = (call);                              \
		if (e_ != CUDA_SUCCESS) {                          \
			cu_fail(&R->res, #call, e_, __LINE__);     \
			return KJ_EGPU;                            \
		}                                                  \
	} while (0)

static int64_t col_i64(sqlite3_stmt *st, int i, int64_t dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

/* Read the kernel's name, geometry and one captured parameter block (the first launch of a plain
 * capture, before those of --params-iteration captures). */
static int load_launch(struct replay *R)
{
	sqlite3_stmt *st = NULL;
	int rc = KJ_ENOTFOUND;
	char err[256];

	if (kj_db_prepare(R->db,
			  "SELECT n.mangled, p.pid, p.launch_ns, p.grid_x, p.grid_y, p.grid_z, p.block_x,"
			  " p.block_y, p.block_z, p.cluster_x, p.cluster_y, p.cluster_z, p.shmem_dynamic,"
			  " p.layout, p.params, u.grid_x, u.grid_y, u.grid_z, u.block_x, u.block_y, u.block_z,"
			  " u.cluster_x, u.cluster_y, u.cluster_z, u.shmem_dynamic"
			  " FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"
			  " JOIN launch_params p ON p.unique_id = u.id WHERE u.id = ?"
			  " ORDER BY (p.iteration IS NOT NULL), p.ordinal, p.id LIMIT 1", &st)) {
		kj_replay_result_set(&R->res, "failed", "database: %s", sqlite3_errmsg(R->db));
		return KJ_EDB;
	}
	sqlite3_bind_int64(st, 1, R->o.unique);
	if (sqlite3_step(st) != SQLITE_ROW) {
		kj_replay_result_set(&R->res, "skipped",
				     "no parameters captured for unique kernel %" PRId64, R->o.unique);
		goto out;
	}
	R->mangled = strdup((const char *)sqlite3_column_text(st, 0));
	R->pid = col_i64(st, 1, -1);
	R->launch_ns = col_i64(st, 2, -1);
	for (int i = 0; i < 3; i++) {
		R->grid[i] = (unsigned)col_i64(st, 3 + i, col_i64(st, 15 + i, 1));
		R->block[i] = (unsigned)col_i64(st, 6 + i, col_i64(st, 18 + i, 1));
		R->cluster[i] = (unsigned)col_i64(st, 9 + i, col_i64(st, 21 + i, 0));
	}
	R->shmem = (unsigned)col_i64(st, 12, col_i64(st, 24, 0));
	R->blob_len = (size_t)sqlite3_column_bytes(st, 14);
	R->blob = malloc(R->blob_len + 8);
	if (!R->blob || !R->mangled) {
		rc = KJ_ENOMEM;
		kj_replay_result_set(&R->res, "failed", "out of memory");
		goto out;
	}
	if (R->blob_len)
		memcpy(R->blob, sqlite3_column_blob(st, 14), R->blob_len);
	rc = kj_replay_layout_parse((const char *)sqlite3_column_text(st, 13), R->blob_len, &R->layout,
				    &R->nlayout, err, sizeof(err));
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

/* The allocations of the launching process that were live when the kernel was launched. */
static int load_ranges(struct replay *R)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	if (kj_db_prepare(R->db,
			  "SELECT id, address, bytes FROM allocation WHERE (?1 < 0 OR pid = ?1)"
			  " AND address IS NOT NULL AND bytes > 0"
			  " AND (?2 < 0 OR alloc_ns IS NULL OR alloc_ns <= ?2)"
			  " AND (?2 < 0 OR free_ns IS NULL OR free_ns > ?2)"
			  " ORDER BY alloc_ns, id", &st)) {
		kj_replay_result_set(&R->res, "failed", "database: %s", sqlite3_errmsg(R->db));
		return KJ_EDB;
	}
	sqlite3_bind_int64(st, 1, R->pid);
	sqlite3_bind_int64(st, 2, R->launch_ns);
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

/* Random, never-zero data that reads as modest numbers in fp32, fp16 and bf16: every 16-bit half
 * has a random sign, exponent 2^-1..2^0 and random low mantissa bits. */
static void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t w = (x & 0x80FF80FF80FF80FFull) | 0x3F003F003F003F00ull;
		memcpy(p + i, &w, 8);
	}
}

static int fill_regions(struct replay *R)
{
	const size_t chunk = 32u << 20;
	void *host = NULL;
	CU(cuMemHostAlloc(&host, chunk, 0));
	fill_pattern(host, chunk, 0x9E3779B97F4A7C15ull ^ (uint64_t)R->o.unique);
	for (size_t g = 0; g < R->nregions; g++)
		for (size_t off = 0; off < R->regions[g].bytes; off += chunk) {
			size_t n = R->regions[g].bytes - off < chunk ? R->regions[g].bytes - off : chunk;
			CUresult e = cuMemcpyHtoD(R->region_va[g] + off, host, n);
			if (e != CUDA_SUCCESS) {
				cuMemFreeHost(host);
				cu_fail(&R->res, "cuMemcpyHtoD (fill)", e, __LINE__);
				return KJ_EGPU;
			}
		}
	cuMemFreeHost(host);
	return 0;
}

/* Overlay the run's --snapshot data where it falls inside the re-created regions. */
static int apply_snapshot(struct replay *R, int *applied)
{
	sqlite3_stmt *st = NULL;
	*applied = 0;
	if (kj_db_prepare(R->db, "SELECT address, bytes, codec, data FROM snapshot"
				 " WHERE (?1 < 0 OR pid IS NULL OR pid = ?1) AND data IS NOT NULL ORDER BY id",
			  &st))
		return 0; /* older databases: no snapshot table is not an error */
	sqlite3_bind_int64(st, 1, R->pid);
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t addr = (uint64_t)sqlite3_column_int64(st, 0);
		size_t bytes = (size_t)sqlite3_column_int64(st, 1);
		const char *codec = (const char *)sqlite3_column_text(st, 2);
		const void *data = sqlite3_column_blob(st, 3);
		size_t len = (size_t)sqlite3_column_bytes(st, 3);
		void *buf = (void *)data;
		int owned = 0;
		if (codec && !strcmp(codec, "zstd")) {
			buf = malloc(bytes ? bytes : 1);
			if (!buf)
				continue;
			owned = 1;
			size_t got = ZSTD_decompress(buf, bytes, data, len);
			if (ZSTD_isError(got) || got != bytes) {
				free(buf);
				continue;
			}
		} else if (len < bytes) {
			bytes = len;
		}
		for (size_t g = 0; g < R->nregions; g++) {
			uint64_t b = R->regions[g].base, e = b + R->regions[g].bytes;
			if (addr >= b && addr + bytes <= e) {
				if (cuMemcpyHtoD(R->region_va[g] + (addr - b), buf, bytes) == CUDA_SUCCESS)
					(*applied)++;
				break;
			}
		}
		if (owned)
			free(buf);
	}
	sqlite3_finalize(st);
	return 0;
}

/* Re-create the referenced allocations, at their recorded addresses where the driver gives
 * them, elsewhere otherwise (then relocate the parameter words). */
static int map_allocations(struct replay *R)
{
	int *used = NULL;
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	size_t gran = 0;
	int rc = 0;

	if (kj_replay_scan_pointers(R->blob, R->blob_len, R->layout, R->nlayout, R->ranges,
				    R->nranges, &R->ptrs, &R->nptrs))
		return KJ_ENOMEM;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = R->dev;
	CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	R->gran = gran;
	used = calloc(R->nranges + 1, sizeof(*used));
	R->region_of = calloc(R->nranges + 1, sizeof(*R->region_of));
	if (!used || !R->region_of) {
		free(used);
		return KJ_ENOMEM;
	}
	for (size_t i = 0; i < R->nptrs; i++)
		used[R->ptrs[i].range] = 1;
	rc = kj_replay_regions(R->ranges, used, R->nranges, gran, &R->regions, &R->nregions,
			       R->region_of);
	free(used);
	if (rc)
		return rc;
	R->region_va = calloc(R->nregions + 1, sizeof(*R->region_va));
	R->region_h = calloc(R->nregions + 1, sizeof(*R->region_h));
	R->region_moved = calloc(R->nregions + 1, sizeof(*R->region_moved));
	if (!R->region_va || !R->region_h || !R->region_moved)
		return KJ_ENOMEM;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	for (size_t g = 0; g < R->nregions; g++) {
		CUdeviceptr va = 0;
		CUresult e = CUDA_ERROR_UNKNOWN;
		if (!R->o.relocate)
			e = cuMemAddressReserve(&va, R->regions[g].bytes, gran, R->regions[g].base, 0);
		if (e == CUDA_SUCCESS && va != R->regions[g].base) {
			cuMemAddressFree(va, R->regions[g].bytes);
			e = CUDA_ERROR_UNKNOWN;
		}
		if (e != CUDA_SUCCESS) {
			R->region_moved[g] = 1;
			CU(cuMemAddressReserve(&va, R->regions[g].bytes, gran, 0, 0));
		}
		R->region_va[g] = va;
		CU(cuMemCreate(&R->region_h[g], R->regions[g].bytes, &prop, 0));
		CU(cuMemMap(va, R->regions[g].bytes, 0, R->region_h[g], 0));
		CU(cuMemSetAccess(va, R->regions[g].bytes, &acc, 1));
	}
	return 0;
}

/* Rewrite the pointer words of moved regions; says which allocations moved in res.error. */
static int relocate(struct replay *R)
{
	uint64_t *nb = calloc(R->nranges + 1, sizeof(*nb));
	size_t moved = 0, len = 0;
	if (!nb)
		return KJ_ENOMEM;
	for (size_t i = 0; i < R->nranges; i++) {
		int g = R->region_of[i];
		if (g >= 0 && R->region_moved[g]) {
			nb[i] = R->region_va[g] + (R->ranges[i].address - R->regions[g].base);
			if (!moved++)
				len = (size_t)snprintf(R->res.error, sizeof(R->res.error),
						       "relocated allocations:");
			if (len < sizeof(R->res.error))
				len += (size_t)snprintf(R->res.error + len, sizeof(R->res.error) - len,
							" %" PRId64 " (0x%" PRIx64 "->0x%" PRIx64 ")",
							R->ranges[i].id, R->ranges[i].address, nb[i]);
		}
	}
	if (moved) {
		size_t words = kj_replay_relocate(R->blob, R->blob_len, R->ptrs, R->nptrs, R->ranges, nb);
		snprintf(R->res.status, sizeof(R->res.status), "relocated");
		if (len < sizeof(R->res.error))
			snprintf(R->res.error + len, sizeof(R->res.error) - len, "; %zu pointer words rewritten",
				 words);
	}
	free(nb);
	return 0;
}

/* Load the first captured module with data that defines the function, and find the function. */
static int load_function(struct replay *R)
{
	sqlite3_stmt *st = NULL;
	char tried[256] = "";
	size_t tl = 0;
	int rc = KJ_ENOTFOUND;

	if (kj_db_prepare(R->db,
			  "SELECT m.hash, m.format, m.codec, m.bytes, m.data FROM module_function f"
			  " JOIN module m ON m.hash = f.hash WHERE f.mangled = ? AND m.data IS NOT NULL"
			  " ORDER BY m.hash", &st))
		return KJ_EDB;
	sqlite3_bind_text(st, 1, R->mangled, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *hash = (const char *)sqlite3_column_text(st, 0);
		const char *format = (const char *)sqlite3_column_text(st, 1);
		const char *codec = (const char *)sqlite3_column_text(st, 2);
		size_t bytes = (size_t)col_i64(st, 3, 0);
		const void *data = sqlite3_column_blob(st, 4);
		size_t len = (size_t)sqlite3_column_bytes(st, 4);
		uint8_t *img = NULL;
		size_t img_len = len;
		CUresult e;

		if (codec && !strcmp(codec, "zstd")) {
			unsigned long long fs = ZSTD_getFrameContentSize(data, len);
			if (fs == ZSTD_CONTENTSIZE_ERROR || fs == ZSTD_CONTENTSIZE_UNKNOWN)
				fs = bytes;
			img = malloc(fs + 1);
			if (!img)
				break;
			img_len = ZSTD_decompress(img, fs, data, len);
			if (ZSTD_isError(img_len)) {
				tl += (size_t)snprintf(tried + tl, tl < sizeof(tried) ? sizeof(tried) - tl : 0,
						       " %.16s: zstd: %s;", hash, ZSTD_getErrorName(img_len));
				free(img);
				continue;
			}
		} else {
			img = malloc(len + 1);
			if (!img)
				break;
			memcpy(img, data, len);
		}
		img[img_len] = '\0'; /* PTX must be NUL-terminated */
		(void)format;
		e = cuModuleLoadData(&R->mod, img);
		if (e == CUDA_SUCCESS) {
			e = cuModuleGetFunction(&R->fn, R->mod, R->mangled);
			if (e != CUDA_SUCCESS) {
				cuModuleUnload(R->mod);
				R->mod = NULL;
			}
		}
		if (e != CUDA_SUCCESS) { /* CUDA 12+ library form (CUkernel handles) */
			CUkernel k;
			if (cuLibraryLoadData(&R->lib, img, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS) {
				if (cuLibraryGetKernel(&k, R->lib, R->mangled) == CUDA_SUCCESS &&
				    cuKernelGetFunction(&R->fn, k) == CUDA_SUCCESS)
					e = CUDA_SUCCESS;
				else {
					cuLibraryUnload(R->lib);
					R->lib = NULL;
				}
			}
		}
		free(img);
		if (e == CUDA_SUCCESS) {
			rc = 0;
			break;
		}
		const char *name = NULL;
		cuGetErrorName(e, &name);
		if (tl < sizeof(tried))
			tl += (size_t)snprintf(tried + tl, sizeof(tried) - tl, " %.16s (%s): %s;", hash,
					       format ? format : "?", name ? name : "?");
	}
	sqlite3_finalize(st);
	if (rc)
		kj_replay_result_set(&R->res, "failed", "cannot load %.120s from any captured module:%s",
				     R->mangled, tl ? tried : " no module with data defines it");
	return rc;
}

static CUresult launch(struct replay *R)
{
	CUlaunchConfig cfg;
	CUlaunchAttribute attr[1];
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, R->blob, CU_LAUNCH_PARAM_BUFFER_SIZE,
			 &R->blob_len, CU_LAUNCH_PARAM_END};
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = R->grid[0];
	cfg.gridDimY = R->grid[1];
	cfg.gridDimZ = R->grid[2];
	cfg.blockDimX = R->block[0];
	cfg.blockDimY = R->block[1];
	cfg.blockDimZ = R->block[2];
	cfg.sharedMemBytes = R->shmem;
	cfg.hStream = R->stream;
	if (R->use_cluster_attr) {
		memset(attr, 0, sizeof(attr));
		attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[0].value.clusterDim.x = R->cluster[0] ? R->cluster[0] : 1;
		attr[0].value.clusterDim.y = R->cluster[1] ? R->cluster[1] : 1;
		attr[0].value.clusterDim.z = R->cluster[2] ? R->cluster[2] : 1;
		cfg.attrs = attr;
		cfg.numAttrs = 1;
	}
	if (R->nlayout || !R->blob_len)
		return cuLaunchKernelEx(&cfg, R->fn, R->nlayout ? R->kparams : NULL, NULL);
	return cuLaunchKernelEx(&cfg, R->fn, NULL, extra);
}

/* Attributes, then one launch checked to completion. */
static int prepare_launch(struct replay *R)
{
	R->kparams = calloc(R->nlayout + 1, sizeof(*R->kparams));
	if (!R->kparams)
		return KJ_ENOMEM;
	for (size_t i = 0; i < R->nlayout; i++)
		R->kparams[i] = R->blob + R->layout[i].offset;
	if (R->shmem > 48 * 1024)
		CU(cuFuncSetAttribute(R->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)R->shmem));
	unsigned csize = (R->cluster[0] ? R->cluster[0] : 1) * (R->cluster[1] ? R->cluster[1] : 1) *
			 (R->cluster[2] ? R->cluster[2] : 1);
	R->use_cluster_attr = csize > 1;
	if (csize > 8)
		CU(cuFuncSetAttribute(R->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
	CUresult e = launch(R);
	if (e != CUDA_SUCCESS && R->use_cluster_attr) {
		/* a compile-time cluster size can refuse the launch attribute */
		R->use_cluster_attr = 0;
		if (launch(R) != CUDA_SUCCESS)
			R->use_cluster_attr = 1;
		else
			e = CUDA_SUCCESS;
	}
	if (e != CUDA_SUCCESS) {
		cu_fail(&R->res, "first launch", e, __LINE__);
		return KJ_EGPU;
	}
	e = cuStreamSynchronize(R->stream);
	if (e != CUDA_SUCCESS) {
		cu_fail(&R->res, "first launch (kernel ran and failed)", e, __LINE__);
		return KJ_EGPU;
	}
	return 0;
}

/* ---- timing ---- */
#ifdef KJ_WITH_CUPTI
static int64_t *g_dur;
static size_t g_ndur, g_capdur;

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*size = 1u << 20;
	*buffer = aligned_alloc(8, *size);
	*max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
				   size_t valid)
{
	CUpti_Activity *rec = NULL;
	(void)ctx;
	(void)stream_id;
	(void)size;
	while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
			continue;
		const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
		if (g_ndur == g_capdur) {
			size_t nc = g_capdur ? g_capdur * 2 : 256;
			int64_t *nd = realloc(g_dur, nc * sizeof(*nd));
			if (!nd)
				break;
			g_dur = nd;
			g_capdur = nc;
		}
		g_dur[g_ndur++] = (int64_t)(k->end - k->start);
	}
	free(buffer);
}

static int cupti_start(void)
{
	static int registered;
	if (!registered) {
		if (cuptiActivityRegisterCallbacks(buf_requested, buf_completed) != CUPTI_SUCCESS)
			return -1;
		registered = 1;
	}
	g_ndur = 0;
	return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS ? 0 : -1;
}

static void cupti_stop(void)
{
	cuptiActivityFlushAll(1);
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityFlushAll(1);
}
#endif

/* N timed launches after W warm-up ones; cold: L2 flushed (a 2 x L2 memset) before each. */
static int time_mode(struct replay *R, int cold, struct kj_replay_timing *out)
{
	int n = R->o.runs;
	int64_t *ns = calloc((size_t)n + 1, sizeof(*ns));
	CUevent *ev = calloc(2 * (size_t)n + 2, sizeof(*ev));
	int rc = KJ_EGPU, use_cupti = R->o.use_cupti;
	if (!ns || !ev) {
		free(ns);
		free(ev);
		return KJ_ENOMEM;
	}
	for (int i = 0; i < R->o.warmup; i++) {
		if (cold && cuMemsetD32Async(R->flush, 0x3F000000u + (unsigned)i, R->flush_bytes / 4, R->stream))
			goto out;
		if (launch(R) != CUDA_SUCCESS)
			goto out;
	}
	if (cuStreamSynchronize(R->stream) != CUDA_SUCCESS)
		goto out;
#ifdef KJ_WITH_CUPTI
	if (use_cupti && cupti_start())
		use_cupti = 0;
#else
	use_cupti = 0;
#endif
	for (int i = 0; i < n; i++) {
		if (!use_cupti && (cuEventCreate(&ev[2 * i], CU_EVENT_DEFAULT) ||
				   cuEventCreate(&ev[2 * i + 1], CU_EVENT_DEFAULT)))
			goto out;
		if (cold && cuMemsetD32Async(R->flush, 0x3F800000u + (unsigned)i, R->flush_bytes / 4, R->stream))
			goto out;
		if (!use_cupti && cuEventRecord(ev[2 * i], R->stream))
			goto out;
		if (launch(R) != CUDA_SUCCESS)
			goto out;
		if (!use_cupti && cuEventRecord(ev[2 * i + 1], R->stream))
			goto out;
	}
	CUresult e = cuStreamSynchronize(R->stream);
	if (e != CUDA_SUCCESS) {
		cu_fail(&R->res, "timed launches", e, __LINE__);
		goto out;
	}
	size_t got = 0;
#ifdef KJ_WITH_CUPTI
	if (use_cupti) {
		cupti_stop();
		for (size_t i = 0; i < g_ndur && got < (size_t)n; i++)
			ns[got++] = g_dur[i];
		snprintf(R->res.timer, sizeof(R->res.timer), "cupti");
	}
#endif
	if (!use_cupti) {
		for (int i = 0; i < n; i++) {
			float ms = 0;
			if (cuEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]) == CUDA_SUCCESS)
				ns[got++] = (int64_t)llround((double)ms * 1e6);
		}
		snprintf(R->res.timer, sizeof(R->res.timer), "events");
	}
	kj_replay_stats(ns, got, out);
	rc = got ? 0 : KJ_EGPU;
	if (!got)
		kj_replay_result_set(&R->res, "failed", "no kernel timings were recorded");
out:
	for (int i = 0; i < 2 * n; i++)
		if (ev[i])
			cuEventDestroy(ev[i]);
	if (rc == KJ_EGPU && !strcmp(R->res.status, "ok"))
		kj_replay_result_set(&R->res, "failed", "timed launches failed");
	free(ns);
	free(ev);
	return rc;
}

/* ---- energy ---- */
struct graph_work {
	CUgraphExec exec;
	CUstream stream;
};

static int graph_enqueue(void *ctx)
{
	struct graph_work *g = ctx;
	return cuGraphLaunch(g->exec, g->stream) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

static int graph_sync(void *ctx)
{
	struct graph_work *g = ctx;
	return cuStreamSynchronize(g->stream) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

#ifdef KJ_HAVE_AMORTIZE
static int measure_energy(struct replay *R)
{
	CUgraph graph = NULL;
	struct graph_work gw = {NULL, R->stream};
	struct kj_amortize_work w;
	struct kj_amortize_opts ao;
	struct kj_amortize_result ar;
	int rc;

	CU(cuStreamBeginCapture(R->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	for (int i = 0; i < R->o.unroll; i++) {
		CUresult e = launch(R);
		if (e != CUDA_SUCCESS) {
			cuStreamEndCapture(R->stream, &graph);
			if (graph)
				cuGraphDestroy(graph);
			cu_fail(&R->res, "launch in graph capture", e, __LINE__);
			return KJ_EGPU;
		}
	}
	CU(cuStreamEndCapture(R->stream, &graph));
	CU(cuGraphInstantiate(&gw.exec, graph, 0));
	memset(&w, 0, sizeof(w));
	w.ctx = &gw;
	w.enqueue = graph_enqueue;
	w.sync = graph_sync;
	w.launches_per_unit = R->o.unroll;
	memset(&ao, 0, sizeof(ao));
	ao.nvml_index = R->o.device;
	ao.min_seconds = R->o.energy_s;
	ao.min_updates = 0;
	ao.warmup_max_s = 0;
	memset(&ar, 0, sizeof(ar));
	rc = kj_amortize_measure(&w, &ao, &ar);
	cuGraphExecDestroy(gw.exec);
	cuGraphDestroy(graph);
	if (rc) {
		kj_warnf("unique kernel %" PRId64 ": energy not measured: %s", R->o.unique, kj_strerror(rc));
		return 0; /* timing stands; energy stays absent */
	}
	double idle = R->device_id >= 0 ? kj_energy_idle_mw(R->db, R->device_id) : -1;
	R->res.has_energy = 1;
	R->res.unroll = R->o.unroll;
	R->res.energy_launches = ar.launches;
	R->res.seconds = ar.seconds;
	R->res.energy_mj_per_launch = ar.energy_per_launch_mj;
	R->res.energy_unc_mj = ar.energy_unc_mj;
	R->res.power_mw = ar.avg_power_w * 1e3;
	R->res.idle_mw = idle;
	R->res.dynamic_mj_per_launch =
		idle >= 0 ? ar.energy_per_launch_mj - idle * ar.time_per_launch_ns * 1e-9 : NAN;
	snprintf(R->res.method, sizeof(R->res.method), "%s", ar.method ? ar.method : "amortized");
	return 0;
}
#else
static int measure_energy(struct replay *R)
{
	(void)graph_enqueue;
	(void)graph_sync;
	kj_warnf("unique kernel %" PRId64 ": energy not measured: this worker was built before "
		 "kj_amortize_measure existed (rebuild)", R->o.unique);
	return 0;
}
#endif

static int probe(int device)
{
	CUdevice dev;
	int maj = 0, min = 0, l2 = 0;
	char name[128] = "";
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, device) != CUDA_SUCCESS) {
		fprintf(stderr, "kjoule-replay-worker: no CUDA device %d\n", device);
		return 1;
	}
	cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
	cuDeviceGetName(name, sizeof(name), dev);
	for (char *p = name; *p; p++)
		if (*p == '\t' || *p == '\n')
			*p = ' ';
	printf("KJ_DEVICE\tcc_major=%d\tcc_minor=%d\tl2=%d\tname=%s\n", maj, min, l2, name);
	return 0;
}

static int replay_run(struct replay *R)
{
	int rc, l2 = 0, applied = 0;
	R->device_id = -1;
	if ((rc = kj_db_open(R->o.db, 0, &R->db))) {
		kj_replay_result_set(&R->res, "failed", "cannot open %s: %s", R->o.db, kj_strerror(rc));
		return rc;
	}
	if ((rc = load_launch(R)) || (rc = load_ranges(R)))
		return rc;
	{
		sqlite3_stmt *st = NULL;
		if (!kj_db_prepare(R->db, "SELECT device_id FROM process_device WHERE pid = ? ORDER BY ordinal LIMIT 1", &st)) {
			sqlite3_bind_int64(st, 1, R->pid);
			if (sqlite3_step(st) == SQLITE_ROW)
				R->device_id = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
		if (R->device_id < 0)
			R->device_id = 0;
	}
	CU(cuInit(0));
	CU(cuDeviceGet(&R->dev, R->o.device));
	CU(cuDevicePrimaryCtxRetain(&R->ctx, R->dev));
	CU(cuCtxSetCurrent(R->ctx));
	/* address space first: nothing of ours should take the recorded addresses */
	if ((rc = map_allocations(R)))
		return rc;
	CU(cuStreamCreate(&R->stream, CU_STREAM_NON_BLOCKING));
	if ((rc = fill_regions(R)) || (rc = apply_snapshot(R, &applied)) || (rc = relocate(R)))
		return rc;
	if ((rc = load_function(R)))
		return rc;
	if ((rc = prepare_launch(R)))
		return rc;
	if (R->o.cold) {
		CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, R->dev));
		R->flush_bytes = ((size_t)(l2 > 0 ? l2 : 64 << 20) * 2 + 4095) & ~(size_t)4095;
		CU(cuMemAlloc(&R->flush, R->flush_bytes));
	}
	if (R->o.warm && (rc = time_mode(R, 0, &R->res.warm)))
		return rc;
	if (R->o.cold && (rc = time_mode(R, 1, &R->res.cold)))
		return rc;
	if (R->o.energy && (rc = measure_energy(R)))
		return rc;
	return 0;
}

static void replay_close(struct replay *R)
{
	if (R->ctx) {
		if (R->flush)
			cuMemFree(R->flush);
		if (R->mod)
			cuModuleUnload(R->mod);
		if (R->lib)
			cuLibraryUnload(R->lib);
		for (size_t g = 0; R->region_va && g < R->nregions; g++) {
			if (!R->region_va[g])
				continue;
			cuMemUnmap(R->region_va[g], R->regions[g].bytes);
			if (R->region_h[g])
				cuMemRelease(R->region_h[g]);
			cuMemAddressFree(R->region_va[g], R->regions[g].bytes);
		}
		if (R->stream)
			cuStreamDestroy(R->stream);
		cuDevicePrimaryCtxRelease(R->dev);
	}
	kj_db_close(R->db);
	free(R->mangled);
	free(R->blob);
	free(R->layout);
	free(R->kparams);
	free(R->ranges);
	free(R->ptrs);
	free(R->regions);
	free(R->region_of);
	free(R->region_va);
	free(R->region_h);
	free(R->region_moved);
}

static int usage(void)
{
	fprintf(stderr, "usage: kjoule-replay-worker --probe [--device D]\n"
			"       kjoule-replay-worker --db RUN --unique ID [--runs N] [--warmup W]\n"
			"              [--cache warm|cold|both] [--energy] [--unroll U] [--energy-seconds S]\n"
			"              [--device D] [--timer cupti|events] [--relocate]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct replay R;
	memset(&R, 0, sizeof(R));
	R.o.unique = -1;
	R.o.runs = 100;
	R.o.warmup = 10;
	R.o.warm = 1;
	R.o.cold = 1;
	R.o.unroll = 100;
	R.o.energy_s = 3.0;
	R.o.use_cupti = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--probe")) {
			R.o.probe = 1;
		} else if (!strcmp(a, "--energy")) {
			R.o.energy = 1;
		} else if (!strcmp(a, "--relocate")) {
			R.o.relocate = 1;
		} else if (v && !strcmp(a, "--db")) {
			R.o.db = v, i++;
		} else if (v && !strcmp(a, "--unique")) {
			R.o.unique = strtoll(v, NULL, 10), i++;
		} else if (v && !strcmp(a, "--runs")) {
			R.o.runs = atoi(v), i++;
		} else if (v && !strcmp(a, "--warmup")) {
			R.o.warmup = atoi(v), i++;
		} else if (v && !strcmp(a, "--unroll")) {
			R.o.unroll = atoi(v), i++;
		} else if (v && !strcmp(a, "--device")) {
			R.o.device = atoi(v), i++;
		} else if (v && !strcmp(a, "--energy-seconds")) {
			R.o.energy_s = atof(v), i++;
		} else if (v && !strcmp(a, "--timer")) {
			R.o.use_cupti = strcmp(v, "events") != 0, i++;
		} else if (v && !strcmp(a, "--cache")) {
			R.o.warm = !strcmp(v, "warm") || !strcmp(v, "both");
			R.o.cold = !strcmp(v, "cold") || !strcmp(v, "both");
			if (!R.o.warm && !R.o.cold)
				return usage();
			i++;
		} else {
			return usage();
		}
	}
	if (R.o.probe)
		return probe(R.o.device);
	if (!R.o.db || R.o.unique < 0 || R.o.runs < 1 || R.o.warmup < 0 || R.o.unroll < 1)
		return usage();
	R.res.unique_id = R.o.unique;
	snprintf(R.res.status, sizeof(R.res.status), "ok");
	R.res.dynamic_mj_per_launch = NAN;
	int rc = replay_run(&R);
	if (rc && (!strcmp(R.res.status, "ok") || !strcmp(R.res.status, "relocated")))
		kj_replay_result_set(&R.res, "failed", "%s", kj_strerror(rc));
	kj_replay_emit(stdout, &R.res);
	/* A poisoned context makes teardown pointless, and may hang: leave it to process exit. */
	if (!rc)
		replay_close(&R);
	return 0;
}
