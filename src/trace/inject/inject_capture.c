/* --capture (KJOULE_CAPTURE): a long program is traced over a few iterations only. Outside the
 * window CUPTI's activity kinds are off (allocations aside), the callbacks keep no per-launch or
 * per-call records, and only each instance of the capture range is written, one small record when
 * it ends (KJ_REC_ITER_MARK). The window opens at the start of instance FIRST of the NVTX range
 * NAME (counted from 0) and closes at the end of instance FIRST+COUNT-1, or spans the first
 * cudaProfilerStart .. cudaProfilerStop; KJ_REC_WINDOW records say when. NVTX ranges are followed
 * through kjoule's own NVTX hooks (inject_nvtx.c), per thread and per domain: an instance is a
 * range named NAME that is not inside another NAME on its stack. */
#define _GNU_SOURCE
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "inject_nvtx.h"
#include "inject_thread.h"
#include "kj_capture_spec.h"

int kj_recording = 1;

static struct kj_capture_spec spec;
static uint32_t name_sid;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t next_instance;
enum { WINDOW_NOT_YET, WINDOW_OPEN, WINDOW_DONE };
static int window = WINDOW_NOT_YET;

/* instances open now, process-wide (the exit handler writes them) */
#define OPEN_MAX 256
static struct {
	int used, captured;
	int64_t instance, start_ns;
	uint32_t tid;
} open_tab[OPEN_MAX];

/* per thread and NVTX domain: the push/pop depth, and where an instance was pushed (-1: none) */
#define STACKS 8
struct dstack {
	const void *domain;
	int depth, inst_depth, slot;
};
static __thread struct dstack *tl_stacks; /* STACKS, on the heap (inject_thread.h) */
static __thread int tl_nstacks;

/* start/end ranges named NAME that are open: their NVTX id -> open_tab slot */
#define SE_MAX 64
static struct {
	uint64_t id;
	int slot;
} se_tab[SE_MAX];
static int profiler_slot = -1; /* the cudaProfilerStart..Stop window open now */

/* registered strings (nvtxDomainRegisterStringA) whose text is NAME */
#define REG_MAX 64
static const void *reg_names[REG_MAX];
static int nreg;

static pthread_once_t parse_once = PTHREAD_ONCE_INIT;
static int parse_failed;
static char parse_why[300];
static int nvtx_ready; /* the NVTX hooks count instances from here on (kj_capture_init) */

static void parse(void)
{
	const char *text = getenv("KJOULE_CAPTURE");
	if (text && *text && kj_capture_parse(text, &spec, parse_why, sizeof(parse_why)) != 0)
		parse_failed = 1;
}

int kj_capture_wants_nvtx(void)
{
	pthread_once(&parse_once, parse);
	return spec.mode == KJ_CAPTURE_NVTX;
}

int kj_capture_nvtx_on(void)
{
	return __atomic_load_n(&nvtx_ready, __ATOMIC_ACQUIRE);
}

int kj_capture_init(void)
{
	pthread_once(&parse_once, parse);
	if (parse_failed) {
		kj_spool_problem("KJOULE_CAPTURE ignored, everything traced: %s", parse_why);
		return 0;
	}
	if (spec.mode == KJ_CAPTURE_NONE)
		return 0;
	name_sid = kj_spool_string(spec.mode == KJ_CAPTURE_NVTX ? spec.name : KJ_CAPTURE_PROFILER_TEXT);
	kj_recording = 0;
	if (spec.mode == KJ_CAPTURE_NVTX)
		__atomic_store_n(&nvtx_ready, 1, __ATOMIC_RELEASE);
	return 1;
}

void kj_put_window(int64_t t, int event, int64_t instance)
{
	struct kj_rec_window r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_WINDOW;
	r.h.size = sizeof(r);
	r.t_ns = t;
	r.event = (uint32_t)event;
	r.instance = (uint32_t)instance;
	r.tid = kj_thread_id();
	kj_spool_write(&r, sizeof(r));
}

static void put_mark(int slot, int64_t end_ns, int captured)
{
	struct kj_rec_iter_mark r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_ITER_MARK;
	r.h.size = sizeof(r);
	r.start_ns = open_tab[slot].start_ns;
	r.end_ns = end_ns;
	r.instance = (uint32_t)open_tab[slot].instance;
	r.tid = open_tab[slot].tid;
	r.name_id = name_sid;
	r.captured = (uint32_t)captured;
	kj_spool_write(&r, sizeof(r));
}

