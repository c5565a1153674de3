#define _GNU_SOURCE
/* --snapshot: the contents of the device buffers a launch's parameters point to, copied with the
 * context idle just before the launch and again just after it, for `kjoule replay --verify`.
 * Taken for the first launch of each launch group (function + geometry) while the per-process
 * byte budget lasts; never inside a stream capture. Costly by design: a synchronisation and a
 * device-to-host copy per buffer, twice. Runs on the program's thread inside the launch callback.
 * Graph kernels (captured or built node by node) cannot be snapshotted where they are recorded:
 * their parameter words are kept, and the buffers they point to are saved once, before the first
 * graph launch that follows, as the graph's sequence replay starts from them (weights, statistics,
 * inputs: a chain of kernels on random data computes values the program never does, and draws
 * less power). */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "kj_map.h"
#include "inject_thread.h"

#define SNAP_MAX_BUFFERS 64
#define SNAP_CHUNK (64ull << 20) /* one spool record holds at most this much */

struct snap_range {
	uint64_t base, bytes;
};

static __thread struct snap_range *tl_pending; /* SNAP_MAX_BUFFERS, on the heap (inject_thread.h) */
static __thread int tl_npending;
static __thread uint32_t tl_pending_corr;
static int64_t used_bytes; /* under snap_lock */
static int budget_told;
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;

/* This thread's pending list, made at its first use; NULL when memory runs out (nothing is saved). */
static struct snap_range *pending_list(void)
{
	return kj_thread_array((void **)&tl_pending, SNAP_MAX_BUFFERS * sizeof(*tl_pending));
}

/* The allocation holding address v, if v points into device memory. */
static int device_range(uint64_t v, struct snap_range *r)
{
	CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
					CU_POINTER_ATTRIBUTE_RANGE_SIZE};
	unsigned int type = 0;
	CUdeviceptr start = 0;
	size_t size = 0;
	void *data[3] = {&type, &start, &size};
	if (v < 0x10000 || (v & 3))
		return 0;
	if (cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)v) != CUDA_SUCCESS)
		return 0;
	if (type != CU_MEMORYTYPE_DEVICE || !start || !size)
		return 0;
	r->base = start;
	r->bytes = size;
	return 1;
}

/* Copy each pending range to the spool as one or more records of the given phase. */
static void copy_out(uint32_t corr, uint32_t phase)
{
	for (int i = 0; i < tl_npending; i++) {
		uint64_t base = tl_pending[i].base, left = tl_pending[i].bytes;
		while (left) {
			uint64_t n = left < SNAP_CHUNK ? left : SNAP_CHUNK;
			void *host = malloc(n);
			struct kj_rec_snapshot r;
			if (!host) {
				kj_spool_problem("snapshot: out of host memory for a %llu-byte buffer",
						 (unsigned long long)n);
				return;
			}
			if (cuMemcpyDtoH(host, (CUdeviceptr)base, n) != CUDA_SUCCESS) {
				kj_spool_problem("snapshot: a device-to-host copy failed; buffer at 0x%llx not saved",
						 (unsigned long long)base);
				free(host);
				break;
			}
			memset(&r, 0, sizeof(r));
			r.h.type = KJ_REC_SNAPSHOT;
			r.t_ns = kj_now_ns();
			r.address = base;
			r.bytes = n;
			r.correlation = corr;
			r.phase = phase;
			r.copy_correlation = kj_last_own_correlation();
			kj_spool_write2(&r, sizeof(r), host, n);
			free(host);
			base += n;
			left -= n;
		}
	}
}

/* Take bytes from the per-process budget: 1 if they fit; the first refusal is named once. */
static int reserve(uint64_t bytes, const char *what)
{
	pthread_mutex_lock(&snap_lock);
	int fits = used_bytes + (int64_t)bytes <= kj_cfg.snapshot_bytes;
	if (fits)
		used_bytes += (int64_t)bytes;
	int tell = !fits && !budget_told;
	if (tell)
		budget_told = 1;
	pthread_mutex_unlock(&snap_lock);
	if (tell)
		kj_spool_problem("snapshot budget of %lld MiB reached: %s (raise it with --snapshot=MB or "
				 "--snapshot-graphs=MB)",
				 (long long)(kj_cfg.snapshot_bytes >> 20), what);
	return fits;
}

