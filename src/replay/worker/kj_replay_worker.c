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
#include <sys/mman.h>
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
	int runs, warmup, warm, cold, energy, unroll, device, relocate, use_cupti, graph;
	int64_t sequence; /* >= 0: replay this iteration (sequence_op), not a unique kernel */
	int fill;         /* 0 random, 1 small integers, 2 zeros (fallbacks when random data faults) */
	double hang_s;    /* a first launch running longer is reported as hung */
	int64_t *uniques; /* the unique kernels of this worker, replayed in order in one context */
	size_t nuniques;
	int debug;
	double energy_s;
	int probe;
	int verify;       /* compare outputs with the run's after-launch snapshot */
};

/* One launch as captured: function, geometry, parameter block and its pointer words. */
struct klaunch {
	CUfunction fn;
	char *mangled;
	int64_t pid, launch_ns, correlation, unique_id;
	unsigned grid[3], block[3], cluster[3], shmem;
	uint8_t *blob;
	size_t blob_len;
	struct kj_replay_param *layout;
	size_t nlayout;
	void **kparams;
	int use_cluster_attr;
	struct kj_replay_ptr *ptrs;
	size_t nptrs;
};

/* Everything one worker holds: the context, modules and database for all its kernels, and the
 * per-kernel state that kernel_close() releases. */
struct replay {
	struct opts o;
	sqlite3 *db;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUmodule mod;
	CUlibrary lib;
	CUmodule mods[64];     /* modules loaded, by hash (sequence replay loads several) */
	char mod_hash[64][72];
	size_t nmods;
	struct klaunch k;
	int64_t device_id;
	struct kj_replay_range *ranges;
	size_t nranges;
	struct kj_replay_region *regions;
	size_t nregions;
	int *region_of;
	CUdeviceptr *region_va;
	CUmemGenericAllocationHandle *region_h;
	int *region_moved;
	uint64_t gran;
	CUdeviceptr flush;
	size_t flush_bytes;
	struct kj_replay_result res;
	int poisoned;          /* the context cannot run more work (sticky error, hung kernel) */
	void *fill_host;       /* pinned pattern buffer, kept across kernels */
	struct prereserve { uintptr_t addr; size_t len; } *pre;
	struct early { uint64_t base, len; CUdeviceptr va; } *early; /* device VA taken right after cuInit */
	size_t nearly;
	int *region_owned;     /* 1: reserved for this kernel (freed after it); 0: inside an early one */
	size_t npre;
};

static int early_reserve(struct replay *R, int with_ctx);

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
static int load_launch_k(struct replay *R, struct klaunch *k, int64_t lp_id)
{
	sqlite3_stmt *st = NULL;
	int rc = KJ_ENOTFOUND;
	char err[256];

	if (kj_db_prepare(R->db,
			  "SELECT n.mangled, p.pid, p.launch_ns, p.grid_x, p.grid_y, p.grid_z, p.block_x,"
			  " p.block_y, p.block_z, p.cluster_x, p.cluster_y, p.cluster_z, p.shmem_dynamic,"
			  " p.layout, p.params, u.grid_x, u.grid_y, u.grid_z, u.block_x, u.block_y, u.block_z,"
			  " u.cluster_x, u.cluster_y, u.cluster_z, u.shmem_dynamic, p.correlation_id, u.id"
			  " FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id"
			  " JOIN launch_params p ON p.unique_id = u.id"
			  " WHERE (?2 < 0 AND u.id = ?1) OR p.id = ?2"
			  /* the launch whose buffers were snapshotted, when there is one */
			  " ORDER BY NOT EXISTS (SELECT 1 FROM snapshot s WHERE s.pid = p.pid"
			  " AND s.correlation_id = p.correlation_id),"
			  " (p.iteration IS NOT NULL), p.ordinal, p.id LIMIT 1", &st)) {
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
	k->pid = col_i64(st, 1, -1);
	k->launch_ns = col_i64(st, 2, -1);
	k->correlation = col_i64(st, 25, -1);
	k->unique_id = col_i64(st, 26, -1);
	for (int i = 0; i < 3; i++) {
		k->grid[i] = (unsigned)col_i64(st, 3 + i, col_i64(st, 15 + i, 1));
		k->block[i] = (unsigned)col_i64(st, 6 + i, col_i64(st, 18 + i, 1));
		k->cluster[i] = (unsigned)col_i64(st, 9 + i, col_i64(st, 21 + i, 0));
	}
	k->shmem = (unsigned)col_i64(st, 12, col_i64(st, 24, 0));
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

static int load_launch(struct replay *R)
{
	return load_launch_k(R, &R->k, -1);
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
	if (R->o.fill == 2) {
		for (size_t g = 0; g < R->nregions; g++)
			CU(cuMemsetD8(R->region_va[g], 0, R->regions[g].bytes));
		return 0;
	}
	if (!R->fill_host) {
		CU(cuMemHostAlloc(&R->fill_host, chunk, 0));
		if (R->o.fill == 1) { /* 64-bit words 0..3: valid indices as int64 and int32 */
			uint64_t x = 0x9E3779B97F4A7C15ull;
			for (size_t i = 0; i + 8 <= chunk; i += 8) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				uint64_t w = x & 3;
				memcpy((uint8_t *)R->fill_host + i, &w, 8);
			}
		} else {
			fill_pattern(R->fill_host, chunk, 0x9E3779B97F4A7C15ull);
		}
	}
	/* one chunk from the host, then doubled on the device: a 32 MiB period, beyond L2 reuse */
	for (size_t g = 0; g < R->nregions; g++) {
		size_t total = R->regions[g].bytes, have = total < chunk ? total : chunk;
		CU(cuMemcpyHtoD(R->region_va[g], R->fill_host, have));
		while (have < total) {
			size_t n = total - have < have ? total - have : have;
			CU(cuMemcpyDtoD(R->region_va[g] + have, R->region_va[g], n));
			have += n;
		}
	}
	CU(cuCtxSynchronize());
	return 0;
}

/* A snapshot row's bytes (decompressed when zstd), or NULL. *owned: caller frees. */
static const void *snapshot_bytes(sqlite3_stmt *st, size_t *bytes, int *owned)
{
	const char *codec = (const char *)sqlite3_column_text(st, 2);
	const void *data = sqlite3_column_blob(st, 3);
	size_t len = (size_t)sqlite3_column_bytes(st, 3);
	*owned = 0;
	if (codec && !strcmp(codec, "zstd")) {
		void *buf = malloc(*bytes ? *bytes : 1);
		if (!buf)
			return NULL;
		size_t got = ZSTD_decompress(buf, *bytes, data, len);
		if (ZSTD_isError(got) || got != *bytes) {
			free(buf);
			return NULL;
		}
		*owned = 1;
		return buf;
	}
	if (len < *bytes)
		*bytes = len;
	return data;
}

/* The re-created region holding [addr, addr+bytes), or -1. */
static int region_holding(const struct replay *R, uint64_t addr, size_t bytes)
{
	for (size_t g = 0; g < R->nregions; g++) {
		uint64_t b = R->regions[g].base, e = b + R->regions[g].bytes;
		if (addr >= b && addr + bytes <= e)
			return (int)g;
	}
	return -1;
}

/* Overlay the run's --snapshot data where it falls inside the re-created regions: the buffers
 * as they were before launches, this kernel's own launch last (other launches' data is still
 * better than random: valid indices, real values). *exact: rows of this very launch applied. */
static int apply_snapshot(struct replay *R, int *applied, int *exact)
{
	sqlite3_stmt *st = NULL;
	*applied = 0;
	if (exact)
		*exact = 0;
	if (kj_db_prepare(R->db, "SELECT address, bytes, codec, data, correlation_id FROM snapshot"
				 " WHERE (?1 < 0 OR pid IS NULL OR pid = ?1) AND data IS NOT NULL"
				 " AND (phase IS NULL OR phase = 'before')"
				 " ORDER BY (correlation_id IS ?2), id",
			  &st) &&
	    kj_db_prepare(R->db, "SELECT address, bytes, codec, data, correlation_id FROM snapshot"
				 " WHERE (?1 < 0 OR pid IS NULL OR pid = ?1) AND data IS NOT NULL"
				 " ORDER BY (correlation_id IS ?2), id",
			  &st))
		return 0; /* older databases: no snapshot table is not an error */
	sqlite3_bind_int64(st, 1, R->k.pid);
	sqlite3_bind_int64(st, 2, R->k.correlation);
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t addr = (uint64_t)sqlite3_column_int64(st, 0);
		size_t bytes = (size_t)sqlite3_column_int64(st, 1);
		int owned, g = region_holding(R, addr, bytes);
		if (g < 0)
			continue;
		const void *buf = snapshot_bytes(st, &bytes, &owned);
		if (!buf)
			continue;
		if (cuMemcpyHtoD(R->region_va[g] + (addr - R->regions[g].base), buf, bytes) == CUDA_SUCCESS) {
			(*applied)++;
			if (exact && sqlite3_column_type(st, 4) != SQLITE_NULL &&
			    sqlite3_column_int64(st, 4) == R->k.correlation)
				(*exact)++;
		}
		if (owned)
			free((void *)buf);
	}
	sqlite3_finalize(st);
	return 0;
}