/* Under lock. Activity on, then the per-launch records. */
static void window_open(int64_t t, int64_t instance)
{
	kj_put_window(t, KJ_WINDOW_OPEN, instance);
	kj_activity_window(1);
	kj_callbacks_window(1);
	__atomic_store_n(&kj_recording, 1, __ATOMIC_RELEASE);
	window = WINDOW_OPEN;
}

/* Under lock. The per-launch records stop; the context's work (issued inside the window) is
 * waited for, so its kernels' records are complete before the kinds go off; the flush thread then
 * hands CUPTI's buffers over. The wait runs in relaxed capture mode: a stream being captured on
 * another thread is not disturbed by it. */
static void window_close(int64_t t, int64_t instance)
{
	CUcontext ctx = NULL;
	__atomic_store_n(&kj_recording, 0, __ATOMIC_RELEASE);
	kj_callbacks_window(0);
	if (cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx) {
		CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
		int swapped = cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
		if (cuCtxSynchronize() != CUDA_SUCCESS)
			kj_spool_problem("capture window closed without waiting for the GPU: the last "
					 "iteration's kernels may be missing");
		if (swapped)
			cuThreadExchangeStreamCaptureMode(&mode);
	}
	kj_activity_window(0);
	kj_put_window(t, KJ_WINDOW_CLOSE, instance);
	window = WINDOW_DONE;
	kj_activity_flush_soon();
}

/* A new instance starts at t: counted, the window opened when it is the first captured one.
 * Returns its open_tab slot, or -1 when too many are open (it is counted, not written). */
static int instance_begin(int64_t t, int opens_window)
{
	int slot = -1;
	pthread_mutex_lock(&lock);
	int64_t instance = next_instance++;
	/* CUPTI back one instance ahead of the window (inject_detach.c) */
	if (spec.mode == KJ_CAPTURE_NVTX && window == WINDOW_NOT_YET && instance + 1 >= spec.first)
		kj_detach_reattach(instance);
	if (opens_window && window == WINDOW_NOT_YET && instance == spec.first)
		window_open(t, instance);
	for (int i = 0; i < OPEN_MAX; i++)
		if (!open_tab[i].used) {
			slot = i;
			break;
		}
	if (slot >= 0) {
		open_tab[slot].used = 1;
		open_tab[slot].instance = instance;
		open_tab[slot].start_ns = t;
		open_tab[slot].tid = kj_thread_id();
		open_tab[slot].captured = window == WINDOW_OPEN;
	}
	pthread_mutex_unlock(&lock);
	return slot;
}

/* The instance in slot ended at t: its mark written; the window closed after the last captured
 * instance (closes: NVTX capture) or at once (cuda-profiler-api). */
static void instance_end(int slot, int64_t t, int closes_window)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&lock);
	int64_t instance = open_tab[slot].instance;
	put_mark(slot, t, open_tab[slot].captured && window == WINDOW_OPEN);
	open_tab[slot].used = 0;
	if (window == WINDOW_OPEN &&
	    (closes_window == 2 || (closes_window && instance == spec.first + spec.count - 1)))
		window_close(t, instance);
	else if (spec.mode == KJ_CAPTURE_NVTX && window != WINDOW_OPEN)
		kj_detach_instance_ended(instance, window == WINDOW_DONE || next_instance + 1 < spec.first,
					 window == WINDOW_DONE);
	pthread_mutex_unlock(&lock);
}

int kj_capture_named(const char *s)
{
	return s && s[0] == spec.name[0] && !strcmp(s, spec.name);
}

int kj_capture_attr_named(const nvtxEventAttributes_t *a)
{
	if (!a)
		return 0;
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		return kj_capture_named(a->message.ascii);
	if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
		for (int i = 0; i < __atomic_load_n(&nreg, __ATOMIC_ACQUIRE); i++)
			if (reg_names[i] == (const void *)a->message.registered)
				return 1;
	return 0;
}

