/* GPU test helper: runs the kernels of replay_kernels.cubin with the CUDA driver API and writes
 * a run database with the rows the tracer writes for them (device, module, module_function,
 * kernel_name, unique_kernel, launch_params with the cuFuncGetParamInfo layout, allocation,
 * kernel, snapshot), so that `kjoule replay` can be tested without the tracer.
 * Also records a kernel that faults, one whose module data is stripped and one no module defines.
 * usage: kj_replay_record OUT.kjdb KERNELS.cubin     exit 77: no GPU. */
#include <cuda.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "kj_db.h"
#ifdef KJ_WITH_CUPTI
#include <cupti.h>

/* Kernel durations as the tracer takes them: CUPTI concurrent-kernel activity records. */
static int64_t cupti_dur[4096];
static size_t cupti_n;

static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *max)
{
	*size = 1u << 20;
	*b = aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;
	(void)c;
	(void)s;
	(void)size;
	while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && cupti_n < 4096)
			cupti_dur[cupti_n++] = (int64_t)(((CUpti_ActivityKernel10 *)r)->end -
							 ((CUpti_ActivityKernel10 *)r)->start);
	free(b);
}
#endif

#define CK(call)                                                                          \
	do {                                                                              \
		CUresult e_ = (call);                                                     \
		if (e_ != CUDA_SUCCESS) {                                                 \
			const char *n_ = NULL;                                            \
			cuGetErrorName(e_, &n_);                                          \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, n_); \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

static sqlite3 *db;
static CUmodule mod;
static CUstream stream;
static int64_t pid;
static int64_t next_unique = 1, next_name = 1;
static const char *module_hash;

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void sql(const char *s)
{
	char *msg = NULL;
	if (sqlite3_exec(db, s, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "sql: %s: %s\n", s, msg);
		exit(1);
	}
}

static sqlite3_stmt *prep(const char *s)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, s, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "sql: %s: %s\n", s, sqlite3_errmsg(db));
		exit(1);
	}
	return st;
}

static void step_done(sqlite3_stmt *st)
{
	if (sqlite3_step(st) != SQLITE_DONE) {
		fprintf(stderr, "sql step: %s\n", sqlite3_errmsg(db));
		exit(1);
	}
	sqlite3_finalize(st);
}

static void fill_host(float *h, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		h[i] = 0.5f + (float)(seed >> 8) / (float)(1u << 24);
	}
}

/* A device buffer with deterministic data, recorded in the allocation table (and, with snap,
 * its contents in the snapshot table). */
static CUdeviceptr alloc_rec(size_t bytes, int async, int snap, unsigned seed)
{
	CUdeviceptr p;
	float *h = malloc(bytes);
	if (async)
		CK(cuMemAllocAsync(&p, bytes, stream));
	else
		CK(cuMemAlloc(&p, bytes));
	fill_host(h, bytes / 4, seed);
	CK(cuMemcpyHtoDAsync(p, h, bytes, stream));
	CK(cuStreamSynchronize(stream));
	sqlite3_stmt *st = prep("INSERT INTO allocation(pid, device_id, address, bytes, kind, alloc_ns,"
				" stream_id) VALUES(?, 1, ?, ?, ?, ?, 1)");
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, (int64_t)p);
	sqlite3_bind_int64(st, 3, (int64_t)bytes);
	sqlite3_bind_text(st, 4, async ? "async" : "device", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, now_ns());
	step_done(st);
	if (snap) {
		st = prep("INSERT INTO snapshot(pid, address, bytes, codec, data) VALUES(?, ?, ?, 'none', ?)");
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, (int64_t)p);
		sqlite3_bind_int64(st, 3, (int64_t)bytes);
		sqlite3_bind_blob(st, 4, h, (int)bytes, SQLITE_TRANSIENT);
		step_done(st);
	}
	free(h);
	return p;
}

static int64_t name_row(const char *mangled)
{
	sqlite3_stmt *st = prep("INSERT INTO kernel_name(id, mangled, demangled) VALUES(?, ?, ?)");
	int64_t id = next_name++;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, mangled, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, mangled, -1, SQLITE_STATIC);
	step_done(st);
	return id;
}

/* Record (and, with reps > 0, run reps times with event timing) one unique kernel launch.
 * fn NULL: not launched (a kernel that faults, or one absent from every module); its layout is
 * then given. args: the kernel's parameters as for cuLaunchKernel. */
