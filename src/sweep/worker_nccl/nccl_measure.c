/* kjoule-nccl-worker's measurement: buffers, the collective call, timing over the ranks, energy
 * of every GPU of the communicator, and the small-integer check. Every rank runs the same steps in
 * the same order, agreeing on counts through NCCL, so no rank waits in a collective the others
 * skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_sweep_op.h"
#include "nccl_worker.h"

struct bufs {
	void *send, *recv;
	size_t send_elems, recv_elems, count; /* count: the NCCL call's count argument */
	int e;                                /* bytes an element */
	ncclDataType_t dt;
};

/* the collective once, enqueued on the stream; ncclResult_t */
static ncclResult_t call(struct nw_ctx *c, const char *op, const struct bufs *b)
{
	if (!strcmp(op, "all_reduce"))
		return ncclAllReduce(b->send, b->recv, b->count, b->dt, ncclSum, c->comm, c->stream);
	if (!strcmp(op, "all_gather"))
		return ncclAllGather(b->send, b->recv, b->count, b->dt, c->comm, c->stream);
	if (!strcmp(op, "reduce_scatter"))
		return ncclReduceScatter(b->send, b->recv, b->count, b->dt, ncclSum, c->comm, c->stream);
	if (!strcmp(op, "broadcast"))
		return ncclBroadcast(b->send, b->recv, b->count, b->dt, 0, c->comm, c->stream);
	/* send_recv: a ring, each rank sends to the next and receives from the previous */
	ncclGroupStart();
	ncclSend(b->send, b->count, b->dt, (c->rank + 1) % c->nranks, c->comm, c->stream);
	ncclRecv(b->recv, b->count, b->dt, (c->rank + c->nranks - 1) % c->nranks, c->comm, c->stream);
	return ncclGroupEnd();
}

int nw_agree_max(struct nw_ctx *c, int64_t *x)
{
	int64_t v = *x;
	if (cudaMemcpyAsync(c->d_agree, &v, sizeof(v), cudaMemcpyHostToDevice, c->stream) != cudaSuccess ||
	    ncclAllReduce(c->d_agree, c->d_agree, 1, ncclInt64, ncclMax, c->comm, c->stream) != ncclSuccess ||
	    cudaMemcpyAsync(&v, c->d_agree, sizeof(v), cudaMemcpyDeviceToHost, c->stream) != cudaSuccess ||
	    cudaStreamSynchronize(c->stream) != cudaSuccess)
		return -1;
	*x = v;
	return 0;
}

/* host value of element i of rank r for the check: small integers, exact in every precision and
 * in sums over 16 ranks */
static float pattern(size_t i, int r)
{
	return (float)((i * 7 + (size_t)r * 3) % 7 + 1);
}

static uint16_t to_half(float f)
{
	/* exact for the small integers the check uses and the values fill() makes */
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
	if (exp == 0)
		return (uint16_t)sign;
	return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (man >> 13));
}

static float from_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
	if (exp == 0 && man == 0)
		x = sign;
	else if (exp == 0) { /* subnormal */
		float f = (float)man / 1024.0f / 16384.0f;
		return sign ? -f : f;
	} else
		x = sign | ((exp - 15 + 127) << 23) | (man << 13);
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static void put(void *h, size_t i, int e, int p, float f)
{
	if (e == 4) {
		((float *)h)[i] = f;
	} else if (p == KJ_BF16) {
		uint32_t x;
		memcpy(&x, &f, 4);
		((uint16_t *)h)[i] = (uint16_t)(x >> 16);
	} else {
		((uint16_t *)h)[i] = to_half(f);
	}
}

static float get(const void *h, size_t i, int e, int p)
{
	if (e == 4)
		return ((const float *)h)[i];
	if (p == KJ_BF16) {
		uint32_t x = (uint32_t)((const uint16_t *)h)[i] << 16;
		float f;
		memcpy(&f, &x, 4);
		return f;
	}
	return from_half(((const uint16_t *)h)[i]);
}

/* Fill n elements of device buffer d: random values of magnitude 1/32..1 with random signs (never
 * zeros; sums over the ranks stay far from overflow), or with pattern(i, rank) when check is set.
 * Copied in 8 MiB chunks of one host buffer. 0 or -1. */
static int fill(struct nw_ctx *c, void *d, size_t n, int e, int p, int check)
{
	size_t chunk = (8u << 20) / (size_t)e;
	void *h = malloc(chunk * e);
	uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(c->rank + 1) << 32);
	if (!h)
		return -1;
	for (size_t done = 0; done < n;) {
		size_t k = n - done < chunk ? n - done : chunk;
		/* random data: one chunk made once and repeated (its power does not hang on the period);
		 * the check's pattern depends on the index, so it is made for every chunk */
		for (size_t i = 0; (check || done == 0) && i < k; i++) {
			float f;
			if (check) {
				f = pattern(done + i, c->rank);
			} else {
				s ^= s << 13, s ^= s >> 7, s ^= s << 17;
				f = (float)((s >> 40) % 31 + 1) / 32.0f * ((s >> 20) & 1 ? 1.0f : -1.0f);
			}
			put(h, i, e, p, f);
		}
		if (cudaMemcpy((char *)d + done * e, h, k * e, cudaMemcpyHostToDevice) != cudaSuccess) {
			free(h);
			return -1;
		}
		done += k;
	}
	free(h);
	return 0;
}