/* After the one checked launch on the snapshot's inputs: compare every buffer with its
 * after-launch snapshot, bit for bit. Fills res.verify and its counts. */
static void verify_outputs(struct replay *R, int exact_inputs)
{
	sqlite3_stmt *st = NULL;
	struct kj_replay_result *r = &R->res;
	int64_t rows = 0, outside = 0;
	snprintf(r->verify, sizeof(r->verify), "no-snapshot");
	r->verify_buffers = r->verify_bytes = r->verify_diff_bytes = 0;
	if (!exact_inputs || kj_db_prepare(R->db, "SELECT address, bytes, codec, data FROM snapshot"
						 " WHERE pid = ?1 AND correlation_id = ?2 AND phase = 'after'"
						 " AND data IS NOT NULL ORDER BY id",
					   &st))
		return;
	sqlite3_bind_int64(st, 1, R->k.pid);
	sqlite3_bind_int64(st, 2, R->k.correlation);
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t addr = (uint64_t)sqlite3_column_int64(st, 0);
		size_t bytes = (size_t)sqlite3_column_int64(st, 1);
		int owned, g = region_holding(R, addr, bytes);
		rows++;
		if (g < 0) {
			outside++;
			continue;
		}
		const unsigned char *want = snapshot_bytes(st, &bytes, &owned);
		unsigned char *got = malloc(bytes ? bytes : 1);
		if (want && got &&
		    cuMemcpyDtoH(got, R->region_va[g] + (addr - R->regions[g].base), bytes) == CUDA_SUCCESS) {
			r->verify_buffers++;
			r->verify_bytes += (int64_t)bytes;
			for (size_t i = 0; i < bytes; i++)
				r->verify_diff_bytes += got[i] != want[i];
		} else {
			outside++;
		}
		free(got);
		if (owned)
			free((void *)want);
	}
	sqlite3_finalize(st);
	if (rows && !outside)
		snprintf(r->verify, sizeof(r->verify), r->verify_diff_bytes ? "differs" : "identical");
	else if (rows)
		snprintf(r->verify, sizeof(r->verify), r->verify_diff_bytes ? "differs" : "partial");
}

/* Alignment of re-created regions: $KJ_REPLAY_VA_ALIGN_MB MiB (default 32). */
static uint64_t va_align_bytes(void)
{
	const char *e = getenv("KJ_REPLAY_VA_ALIGN_MB");
	long mb = e ? atol(e) : 32;
	if (mb < 2 || (mb & (mb - 1)))
		mb = 32;
	return (uint64_t)mb << 20;
}

/* Debug: what holds an address we did not get (a device range of ours, a host mapping). */
static void debug_va(uint64_t addr)
{
	CUdeviceptr start = 0;
	size_t size = 0;
	CUresult e = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)addr);
	if (e == CUDA_SUCCESS)
		cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)addr);
	fprintf(stderr, "kjoule-replay-worker:   0x%" PRIx64 ": device range %s 0x%llx +%zu\n", addr,
		e == CUDA_SUCCESS ? "" : "(none)", (unsigned long long)start, size);
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long b, en;
		if (sscanf(line, "%llx-%llx", &b, &en) == 2 && b <= addr + (64ull << 20) && addr < en + (64ull << 20))
			fprintf(stderr, "kjoule-replay-worker:   maps %s", line);
	}
	if (f)
		fclose(f);
}

/* Host address ranges held (PROT_NONE) from before cuInit until their device regions are
 * reserved, so that neither the driver's own reservations nor host mappings take them. */
