/* Regressor features from the operator table: FLOPs, bytes and how many waves of work the call
 * puts on the GPU's SMs, so that a tree model sees what makes an operator slow. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_predict.h"

/* SMs and L2 (MiB; 0: not known here) of known GPUs; the first entry whose key the tag contains
 * wins, so longer keys first */
static const struct {
	const char *key;
	int sms, l2_mib;
} known[] = {
	{"GH200", 132, 50}, {"H100PCIe", 114, 50}, {"H100NVL", 132, 50}, {"H100", 132, 50}, {"H200", 132, 50},
	{"H800", 132, 50},  {"H20", 78, 0},        {"B200", 148, 0},     {"A100", 108, 40}, {"A800", 108, 40},
	{"A30", 56, 24},    {"A10", 72, 6},        {"L40S", 142, 96},    {"L40", 142, 96},  {"L4", 58, 48},
	{"V100", 80, 6},    {"T4", 40, 4},         {"RTX4090", 128, 72}, {"RTX3090", 82, 6},
};

static int known_index(const char *tag)
{
	for (size_t i = 0; tag && i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(tag, known[i].key))
			return (int)i;
	return -1;
}

int kj_predict_sm_count(const char *tag)
{
	int i = known_index(tag);
	return i < 0 ? -1 : known[i].sms;
}

double kj_predict_l2_bytes(const char *tag)
{
	int i = known_index(tag);
	return i < 0 || !known[i].l2_mib ? -1 : known[i].l2_mib * 1048576.0;
}

static double cdiv(double a, double b)
{
	return ceil(a / b);
}

static int col(const struct kj_sweep_op *op, const char *name)
{
	for (int i = 0; i < op->ncolumns; i++)
		if (!strcmp(op->columns[i], name))
			return i;
	return -1;
}

/* The GEMMs of one call (at most two) as M, N, K and a batch count; 0 when the op is no GEMM. */
static int gemms_of(const struct kj_sweep_op *op, const int64_t *v, int prop, double g[2][4])
{
	const char *n = op->name;
	int mp = col(op, "mp"), b = col(op, "b"), h = col(op, "h"), l = col(op, "l"), d = col(op, "dim");
	double M, N, K, B = 1;
	if (!strncmp(n, "linear", 6) && mp >= 0 && b >= 0 && l >= 0 && d >= 0) {
		double dim = (double)v[d], p = (double)v[mp];
		M = (double)v[b] * v[l];
		if (!strcmp(n, "linear1"))
			N = 3 * dim / p, K = dim;
		else if (!strcmp(n, "linear2"))
			N = dim, K = dim / p;
		else if (!strcmp(n, "linear3"))
			N = 4 * dim / p, K = dim;
		else if (!strcmp(n, "linear4"))
			N = dim, K = 4 * dim / p;
		else
			N = (double)KJ_SWEEP_VOCAB / p, K = dim;
	} else if ((!strcmp(n, "bmm") || !strcmp(n, "baddbmm")) && mp >= 0 && b >= 0 && h >= 0 && l >= 0 && d >= 0) {
		double len = (double)v[l], hd = (double)v[d] / v[h];
		B = (double)v[b] * v[h] / v[mp];
		M = len, N = !strcmp(n, "bmm") ? hd : len, K = !strcmp(n, "bmm") ? len : hd;
	} else {
		return 0;
	}
	if (prop == KJ_FWD) {
		g[0][0] = M, g[0][1] = N, g[0][2] = K, g[0][3] = B;
		return 1;
	}
	/* the data gradient [M, K] over N and the weight gradient [N, K] over M */
	g[0][0] = M, g[0][1] = K, g[0][2] = N, g[0][3] = B;
	g[1][0] = N, g[1][1] = K, g[1][2] = M, g[1][3] = B;
	return 2;
}

double kj_predict_units(const struct kj_sweep_op *op, const int64_t *v, int prop, int e)
{
	const char *n = op->name;
	int mp = col(op, "mp"), b = col(op, "b"), h = col(op, "h"), l = col(op, "l");
	double g[2][4];
	if (gemms_of(op, v, KJ_FWD, g)) /* the forward product's output tiles, for both passes */
		return g[0][3] * cdiv(g[0][0], 128) * cdiv(g[0][1], 128);
	if (!strcmp(n, "flash_atten") && h >= 0 && l >= 0 && b >= 0 && mp >= 0)
		return (double)v[b] * v[h] / v[mp] * cdiv((double)v[l], 128);
	if (!strcmp(n, "moe")) {
		double t = (double)v[1] * v[2] * v[6], inter = (double)v[5] / v[0];
		return cdiv(t, 128) * cdiv(inter, 128);
	}
	return cdiv(op->bytes(v, prop, e) / e, 2048);
}