/* the expected recv element i on this rank for pattern() data */
static float expect(struct nw_ctx *c, const char *op, const struct bufs *b, size_t i)
{
	float sum = 0;
	if (!strcmp(op, "all_reduce")) {
		for (int r = 0; r < c->nranks; r++)
			sum += pattern(i, r);
		return sum;
	}
	if (!strcmp(op, "reduce_scatter")) {
		for (int r = 0; r < c->nranks; r++)
			sum += pattern((size_t)c->rank * b->count + i, r);
		return sum;
	}
	if (!strcmp(op, "all_gather"))
		return pattern(i % b->count, (int)(i / b->count));
	if (!strcmp(op, "broadcast"))
		return pattern(i, 0);
	return pattern(i, (c->rank + c->nranks - 1) % c->nranks); /* send_recv */
}

/* relative L2 error of the first (at most 1 Mi) received elements against expect(); -1 failure */
static double check_recv(struct nw_ctx *c, const char *op, const struct bufs *b, int p)
{
	size_t n = b->recv_elems < (1u << 20) ? b->recv_elems : (1u << 20);
	void *h = malloc(n * b->e);
	double num = 0, den = 0;
	if (!h || cudaMemcpy(h, b->recv, n * b->e, cudaMemcpyDeviceToHost) != cudaSuccess) {
		free(h);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		double want = expect(c, op, b, i), got = get(h, i, b->e, p);
		num += (got - want) * (got - want);
		den += want * want;
	}
	free(h);
	return den > 0 ? sqrt(num / den) : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Seconds per call of a batch of n calls, timed with events; < 0 on failure. */
static double batch_s(struct nw_ctx *c, const char *op, const struct bufs *b, int64_t n)
{
	cudaEvent_t e0, e1;
	float ms = -1;
	if (cudaEventCreate(&e0) != cudaSuccess)
		return -1;
	if (cudaEventCreate(&e1) != cudaSuccess) {
		cudaEventDestroy(e0);
		return -1;
	}
	int ok = cudaEventRecord(e0, c->stream) == cudaSuccess;
	for (int64_t i = 0; ok && i < n; i++)
		ok = call(c, op, b) == ncclSuccess;
	ok = ok && cudaEventRecord(e1, c->stream) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
	     cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	return ok ? ms / 1e3 / (double)n : -1;
}

/* rank 0: the energy counters of every GPU of the communicator (mJ) summed into *mj; -1 failure */
static int energy_sum(struct nw_ctx *c, uint64_t *mj)
{
	*mj = 0;
	for (int r = 0; r < c->nranks; r++) {
		uint64_t x;
		if (c->nvml.energy(c->nvml.ctx, c->nvml_index[r], &x))
			return -1;
		*mj += x;
	}
	return 0;
}

/* Sizes of op's buffers for bytes of precision p; -1 when bytes does not split into elements. */
static int sizes(struct nw_ctx *c, const char *op, int p, int64_t bytes, struct bufs *b)
{
	memset(b, 0, sizeof(*b));
	b->e = kj_precision_bytes(p);
	b->dt = p == KJ_FP32 ? ncclFloat32 : p == KJ_BF16 ? ncclBfloat16 : ncclFloat16;
	if (bytes % b->e)
		return -1;
	size_t n = (size_t)(bytes / b->e);
	b->send_elems = b->recv_elems = b->count = n;
	if (!strcmp(op, "all_gather") || !strcmp(op, "reduce_scatter")) {
		if (n % c->nranks)
			return -1;
		b->count = n / c->nranks;
		if (!strcmp(op, "all_gather"))
			b->send_elems = b->count;
		else
			b->recv_elems = b->count;
	}
	return 0;
}

int nw_measure(struct nw_ctx *c, const char *op, int p, int64_t bytes, int energy, int check,
	       struct nw_result *r, char *msg, size_t msglen)
{
	struct bufs b;
	int64_t bad = 0, rc = 0;
	double *t = NULL;
	memset(r, 0, sizeof(*r));
	r->uj = r->uj_unc = r->err = -1;
	if (sizes(c, op, p, bytes, &b)) {
		snprintf(msg, msglen, "%lld bytes do not split into whole %s elements over %d ranks",
			 (long long)bytes, kj_precision_name(p), c->nranks);
		return -1; /* the same on every rank: no collective was entered */
	}
	/* out of memory on any rank: every rank says so and skips the shape */
	if (cudaMalloc(&b.send, b.send_elems * b.e) != cudaSuccess)
		b.send = NULL, bad = 1;
	if (!bad && cudaMalloc(&b.recv, b.recv_elems * b.e) != cudaSuccess)
		b.recv = NULL, bad = 1;
	cudaGetLastError();
	if (!bad && (fill(c, b.send, b.send_elems, b.e, p, 0) || fill(c, b.recv, b.recv_elems, b.e, p, 0)))
		bad = 2;
	if (nw_agree_max(c, &bad)) {
		snprintf(msg, msglen, "NCCL all-reduce of the ranks' status failed");
		rc = -1;
		goto out;
	}
	if (bad) {
		snprintf(msg, msglen, bad == 1 ? "out of memory on a rank" : "filling the buffers failed on a rank");
		rc = bad == 1 ? 1 : -1;
		goto out;
	}
	/* warm-up, then a batch size that makes a timed batch >= 20 ms, agreed over the ranks (a
	 * failure too: a rank that stopped calling would leave the others waiting) */
	double est = batch_s(c, op, &b, c->warmup > 5 ? c->warmup : 5);
	est = est > 0 ? batch_s(c, op, &b, 5) : est;
	int64_t n = est > 0 ? (int64_t)ceil(0.02 / est) : -1, failed = est <= 0;
	n = n < 0 ? n : n < 5 ? 5 : n > 100000 ? 100000 : n;
	if (nw_agree_max(c, &failed) || failed || nw_agree_max(c, &n)) {
		snprintf(msg, msglen, "NCCL %s failed in its warm-up: %s", op, ncclGetLastError(c->comm));
		rc = -1;
		goto out;
	}
	int reps = c->active > 0 ? c->active : 10;
	t = calloc(reps, sizeof(*t));
	for (int i = 0; t && i < reps && !bad; i++)
		if ((t[i] = batch_s(c, op, &b, n)) <= 0)
			bad = 1;
	bad |= !t;
	if (nw_agree_max(c, &bad) || bad) {
		snprintf(msg, msglen, "NCCL %s failed while timing: %s", op, ncclGetLastError(c->comm));
		rc = -1;
		goto out;
	}
	qsort(t, reps, sizeof(*t), cmp_double);
	/* the mean over the ranks of each rank's median, as nccl-tests averages its ranks' times;
	 * carried as integer picoseconds through a sum */
	int64_t ps = (int64_t)llround(t[reps / 2] * 1e12), sum = ps;
	if (cudaMemcpyAsync(c->d_agree, &ps, sizeof(ps), cudaMemcpyHostToDevice, c->stream) != cudaSuccess ||
	    ncclAllReduce(c->d_agree, c->d_agree, 1, ncclInt64, ncclSum, c->comm, c->stream) != ncclSuccess ||
	    cudaMemcpyAsync(&sum, c->d_agree, sizeof(sum), cudaMemcpyDeviceToHost, c->stream) != cudaSuccess ||
	    cudaStreamSynchronize(c->stream) != cudaSuccess) {
		snprintf(msg, msglen, "NCCL all-reduce of the ranks' times failed");
		rc = -1;
		goto out;
	}
	r->us = (double)sum / c->nranks / 1e6;
	if (energy) {
		/* every rank runs the same count of calls; rank 0 reads the counters of all GPUs around
		 * them (the collectives keep the ranks in step; the all-reduce after waits for the last) */
		int64_t calls = (int64_t)ceil(c->energy_s / (r->us / 1e6)), flag = 0;
		uint64_t e0 = 0, e1 = 0;
		if (nw_agree_max(c, &calls)) {
			rc = -1;
			goto out;
		}
		if (c->rank == 0 && (!c->nvml_ok || energy_sum(c, &e0)))
			flag = 1;
		int64_t t0 = kj_now_ns();
		for (int64_t i = 0; i < calls; i++)
			if (call(c, op, &b) != ncclSuccess) {
				bad = 1;
				break;
			}
		int64_t done = bad;
		if (cudaStreamSynchronize(c->stream) != cudaSuccess || nw_agree_max(c, &done) || done) {
			snprintf(msg, msglen, "NCCL %s failed in the energy window", op);
			rc = -1;
			goto out;
		}
		int64_t t1 = kj_now_ns();
		if (c->rank == 0 && !flag && !energy_sum(c, &e1) && e1 >= e0) {
			double w_s = (t1 - t0) / 1e9, mj = (double)(e1 - e0);
			r->calls = calls;
			r->uj = mj * 1e3 / (double)calls;
			/* the counter updates about every 100 ms: each edge's reading may lag by up to one
			 * period, so the window's energy is known to its power times 0.1 s */
			r->uj_unc = (mj / w_s) * 0.1 * 1e3 / (double)calls;
		} else if (c->rank == 0) {
			snprintf(r->why, sizeof(r->why), "energy not measured: %.150s",
				 c->nvml_ok ? "reading an NVML energy counter failed" : c->nvml_why);
		}
	}
	if (check) {
		int64_t fail = fill(c, b.send, b.send_elems, b.e, p, 1) || call(c, op, &b) != ncclSuccess ||
			       cudaStreamSynchronize(c->stream) != cudaSuccess;
		if (nw_agree_max(c, &fail) || fail) {
			snprintf(msg, msglen, "NCCL %s failed in the check", op);
			rc = -1;
			goto out;
		}
		r->err = check_recv(c, op, &b, p);
	}
out:
	free(t);
	cudaFree(b.send);
	cudaFree(b.recv);
	return (int)rc;
}