static void record(const char *mangled, CUfunction fn, const char *layout_given, unsigned gx,
		   unsigned gy, unsigned bx, unsigned cluster, unsigned shmem, void **args, int reps)
{
	char layout[512] = "";
	uint8_t blob[4096];
	size_t blob_len = 0, len = 0;
	int64_t uid = next_unique++, nid = name_row(mangled);

	memset(blob, 0, sizeof(blob));
	if (fn) {
		for (size_t i = 0;; i++) {
			size_t off, size;
			if (cuFuncGetParamInfo(fn, i, &off, &size) != CUDA_SUCCESS)
				break;
			len += (size_t)snprintf(layout + len, sizeof(layout) - len, "%s%zu:%zu", i ? "," : "",
						off, size);
			memcpy(blob + off, args[i], size);
			if (off + size > blob_len)
				blob_len = off + size;
		}
	} else {
		/* given as "off:size,..." with args in order */
		snprintf(layout, sizeof(layout), "%s", layout_given);
		const char *s = layout_given;
		for (size_t i = 0; *s; i++) {
			unsigned off, size;
			int used = 0;
			if (sscanf(s, "%u:%u%n", &off, &size, &used) != 2)
				break;
			memcpy(blob + off, args[i], size);
			if (off + size > blob_len)
				blob_len = off + size;
			s += used;
			if (*s == ',')
				s++;
		}
	}
	sqlite3_stmt *st = prep("INSERT INTO unique_kernel(id, key, name_id, grid_x, grid_y, grid_z,"
				" block_x, block_y, block_z, cluster_x, cluster_y, cluster_z, shmem_dynamic,"
				" param_bytes, param_layout, tier, launches) VALUES(?1, ?2, ?3, ?4, ?5, 1, ?6, 1,"
				" 1, ?7, 1, 1, ?8, ?9, ?10, 'A', ?11)");
	sqlite3_bind_int64(st, 1, uid);
	sqlite3_bind_text(st, 2, mangled, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, nid);
	sqlite3_bind_int(st, 4, (int)gx);
	sqlite3_bind_int(st, 5, (int)gy);
	sqlite3_bind_int(st, 6, (int)bx);
	sqlite3_bind_int(st, 7, (int)cluster);
	sqlite3_bind_int(st, 8, (int)shmem);
	sqlite3_bind_int64(st, 9, (int64_t)blob_len);
	sqlite3_bind_text(st, 10, layout, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 11, reps > 0 ? reps : 1);
	step_done(st);

	st = prep("INSERT INTO launch_params(unique_id, pid, correlation_id, ordinal, handle_kind,"
		  " grid_x, grid_y, grid_z, block_x, block_y, block_z, cluster_x, cluster_y, cluster_z,"
		  " shmem_dynamic, stream_id, launch_ns, layout, params) VALUES(?1, ?2, ?1, 0, 'function',"
		  " ?3, ?4, 1, ?5, 1, 1, ?6, 1, 1, ?7, 1, ?8, ?9, ?10)");
	sqlite3_bind_int64(st, 1, uid);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int(st, 3, (int)gx);
	sqlite3_bind_int(st, 4, (int)gy);
	sqlite3_bind_int(st, 5, (int)bx);
	sqlite3_bind_int(st, 6, (int)cluster);
	sqlite3_bind_int(st, 7, (int)shmem);
	sqlite3_bind_int64(st, 8, now_ns());
	sqlite3_bind_text(st, 9, layout, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 10, blob, (int)blob_len, SQLITE_TRANSIENT);
	step_done(st);
	if (!fn || reps <= 0)
		return;

	CUlaunchConfig cfg;
	CUlaunchAttribute attr;
	memset(&cfg, 0, sizeof(cfg));
	memset(&attr, 0, sizeof(attr));
	cfg.gridDimX = gx;
	cfg.gridDimY = gy;
	cfg.gridDimZ = 1;
	cfg.blockDimX = bx;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.sharedMemBytes = shmem;
	cfg.hStream = stream;
	if (cluster > 1) {
		attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr.value.clusterDim.x = cluster;
		attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
		cfg.attrs = &attr;
		cfg.numAttrs = 1;
	}
	if (shmem > 48 * 1024)
		CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shmem));
	int64_t t = now_ns();