int kj_snapshot_before(CUstream stream, uint32_t corr, const unsigned char *blob, uint32_t len)
{
	struct snap_range found[SNAP_MAX_BUFFERS];
	int n = 0;
	uint64_t total = 0;
	CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;

	tl_npending = 0;
	if (kj_cfg.snapshot_bytes <= 0 || !blob)
		return 0;
	if (cuStreamIsCapturing(stream, &cap) != CUDA_SUCCESS || cap != CU_STREAM_CAPTURE_STATUS_NONE)
		return 0;
	for (uint32_t w = 0; w + 8 <= len && n < SNAP_MAX_BUFFERS; w += 8) {
		uint64_t v;
		struct snap_range r;
		memcpy(&v, blob + w, 8);
		if (!device_range(v, &r))
			continue;
		int dup = 0;
		for (int i = 0; i < n && !dup; i++)
			dup = found[i].base == r.base;
		if (dup)
			continue;
		found[n++] = r;
		total += r.bytes;
	}
	if (!n || !pending_list())
		return 0;
	int fits = reserve(2 * total, "later launch groups have no buffer snapshot");
	if (!fits)
		return 0;
	if (cuCtxSynchronize() != CUDA_SUCCESS)
		return 0;
	memcpy(tl_pending, found, (size_t)n * sizeof(found[0]));
	tl_npending = n;
	tl_pending_corr = corr;
	copy_out(corr, 0);
	return n;
}

KJ_HOT void kj_snapshot_after(void)
{
	if (!tl_npending)
		return;
	if (cuCtxSynchronize() == CUDA_SUCCESS)
		copy_out(tl_pending_corr, 1);
	else
		kj_spool_problem("snapshot: the launch with correlation %u failed; no after-launch buffers",
				 tl_pending_corr);
	tl_npending = 0;
}

/* ---- graphs: buffers saved before the first launch that follows their kernels' recording ---- */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kj_map *graph_seen;   /* parameter word -> 1 (kept once) */
static struct kj_map *graph_saved;  /* allocation base -> 1 (saved once) */
static uint64_t *graph_words;       /* words not yet resolved */
static size_t graph_nwords, graph_cap;

void kj_snapshot_graph_words(const unsigned char *blob, uint32_t len)
{
	if (kj_cfg.snapshot_bytes <= 0 || !blob)
		return;
	pthread_mutex_lock(&graph_lock);
	if (!graph_seen)
		graph_seen = kj_map_new();
	for (uint32_t w = 0; graph_seen && w + 8 <= len; w += 8) {
		uint64_t v;
		memcpy(&v, blob + w, 8);
		if (v < 0x10000 || (v & 3) || kj_map_get(graph_seen, v, NULL))
			continue;
		if (graph_nwords == graph_cap) {
			size_t cap = graph_cap ? 2 * graph_cap : 1024;
			uint64_t *n = realloc(graph_words, cap * sizeof(*n));
			if (!n)
				break;
			graph_words = n;
			graph_cap = cap;
		}
		if (kj_map_put(graph_seen, v, 1))
			break;
		graph_words[graph_nwords++] = v;
	}
	pthread_mutex_unlock(&graph_lock);
}

int kj_snapshot_graph(CUstream stream, uint32_t corr)
{
	CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
	if (kj_cfg.snapshot_bytes <= 0 || !__atomic_load_n(&graph_nwords, __ATOMIC_RELAXED))
		return 0;
	if (cuStreamIsCapturing(stream, &cap) != CUDA_SUCCESS || cap != CU_STREAM_CAPTURE_STATUS_NONE)
		return 0;
	pthread_mutex_lock(&graph_lock);
	if (!graph_saved)
		graph_saved = kj_map_new();
	struct snap_range *found = NULL;
	size_t n = 0, cap_found = 0;
	for (size_t i = 0; graph_saved && i < graph_nwords; i++) {
		struct snap_range r;
		if (!device_range(graph_words[i], &r) || kj_map_get(graph_saved, r.base, NULL))
			continue;
		if (n == cap_found) {
			size_t c = cap_found ? 2 * cap_found : 64;
			struct snap_range *f = realloc(found, c * sizeof(*f));
			if (!f)
				break;
			found = f;
			cap_found = c;
		}
		if (kj_map_put(graph_saved, r.base, 1))
			break;
		found[n++] = r;
	}
	graph_nwords = 0;
	pthread_mutex_unlock(&graph_lock);
	if (!n || !pending_list()) {
		free(found);
		return 0;
	}
	/* as many as the budget holds, in the order the kernels named them: a weight saved is one
	 * the replay does not have to make up */
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (reserve(found[i].bytes, "some graph buffers were not saved"))
			found[kept++] = found[i];
	n = kept;
	int saved = 0;
	if (n && cuCtxSynchronize() == CUDA_SUCCESS) {
		/* copy_out works on the thread's pending list: no eager launch is pending here */
		for (size_t i = 0; i < n; i += SNAP_MAX_BUFFERS) {
			int m = n - i < SNAP_MAX_BUFFERS ? (int)(n - i) : SNAP_MAX_BUFFERS;
			memcpy(tl_pending, found + i, (size_t)m * sizeof(found[0]));
			tl_npending = m;
			copy_out(corr, 0);
		}
		tl_npending = 0;
		saved = (int)n;
	}
	free(found);
	return saved;
}
