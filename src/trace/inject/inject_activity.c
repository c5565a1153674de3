/* CUPTI activity buffers: hands CUPTI empty buffers and turns completed ones into spool
 * records, on CUPTI's own thread and on a flush thread of its own. Only buffer_requested runs on
 * the traced program's threads (CUPTI's buffers are per thread). */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inject.h"
#include "inject_cupti_study.h"
#include "inject_signal.h"

#define ACT_BUF (8u << 20)
#define FLUSH_MS 200 /* default; KJOULE_FLUSH_MS (50..5000) sets another */

static int flush_ms(void)
{
	const char *e = getenv("KJOULE_FLUSH_MS");
	long v = e ? strtol(e, NULL, 10) : FLUSH_MS;
	return v >= 50 && v <= 5000 ? (int)v : FLUSH_MS;
}

/* The flush thread and the final forced flush take turns under flush_lock; after the final one
 * the thread calls CUPTI no more. */
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t flusher;
static int flush_stopped;
static int cupti_out; /* --capture: CUPTI detached (inject_detach.c); under flush_lock */
static int flusher_started;
/* kj_activity_flush_soon wakes the flush thread before its period is up */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int wake_now;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, ACT_BUF);
	*size = *buffer ? ACT_BUF : 0;
	*max_records = 0;
}

static void put_kernel(const CUpti_ActivityKernel10 *k)
{
	struct kj_rec_kernel r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_KERNEL;
	r.h.size = sizeof(r);
	r.start_ns = (int64_t)k->start;
	r.end_ns = (int64_t)k->end;
	r.graph_node_id = k->graphNodeId;
	r.graph_id = k->graphId;
	r.device = k->deviceId;
	r.context = k->contextId;
	r.stream = k->streamId;
	r.correlation = k->correlationId;
	r.name_id = kj_spool_string(k->name);
	r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
	r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
	r.cluster[0] = k->clusterX, r.cluster[1] = k->clusterY, r.cluster[2] = k->clusterZ;
	r.shmem_static = k->staticSharedMemory;
	r.shmem_dynamic = k->dynamicSharedMemory;
	r.registers = k->registersPerThread;
	r.shmem_executed = k->sharedMemoryExecuted;
	r.carveout = k->isSharedMemoryCarveoutRequested ? k->sharedMemoryCarveoutRequested : KJ_CARVEOUT_NONE;
	r.launch_type = k->launchType;
	kj_spool_write(&r, sizeof(r));
}

/* Copies and memsets share one record; fill what they have in common. */
static void put_copy(int type, int64_t start, int64_t end, uint64_t bytes, uint64_t node,
		     uint32_t dev, uint32_t ctx, uint32_t stream, uint32_t corr, struct kj_rec_memcpy *r)
{
	r->h.type = (uint32_t)type;
	r->h.size = sizeof(*r);
	r->start_ns = start;
	r->end_ns = end;
	r->bytes = bytes;
	r->graph_node_id = node;
	r->device = dev;
	r->context = ctx;
	r->stream = stream;
	r->correlation = corr;
	kj_spool_write(r, sizeof(*r));
}

static void put_memcpy(const CUpti_ActivityMemcpy6 *m)
{
	struct kj_rec_memcpy r;
	memset(&r, 0, sizeof(r));
	r.copy_kind = m->copyKind;
	r.src_kind = m->srcKind;
	r.dst_kind = m->dstKind;
	put_copy(KJ_REC_MEMCPY, (int64_t)m->start, (int64_t)m->end, m->bytes, m->graphNodeId, m->deviceId,
		 m->contextId, m->streamId, m->correlationId, &r);
}

static void put_memset(const CUpti_ActivityMemset4 *m)
{
	struct kj_rec_memcpy r;
	memset(&r, 0, sizeof(r));
	r.dst_kind = (uint8_t)m->memoryKind;
	r.is_memset = 1;
	r.value = m->value;
	put_copy(KJ_REC_MEMSET, (int64_t)m->start, (int64_t)m->end, m->bytes, m->graphNodeId, m->deviceId,
		 m->contextId, m->streamId, m->correlationId, &r);
}

static void put_memory(const CUpti_ActivityMemory4 *m)
{
	kj_detach_setup_event();
	struct kj_rec_memory r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_MEMORY;
	r.h.size = sizeof(r);
	r.t_ns = (int64_t)m->timestamp;
	r.address = m->address;
	r.bytes = m->bytes;
	r.device = m->deviceId;
	r.stream = m->streamId;
	r.correlation = m->correlationId;
	r.op = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? 1 : 2;
	r.kind = (uint8_t)m->memoryKind;
	r.pool = (uint8_t)m->memoryPoolConfig.memoryPoolType;
	kj_spool_write(&r, sizeof(r));
}