#ifdef KJ_WITH_CUPTI
	/* a few launches first, as a workload's steady state has seen them */
	for (int r = 0; r < 3; r++)
		CK(cuLaunchKernelEx(&cfg, fn, args, NULL));
	CK(cuStreamSynchronize(stream));
	cupti_n = 0;
	int use_cupti = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
	if (use_cupti) {
		for (int r = 0; r < reps; r++)
			CK(cuLaunchKernelEx(&cfg, fn, args, NULL));
		CK(cuStreamSynchronize(stream));
		cuptiActivityFlushAll(1);
		cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	}
#else
	int use_cupti = 0;
	(void)use_cupti;
#endif
	for (int r = 0; r < reps; r++) {
		CUevent a, b;
		float ms;
		int64_t d;
		CK(cuEventCreate(&a, 0));
		CK(cuEventCreate(&b, 0));
#ifdef KJ_WITH_CUPTI
		if (use_cupti) {
			d = (size_t)r < cupti_n ? cupti_dur[r] : 0;
		} else
#endif
		{
			CK(cuEventRecord(a, stream));
			CK(cuLaunchKernelEx(&cfg, fn, args, NULL));
			CK(cuEventRecord(b, stream));
			CK(cuEventSynchronize(b));
			CK(cuEventElapsedTime(&ms, a, b));
			d = (int64_t)(ms * 1e6);
		}
		st = prep("INSERT INTO kernel(pid, device_id, stream_id, correlation_id, start_ns, end_ns,"
			  " name_id, unique_id, grid_x, grid_y, grid_z, block_x, block_y, block_z)"
			  " VALUES(?1, 1, 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9, 1, 1)");
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, uid * 1000 + r);
		sqlite3_bind_int64(st, 3, t);
		sqlite3_bind_int64(st, 4, t + d);
		sqlite3_bind_int64(st, 5, nid);
		sqlite3_bind_int64(st, 6, uid);
		sqlite3_bind_int(st, 7, (int)gx);
		sqlite3_bind_int(st, 8, (int)gy);
		sqlite3_bind_int(st, 9, (int)bx);
		step_done(st);
		t += d + 1000;
		cuEventDestroy(a);
		cuEventDestroy(b);
	}
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc(*len);
	if (fread(p, 1, *len, f) != *len)
		exit(1);
	fclose(f);
	return p;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	int count = 0, maj, min;
	char name[128];
	size_t img_len;
	static char hash[32];

	if (argc != 3) {
		fprintf(stderr, "usage: kj_replay_record OUT.kjdb KERNELS.cubin\n");
		return 2;
	}
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
		fprintf(stderr, "no GPU: skipped\n");
		return 77;
	}
	pid = getpid();
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
#ifdef KJ_WITH_CUPTI
	if (cuptiActivityRegisterCallbacks(buf_req, buf_done) != CUPTI_SUCCESS)
		fprintf(stderr, "CUPTI unavailable: traced times from CUDA events\n");
