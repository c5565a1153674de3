/* kjoule-replay-worker: a run's --snapshot buffers copied into the re-created regions, and
 * --verify's bit-for-bit comparison of a launch's outputs with the after-launch snapshot. */
#include "kj_grow.h"
#include "kj_overlay.h"
#include "replay_worker.h"

/* A snapshot row's bytes (decompressed when zstd), or NULL. *owned: caller frees. */
static const void *snapshot_bytes(const struct kj_store_snap_row *s, size_t *bytes, int *owned)
{
	const char *codec = s->codec;
	const void *data = s->data;
	size_t len = s->len;
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

/* Decompressed snapshot rows kept for the worker's next kernels (a worker replays up to 8, or
 * all, in one process), up to KEEP_MAX bytes in all: on the HF decode loop's snapshot a kernel's
 * map and fill took 0.15-0.28 s without it, 0.08-0.18 s with it (H100, kjoule 0.1.0). */
#define KEEP_MAX ((size_t)4 << 30)
static struct kept_row {
	int64_t id;
	size_t bytes;
	void *buf;
} *g_kept;
static size_t g_nkept, g_kept_bytes;

static const void *kept_row(int64_t id, size_t *bytes)
{
	for (size_t i = 0; i < g_nkept; i++)
		if (g_kept[i].id == id) {
			*bytes = g_kept[i].bytes;
			return g_kept[i].buf;
		}
	return NULL;
}

/* Keep buf (owned, decompressed) for later kernels; 1 when kept (the cache owns it now). */
static int keep_row(int64_t id, void *buf, size_t bytes)
{
	if (g_kept_bytes + bytes > KEEP_MAX)
		return 0;
	struct kept_row *n = realloc(g_kept, (g_nkept + 1) * sizeof(*n));
	if (!n)
		return 0;
	g_kept = n;
	g_kept[g_nkept++] = (struct kept_row){id, bytes, buf};
	g_kept_bytes += bytes;
	return 1;
}

/* Overlay the run's --snapshot data where it falls inside the re-created regions: the buffers
 * as they were before launches, this kernel's own launch last (other launches' data is still
 * better than random: valid indices, real values). Rows every byte of which a later row
 * overwrites are left out (kj_overlay_visible): the memory ends the same, without copying (and
 * decompressing) what the kernel never sees. *exact: rows of this very launch applied. With
 * own_only and no rows of this launch, nothing is laid over (the caller keeps the fill). */
int apply_snapshot(struct replay *R, int *applied, int *exact, int own_only)
{
	struct kj_store_rows *st = NULL, *row_data = NULL;
	struct kj_store_snap_row place, data;
	struct place_in {
		struct kj_store_snap_row row; /* no data */
		CUdeviceptr dst;
	} *pl = NULL; /* the places inside the regions */
	uint64_t *addr = NULL;
	size_t *len = NULL, n = 0, cap = 0, own = 0; /* own: rows of this very launch among them */
	unsigned char *keep = NULL;
	int rc = 0;
	*applied = 0;
	if (exact)
		*exact = 0;
	/* runs made before snapshot phases existed: every row counts as before; runs without a
	 * snapshot table: nothing to apply (neither is an error) */
	/* the rows' places first, sorted without their data (a sort would copy every blob, a graph
	 * program's whole saved pool, for each kernel: 1.7 s a kernel on a 370 MB snapshot); the
	 * data only of the rows inside this kernel's regions that show in the end, by id */
	kj_store_snap_places_open(R->db, R->k.pid, R->k.correlation, &st);
	kj_store_snap_data_open(R->db, &row_data);
	if (!st || !row_data)
		goto out;
	while (kj_store_snap_places_next(st, &place)) {
		CUdeviceptr to = region_address(R, place.address, place.bytes);
		if (!to)
			continue;
		struct place_in *grown = kj_grow(pl, &cap, n, sizeof(*pl), 256);
		if (!grown) {
			rc = KJ_ENOMEM;
			goto out;
		}
		pl = grown;
		pl[n++] = (struct place_in){place, to};
		own += place.has_correlation && place.correlation == R->k.correlation;
	}
	if (own_only && !own)
		goto out; /* the kernel runs on the fill: nothing to copy */
	addr = malloc((n ? n : 1) * sizeof(*addr));
	len = malloc((n ? n : 1) * sizeof(*len));
	keep = malloc(n ? n : 1);
	if (!addr || !len || !keep) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		addr[i] = pl[i].row.address;
		len[i] = pl[i].row.bytes;
	}
	kj_overlay_visible(addr, len, n, keep); /* out of memory: all kept */
	for (size_t i = 0; i < n; i++) {
		size_t bytes = len[i];
		int owned = 0;
		if (!keep[i])
			continue;
		const struct kj_store_snap_row *p = &pl[i].row;
		const void *buf = kept_row(p->id, &bytes);
		if (!buf) {
			if (!kj_store_snap_data_get(row_data, p->id, &data))
				continue;
			buf = snapshot_bytes(&data, &bytes, &owned);
			if (!buf)
				continue;
			if (owned && keep_row(p->id, (void *)buf, bytes))
				owned = 0;
		}
		if (cuMemcpyHtoD(pl[i].dst, buf, bytes) == CUDA_SUCCESS) {
			(*applied)++;
			if (exact && p->has_correlation && p->correlation == R->k.correlation)
				(*exact)++;
		}
		if (owned)
			free((void *)buf);
	}
out:
	kj_store_rows_close(st);
	kj_store_rows_close(row_data);
	free(pl);
	free(addr);
	free(len);
	free(keep);
	return rc;
}

/* After the one checked launch on the snapshot's inputs: compare every buffer with its
 * after-launch snapshot, bit for bit. Fills res.verify and its counts. */
void verify_outputs(struct replay *R, int exact_inputs)
{
	struct kj_store_rows *st = NULL;
	struct kj_store_snap_row s;
	struct kj_replay_result *r = &R->res;
	int64_t rows = 0, outside = 0;
	snprintf(r->verify, sizeof(r->verify), "no-snapshot");
	r->verify_buffers = r->verify_bytes = r->verify_diff_bytes = 0;
	if (!exact_inputs || kj_store_snap_after_open(R->db, R->k.pid, R->k.correlation, &st))
		return;
	while (kj_store_snap_after_next(st, &s)) {
		uint64_t addr = s.address;
		size_t bytes = s.bytes;
		int owned;
		CUdeviceptr src = region_address(R, addr, bytes);
		rows++;
		if (!src) {
			outside++;
			continue;
		}
		const unsigned char *want = snapshot_bytes(&s, &bytes, &owned);
		unsigned char *got = malloc(bytes ? bytes : 1);
		if (want && got &&
		    cuMemcpyDtoH(got, src, bytes) == CUDA_SUCCESS) {
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
	kj_store_rows_close(st);
	if (rows && !outside)
		snprintf(r->verify, sizeof(r->verify), r->verify_diff_bytes ? "differs" : "identical");
	else if (rows)
		snprintf(r->verify, sizeof(r->verify), r->verify_diff_bytes ? "differs" : "partial");
}