static void put_marker(const CUpti_ActivityMarker2 *m)
{
	struct kj_rec_marker r;
	memset(&r, 0, sizeof(r));
	r.h.type = KJ_REC_MARKER;
	r.h.size = sizeof(r);
	r.t_ns = (int64_t)m->timestamp;
	r.id = m->id;
	r.flags = (uint32_t)m->flags;
	/* end records carry no name; the ingest pairs them with their start by id */
	r.name_id = m->name ? kj_spool_string(m->name) : 0;
	r.domain_id = m->domain ? kj_spool_string(m->domain) : 0;
	if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
		r.tid = m->objectId.pt.threadId;
	kj_spool_write(&r, sizeof(r));
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0;
	(void)size;
	/* the driver or CUPTI may install a signal handler after the context exists: put ours back
	 * in front of it here as well (three sigaction queries a buffer once done) */
	kj_signal_reassert();
	while (valid && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			put_kernel((const CUpti_ActivityKernel10 *)rec);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			put_memcpy((const CUpti_ActivityMemcpy6 *)rec);
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET:
			put_memset((const CUpti_ActivityMemset4 *)rec);
			break;
		case CUPTI_ACTIVITY_KIND_MEMORY2:
			put_memory((const CUpti_ActivityMemory4 *)rec);
			break;
		case CUPTI_ACTIVITY_KIND_MARKER:
			put_marker((const CUpti_ActivityMarker2 *)rec);
			break;
		default:
			break;
		}
	}
	if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped) {
		struct kj_rec_dropped d;
		memset(&d, 0, sizeof(d));
		d.h.type = KJ_REC_DROPPED;
		d.h.size = sizeof(d);
		d.count = dropped;
		kj_spool_write(&d, sizeof(d));
	}
	free(buffer);
}

static uint64_t CUPTIAPI monotonic_timestamp(void)
{
	return (uint64_t)kj_now_ns();
}

/* The activity kinds a trace records, kernels first (without them there is no trace). */
/* `always`: on outside a --capture window too (allocations: every launch inside the window is
 * classified against the allocations made before it, the model's weights among them). */
static const struct {
	CUpti_ActivityKind kind;
	const char *what;
	int always;
} kinds[] = {
	{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels", 0},
	{CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy", 0},
	{CUPTI_ACTIVITY_KIND_MEMSET, "memset", 0},
	{CUPTI_ACTIVITY_KIND_MEMORY2, "allocations", 1},
	{CUPTI_ACTIVITY_KIND_MARKER, "NVTX ranges", 0},
};

static int enable(CUpti_ActivityKind kind, const char *what)
{
	CUptiResult r = cuptiActivityEnable(kind);
	if (r != CUPTI_SUCCESS) {
		const char *msg = NULL;
		cuptiGetResultString(r, &msg);
		kj_spool_problem("%s not recorded: cuptiActivityEnable: %s", what, msg ? msg : "?");
		return -1;
	}
	return 0;
}

/* Sleep one flush period, or less when kj_activity_flush_soon asks. */
static void flush_wait(int ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&wake_lock);
	while (!wake_now && pthread_cond_timedwait(&wake, &wake_lock, &until) == 0)
		;
	wake_now = 0;
	pthread_mutex_unlock(&wake_lock);
}

void kj_activity_flush_soon(void)
{
	pthread_mutex_lock(&wake_lock);
	wake_now = 1;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&wake_lock);
}

static void *flush_loop(void *arg)
{
	int ms = flush_ms();
	(void)arg;
	for (;;) {
		flush_wait(ms);
		pthread_mutex_lock(&flush_lock);
		if (flush_stopped) {
			pthread_mutex_unlock(&flush_lock);
			return NULL;
		}
		if (!cupti_out) /* a CUPTI call would attach it again */
			cuptiActivityFlushAll(0);
		pthread_mutex_unlock(&flush_lock);
	}
}

/* How many of kinds[] this trace enables: all, or the kernels alone (KJOULE_CUPTI_STUDY). */
static size_t n_kinds = sizeof(kinds) / sizeof(kinds[0]);

/* Set one CUPTI activity attribute of SIZE bytes; a failure is reported, not fatal. */
static void set_attribute(CUpti_ActivityAttribute a, const char *what, void *value, size_t size)
{
	if (cuptiActivitySetAttribute(a, &size, value) != CUPTI_SUCCESS)
		kj_spool_problem("KJOULE_CUPTI_STUDY: CUPTI refused %s", what);
}