static void prereserve(struct replay *R, uintptr_t addr, size_t len)
{
	void *p = mmap((void *)addr, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return;
	if ((uintptr_t)p != addr) { /* kernels before 4.17 treat the flag as a hint */
		munmap(p, len);
		return;
	}
	struct prereserve *n = realloc(R->pre, (R->npre + 1) * sizeof(*n));
	if (!n) {
		munmap(p, len);
		return;
	}
	R->pre = n;
	R->pre[R->npre].addr = addr;
	R->pre[R->npre].len = len;
	R->npre++;
}

static void release_prereserved(struct replay *R, uint64_t base, uint64_t bytes)
{
	for (size_t i = 0; i < R->npre; i++) {
		struct prereserve *p = &R->pre[i];
		if (p->len && p->addr < base + bytes && base < p->addr + p->len) {
			munmap((void *)p->addr, p->len);
			p->len = 0;
		}
	}
}

/* Re-create the used ranges' regions, at their recorded addresses where the driver gives them,
 * elsewhere otherwise (region_moved; the parameter words are relocated afterwards). */
static int map_used(struct replay *R, const int *used)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	size_t gran = 0;
	int rc;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = R->dev;
	CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	/* The driver gives a hinted address only at its own reservation alignment (32 MiB seen on
	 * an H200 with driver 580: 2 MiB-aligned hints came back rounded up to the next 32 MiB), so
	 * regions are widened to that alignment. */
	if (va_align_bytes() > gran)
		gran = va_align_bytes();
	R->gran = gran;
	R->region_of = calloc(R->nranges + 1, sizeof(*R->region_of));
	if (!R->region_of)
		return KJ_ENOMEM;
	rc = kj_replay_regions(R->ranges, used, R->nranges, gran, &R->regions, &R->nregions,
			       R->region_of);
	if (rc)
		return rc;
	R->region_va = calloc(R->nregions + 1, sizeof(*R->region_va));
	R->region_h = calloc(R->nregions + 1, sizeof(*R->region_h));
	R->region_moved = calloc(R->nregions + 1, sizeof(*R->region_moved));
	R->region_owned = calloc(R->nregions + 1, sizeof(*R->region_owned));
	if (!R->region_va || !R->region_h || !R->region_moved || !R->region_owned)
		return KJ_ENOMEM;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	for (size_t g = 0; g < R->nregions; g++) {
		CUdeviceptr va = 0;
		CUresult e = CUDA_ERROR_UNKNOWN;
		int inside_early = 0;
		for (size_t x = 0; x < R->nearly && !R->o.relocate; x++)
			if (R->early[x].va && R->early[x].base <= R->regions[g].base &&
			    R->regions[g].base + R->regions[g].bytes <= R->early[x].base + R->early[x].len)
				inside_early = 1;
		R->region_owned[g] = !inside_early;
		release_prereserved(R, R->regions[g].base, R->regions[g].bytes);
		if (inside_early) {
			va = R->regions[g].base;
			e = CUDA_SUCCESS;
		} else if (!R->o.relocate) {
			e = cuMemAddressReserve(&va, R->regions[g].bytes, gran, R->regions[g].base, 0);
		}
		if (R->o.debug && e == CUDA_SUCCESS && va != R->regions[g].base)
			debug_va(R->regions[g].base);
		if (R->o.debug)
			fprintf(stderr, "kjoule-replay-worker: region 0x%" PRIx64 " +%" PRIu64 ": got 0x%llx (%d)\n",
				R->regions[g].base, R->regions[g].bytes, (unsigned long long)va, (int)e);
		if (e == CUDA_SUCCESS && va != R->regions[g].base) {
			cuMemAddressFree(va, R->regions[g].bytes);
			e = CUDA_ERROR_UNKNOWN;
		}
		if (e != CUDA_SUCCESS) {
			R->region_moved[g] = 1;
			R->region_owned[g] = 1;
			CU(cuMemAddressReserve(&va, R->regions[g].bytes, gran, 0, 0));
		}
		R->region_va[g] = va;
		CU(cuMemCreate(&R->region_h[g], R->regions[g].bytes, &prop, 0));
		CU(cuMemMap(va, R->regions[g].bytes, 0, R->region_h[g], 0));
		CU(cuMemSetAccess(va, R->regions[g].bytes, &acc, 1));
	}
	return 0;
}

/* Find the pointer words of one launch's parameters; mark their ranges used. */
static int scan_launch(struct replay *R, struct klaunch *k, int *used)
{
	if (kj_replay_scan_pointers(k->blob, k->blob_len, k->layout, k->nlayout, R->ranges,
				    R->nranges, &k->ptrs, &k->nptrs))
		return KJ_ENOMEM;
	for (size_t i = 0; i < k->nptrs; i++)
		used[k->ptrs[i].range] = 1;
	return 0;
}

static int map_allocations(struct replay *R)
{
	int *used = calloc(R->nranges + 1, sizeof(*used));
	int rc;
	if (!used)
		return KJ_ENOMEM;
	rc = scan_launch(R, &R->k, used);
	if (!rc)
		rc = map_used(R, used);
	free(used);
	return rc;
}

/* Rewrite the pointer words of moved regions in k's parameters; when describe, says which
 * allocations moved in res.error and sets status "relocated". @return words rewritten. */
static size_t relocate_launch(struct replay *R, struct klaunch *k, int describe)
{
	uint64_t *nb = calloc(R->nranges + 1, sizeof(*nb));
	size_t moved = 0, len = 0, words = 0;
	if (!nb)
		return 0;
	for (size_t i = 0; i < R->nranges; i++) {
		int g = R->region_of[i];
		if (g >= 0 && R->region_moved[g]) {
			nb[i] = R->region_va[g] + (R->ranges[i].address - R->regions[g].base);
			if (!describe)
				continue;
			if (!moved++)
				len = (size_t)snprintf(R->res.error, sizeof(R->res.error),
						       "relocated allocations:");
			if (len < sizeof(R->res.error))
				len += (size_t)snprintf(R->res.error + len, sizeof(R->res.error) - len,
							" %" PRId64 " (0x%" PRIx64 "->0x%" PRIx64 ")",
							R->ranges[i].id, R->ranges[i].address, nb[i]);
		}
	}
	words = kj_replay_relocate(k->blob, k->blob_len, k->ptrs, k->nptrs, R->ranges, nb);
	if (describe && moved) {
		snprintf(R->res.status, sizeof(R->res.status), "relocated");
		if (len < sizeof(R->res.error))
			snprintf(R->res.error + len, sizeof(R->res.error) - len, "; %zu pointer words rewritten",
				 words);
	}
	free(nb);
	return words;
}

static int relocate(struct replay *R)
{
	relocate_launch(R, &R->k, 1);
	return 0;
}

/* Load the first captured module with data that defines the function, and find the function. */
static int load_function_k(struct replay *R, struct klaunch *kl)
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
	sqlite3_bind_text(st, 1, kl->mangled, -1, SQLITE_STATIC);
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

		for (size_t c = 0; c < R->nmods; c++)
			if (!strcmp(R->mod_hash[c], hash) &&
			    cuModuleGetFunction(&kl->fn, R->mods[c], kl->mangled) == CUDA_SUCCESS) {
				sqlite3_finalize(st);
				return 0;
			}

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
		CUmodule mod = NULL;
		e = cuModuleLoadData(&mod, img);
		if (e == CUDA_SUCCESS) {
			if (R->nmods < sizeof(R->mods) / sizeof(R->mods[0])) {
				R->mods[R->nmods] = mod;
				snprintf(R->mod_hash[R->nmods], sizeof(R->mod_hash[0]), "%s", hash);
				R->nmods++;
			}
			e = cuModuleGetFunction(&kl->fn, mod, kl->mangled);
		}
		if (e != CUDA_SUCCESS) { /* CUDA 12+ library form (CUkernel handles) */
			CUkernel k;
			if (cuLibraryLoadData(&R->lib, img, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS) {
				if (cuLibraryGetKernel(&k, R->lib, kl->mangled) == CUDA_SUCCESS &&
				    cuKernelGetFunction(&kl->fn, k) == CUDA_SUCCESS)
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
				     kl->mangled, tl ? tried : " no module with data defines it");
	return rc;
}

static CUresult launch_k(const struct klaunch *k, CUstream stream)
{
	CUlaunchConfig cfg;
	CUlaunchAttribute attr[1];
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
	if (k->use_cluster_attr) {
		memset(attr, 0, sizeof(attr));
		attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[0].value.clusterDim.x = k->cluster[0] ? k->cluster[0] : 1;
		attr[0].value.clusterDim.y = k->cluster[1] ? k->cluster[1] : 1;
		attr[0].value.clusterDim.z = k->cluster[2] ? k->cluster[2] : 1;
		cfg.attrs = attr;
		cfg.numAttrs = 1;
	}
	if (k->nlayout || !k->blob_len)
		return cuLaunchKernelEx(&cfg, k->fn, k->nlayout ? k->kparams : NULL, NULL);
	return cuLaunchKernelEx(&cfg, k->fn, NULL, (void **)extra);
}

static CUresult launch(struct replay *R)
{
	return launch_k(&R->k, R->stream);
}

static int load_function(struct replay *R)
{
	return load_function_k(R, &R->k);
}

/* Parameter pointers and function attributes of one launch; probes the cluster attribute with a
 * launch on stream when check (then synchronizes and reports a failing kernel). */
static int prepare_k(struct replay *R, struct klaunch *k, CUstream stream, int check)
{
	k->kparams = calloc(k->nlayout + 1, sizeof(*k->kparams));
	if (!k->kparams)
		return KJ_ENOMEM;
	for (size_t i = 0; i < k->nlayout; i++)
		k->kparams[i] = k->blob + k->layout[i].offset;
	if (k->shmem > 48 * 1024)
		CU(cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)k->shmem));
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
		cu_fail(&R->res, "first launch", e, __LINE__);
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
		cu_fail(&R->res, "first launch (kernel ran and failed)", e, __LINE__);
		return KJ_EGPU;
	}
	return 0;
}