static struct dstack *stack_of(const void *domain)
{
	if (!tl_stacks) /* first use, or the thread's exit freed them */
		tl_nstacks = 0;
	if (!kj_thread_array((void **)&tl_stacks, STACKS * sizeof(*tl_stacks)))
		return NULL;
	for (int i = 0; i < tl_nstacks; i++)
		if (tl_stacks[i].domain == domain)
			return &tl_stacks[i];
	if (tl_nstacks == STACKS)
		return NULL;
	struct dstack *s = &tl_stacks[tl_nstacks++];
	s->domain = domain;
	s->depth = 0;
	s->inst_depth = -1;
	s->slot = -1;
	return s;
}

void kj_capture_push(const void *domain, int named)
{
	struct dstack *s = stack_of(domain);
	if (!s)
		return;
	if (named && s->inst_depth < 0) {
		s->slot = instance_begin(kj_now_ns(), 1);
		s->inst_depth = s->depth;
	}
	s->depth++;
}

void kj_capture_pop(const void *domain)
{
	struct dstack *s = stack_of(domain);
	if (!s || s->depth == 0)
		return;
	s->depth--;
	if (s->depth == s->inst_depth) {
		instance_end(s->slot, kj_now_ns(), 1);
		s->inst_depth = -1;
		s->slot = -1;
	}
}

int kj_capture_range_open(void)
{
	return instance_begin(kj_now_ns(), 1);
}

void kj_capture_range_tie(int slot, uint64_t id)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < SE_MAX; i++)
		if (!se_tab[i].id) {
			se_tab[i].id = id ? id : UINT64_MAX;
			se_tab[i].slot = slot;
			break;
		}
	pthread_mutex_unlock(&lock);
}

void kj_capture_range_end(uint64_t id)
{
	int slot = -1;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < SE_MAX; i++)
		if (se_tab[i].id && (se_tab[i].id == id || se_tab[i].id == UINT64_MAX)) {
			slot = se_tab[i].slot;
			se_tab[i].id = 0;
			break;
		}
	pthread_mutex_unlock(&lock);
	instance_end(slot, kj_now_ns(), 1);
}

void kj_capture_string_registered(const void *handle)
{
	pthread_mutex_lock(&lock);
	if (nreg < REG_MAX) {
		reg_names[nreg] = handle;
		__atomic_store_n(&nreg, nreg + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
}

KJ_HOT int kj_capture_profiler_call(CUpti_CallbackDomain domain, CUpti_CallbackId id,
				    const CUpti_CallbackData *cb)
{
	int start, stop;
	if (spec.mode != KJ_CAPTURE_PROFILER || cb->callbackSite != CUPTI_API_ENTER)
		return 0;
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
		start = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
		stop = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
	} else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		start = id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
		stop = id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
	} else {
		return 0;
	}
	if (!start && !stop)
		return 0;
	/* the runtime's call reaches the driver's too: a second start or stop is the same one */
	if (start) {
		pthread_mutex_lock(&lock);
		int open = profiler_slot >= 0;
		pthread_mutex_unlock(&lock);
		if (!open) {
			int slot = instance_begin(kj_now_ns(), 1);
			pthread_mutex_lock(&lock);
			profiler_slot = slot < 0 ? OPEN_MAX : slot;
			pthread_mutex_unlock(&lock);
		}
	} else {
		pthread_mutex_lock(&lock);
		int slot = profiler_slot;
		profiler_slot = -1;
		pthread_mutex_unlock(&lock);
		if (slot >= 0 && slot < OPEN_MAX)
			instance_end(slot, kj_now_ns(), 2);
	}
	return 1;
}

void kj_capture_subscribe(CUpti_SubscriberHandle sub)
{
	if (spec.mode != KJ_CAPTURE_PROFILER)
		return; /* NVTX ranges: kjoule's NVTX hooks (inject_nvtx.c), not CUPTI's NVTX callbacks */
	cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
	cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
	cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
	cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
}

void kj_capture_at_exit(void)
{
	if (spec.mode == KJ_CAPTURE_NONE)
		return;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < OPEN_MAX; i++)
		if (open_tab[i].used) {
			put_mark(i, 0, open_tab[i].captured && window == WINDOW_OPEN);
			open_tab[i].used = 0;
		}
	if (window == WINDOW_OPEN) {
		kj_put_window(kj_now_ns(), KJ_WINDOW_AT_EXIT, next_instance ? next_instance - 1 : 0);
		window = WINDOW_DONE; /* the final flush keeps what the window recorded */
	}
	pthread_mutex_unlock(&lock);
}
