/* kjoule-replay-worker: the device memory a launch points into, re-created at the recorded
 * addresses where the driver gives them (host address space held from before cuInit), relocated
 * otherwise, and filled with random never-zero data. */
#include "replay_worker.h"

/* Random, never-zero, finite data that reads as modest numbers in fp32, fp16 and bf16, with every
 * mantissa bit and a spread of exponents random (a multiplier's and an adder's power depend on how
 * many bits toggle and how far operands are shifted): each 16-bit half has a random sign, bits
 * 13..12 set and bits 11..0 random, so as fp16 it is +-[1/8, 2) over four binades with all ten
 * mantissa bits random, as bf16 (and as an fp32 word's high half) a number of 2^-31..2^0.
 * KJ_REPLAY_FILL=narrow: bits 13..11 set (fp16 +-[0.5, 2), two binades); =legacy: the first fill
 * (sign and the low 8 bits random, fp16 +-[1.75, 2)); for comparisons (docs/replay.md). */
void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	static uint64_t keep, set;
	if (!keep) {
		const char *e = getenv("KJ_REPLAY_FILL");
		if (e && !strcmp(e, "legacy"))
			keep = 0x80FF80FF80FF80FFull, set = 0x3F003F003F003F00ull;
		else if (e && !strcmp(e, "narrow"))
			keep = 0x87FF87FF87FF87FFull, set = 0x3800380038003800ull;
		else
			keep = 0x8FFF8FFF8FFF8FFFull, set = 0x3000300030003000ull;
	}
	uint64_t x = seed | 1;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t w = (x & keep) | set;
		memcpy(p + i, &w, 8);
	}
}

/* Small integers: 64-bit words 0..3, valid indices read as int64 or int32. */
static void fill_smallint(uint8_t *p, size_t n)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t w = x & 3;
		memcpy(p + i, &w, 8);
	}
}

static int copy_pattern(struct replay *R, size_t g, const void *host, size_t chunk)
{
	size_t total = R->regions[g].bytes, have = total < chunk ? total : chunk;
	CU(cuMemcpyHtoD(R->region_va[g], host, have));
	/* one chunk from the host, then doubled on the device: a 32 MiB period, beyond L2 reuse */
	while (have < total) {
		size_t n = total - have < have ? total - have : have;
		CU(cuMemcpyDtoD(R->region_va[g] + have, R->region_va[g], n));
		have += n;
	}
	return 0;
}

int fill_regions(struct replay *R)
{
	const size_t chunk = 32u << 20;
	int rc;
	if (R->o.fill == 2) {
		for (size_t g = 0; g < R->nregions; g++)
			CU(cuMemsetD8(R->region_va[g], 0, R->regions[g].bytes));
		return 0;
	}
	if (!R->fill_host) {
		CU(cuMemHostAlloc(&R->fill_host, chunk, 0));
		if (R->o.fill == 1)
			fill_smallint(R->fill_host, chunk);
		else
			fill_pattern(R->fill_host, chunk, 0x9E3779B97F4A7C15ull);
	}
	for (size_t g = 0; g < R->nregions; g++)
		if ((rc = copy_pattern(R, g, R->fill_host, chunk)))
			return rc;
	CU(cuCtxSynchronize());
	return 0;
}


/* Alignment of re-created regions: $KJ_REPLAY_VA_ALIGN_MB MiB (default 32). */
uint64_t va_align_bytes(void)
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
void prereserve(struct replay *R, uintptr_t addr, size_t len)
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
int map_used(struct replay *R, const int *used)
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
int scan_launch(struct replay *R, struct klaunch *k, int *used)
{
	if (kj_replay_scan_pointers(k->blob, k->blob_len, k->layout, k->nlayout, R->ranges,
				    R->nranges, &k->ptrs, &k->nptrs))
		return KJ_ENOMEM;
	for (size_t i = 0; i < k->nptrs; i++)
		used[k->ptrs[i].range] = 1;
	return 0;
}

int map_allocations(struct replay *R)
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
size_t relocate_launch(struct replay *R, struct klaunch *k, int describe)
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

int relocate(struct replay *R)
{
	relocate_launch(R, &R->k, 1);
	return 0;
}


int early_cmp(const void *a, const void *b)
{
	const struct early *x = a, *y = b;
	return x->base < y->base ? -1 : x->base > y->base;
}

/* Reserve the merged regions at their recorded addresses; returns how many were obtained. */
int early_reserve(struct replay *R, int with_ctx)
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


CUdeviceptr region_address(const struct replay *R, uint64_t addr, size_t bytes)
{
	for (size_t g = 0; g < R->nregions; g++) {
		uint64_t b = R->regions[g].base, e = b + R->regions[g].bytes;
		if (addr >= b && addr + bytes <= e)
			return R->region_va[g] + (addr - b);
	}
	return 0;
}

/* Adds to R->premem the memsets before the launch (kj_store_premem_open; graph: of its graph
 * launch) that lie in re-created regions. A query an older run's schema refuses adds none.
 * 0 or KJ_ENOMEM. */
static int add_premem(struct replay *R, int graph)
{
	struct kj_store_rows *st = NULL;
	struct kj_store_memset m;
	int rc = 0;
	kj_store_premem_open(R->db, graph, R->k.pid, R->k.stream_id, R->k.correlation, R->k.unique_id, &st);
	if (!st)
		return 0;
	while (kj_store_premem_next(st, &m)) {
		uint64_t addr = m.address;
		size_t bytes = m.bytes;
		CUdeviceptr dst = region_address(R, addr, bytes);
		if (!dst || !bytes)
			continue; /* not memory this kernel touches */
		struct premem *n = realloc(R->premem, (R->npremem + 1) * sizeof(*n));
		if (!n) {
			rc = KJ_ENOMEM;
			break;
		}
		R->premem = n;
		R->premem[R->npremem++] = (struct premem){dst, m.value, m.element_bytes, bytes};
	}
	kj_store_rows_close(st);
	return rc;
}

int load_premem(struct replay *R)
{
	if (R->k.correlation < 0 || R->k.stream_id < 0)
		return 0;
	/* a launch from a graph (kernels with graph nodes share its correlation): its kernels and
	 * memsets share the graph launch's correlation, so the memsets are those of the same graph
	 * launch that ran on its stream after the kernel before it ended and before it started;
	 * eager: after the previous kernel on the same stream, before this launch (by issue order) */
	return add_premem(R, kj_store_launch_in_graph(R->db, R->k.pid, R->k.correlation));
}

CUresult run_premem(const struct replay *R, CUstream stream)
{
	CUresult e = CUDA_SUCCESS;
	for (size_t i = 0; i < R->npremem && !e; i++) {
		const struct premem *m = &R->premem[i];
		if (m->element_bytes == 4)
			e = cuMemsetD32Async(m->dst, m->value, m->bytes / 4, stream);
		else if (m->element_bytes == 2)
			e = cuMemsetD16Async(m->dst, (unsigned short)m->value, m->bytes / 2, stream);
		else
			e = cuMemsetD8Async(m->dst, (unsigned char)m->value, m->bytes, stream);
	}
	return e;
}