/* a min-heap of the SMs' busy-until times */
static void heap_down(double *h, int n, int i)
{
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && h[c + 1] < h[c])
			c++;
		if (h[i] <= h[c])
			return;
		double t = h[i];
		h[i] = h[c];
		h[c] = t;
		i = c;
	}
}

/* 16-byte packs in a row of cols elements */
static double packs_of(double cols, int elem_bytes)
{
	return floor(cols / (16.0 / (elem_bytes > 0 ? elem_bytes : 2)));
}

/* The layer-norm forward takes as long as its busiest thread: it walks a row's 16-byte packs in a
 * block-stride loop over row_threads' threads (worker_norm.cu). (Softmax's forward has its own
 * lane factor below; its backward none: a memory-bound row does not wait on its busiest lane.) */
static double row_quantization(double packs)
{
	if (packs < 1)
		return 1.0;
	double t = ceil(ceil(packs / 4) / 32) * 32;
	t = t < 32 ? 32 : t > 1024 ? 1024 : t;
	return ceil(packs / t) * t / packs;
}

/* The layer-norm backward's row kernel (worker_norm_bwd.cuh, ln_bwd_plan; rows up to 8192
 * columns): packs a thread ppt (1, 2 or 4), tpb threads a block, as many blocks as fill 1024
 * threads an SM (at most the partial buffers' min(8 SMs, rows / 8) rows), each walking `per` rows;
 * its time goes with per x ppt, an even spread of the work over every SM's 1024 threads with
 * rows x packs / (SMs x 1024). */
static double layernorm_bwd_imbalance(double cols, double packs, double rows, int sm_count)
{
	if (packs < 1 || rows < 1 || sm_count <= 0 || cols > 8192)
		return 1.0; /* longer rows: the other kernel */
	double ppt = packs <= 512 ? 1 : packs <= 1024 ? 2 : 4, tpb = ceil(ceil(packs / ppt) / 32) * 32;
	double want = sm_count * (tpb >= 1024 ? 1 : floor(1024 / tpb));
	double nparts = fmin(8.0 * sm_count, fmax(1, floor(rows / 8)));
	double per = ceil(rows / fmin(want, nparts));
	return per * ppt * sm_count * 1024 / (rows * packs);
}

/* Causal attention's CTAs: the forward's query block q (128 queries) reads the keys up to its
 * end, work q + 1; the backward's key block k (128 keys) visits the queries from its start on,
 * work nb - k. Launched query (key) block fastest, then head, as the worker's grid is, onto as
 * many slots as the kernels' launch bounds keep resident (kj_gpu_fa2_*.cu: two forward CTAs an SM,
 * one backward); the busiest slot's work over the average. */
static double causal_attention_imbalance(double heads, double nb, int prop, int sm_count)
{
	if (heads * nb > (double)(1 << 20) || heads < 1 || nb < 1)
		return 1.0; /* many waves: the tail is a small part of the whole */
	int slots = prop ? sm_count : 2 * sm_count;
	double *busy = calloc((size_t)slots, sizeof(*busy)), total = 0, end = 0;
	if (!busy)
		return 1.0;
	for (int64_t hd = 0; hd < (int64_t)heads; hd++)
		for (int64_t q = 0; q < (int64_t)nb; q++) {
			double w = prop ? nb - q : q + 1;
			busy[0] += w; /* the slot free first takes the next CTA */
			total += w;
			end = busy[0] > end ? busy[0] : end;
			heap_down(busy, slots, 0);
		}
	free(busy);
	return total > 0 ? end * slots / total : 1.0;
}

/* How much more work than M x N x K the n GEMMs g (gemms_of) do on whole tiles: output tiles of the better of 256 x 128
 * either way round (the shape Hopper's large GEMM kernels use), 128 x 128 and 128 x 64 (a smaller
 * tile does less per SM-cycle: its rate relative to the largest), K in steps of 64 (the depth of
 * one k-tile); FLOP-weighted over the call's GEMMs. The waves are the wave features' (f[2], f[3]).
 * A dimension just past a tile edge pays a whole tile more: held-out shapes 64 past a 1024-multiple
 * were predicted 10 % fast without this (72a7992:bench/results/predict_accuracy_fifth.json). */
static double gemm_tile_padding(double g[2][4], int n)
{
	static const double tiles[][3] = {{256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.9}, {128, 64, 0.75},
					  {64, 128, 0.75}};
	double work = 0, padded = 0;
	for (int i = 0; i < n; i++) {
		double M = g[i][0], N = g[i][1], K = g[i][2], B = g[i][3], best = -1;
		for (size_t t = 0; t < sizeof(tiles) / sizeof(tiles[0]); t++) {
			double cost = ceil(M / tiles[t][0]) * tiles[t][0] * ceil(N / tiles[t][1]) * tiles[t][1] / tiles[t][2];
			if (best < 0 || cost < best)
				best = cost;
		}
		work += B * M * N * K;
		padded += B * best * ceil(K / 64) * 64;
	}
	return work > 0 ? padded / work : 1.0;
}

