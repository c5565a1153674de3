#define _GNU_SOURCE
/* --api: every driver and runtime API call as one record (start, end, thread, status, its main
 * argument), from our own callbacks, which cost less than CUPTI's API activity records. */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"

/* ---- every API call, with --api: our own callbacks cost less than CUPTI's API activity ---- */

/* The query functions --api leaves out (--api=all keeps them): device, context, attribute,
 * error-state and capture-state getters that frameworks and the runtime call around every
 * operation. docs/tracing.md lists them. */
int kj_api_is_query(int runtime, uint32_t id)
{
	static const uint32_t driver[] = {
		CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2,
		CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
		CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, CUPTI_DRIVER_TRACE_CBID_cuFuncGetName,
		CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
		CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute,
		CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuDeviceGet,
		CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
		CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel, CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
		CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
		CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_ptsz,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2_ptsz,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3,
		CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3_ptsz, CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion,
		CUPTI_DRIVER_TRACE_CBID_cuGetErrorString, CUPTI_DRIVER_TRACE_CBID_cuGetErrorName,
	};
	static const uint32_t rt[] = {
		CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
		CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v10010,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_ptsz_v11030,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030,
		CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v12030,
		CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
		CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050,
	};
	const uint32_t *v = runtime ? rt : driver;
	size_t n = runtime ? sizeof(rt) / sizeof(rt[0]) : sizeof(driver) / sizeof(driver[0]);
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return 1;
	return 0;
}
#define API_DEPTH 16
static __thread int64_t tl_api_start[API_DEPTH];
static __thread int tl_api_depth;

static uint32_t api_name_id(int runtime, uint32_t cbid)
{
	static uint32_t ids[2][2048];
	const char *name = NULL;
	if (cbid >= 2048)
		return kj_spool_string("?");
	if (!ids[runtime][cbid]) {
		cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
				     cbid, &name);
		ids[runtime][cbid] = kj_spool_string(name ? name : "?");
	}
	return ids[runtime][cbid];
}

/* The main argument of the calls the API story asks about: bytes of copies, sets and
 * allocations, and the stream of synchronisations and asynchronous copies. */
static void api_args(CUpti_CallbackId id, const CUpti_CallbackData *cb, struct kj_rec_api *r)
{
	CUstream stream = NULL;
	int have_stream = 0;
	switch (id) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
		r->bytes = (int64_t)((const cudaMemcpy_v3020_params *)cb->functionParams)->count;
		break;
	case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: {
		const cudaMemcpyAsync_v3020_params *p = cb->functionParams;
		r->bytes = (int64_t)p->count;
		stream = (CUstream)p->stream;
		have_stream = 1;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: {
		const cudaMemsetAsync_v3020_params *p = cb->functionParams;
		r->bytes = (int64_t)p->count;
		stream = (CUstream)p->stream;
		have_stream = 1;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
		r->bytes = (int64_t)((const cudaMalloc_v3020_params *)cb->functionParams)->size;
		break;
	case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
		r->bytes = (int64_t)((const cudaMallocHost_v3020_params *)cb->functionParams)->size;
		break;
	case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020: {
		const cudaMallocAsync_v11020_params *p = cb->functionParams;
		r->bytes = (int64_t)p->size;
		stream = (CUstream)p->hStream;
		have_stream = 1;
		break;
	}
	case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
		stream = (CUstream)((const cudaStreamSynchronize_v3020_params *)cb->functionParams)->stream;
		have_stream = 1;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
		r->bytes = (int64_t)((const cuMemAlloc_v2_params *)cb->functionParams)->bytesize;
		break;
	default:
		break;
	}
	if (have_stream) {
		uint32_t sid = 0;
		if (cuptiGetStreamIdEx(cb->context, stream, 0, &sid) == CUPTI_SUCCESS)
			r->stream = sid;
	}
}

void kj_api_record(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData *cb)
{
	if (kj_cfg.api & KJ_API_NO_RECORDS)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (tl_api_depth < API_DEPTH)
			tl_api_start[tl_api_depth] = kj_now_ns();
		tl_api_depth++;
		return;
	}
	if (tl_api_depth <= 0)
		return;
	tl_api_depth--;
	if (tl_api_depth >= API_DEPTH)
		return;
	struct kj_rec_api r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_API;
	r.h.size = sizeof(r);
	r.start_ns = tl_api_start[tl_api_depth];
	r.end_ns = kj_now_ns();
	r.domain = domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 2;
	r.cbid = id;
	r.tid = kj_thread_id();
	r.correlation = cb->correlationId;
	if (cb->functionReturnValue)
		r.status = r.domain == 1 ? (uint32_t)*(const CUresult *)cb->functionReturnValue
					 : (uint32_t)*(const cudaError_t *)cb->functionReturnValue;
	r.name_id = api_name_id(r.domain == 2, id);
	r.bytes = -1;
	r.stream = -1;
	api_args(id, cb, &r);
	kj_spool_write(&r, sizeof(r));
}