static int prepare_launch(struct replay *R)
{
	return prepare_k(R, &R->k, R->stream, 1);
}

/* ---- timing ---- */
#ifdef KJ_WITH_CUPTI
static int64_t *g_dur, *g_start;
static uint32_t *g_stream;
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
			if (nd)
				g_dur = nd;
			int64_t *ns = realloc(g_start, nc * sizeof(*ns));
			if (ns)
				g_start = ns;
			uint32_t *nst = realloc(g_stream, nc * sizeof(*nst));
			if (nst)
				g_stream = nst;
			if (!nd || !ns || !nst)
				break;
			g_capdur = nc;
		}
		g_start[g_ndur] = (int64_t)k->start;
		g_stream[g_ndur] = k->streamId;
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
	/* counter updates come every ~100 ms: ask for 8 per second of --energy-seconds (16 at the
	 * default 2 s), so a kernel costs ~S + 0.5 s of warm-up rather than the primitive's 20+3 */
	ao.min_updates = R->o.energy_s * 8 >= 5 ? (int)(R->o.energy_s * 8) : 5;
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

/* ---- whole-iteration (sequence) replay ---- */
struct seq_op {
	int type;              /* 0 kernel, 1 memcpy, 2 memset, 3 event record, 4 event wait */
	int stream;            /* index into streams */
	int event;             /* index into events, -1 none */
	int kernel;            /* index into launches */
	int64_t bytes;
	int copy;              /* 0 HtoD, 1 DtoH, 2 DtoD, 3 HtoH */
	int pageable;          /* host side pageable */
};

struct seq {
	struct seq_op *ops;
	size_t nops;
	struct klaunch *k;
	size_t nk;
	int64_t *stream_ids;
	CUstream *streams;
	size_t nstreams;
	int64_t *event_ids;
	CUevent *events;
	size_t nevents;
	CUevent start, stop, *join;
	CUdeviceptr d1, d2;
	void *pinned, *pinned2, *pageable, *pageable2;
	int64_t max_bytes;
	int graph_mode;       /* enqueueing into a capture: pinned host memory only */
};

static int seq_index(int64_t **ids, size_t *n, int64_t id)
{
	for (size_t i = 0; i < *n; i++)
		if ((*ids)[i] == id)
			return (int)i;
	int64_t *ni = realloc(*ids, (*n + 1) * sizeof(*ni));
	if (!ni)
		return -1;
	*ids = ni;
	ni[*n] = id;
	return (int)(*n)++;
}

/* Read the ops of one iteration, their launches, and the host kinds of their copies. */
static int seq_load(struct replay *R, int64_t iteration, struct seq *S)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	if (kj_db_prepare(R->db,
			  "SELECT s.op, s.stream_id, s.event_id, s.launch_params_id, s.bytes, s.kind,"
			  " (SELECT m.src_kind || ',' || m.dst_kind FROM memcpy m WHERE m.correlation_id ="
			  "  s.correlation_id AND (s.pid IS NULL OR m.pid = s.pid) LIMIT 1), s.pid"
			  " FROM sequence_op s WHERE s.iteration = ? ORDER BY s.ordinal, s.id", &st))
		return KJ_EDB;
	sqlite3_bind_int64(st, 1, iteration);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *op = (const char *)sqlite3_column_text(st, 0);
		const char *kind = (const char *)sqlite3_column_text(st, 5);
		const char *hk = (const char *)sqlite3_column_text(st, 6);
		struct seq_op o;
		memset(&o, 0, sizeof(o));
		o.event = -1;
		o.kernel = -1;
		if (!op)
			continue;
		if (!strcmp(op, "kernel"))
			o.type = 0;
		else if (!strcmp(op, "memcpy"))
			o.type = 1;
		else if (!strcmp(op, "memset"))
			o.type = 2;
		else if (!strcmp(op, "event_record"))
			o.type = 3;
		else if (!strcmp(op, "event_wait"))
			o.type = 4;
		else
			continue; /* unknown operations are skipped */
		o.stream = seq_index(&S->stream_ids, &S->nstreams, col_i64(st, 1, 0));
		if (o.stream < 0) {
			rc = KJ_ENOMEM;
			break;
		}
		if (o.type >= 3) {
			o.event = seq_index(&S->event_ids, &S->nevents, col_i64(st, 2, -1));
			if (o.event < 0) {
				rc = KJ_ENOMEM;
				break;
			}
		}
		o.bytes = col_i64(st, 4, 0);
		if (o.bytes > S->max_bytes)
			S->max_bytes = o.bytes;
		if (o.type == 1) {
			o.copy = !kind ? 2 : !strcmp(kind, "HtoD") ? 0 : !strcmp(kind, "DtoH") ? 1
				 : !strcmp(kind, "HtoH") ? 3 : 2;
			o.pageable = hk && strstr(hk, "pageable") != NULL;
		}
		if (o.type == 0) {
			struct klaunch *nk = realloc(S->k, (S->nk + 1) * sizeof(*nk));
			if (!nk) {
				rc = KJ_ENOMEM;
				break;
			}
			S->k = nk;
			memset(&S->k[S->nk], 0, sizeof(S->k[0]));
			rc = load_launch_k(R, &S->k[S->nk], col_i64(st, 3, -1));
			if (rc)
				break;
			if (R->k.pid < 0 && sqlite3_column_type(st, 7) != SQLITE_NULL)
				R->k.pid = col_i64(st, 7, -1);
			if (R->k.pid < 0)
				R->k.pid = S->k[S->nk].pid;
			o.kernel = (int)S->nk++;
		}
		struct seq_op *no = realloc(S->ops, (S->nops + 1) * sizeof(*no));
		if (!no) {
			rc = KJ_ENOMEM;
			break;
		}
		S->ops = no;
		S->ops[S->nops++] = o;
	}
	sqlite3_finalize(st);
	if (!rc && !S->nstreams)
		rc = seq_index(&S->stream_ids, &S->nstreams, 0) < 0 ? KJ_ENOMEM : 0;
	return rc;
}