#endif
	CK(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	CK(cuDeviceGetName(name, sizeof(name), dev));
	unlink(argv[1]);
	if (kj_db_create(argv[1], &db))
		return 1;
	void *img = read_file(argv[2], &img_len);
	CK(cuModuleLoadData(&mod, img));
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < img_len; i++)
		h = (h ^ ((const uint8_t *)img)[i]) * 1099511628211ull;
	snprintf(hash, sizeof(hash), "%016" PRIx64, h);
	module_hash = hash;

	sql("BEGIN");
	sqlite3_stmt *st = prep("INSERT INTO device(id, uuid, name, cc_major, cc_minor) VALUES(1, 'GPU-test', ?, ?, ?)");
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, maj);
	sqlite3_bind_int(st, 3, min);
	step_done(st);
	st = prep("INSERT INTO process(pid, exe) VALUES(?, 'kj_replay_record')");
	sqlite3_bind_int64(st, 1, pid);
	step_done(st);
	st = prep("INSERT INTO process_device(pid, ordinal, device_id) VALUES(?, 0, 1)");
	sqlite3_bind_int64(st, 1, pid);
	step_done(st);
	/* the module, zstd-compressed, and its functions (as the tracer reads them from the ELF) */
	size_t cap = ZSTD_compressBound(img_len);
	void *z = malloc(cap);
	size_t zl = ZSTD_compress(z, cap, img, img_len, 3);
	st = prep("INSERT INTO module(hash, format, bytes, codec, data) VALUES(?, 'cubin', ?, 'zstd', ?)");
	sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)img_len);
	sqlite3_bind_blob(st, 3, z, (int)zl, SQLITE_TRANSIENT);
	step_done(st);
	unsigned nf = 0;
	CK(cuModuleGetFunctionCount(&nf, mod));
	CUfunction *fns = calloc(nf, sizeof(*fns));
	CK(cuModuleEnumerateFunctions(fns, nf, mod));
	const char *templ = NULL;
	for (unsigned i = 0; i < nf; i++) {
		const char *fname = NULL;
		CK(cuFuncGetName(&fname, fns[i]));
		st = prep("INSERT INTO module_function(hash, mangled) VALUES(?, ?)");
		sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, fname, -1, SQLITE_TRANSIENT);
		step_done(st);
		if (strstr(fname, "kj_templ"))
			templ = strdup(fname);
	}
	/* a stripped module */
	sql("INSERT INTO module(hash, format, bytes, codec, data) VALUES('5771bbed00000000', 'cubin', 1000, 'zstd', NULL)");
	sql("INSERT INTO module_function(hash, mangled) VALUES('5771bbed00000000', 'kj_stripped_kernel')");

	const int n = 1 << 20;
	CUfunction f;
	/* 1. pointers inside a by-value struct */
	struct {
		CUdeviceptr x, y, out;
		int n;
		float alpha;
	} ax = {alloc_rec(n * 4, 0, 1, 1), alloc_rec(n * 4, 0, 1, 2), alloc_rec(n * 4, 0, 0, 3), n, 1.5f};
	void *a1[] = {&ax};
	CK(cuModuleGetFunction(&f, mod, "kj_axpy_struct"));
	record("kj_axpy_struct", f, NULL, n / 256, 1, 256, 0, 0, a1, 20);
	/* 2. TensorIterator-like struct after an int, pointer array inside */
	struct {
		int ndim, pad;
		long long sizes[2];
		CUdeviceptr data[3];
	} it = {2, 0, {1024, 1024}, {alloc_rec(n * 4, 0, 0, 4), alloc_rec(n * 4, 0, 0, 5), alloc_rec(n * 4, 0, 0, 6)}};
	int flag = 3;
	float beta = 0.25f;
	void *a2[] = {&flag, &it, &beta};
	CK(cuModuleGetFunction(&f, mod, "kj_iter_add"));
	record("kj_iter_add", f, NULL, 1024, 1, 256, 0, 0, a2, 20);
	/* 3. cluster launch */
	CUdeviceptr cin = alloc_rec(n * 4, 0, 0, 7), cout = alloc_rec(n * 4, 0, 0, 8);
	void *a3[] = {&cin, &cout, (void *)&n};
	CK(cuModuleGetFunction(&f, mod, "kj_cluster_scale"));
	record("kj_cluster_scale", f, NULL, n / 256, 1, 256, 2, 0, a3, 20);
	/* 4. 64 KB dynamic shared memory; small buffers share one 2 MB granule */
	CUdeviceptr sin = alloc_rec(64 << 10, 0, 0, 9), sout = alloc_rec(64 << 10, 0, 0, 10);
	int sn = 16384;
	void *a4[] = {&sin, &sout, &sn};
	CK(cuModuleGetFunction(&f, mod, "kj_big_smem"));
	record("kj_big_smem", f, NULL, sn / 256, 1, 256, 0, 64 << 10, a4, 20);
	/* 5. stream-ordered allocation */
	CUdeviceptr abuf = alloc_rec(n * 4, 1, 0, 11);
	float s = 0.999f;
	void *a5[] = {&abuf, (void *)&n, &s};
	CK(cuModuleGetFunction(&f, mod, "kj_async_scale"));
	record("kj_async_scale", f, NULL, n / 256, 1, 256, 0, 0, a5, 20);
	/* 6. C++-mangled template */
	if (templ) {
		CUdeviceptr tb = alloc_rec(n * 4, 0, 0, 12);
		void *a6[] = {&tb, (void *)&n};
		CK(cuModuleGetFunction(&f, mod, templ));
		record(templ, f, NULL, n / 256, 1, 256, 0, 0, a6, 20);
	}
	/* 7. TMA descriptor: a 2048 x 512 fp32 tensor, 32 x 32 tiles */
	{
		const int W = 2048, H = 512;
		CUdeviceptr src = alloc_rec((size_t)W * H * 4, 0, 0, 13), dst = alloc_rec((size_t)W * H * 4, 0, 0, 14);
		CUtensorMap tm;
		cuuint64_t dims[2] = {(cuuint64_t)W, (cuuint64_t)H};
		cuuint64_t strides[1] = {(cuuint64_t)W * 4};
		cuuint32_t box[2] = {32, 32}, es[2] = {1, 1};
		CK(cuTensorMapEncodeTiled(&tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)src, dims, strides,
					  box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
					  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
		int w = W;
		void *a7[] = {&tm, &dst, &w};
		CK(cuModuleGetFunction(&f, mod, "kj_tma_copy"));
		record("kj_tma_copy", f, NULL, W / 32, H / 32, 128, 0, 0, a7, 20);
	}
	/* 8. a kernel that faults (recorded, not run here): a pointer to no allocation */
	{
		uint64_t bad = 0x10;
		void *a8[] = {&bad};
		record("kj_fault", NULL, "0:8", 1, 1, 32, 0, 0, a8, 0);
	}
	/* 9. stripped module; 10. function no module defines */
	{
		uint64_t p = ax.x;
		void *a9[] = {&p};
		record("kj_stripped_kernel", NULL, "0:8", 1, 1, 32, 0, 0, a9, 0);
		record("kj_missing_kernel", NULL, "0:8", 1, 1, 32, 0, 0, a9, 0);
	}
	/* 11. one captured iteration on two streams with event dependencies, copies and a memset */
	{
		char q[2048];
		snprintf(q, sizeof(q),
			 "INSERT INTO memcpy(pid, stream_id, correlation_id, bytes, kind, src_kind, dst_kind)"
			 " VALUES(%1$" PRId64 ", 1, 9001, 4194304, 'HtoD', 'pageable', 'device'),"
			 " (%1$" PRId64 ", 1, 9002, 4194304, 'DtoH', 'device', 'pinned');"
			 "INSERT INTO sequence_op(iteration, ordinal, pid, stream_id, op, correlation_id,"
			 " event_id, launch_params_id, bytes, kind) VALUES"
			 " (0, 0, %1$" PRId64 ", 1, 'memcpy', 9001, NULL, NULL, 4194304, 'HtoD'),"
			 " (0, 1, %1$" PRId64 ", 1, 'kernel', 1000, NULL, (SELECT id FROM launch_params WHERE unique_id = 1), NULL, NULL),"
			 " (0, 2, %1$" PRId64 ", 1, 'event_record', NULL, 1, NULL, NULL, NULL),"
			 " (0, 3, %1$" PRId64 ", 2, 'event_wait', NULL, 1, NULL, NULL, NULL),"
			 " (0, 4, %1$" PRId64 ", 2, 'kernel', 2000, NULL, (SELECT id FROM launch_params WHERE unique_id = 2), NULL, NULL),"
			 " (0, 5, %1$" PRId64 ", 1, 'kernel', 3000, NULL, (SELECT id FROM launch_params WHERE unique_id = 3), NULL, NULL),"
			 " (0, 6, %1$" PRId64 ", 2, 'memset', NULL, NULL, NULL, 1048576, NULL),"
			 " (0, 7, %1$" PRId64 ", 2, 'event_record', NULL, 2, NULL, NULL, NULL),"
			 " (0, 8, %1$" PRId64 ", 1, 'event_wait', NULL, 2, NULL, NULL, NULL),"
			 " (0, 9, %1$" PRId64 ", 1, 'kernel', 7000, NULL, (SELECT id FROM launch_params WHERE unique_id = 7), NULL, NULL),"
			 " (0, 10, %1$" PRId64 ", 1, 'kernel', 4000, NULL, (SELECT id FROM launch_params WHERE unique_id = 4), NULL, NULL),"
			 " (0, 11, %1$" PRId64 ", 1, 'memcpy', 9002, NULL, NULL, 4194304, 'DtoH');",
			 pid);
		sql(q);
	}
	sql("COMMIT");
	CK(cuCtxSynchronize());
	kj_db_close(db);
	printf("recorded %" PRId64 " unique kernels into %s (%s, sm_%d%d)\n", next_unique - 1, argv[1],
	       name, maj, min);
	return 0;
}