/* KJOULE_CUPTI_STUDY's settings (cost studies), before any buffer or kind exists. Returns 1 when
 * CUPTI keeps its own clock. */
static int apply_study(void)
{
	const char *why = NULL, *list = getenv("KJOULE_CUPTI_STUDY");
	struct kj_cupti_study s = *kj_cupti_study_of_env(&why); /* a copy: CUPTI takes the sizes by pointer */
	if (why) {
		kj_spool_problem("KJOULE_CUPTI_STUDY ignored: %s", why);
		return 0;
	}
	if (s.pinned) {
		uint8_t on = 1;
		set_attribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, "pinned", &on, sizeof(on));
	}
	if (s.shared_buf) {
		uint8_t off = 0;
		set_attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, "shared_buf", &off, sizeof(off));
	}
	if (s.devbuf_bytes)
		set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, "devbuf", &s.devbuf_bytes,
			      sizeof(s.devbuf_bytes));
	if (s.prealloc)
		set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, "prealloc", &s.prealloc,
			      sizeof(s.prealloc));
	if (s.kernels_only) {
		n_kinds = 1;
		kj_spool_problem("KJOULE_CUPTI_STUDY=kernels_only: copies, memsets, allocations and NVTX "
				 "ranges not recorded");
	}
	if (list && *list)
		kj_spool_problem("KJOULE_CUPTI_STUDY=%s: CUPTI's activity settings of a cost study, not "
				 "kjoule's", list);
	return s.cupti_clock;
}

int kj_activity_start(int capture)
{
	CUptiResult r;
	int cupti_clock = apply_study(); /* CUPTI's own clock: clock_sync maps it */
	if (!cupti_clock && cuptiActivityRegisterTimestampCallback(monotonic_timestamp) != CUPTI_SUCCESS)
		kj_spool_problem("CUPTI timestamps are not CLOCK_MONOTONIC (clock_sync maps them)");
	r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS) {
		const char *msg = NULL;
		cuptiGetResultString(r, &msg);
		kj_spool_problem("no GPU activity recorded: cuptiActivityRegisterCallbacks: %s",
				 msg ? msg : "?");
		return -1;
	}
	for (size_t i = 0; i < n_kinds; i++) {
		if (capture && !kinds[i].always)
			continue; /* --capture: on when the window opens (kj_activity_window) */
		if (enable(kinds[i].kind, kinds[i].what) != 0 && i == 0)
			return -1; /* without kernels there is no trace */
	}
	/* cuptiActivityFlushPeriod alone hands back only full buffers (CUPTI's documentation): a
	 * program killed before 8 MiB of records lost them all. A default flush (flag 0) hands back
	 * every buffer whose records are complete, full or not; CUPTI allows it from a thread of
	 * the client's at a regular interval. A killed program loses at most ~FLUSH_MS of records. */
	cuptiActivityFlushPeriod(flush_ms());
	if (flusher_started) /* attached again after a detach: the thread is there */
		return 0;
	if (pthread_create(&flusher, NULL, flush_loop, NULL) == 0) {
		pthread_detach(flusher);
		flusher_started = 1;
	} else {
		kj_spool_problem("no periodic flush of GPU activity: a killed program loses its records");
	}
	return 0;
}

void kj_activity_pause(int paused)
{
	for (size_t i = 0; i < n_kinds; i++)
		if (paused)
			cuptiActivityDisable(kinds[i].kind);
		else
			cuptiActivityEnable(kinds[i].kind);
}

void kj_activity_window(int open)
{
	for (size_t i = 0; i < n_kinds; i++) {
		if (kinds[i].always)
			continue;
		if (open)
			enable(kinds[i].kind, kinds[i].what);
		else
			cuptiActivityDisable(kinds[i].kind);
	}
}

/* The last flush: stops the flush thread's calls, then hands back every buffer, incomplete
 * records included. */
void kj_activity_flush(void)
{
	pthread_mutex_lock(&flush_lock);
	flush_stopped = 1;
	if (!cupti_out) /* detached: handed over at the detach */
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_unlock(&flush_lock);
}

void kj_activity_detach(void)
{
	pthread_mutex_lock(&flush_lock);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cupti_out = 1;
	pthread_mutex_unlock(&flush_lock);
}

void kj_activity_reattached(void)
{
	pthread_mutex_lock(&flush_lock);
	cupti_out = 0;
	pthread_mutex_unlock(&flush_lock);
}