/* Enqueue one iteration: fork every stream from the first, the ops in recorded order, join. */
static CUresult seq_enqueue(struct seq *S)
{
	CUresult e;
	CUstream o = S->streams[0];
	if ((e = cuEventRecord(S->start, o)))
		return e;
	for (size_t i = 1; i < S->nstreams; i++)
		if ((e = cuStreamWaitEvent(S->streams[i], S->start, 0)))
			return e;
	unsigned char *recorded = calloc(S->nevents + 1, 1);
	if (!recorded)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < S->nops; i++) {
		const struct seq_op *op = &S->ops[i];
		CUstream s = S->streams[op->stream];
		size_t b = (size_t)op->bytes;
		void *h = op->pageable && !S->graph_mode ? S->pageable : S->pinned;
		void *h2 = op->pageable && !S->graph_mode ? S->pageable2 : S->pinned2;
		switch (op->type) {
		case 0:
			e = launch_k(&S->k[op->kernel], s);
			break;
		case 1:
			if (!b)
				continue;
			e = op->copy == 0 ? cuMemcpyHtoDAsync(S->d1, h, b, s)
			    : op->copy == 1 ? cuMemcpyDtoHAsync(h, S->d1, b, s)
			    : op->copy == 3 ? cuMemcpyAsync((CUdeviceptr)h2, (CUdeviceptr)h, b, s)
					    : cuMemcpyDtoDAsync(S->d2, S->d1, b, s);
			break;
		case 2:
			e = b ? cuMemsetD8Async(S->d1, 0x3c, b, s) : CUDA_SUCCESS;
			break;
		case 3:
			e = cuEventRecord(S->events[op->event], s);
			recorded[op->event] = 1;
			break;
		default: /* a wait on an event recorded before the iteration began has nothing to wait for */
			e = recorded[op->event] ? cuStreamWaitEvent(s, S->events[op->event], 0) : CUDA_SUCCESS;
			break;
		}
		if (e) {
			free(recorded);
			return e;
		}
	}
	free(recorded);
	for (size_t i = 1; i < S->nstreams; i++) {
		if ((e = cuEventRecord(S->join[i], S->streams[i])) ||
		    (e = cuStreamWaitEvent(o, S->join[i], 0)))
			return e;
	}
	return CUDA_SUCCESS;
}

struct seq_graph {
	CUgraphExec exec;
	CUstream stream;
};