double kj_predict_imbalance(const struct kj_sweep_op *op, const int64_t *v, int prop, int elem_bytes,
			    int sm_count)
{
	const char *n = op->name;
	int mp = col(op, "mp"), b = col(op, "b"), h = col(op, "h"), l = col(op, "l"), d = col(op, "dim");
	double g[2][4];
	int ng = gemms_of(op, v, prop, g);
	if (ng)
		return gemm_tile_padding(g, ng);
	if ((!strcmp(n, "layernorm") || !strcmp(n, "RMSlayernorm")) && d >= 0) {
		if (prop && b >= 0 && l >= 0)
			return layernorm_bwd_imbalance((double)v[d], packs_of((double)v[d], elem_bytes),
						       (double)v[b] * v[l], sm_count);
		return row_quantization(packs_of((double)v[d], elem_bytes));
	}
	if (!strcmp(n, "softmax") && l >= 0 && !prop) {
		/* the forward's warp takes ceil(packs / 32) packs a lane and computes an exponential on
		 * every slot of them, filled or not (worker_softmax.cu, softmax_fwd_warp_k); its backward
		 * is memory-bound and waits on no lane (with a factor there, held-out rows were predicted
		 * slow). Without it, rows 32 columns past a 256-multiple were predicted 7 % fast. */
		double packs = packs_of((double)v[l], elem_bytes);
		return packs >= 1 && packs <= 256 ? ceil(packs / 32) * 32 / packs : 1.0;
	}
	if (!strcmp(n, "flash_atten") && sm_count > 0 && mp >= 0 && b >= 0 && h >= 0 && l >= 0) {
		/* a length off the kernel's tiles computes whole tiles (kj_gpu_fa2_*.cu): the forward 128
		 * queries a CTA against tiles of 64 keys, the backward 128 keys a CTA against tiles of 32
		 * queries; held-out lengths 32 past a 256-multiple were predicted 7 % fast without this.
		 * cuDNN's fused attention (the worker's default since) also steps every 128 of the length
		 * (bench/results/sdpa_tiles.json); its faster 256-multiples are learnt from a grid that
		 * samples l every 256 (bench/predict_accuracy/run.py) */
		double len = (double)v[l];
		double pad = cdiv(len, 128) * 128 / len * (cdiv(len, prop ? 32 : 64) * (prop ? 32 : 64) / len);
		return pad * causal_attention_imbalance((double)v[b] * v[h] / v[mp], cdiv(len, 128), prop, sm_count);
	}
	return 1.0;
}

/* log2 of the largest power of two that divides n, at most cap_log2 */
static double alignment_log2(double n, int cap_log2)
{
	int64_t x = (int64_t)n;
	int a = 0;
	while (x > 0 && !(x & 1) && a < cap_log2)
		x >>= 1, a++;
	return a;
}

void kj_predict_features(const struct kj_sweep_op *op, const int64_t *v, int prop, int e,
			 int sm_count, double l2_bytes, float *f)
{
	for (int i = 0; i < KJ_PREDICT_NF; i++)
		f[i] = NAN;
	double q = kj_predict_imbalance(op, v, prop, e, sm_count);
	double bytes = op->bytes(v, prop, e);
	f[0] = (float)log1p(op->flops(v, prop) * q);
	f[1] = (float)log1p(bytes);
	if (sm_count > 0) {
		double w = kj_predict_units(op, v, prop, e) / sm_count;
		f[2] = (float)ceil(w);
		f[3] = (float)(ceil(w) - w);
	}
	/* the bytes one call moves over the L2's size: an operator unrolled in a graph whose data
	 * fits the L2 reads it from there */
	if (l2_bytes > 0 && bytes > 0)
		f[4] = (float)log(bytes / l2_bytes);
	/* a GEMM whose N or K is a multiple of 16 but not of 32 or 64 can run other, slower kernels:
	 * linear2 at K = dim/mp 16 past a 32-multiple ran up to 25 % slower than the larger aligned
	 * shape beside it. Grouped cross-validation over six sets took its forward time from 6.3 to
	 * 5.4 % MAPE with these two; the ninth set, measured after, showed no gain beyond the
	 * model's noise (docs/sweep.md) */
	double g[2][4];
	if (gemms_of(op, v, KJ_FWD, g)) {
		f[5] = (float)alignment_log2(g[0][1], 6);
		f[6] = (float)alignment_log2(g[0][2], 6);
	}
	for (int i = 0; i < op->ncolumns; i++)
		f[KJ_PREDICT_COL0 + i] = (float)log((double)v[i]);
}
