#define _GNU_SOURCE
/* Copy calls: where each device side of a cuMemcpy* lay, and the bytes a small host-to-device
 * copy carried. CUPTI's memcpy activity has neither. A replayed iteration needs both: a decode
 * loop copies its positions and token ids from the host before each step, and a kernel that
 * indexes with them faults on stand-in data. */
#include <cupti.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

/* enum kj_copy_direction of a driver callback id, or COPY_UNIFIED (cuMemcpy/cuMemcpyAsync: the
 * pointers say which side is which); 0 when not followed (2D/3D, arrays, peers). */
enum { COPY_UNIFIED = 4 };
static uint8_t *dir_of;
static uint32_t dir_count;
static int64_t data_used; /* bytes of copy data written so far (atomic) */

static int dir_from_name(const char *name)
{
	static const struct {
		const char *prefix;
		int dir;
	} forms[] = {
		{"cuMemcpyHtoD", KJ_COPY_HTOD}, {"cuMemcpyDtoH", KJ_COPY_DTOH},
		{"cuMemcpyDtoD", KJ_COPY_DTOD}, {"cuMemcpyAsync", COPY_UNIFIED},
	};
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (!strncmp(name, forms[i].prefix, strlen(forms[i].prefix)))
			return forms[i].dir;
	/* cuMemcpy, cuMemcpy_ptds: unified; cuMemcpy2D*, cuMemcpy3D*, cuMemcpyPeer*, cuMemcpyAtoH ... not */
	if (!strcmp(name, "cuMemcpy") || !strcmp(name, "cuMemcpy_ptds"))
		return COPY_UNIFIED;
	return 0;
}

int kj_copy_init(void)
{
	if (dir_of)
		return 0;
	dir_count = CUPTI_DRIVER_TRACE_CBID_SIZE;
	dir_of = kj_driver_cbid_table(dir_from_name);
	return dir_of ? 0 : -1;
}

/* 1 when p is device (or managed) memory; 0 for host memory, pinned or pageable (the driver
 * does not know a pageable pointer: the query fails). */
static int is_device_pointer(CUdeviceptr p)
{
	unsigned int type = 0;
	if (cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS)
		return 0;
	return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED;
}

/* Every followed form starts with (dst, src, ByteCount): HtoD (CUdeviceptr, const void *),
 * DtoH (void *, CUdeviceptr), DtoD and the unified forms (CUdeviceptr, CUdeviceptr). */
struct copy_head {
	uint64_t dst, src;
	size_t bytes;
};

/* May the bytes of this host-to-device copy be kept? Counts them against the run's budget. */
static int take_data(size_t bytes)
{
	if (!kj_cfg.copy_data_bytes || bytes == 0 || (int64_t)bytes > kj_cfg.copy_data_bytes)
		return 0;
	int64_t before = __atomic_fetch_add(&data_used, (int64_t)bytes, __ATOMIC_RELAXED);
	if (before + (int64_t)bytes <= kj_cfg.copy_data_total)
		return 1;
	kj_spool_problem("host-to-device copy data: no more kept after %lld MiB (KJOULE_COPY_DATA_MB); "
			 "later iterations replay such copies with stand-in bytes",
			 (long long)(kj_cfg.copy_data_total >> 20));
	return 0;
}

void kj_copy_handle(uint32_t cbid, const CUpti_CallbackData *cb)
{
	int dir = dir_of && cbid < dir_count ? dir_of[cbid] : 0;
	/* --no-params: nothing to replay later, so nothing followed (the cheapest trace) */
	if (!dir || !kj_cfg.params_k || cb->callbackSite != CUPTI_API_EXIT || !cb->functionParams)
		return;
	/* only a call that succeeded: its pointers were valid, and the host buffer is as the GPU got
	 * it (a synchronous copy is done; an asynchronous one returned on the program's thread) */
	if (!cb->functionReturnValue || *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return;
	const struct copy_head *p = cb->functionParams;
	struct kj_rec_copy_args r;
	memset(&r, 0, sizeof(r));
	r.dst = p->dst;
	r.src = p->src;
	r.bytes = p->bytes;
	if (dir == COPY_UNIFIED) {
		int d = is_device_pointer((CUdeviceptr)p->dst), s = is_device_pointer((CUdeviceptr)p->src);
		if (!d && !s)
			return; /* host to host */
		dir = d && s ? KJ_COPY_DTOD : d ? KJ_COPY_HTOD : KJ_COPY_DTOH;
	}
	if (dir == KJ_COPY_HTOD)
		r.src = 0;
	else if (dir == KJ_COPY_DTOH)
		r.dst = 0;
	r.h.type = KJ_REC_COPY_ARGS;
	r.correlation = cb->correlationId;
	r.direction = (uint32_t)dir;
	if (dir == KJ_COPY_HTOD && p->src && take_data(p->bytes)) {
		r.data_bytes = (uint32_t)p->bytes;
		kj_spool_write2(&r, sizeof(r), (const void *)(uintptr_t)p->src, p->bytes);
		return;
	}
	r.h.size = sizeof(r);
	kj_spool_write(&r, sizeof(r));
}