static int seq_graph_enqueue(void *ctx)
{
	struct seq_graph *g = ctx;
	return cuGraphLaunch(g->exec, g->stream) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

static int seq_graph_sync(void *ctx)
{
	struct seq_graph *g = ctx;
	return cuStreamSynchronize(g->stream) == CUDA_SUCCESS ? 0 : KJ_EGPU;
}

/* Time one mode: N iterations after W, each bracketed by events on the first stream. */
static int seq_time(struct replay *R, struct seq *S, CUgraphExec exec, struct kj_replay_seq *out)
{
	int n = R->o.runs;
	int64_t *ns = calloc((size_t)n + 1, sizeof(*ns));
	CUevent a = NULL, b = NULL;
	CUresult e = CUDA_SUCCESS;
	CUstream o = S->streams[0];
	if (!ns)
		return KJ_ENOMEM;
	if ((e = cuEventCreate(&a, 0)) || (e = cuEventCreate(&b, 0)))
		goto out;
	for (int i = -R->o.warmup; i < n; i++) {
		if ((e = cuEventRecord(a, o)))
			goto out;
		e = exec ? cuGraphLaunch(exec, o) : seq_enqueue(S);
		if (e || (e = cuEventRecord(b, o)) || (e = cuEventSynchronize(b)))
			goto out;
		float ms;
		if ((e = cuEventElapsedTime(&ms, a, b)))
			goto out;
		if (i >= 0)
			ns[i] = (int64_t)llround((double)ms * 1e6);
	}
	struct kj_replay_timing t;
	kj_replay_stats(ns, (size_t)n, &t);
	out->runs = t.runs;
	out->min_ns = t.min_ns;
	out->median_ns = t.median_ns;
	out->max_ns = t.max_ns;
out:
	if (a)
		cuEventDestroy(a);
	if (b)
		cuEventDestroy(b);
	free(ns);
	if (e) {
		const char *name = NULL;
		cuGetErrorName(e, &name);
		snprintf(out->status, sizeof(out->status), "failed");
		snprintf(out->error, sizeof(out->error), "%s replay: %s", out->mode, name ? name : "?");
		return KJ_EGPU;
	}
	return 0;
}

#ifdef KJ_HAVE_AMORTIZE
static void seq_energy(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out)
{
	struct seq_graph g = {exec, s};
	struct kj_amortize_work w = {&g, seq_graph_enqueue, seq_graph_sync, 1};
	struct kj_amortize_opts ao;
	struct kj_amortize_result ar;
	memset(&ao, 0, sizeof(ao));
	memset(&ar, 0, sizeof(ar));
	ao.nvml_index = R->o.device;
	ao.min_seconds = R->o.energy_s;
	if (kj_amortize_measure(&w, &ao, &ar) == 0) {
		out->has_energy = 1;
		out->energy_mj = ar.energy_per_launch_mj;
		out->energy_unc_mj = ar.energy_unc_mj;
	}
}
#else
static void seq_energy(struct replay *R, CUgraphExec exec, CUstream s, struct kj_replay_seq *out)
{
	(void)R;
	(void)exec;
	(void)s;
	(void)out;
	(void)seq_graph_enqueue;
	(void)seq_graph_sync;
	kj_warnf("sequence energy not measured: this worker was built without kj_amortize_measure");
}
#endif

/* Replay one captured iteration eagerly and, with graph, as one CUDA graph; prints KJ_SEQ lines. */
#ifdef KJ_WITH_CUPTI
struct seq_rec {
	uint32_t stream;
	int64_t start, dur;
};

static int seq_rec_cmp(const void *a, const void *b)
{
	const struct seq_rec *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Each kernel's time where the iteration puts it: L2 holds what its predecessors left, as in
 * the traced run. The eager iteration runs `runs` times under CUPTI; on each stream the i-th
 * kernel record is the i-th kernel launched there. One KJ_TIMING line (cache=sequence) per
 * unique kernel: statistics over all its launches in the iteration and all runs. */
static void seq_per_kernel(struct replay *R, struct seq *S)
{
	int runs = R->o.runs < 20 ? R->o.runs : 20;
	uint32_t *sid = calloc(S->nstreams + 1, sizeof(*sid));
	size_t *nks = calloc(S->nstreams + 1, sizeof(*nks)), **order = calloc(S->nstreams + 1, sizeof(*order));
	struct seq_rec *rec = NULL;
	int64_t *per = NULL;
	if (!sid || !nks || !order || runs < 1)
		goto out;
	for (size_t s = 0; s < S->nstreams; s++)
		if (cuptiGetStreamIdEx(R->ctx, S->streams[s], 0, &sid[s]) != CUPTI_SUCCESS)
			goto out;
	for (size_t s = 0; s < S->nstreams; s++) {
		order[s] = calloc(S->nk + 1, sizeof(**order));
		if (!order[s])
			goto out;
	}
	for (size_t i = 0; i < S->nops; i++)
		if (S->ops[i].type == 0)
			order[S->ops[i].stream][nks[S->ops[i].stream]++] = (size_t)S->ops[i].kernel;
	if (cupti_start())
		goto out;
	CUresult e = CUDA_SUCCESS;
	for (int r = 0; r < runs && !e; r++)
		if (!(e = seq_enqueue(S)))
			e = cuCtxSynchronize();
	cupti_stop();
	if (e || g_ndur != (size_t)runs * S->nk)
		goto out; /* records missing or extra: no per-kernel figures rather than wrong ones */
	rec = malloc(g_ndur * sizeof(*rec));
	per = malloc(((size_t)runs * S->nk + 1) * sizeof(*per));
	if (!rec || !per)
		goto out;
	for (size_t i = 0; i < g_ndur; i++)
		rec[i] = (struct seq_rec){g_stream[i], g_start[i], g_dur[i]};
	qsort(rec, g_ndur, sizeof(*rec), seq_rec_cmp);
	/* kernel index of each record, stream by stream */
	int64_t *dur_of = malloc((size_t)runs * S->nk * sizeof(*dur_of));
	size_t *k_of = malloc((size_t)runs * S->nk * sizeof(*k_of));
	if (!dur_of || !k_of) {
		free(dur_of);
		free(k_of);
		goto out;
	}
	size_t at = 0, bad = 0;
	for (size_t s = 0; s < S->nstreams && !bad; s++) {
		size_t want = (size_t)runs * nks[s];
		for (size_t j = 0; j < want; j++, at++) {
			if (at >= g_ndur || rec[at].stream != sid[s]) {
				bad = 1;
				break;
			}
			k_of[at] = order[s][j % nks[s]];
			dur_of[at] = rec[at].dur;
		}
	}
	if (!bad && at == g_ndur) {
		int *done = calloc(S->nk + 1, sizeof(*done));
		for (size_t i = 0; done && i < S->nk; i++) {
			if (done[i] || S->k[i].unique_id < 0)
				continue;
			size_t n = 0;
			for (size_t j = 0; j < g_ndur; j++)
				if (S->k[k_of[j]].unique_id == S->k[i].unique_id) {
					per[n++] = dur_of[j];
					done[k_of[j]] = 1;
				}
			struct kj_replay_result res;
			memset(&res, 0, sizeof(res));
			res.unique_id = S->k[i].unique_id;
			kj_replay_stats(per, n, &res.warm);
			printf("KJ_TIMING\tunique=%" PRId64 "\tcache=sequence\ttimer=cupti\truns=%d\tmin=%" PRId64
			       "\tmedian=%" PRId64 "\tmean=%.3f\tmax=%" PRId64 "\tstdev=%.3f\n",
			       res.unique_id, res.warm.runs, res.warm.min_ns, res.warm.median_ns, res.warm.mean_ns,
			       res.warm.max_ns, res.warm.stdev_ns);
		}
		free(done);
		fflush(stdout);
	}
	free(dur_of);
	free(k_of);
out:
	for (size_t s = 0; order && s < S->nstreams; s++)
		free(order[s]);
	free(order);
	free(nks);
	free(sid);
	free(rec);
	free(per);
}
#endif

static int sequence_run(struct replay *R, int64_t iteration, int graph)
{
	struct seq S;
	struct kj_replay_seq eager, gr;
	int rc, *used = NULL, moved = 0;
	CUgraph g = NULL;
	CUgraphExec exec = NULL;

	memset(&S, 0, sizeof(S));
	memset(&eager, 0, sizeof(eager));
	memset(&gr, 0, sizeof(gr));
	eager.iteration = gr.iteration = iteration;
	snprintf(eager.mode, sizeof(eager.mode), "eager");
	snprintf(gr.mode, sizeof(gr.mode), "graph");
	snprintf(eager.status, sizeof(eager.status), "ok");
	snprintf(gr.status, sizeof(gr.status), "ok");
	R->device_id = 0;
	R->k.pid = -1;
	R->k.launch_ns = -1;
	if ((rc = kj_db_open(R->o.db, 0, &R->db)))
		goto fail;
	if ((rc = seq_load(R, iteration, &S)))
		goto fail;
	if ((rc = load_ranges(R)))
		goto fail;
	eager.launches = gr.launches = (int64_t)S.nk;
	eager.ops = gr.ops = (int64_t)S.nops;
	used = calloc(R->nranges + 1, sizeof(*used));
	if (!used) {
		rc = KJ_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < S.nk && !rc; i++)
		rc = scan_launch(R, &S.k[i], used);
	/* the address space of every referenced allocation, held before the driver starts */
	for (size_t i = 0; i < R->nranges && !rc && !R->o.relocate; i++)
		if (used[i]) {
			const uint64_t g = va_align_bytes();
			uint64_t b = R->ranges[i].address & ~(g - 1);
			uint64_t e = (R->ranges[i].address + R->ranges[i].bytes + g - 1) & ~(g - 1);
			struct early *ne = realloc(R->early, (R->nearly + 1) * sizeof(*ne));
			if (!ne)
				break;
			R->early = ne;
			R->early[R->nearly].base = b;
			R->early[R->nearly].len = e - b;
			R->early[R->nearly].va = 0;
			if (R->nearly && b <= R->early[R->nearly - 1].base + R->early[R->nearly - 1].len) {
				if (e > R->early[R->nearly - 1].base + R->early[R->nearly - 1].len)
					R->early[R->nearly - 1].len = e - R->early[R->nearly - 1].base;
			} else {
				R->nearly++;
			}
		}
	for (size_t i = 0; i < R->nearly; i++)
		prereserve(R, (uintptr_t)R->early[i].base, (size_t)R->early[i].len);
	if (cuInit(0) || cuDeviceGet(&R->dev, R->o.device)) {
		rc = KJ_ENODEV;
		goto fail;
	}
	early_reserve(R, 0);
	if (cuDevicePrimaryCtxRetain(&R->ctx, R->dev) || cuCtxSetCurrent(R->ctx)) {
		rc = KJ_ENODEV;
		goto fail;
	}
	early_reserve(R, 1);
	if (rc || (rc = map_used(R, used)))
		goto fail;
	if ((rc = fill_regions(R)))
		goto fail;
	int applied;
	apply_snapshot(R, &applied, NULL);
	for (size_t i = 0; i < S.nk; i++)
		moved += relocate_launch(R, &S.k[i], 0) > 0;
	for (size_t i = 0; i < S.nk; i++)
		if ((rc = load_function_k(R, &S.k[i])) || (rc = prepare_k(R, &S.k[i], NULL, 0)))
			goto fail;
	S.streams = calloc(S.nstreams, sizeof(*S.streams));
	S.join = calloc(S.nstreams, sizeof(*S.join));
	S.events = calloc(S.nevents + 1, sizeof(*S.events));
	if (!S.streams || !S.join || !S.events) {
		rc = KJ_ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < S.nstreams; i++)
		if (cuStreamCreate(&S.streams[i], CU_STREAM_NON_BLOCKING) ||
		    cuEventCreate(&S.join[i], CU_EVENT_DISABLE_TIMING))
			goto gpu_fail;
	for (size_t i = 0; i < S.nevents; i++)
		if (cuEventCreate(&S.events[i], CU_EVENT_DISABLE_TIMING))
			goto gpu_fail;
	if (cuEventCreate(&S.start, CU_EVENT_DISABLE_TIMING))
		goto gpu_fail;
	size_t mb = (size_t)(S.max_bytes > 0 ? S.max_bytes : 16);
	if (cuMemAlloc(&S.d1, mb) || cuMemAlloc(&S.d2, mb) || cuMemHostAlloc(&S.pinned, mb, 0) ||
	    cuMemHostAlloc(&S.pinned2, mb, 0))
		goto gpu_fail;
	S.pageable = malloc(mb);
	S.pageable2 = malloc(mb);
	if (!S.pageable || !S.pageable2) {
		rc = KJ_ENOMEM;
		goto fail;
	}
	fill_pattern(S.pinned, mb, 7);
	fill_pattern(S.pageable, mb, 8);
	if (moved) {
		snprintf(eager.status, sizeof(eager.status), "relocated");
		snprintf(gr.status, sizeof(gr.status), "relocated");
		snprintf(eager.error, sizeof(eager.error), "%d launches relocated", moved);
		snprintf(gr.error, sizeof(gr.error), "%d launches relocated", moved);
	}
	/* one checked iteration first: a fault fails the replay here, with its error */
	CUresult e = seq_enqueue(&S);
	if (!e)
		e = cuCtxSynchronize();
	if (e) {
		const char *name = NULL;
		cuGetErrorName(e, &name);
		snprintf(eager.status, sizeof(eager.status), "failed");
		snprintf(eager.error, sizeof(eager.error), "first iteration: %s", name ? name : "?");
		gr = eager;
		snprintf(gr.mode, sizeof(gr.mode), "graph");
		goto emit;
	}
	seq_time(R, &S, NULL, &eager);
	if (graph) {
		S.graph_mode = 1;
		e = cuStreamBeginCapture(S.streams[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
		if (!e) {
			CUresult e2 = seq_enqueue(&S);
			e = cuStreamEndCapture(S.streams[0], &g);
			if (e2)
				e = e2;
		}
		if (!e)
			e = cuGraphInstantiate(&exec, g, 0);
		if (e) {
			const char *name = NULL;
			cuGetErrorName(e, &name);
			snprintf(gr.status, sizeof(gr.status), "failed");
			snprintf(gr.error, sizeof(gr.error), "graph capture: %s", name ? name : "?");
		} else {
			seq_time(R, &S, exec, &gr);
			if (R->o.energy && strcmp(gr.status, "failed"))
				seq_energy(R, exec, S.streams[0], &gr);
		}
	}
	/* last: the graph replay measured 16 % slower when it ran after this CUPTI pass in the same
	 * process (BLOOM-560M, H200), so the event-timed modes above come first */
#ifdef KJ_WITH_CUPTI
	S.graph_mode = 0;
	if (R->o.use_cupti)
		seq_per_kernel(R, &S);
#endif
emit:
	kj_replay_seq_emit(stdout, &eager);
	if (graph)
		kj_replay_seq_emit(stdout, &gr);
	free(used);
	return 0;
gpu_fail:
	rc = KJ_EGPU;
fail:
	snprintf(eager.status, sizeof(eager.status), "failed");
	snprintf(eager.error, sizeof(eager.error), "%.200s%s%s", R->res.error[0] ? R->res.error : "",
		 R->res.error[0] ? "; " : "", kj_strerror(rc));
	kj_replay_seq_emit(stdout, &eager);
	free(used);
	return rc;
}

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

/* Per-kernel state back to empty; the context, the loaded modules and the database stay. */
static void kernel_close(struct replay *R)
{
	if (R->ctx && !R->poisoned) {
		if (R->flush)
			cuMemFree(R->flush);
		for (size_t g = 0; R->region_va && g < R->nregions; g++) {
			if (!R->region_va[g])
				continue;
			cuMemUnmap(R->region_va[g], R->regions[g].bytes);
			if (R->region_h[g])
				cuMemRelease(R->region_h[g]);
			if (!R->region_owned || R->region_owned[g])
				cuMemAddressFree(R->region_va[g], R->regions[g].bytes);
		}
		if (R->stream)
			cuStreamDestroy(R->stream);
	}
	free(R->region_owned);
	R->region_owned = NULL;
	R->flush = 0;
	R->stream = NULL;
	free(R->k.mangled);
	free(R->k.blob);
	free(R->k.layout);
	free(R->k.kparams);
	free(R->k.ptrs);
	memset(&R->k, 0, sizeof(R->k));
	free(R->ranges);
	free(R->regions);
	free(R->region_of);
	free(R->region_va);
	free(R->region_h);
	free(R->region_moved);
	R->ranges = NULL;
	R->nranges = 0;
	R->regions = NULL;
	R->nregions = 0;
	R->region_of = NULL;
	R->region_va = NULL;
	R->region_h = NULL;
	R->region_moved = NULL;
}

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int early_cmp(const void *a, const void *b)
{
	const struct early *x = a, *y = b;
	return x->base < y->base ? -1 : x->base > y->base;
}

/* Reserve the merged regions at their recorded addresses; returns how many were obtained. */
static int early_reserve(struct replay *R, int with_ctx)
{
	int ok = 0;
	if (getenv("KJ_REPLAY_NO_EARLY"))
		return 0;
	for (size_t i = 0; i < R->nearly; i++) {
		CUdeviceptr va = 0;
		if (R->early[i].va)
			continue;
		release_prereserved(R, R->early[i].base, R->early[i].len);
		CUresult e = cuMemAddressReserve(&va, R->early[i].len, va_align_bytes(), R->early[i].base, 0);
		if (R->o.debug)
			fprintf(stderr, "kjoule-replay-worker: early%s 0x%" PRIx64 " +%" PRIu64 ": got 0x%llx (%d)\n",
				with_ctx ? " (context)" : "", R->early[i].base, R->early[i].len,
				(unsigned long long)va, (int)e);
		if (e == CUDA_SUCCESS && va == R->early[i].base) {
			R->early[i].va = va;
			ok++;
		} else if (e == CUDA_SUCCESS) {
			cuMemAddressFree(va, R->early[i].len);
		}
	}
	return ok;
}

/* Open the run, hold the host address ranges of every kernel's allocations, then make the
 * context (once for all the kernels of this worker). */
static int worker_setup(struct replay *R)
{
	int rc;
	double t0 = mono_s();
	if ((rc = kj_db_open(R->o.db, 0, &R->db)))
		return rc;
	for (size_t u = 0; u < R->o.nuniques && !R->o.relocate; u++) {
		R->o.unique = R->o.uniques[u];
		if (!load_launch(R) && !load_ranges(R)) {
			int *used = calloc(R->nranges + 1, sizeof(*used));
			if (used && !scan_launch(R, &R->k, used))
				for (size_t i = 0; i < R->nranges; i++)
					if (used[i]) {
						const uint64_t g = va_align_bytes();
						uint64_t b = R->ranges[i].address & ~(g - 1);
						uint64_t e = (R->ranges[i].address + R->ranges[i].bytes + g - 1) & ~(g - 1);
						struct early *ne = realloc(R->early, (R->nearly + 1) * sizeof(*ne));
						if (ne) {
							R->early = ne;
							R->early[R->nearly].base = b;
							R->early[R->nearly].len = e - b;
							R->early[R->nearly].va = 0;
							R->nearly++;
						}
					}
			free(used);
		}
		kernel_close(R);
	}
	/* merge the intervals of all kernels, and hold them in host address space */
	qsort(R->early, R->nearly, sizeof(*R->early), early_cmp);
	size_t m = 0;
	for (size_t i = 0; i < R->nearly; i++) {
		if (m && R->early[i].base <= R->early[m - 1].base + R->early[m - 1].len) {
			uint64_t e = R->early[i].base + R->early[i].len;
			if (e > R->early[m - 1].base + R->early[m - 1].len)
				R->early[m - 1].len = e - R->early[m - 1].base;
		} else {
			R->early[m++] = R->early[i];
		}
	}
	R->nearly = m;
	for (size_t i = 0; i < R->nearly; i++)
		prereserve(R, (uintptr_t)R->early[i].base, (size_t)R->early[i].len);
	memset(&R->res, 0, sizeof(R->res));
	R->device_id = 0;
	{
		sqlite3_stmt *st = NULL;
		if (!kj_db_prepare(R->db, "SELECT device_id FROM process_device ORDER BY pid, ordinal LIMIT 1", &st)) {
			if (sqlite3_step(st) == SQLITE_ROW)
				R->device_id = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
	}
	CU(cuInit(0));
	CU(cuDeviceGet(&R->dev, R->o.device));
	/* device address space before the context exists, when it can; after it otherwise */
	int early_ok = early_reserve(R, 0);
	CU(cuDevicePrimaryCtxRetain(&R->ctx, R->dev));
	CU(cuCtxSetCurrent(R->ctx));
	int early_ok2 = early_reserve(R, 1);
	if (R->o.debug)
		fprintf(stderr, "kjoule-replay-worker: setup %.3f s, %zu host ranges held, %zu regions, %d+%d "
				"reserved at their addresses before+after the context\n", mono_s() - t0, R->npre,
			R->nearly, early_ok, early_ok2);
	return 0;
}

/* Replay one unique kernel (R->o.unique) in the worker's context. */
static int replay_one(struct replay *R)
{
	int rc, l2 = 0, applied = 0, exact = 0;
	double t0 = mono_s(), t1, t2, t3;
	if ((rc = load_launch(R)) || (rc = load_ranges(R)))
		return rc;
	/* address space first: nothing of ours should take the recorded addresses */
	if ((rc = map_allocations(R)))
		return rc;
	CU(cuStreamCreate(&R->stream, CU_STREAM_NON_BLOCKING));
	if ((rc = fill_regions(R)) || (rc = apply_snapshot(R, &applied, &exact)) || (rc = relocate(R)))
		return rc;
	t1 = mono_s();
	if ((rc = load_function(R)))
		return rc;
	t2 = mono_s();
	if ((rc = prepare_launch(R)))
		return rc;
	if (R->o.verify) /* the checked launch ran on the snapshot's inputs: compare before timing */
		verify_outputs(R, exact);
	if (R->o.cold) {
		CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, R->dev));
		R->flush_bytes = ((size_t)(l2 > 0 ? l2 : 64 << 20) * 2 + 4095) & ~(size_t)4095;
		CU(cuMemAlloc(&R->flush, R->flush_bytes));
	}
	if (R->o.warm && (rc = time_mode(R, 0, &R->res.warm)))
		return rc;
	if (R->o.cold && (rc = time_mode(R, 1, &R->res.cold)))
		return rc;
	t3 = mono_s();
	if (R->o.energy && (rc = measure_energy(R)))
		return rc;
	if (R->o.debug) {
		size_t mapped = 0;
		for (size_t g = 0; g < R->nregions; g++)
			mapped += R->regions[g].bytes;
		fprintf(stderr, "kjoule-replay-worker: unique %" PRId64 ": map+fill %.3f s (%zu MiB), module %.3f s, "
				"time %.3f s, energy %.3f s\n", R->o.unique, t1 - t0, mapped >> 20, t2 - t1,
			t3 - t2, mono_s() - t3);
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: kjoule-replay-worker --probe [--device D]\n"
			"       kjoule-replay-worker --db RUN --unique ID [--runs N] [--warmup W]\n"
			"              [--cache warm|cold|both] [--energy] [--unroll U] [--energy-seconds S]\n"
			"              [--device D] [--timer cupti|events] [--relocate]\n"
			"       kjoule-replay-worker --db RUN --sequence ITERATION [--graph] [--runs N]\n"
			"              [--warmup W] [--energy] [--energy-seconds S] [--device D]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct replay R;
	memset(&R, 0, sizeof(R));
	R.o.unique = -1;
	R.o.sequence = -1;
	R.o.runs = 100;
	R.o.warmup = 10;
	R.o.warm = 1;
	R.o.cold = 1;
	R.o.unroll = 100;
	R.o.energy_s = 2.0;
	R.o.use_cupti = 1;
	R.o.hang_s = 10.0;
	R.o.debug = getenv("KJ_REPLAY_DEBUG") != NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--probe")) {
			R.o.probe = 1;
		} else if (!strcmp(a, "--energy")) {
			R.o.energy = 1;
		} else if (!strcmp(a, "--relocate")) {
			R.o.relocate = 1;
		} else if (!strcmp(a, "--verify")) {
			R.o.verify = 1;
		} else if (!strcmp(a, "--graph")) {
			R.o.graph = 1;
		} else if (v && !strcmp(a, "--sequence")) {
			R.o.sequence = strtoll(v, NULL, 10), i++;
		} else if (v && !strcmp(a, "--db")) {
			R.o.db = v, i++;
		} else if (v && !strcmp(a, "--unique")) {
			int64_t *nu = realloc(R.o.uniques, (R.o.nuniques + 1) * sizeof(*nu));
			if (!nu)
				return 1;
			R.o.uniques = nu;
			R.o.uniques[R.o.nuniques++] = strtoll(v, NULL, 10), i++;
		} else if (v && !strcmp(a, "--fill")) {
			R.o.fill = !strcmp(v, "smallint") ? 1 : !strcmp(v, "zero") ? 2 : 0, i++;
		} else if (v && !strcmp(a, "--hang-seconds")) {
			R.o.hang_s = atof(v), i++;
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
	if (R.o.db && R.o.sequence >= 0 && R.o.runs >= 1 && R.o.warmup >= 0)
		return sequence_run(&R, R.o.sequence, R.o.graph) ? 1 : 0;
	if (!R.o.db || !R.o.nuniques || R.o.runs < 1 || R.o.warmup < 0 || R.o.unroll < 1)
		return usage();
	int rc = worker_setup(&R);
	for (size_t u = 0; u < R.o.nuniques; u++) {
		struct kj_replay_result setup_res = R.res;
		memset(&R.res, 0, sizeof(R.res));
		R.o.unique = R.o.uniques[u];
		R.res.unique_id = R.o.unique;
		snprintf(R.res.status, sizeof(R.res.status), "ok");
		R.res.dynamic_mj_per_launch = NAN;
		printf("KJ_BEGIN\tunique=%" PRId64 "\n", R.o.unique);
		fflush(stdout);
		if (rc) { /* no context: every kernel fails the same way */
			R.res = setup_res;
			R.res.unique_id = R.o.unique;
			if (!strcmp(R.res.status, "ok") || !R.res.status[0])
				kj_replay_result_set(&R.res, "failed", "worker setup: %s", kj_strerror(rc));
			kj_replay_emit(stdout, &R.res);
			continue;
		}
		int krc = replay_one(&R);
		if (krc && (!strcmp(R.res.status, "ok") || !strcmp(R.res.status, "relocated")))
			kj_replay_result_set(&R.res, "failed", "%s", kj_strerror(krc));
		/* a sticky error poisons the context: report, then leave the rest to a new worker */
		if (krc && !R.poisoned && cuCtxSynchronize() != CUDA_SUCCESS)
			R.poisoned = 1;
		kj_replay_emit(stdout, &R.res);
		if (R.poisoned)
			return 3;
		kernel_close(&R);
	}
	if (R.ctx)
		cuDevicePrimaryCtxRelease(R.dev);
	kj_db_close(R.db);
	return 0;
}
