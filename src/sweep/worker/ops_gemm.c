/* kjoule-sweep-worker: the GEMM operators (linear1-4, linear_final, bmm, baddbmm; LLaMA's
 * ffn_gate_up, ffn_down and lm_head) as lists of
 * cuBLASLt products over named buffers; forward and backward as Megatron computes them, checked
 * on sampled output elements against double dot products of the same device inputs. The
 * column-parallel linears with a bias (linear1, linear3) add it in the forward GEMM's epilogue and
 * reduce dy over the tokens for its gradient in the backward (worker_colsum.cu). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "sweep_worker.h"

/* One product: out = alpha op(a) op(b), row-major, batched. a/b/out index gemm_op.buf. */
struct gspec {
	int ta, tb;
	int64_t M, N, K, lda, ldb, ldc;
	int batch;
	int64_t sa, sb, sc;
	float alpha;
	int a, b, out;
	int plan;
	int with_bias; /* the forward product adds gemm_op.bias */
};

struct gemm_op {
	int p, dt;
	void *buf[6];
	struct gspec f[1], bw[2];
	int nf, nb;
	int has_bias, parts;  /* linear1/linear3: bias [N]; its gradient's row parts */
	int64_t M, N;
	void *bias, *dbias;
	float *part;
};

/* Shapes of each op: buffers sizes (elements) and the products. Row-major throughout; weights
 * stored [out, in] as Megatron's ColumnParallel/RowParallelLinear hold them. */
static int64_t sizes_linear(struct gemm_op *g, int64_t M, int64_t N, int64_t K, int bias, int64_t *n)
{
	/* buf: 0 X[M,K] 1 W[N,K] 2 Y[M,N] 3 dY[M,N] 4 dX[M,K] 5 dW[N,K] */
	n[0] = M * K, n[1] = N * K, n[2] = M * N, n[3] = M * N, n[4] = M * K, n[5] = N * K;
	g->f[0] = (struct gspec){0, 1, M, N, K, K, K, N, 1, 0, 0, 0, 1.f, 0, 1, 2, -1, 0};
	g->bw[0] = (struct gspec){0, 0, M, K, N, N, K, K, 1, 0, 0, 0, 1.f, 3, 1, 4, -1, 0}; /* dX = dY W */
	g->bw[1] = (struct gspec){1, 0, N, K, M, N, K, K, 1, 0, 0, 0, 1.f, 3, 0, 5, -1, 0}; /* dW = dY^T X */
	g->nf = 1, g->nb = 2;
	g->M = M, g->N = N, g->has_bias = bias, g->f[0].with_bias = bias;
	return 0;
}

enum { L1, L2, L3, L4, LF, BMM, BADDBMM, FGU, FDN, LMH };

static int shapes(struct sw_ctx *c, int kind, const int64_t *v, struct gemm_op *g, int64_t *n)
{
	if (kind >= FGU) { /* LLaMA's: mp, b, l, dim and the intermediate size (vocab for lm_head) */
		int64_t mp = v[0], M = v[1] * v[2], dim = v[3], w = v[4];
		int64_t N = kind == FGU ? 2 * w / mp : kind == FDN ? dim : w / mp;
		int64_t K = kind == FDN ? w / mp : dim;
		if (N < 1 || K < 1)
			return sw_fail(c, "shape", "mp larger than the dimension it divides");
		return (int)sizes_linear(g, M, N, K, 0, n);
	}
	if (kind <= LF) {
		int64_t mp = v[0], M = v[1] * v[2], dim = v[3], N = 0, K = 0;
		switch (kind) {
		case L1: K = dim, N = 3 * dim / mp; break;
		case L2: K = dim / mp, N = dim; break;
		case L3: K = dim, N = 4 * dim / mp; break;
		case L4: K = 4 * dim / mp, N = dim; break;
		default: K = dim, N = SW_VOCAB / mp; break;
		}
		if (N < 1 || K < 1)
			return sw_fail(c, "shape", "mp larger than the dimension it divides");
		return (int)sizes_linear(g, M, N, K, kind == L1 || kind == L3, n);
	}
	int64_t mp = v[0], B = v[1] * v[2] / mp, l = v[3], d = v[4] / v[2];
	if (B < 1 || d < 1)
		return sw_fail(c, "shape", "b*h/mp and dim/h must be >= 1");
	float alpha = kind == BADDBMM ? (float)(1.0 / sqrt((double)d)) : 1.f;
	if (kind == BADDBMM) {
		/* 0 Q[B,l,d] 1 K[B,l,d] 2 S[B,l,l] 3 dS 4 dQ 5 dK */
		n[0] = n[1] = n[4] = n[5] = B * l * d, n[2] = n[3] = B * l * l;
		g->f[0] = (struct gspec){0, 1, l, l, d, d, d, l, (int)B, l * d, l * d, l * l, alpha, 0, 1, 2, -1, 0};
		g->bw[0] = (struct gspec){0, 0, l, d, l, l, d, d, (int)B, l * l, l * d, l * d, alpha, 3, 1, 4, -1, 0};
		g->bw[1] = (struct gspec){1, 0, l, d, l, l, d, d, (int)B, l * l, l * d, l * d, alpha, 3, 0, 5, -1, 0};
	} else {
		/* 0 P[B,l,l] 1 V[B,l,d] 2 C[B,l,d] 3 dC 4 dP[B,l,l] 5 dV */
		n[0] = n[4] = B * l * l, n[1] = n[2] = n[3] = n[5] = B * l * d;
		g->f[0] = (struct gspec){0, 0, l, d, l, l, d, d, (int)B, l * l, l * d, l * d, 1.f, 0, 1, 2, -1, 0};
		g->bw[0] = (struct gspec){0, 1, l, l, d, d, d, l, (int)B, l * d, l * d, l * l, 1.f, 3, 1, 4, -1, 0};
		g->bw[1] = (struct gspec){1, 0, l, d, l, l, d, d, (int)B, l * l, l * d, l * d, 1.f, 0, 3, 5, -1, 0};
	}
	g->nf = 1, g->nb = 2;
	return 0;
}

static int plan(struct sw_ctx *c, int p, struct gspec *s, const void *bias)
{
	s->plan = s->with_bias ? sw_gemm_plan_bias(c, p, s->ta, s->tb, s->M, s->N, s->K, s->lda, s->ldb, s->ldc, bias)
			       : sw_gemm_plan(c, p, s->ta, s->tb, s->M, s->N, s->K, s->lda, s->ldb, s->ldc, s->batch,
					      s->sa, s->sb, s->sc, s->alpha, 0.f);
	return s->plan < 0 ? s->plan : 0;
}

static int setup_kind(struct sw_ctx *c, int kind, int p, const int64_t *v, void **state)
{
	struct gemm_op *g = calloc(1, sizeof(*g));
	int64_t n[6];
	int rc;
	if (!g)
		return sw_fail(c, "setup", "host memory");
	*state = g;
	g->p = p, g->dt = sw_dtype_of(p);
	if ((rc = shapes(c, kind, v, g, n)))
		return rc;
	for (int i = 0; i < 6; i++) {
		/* inputs and upstream gradients random; outputs poisoned by the fill too (never zeros) */
		float scale = (i == 0 || i == 1) ? 1.f : 0.5f;
		if (!(g->buf[i] = sw_alloc(c, (size_t)n[i], g->dt, scale)))
			return KJ_EGPU;
	}
	if (g->has_bias) {
		g->parts = kj_sw_colsum_parts(g->dt, g->M, g->N, c->sms);
		if (!(g->bias = sw_alloc(c, (size_t)g->N, g->dt, 1.f)) ||
		    !(g->dbias = sw_alloc(c, (size_t)g->N, g->dt, 0.5f)) ||
		    (g->parts > 1 && !(g->part = sw_alloc(c, (size_t)g->parts * (size_t)g->N, SW_F32, 0.5f))))
			return KJ_EGPU;
	}
	for (int i = 0; i < g->nf; i++)
		if ((rc = plan(c, p, &g->f[i], g->bias)))
			return rc;
	for (int i = 0; i < g->nb; i++)
		if ((rc = plan(c, p, &g->bw[i], NULL)))
			return rc;
	return sw_sync(c, "setup");
}

static int run_list(struct sw_ctx *c, struct gemm_op *g, struct gspec *s, int n)
{
	for (int i = 0; i < n; i++) {
		int rc = sw_gemm_run(c, s[i].plan, g->buf[s[i].a], g->buf[s[i].b], g->buf[s[i].out]);
		if (rc)
			return rc;
	}
	return 0;
}

static int gemm_fwd(struct sw_ctx *c, void *st)
{
	struct gemm_op *g = st;
	return run_list(c, g, g->f, g->nf);
}

static int gemm_bwd(struct sw_ctx *c, void *st)
{
	struct gemm_op *g = st;
	int rc = run_list(c, g, g->bw, g->nb);
	if (rc || !g->has_bias)
		return rc;
	/* db = the sum of dY [M, N] over its M tokens */
	return sw_cuda(c, (cudaError_t)kj_sw_colsum(g->dt, g->buf[3], g->part, g->dbias, g->M, g->N, g->parts, c->stream),
		       "bias gradient");
}

/* count elements starting at element off of d, stride elements apart, to host doubles. */
static double *fetch(struct sw_ctx *c, const void *d, int dt, int64_t off, int64_t count, int64_t stride)
{
	size_t eb = sw_dtype_bytes(dt);
	char *raw = malloc((size_t)count * eb);
	if (!raw) {
		sw_fail(c, "check", "host memory");
		return NULL;
	}
	if (sw_cuda(c, cudaMemcpy2D(raw, eb, (const char *)d + off * (int64_t)eb, (size_t)stride * eb, eb,
				    (size_t)count, cudaMemcpyDeviceToHost), "check download")) {
		free(raw);
		return NULL;
	}
	/* reuse the context's converter through a tiny device-free path */
	double *out = malloc((size_t)count * sizeof(*out));
	if (out) {
		for (int64_t i = 0; i < count; i++) {
			double x;
			if (dt == SW_F32) {
				float f;
				memcpy(&f, raw + i * 4, 4);
				x = f;
			} else {
				uint16_t h;
				memcpy(&h, raw + i * 2, 2);
				if (dt == SW_BF16) {
					uint32_t u = (uint32_t)h << 16;
					float f;
					memcpy(&f, &u, 4);
					x = f;
				} else {
					int e = (h >> 10) & 31, m = h & 1023;
					x = e == 0 ? ldexp(m, -24) : e == 31 ? NAN : ldexp(m + 1024, e - 25);
					if (h >> 15)
						x = -x;
				}
			}
			out[i] = x;
		}
	} else {
		sw_fail(c, "check", "host memory");
	}
	free(raw);
	return out;
}

/* Sampled elements of one product (8 rows x 8 columns of 2 batches) against double dot products of
 * the same device inputs; adds squared error and squared reference into num/den. */
static int check_one(struct sw_ctx *c, struct gemm_op *g, const struct gspec *s, double *num, double *den)
{
	int rc = 0;
	double *bias = s->with_bias ? fetch(c, g->bias, g->dt, 0, s->N, 1) : NULL;
	if (s->with_bias && !bias)
		return KJ_EGPU;
	for (int bi = 0; bi < (s->batch > 1 ? 2 : 1); bi++) {
		int64_t b = bi ? s->batch - 1 : 0;
		for (int ii = 0; ii < 8; ii++) {
			int64_t i = (ii * (s->M - 1)) / 7;
			/* op(A) row i: A[i,:] (stride 1) or A[:,i] (stride lda) */
			double *ra = s->ta ? fetch(c, g->buf[s->a], g->dt, b * s->sa + i, s->K, s->lda)
					   : fetch(c, g->buf[s->a], g->dt, b * s->sa + i * s->lda, s->K, 1);
			double *co = fetch(c, g->buf[s->out], g->dt, b * s->sc + i * s->ldc, s->N, 1);
			if (!ra || !co) {
				free(ra);
				free(co);
				free(bias);
				return KJ_EGPU;
			}
			for (int jj = 0; jj < 8 && !rc; jj++) {
				int64_t j = (jj * (s->N - 1)) / 7;
				double *cb = s->tb ? fetch(c, g->buf[s->b], g->dt, b * s->sb + j * s->ldb, s->K, 1)
						   : fetch(c, g->buf[s->b], g->dt, b * s->sb + j, s->K, s->ldb);
				if (!cb) {
					rc = KJ_EGPU;
					break;
				}
				double ref = 0;
				for (int64_t k = 0; k < s->K; k++)
					ref += ra[k] * cb[k];
				ref *= s->alpha;
				if (bias)
					ref += bias[j];
				double e = co[j] - ref;
				*num += isnan(co[j]) ? 1e60 : e * e;
				*den += ref * ref;
				free(cb);
			}
			free(ra);
			free(co);
			if (rc) {
				free(bias);
				return rc;
			}
		}
	}
	free(bias);
	return 0;
}

/* The bias gradient on 8 sampled columns against double sums of the same dY column. */
static int check_dbias(struct sw_ctx *c, struct gemm_op *g, double *num, double *den)
{
	double *db = fetch(c, g->dbias, g->dt, 0, g->N, 1);
	if (!db)
		return KJ_EGPU;
	for (int jj = 0; jj < 8; jj++) {
		int64_t j = (jj * (g->N - 1)) / 7;
		double *col = fetch(c, g->buf[3], g->dt, j, g->M, g->N);
		if (!col) {
			free(db);
			return KJ_EGPU;
		}
		double ref = 0;
		for (int64_t i = 0; i < g->M; i++)
			ref += col[i];
		double e = db[j] - ref;
		*num += isnan(db[j]) ? 1e60 : e * e;
		*den += ref * ref;
		free(col);
	}
	free(db);
	return 0;
}

static int gemm_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct gemm_op *g = st;
	double nf = 0, df = 0, nb = 0, db = 0;
	int rc;
	if ((rc = gemm_fwd(c, g)) || (rc = gemm_bwd(c, g)) || (rc = sw_sync(c, "check run")))
		return rc;
	for (int i = 0; i < g->nf; i++)
		if ((rc = check_one(c, g, &g->f[i], &nf, &df)))
			return rc;
	for (int i = 0; i < g->nb; i++)
		if ((rc = check_one(c, g, &g->bw[i], &nb, &db)))
			return rc;
	if (g->has_bias && (rc = check_dbias(c, g, &nb, &db)))
		return rc;
	*err_f = df > 0 ? sqrt(nf / df) : 1e30;
	*err_b = db > 0 ? sqrt(nb / db) : 1e30;
	return 0;
}

static void gemm_teardown(struct sw_ctx *c, void *st)
{
	(void)c;
	free(st);
}

#define GEMM_OP(sym, opname, kind, ...)                                                            \
	static int setup_##sym(struct sw_ctx *c, int p, const int64_t *v, void **state)          \
	{                                                                                          \
		return setup_kind(c, kind, p, v, state);                                           \
	}                                                                                          \
	const struct sw_op sw_op_##sym = {opname, {__VA_ARGS__, NULL}, 0, setup_##sym, gemm_fwd, \
					  gemm_bwd, gemm_check, gemm_teardown};

GEMM_OP(linear1, "linear1", L1, "mp", "b", "l", "dim")
GEMM_OP(linear2, "linear2", L2, "mp", "b", "l", "dim")
GEMM_OP(linear3, "linear3", L3, "mp", "b", "l", "dim")
GEMM_OP(linear4, "linear4", L4, "mp", "b", "l", "dim")
GEMM_OP(linear_final, "linear_final", LF, "mp", "b", "l", "dim")
GEMM_OP(bmm, "bmm", BMM, "mp", "b", "h", "l", "dim")
GEMM_OP(baddbmm, "baddbmm", BADDBMM, "mp", "b", "h", "l", "dim")
GEMM_OP(ffn_gate_up, "ffn_gate_up", FGU, "mp", "b", "l", "dim", "intermediate_size")
GEMM_OP(ffn_down, "ffn_down", FDN, "mp", "b", "l", "dim", "intermediate_size")
GEMM_OP(lm_head, "lm_head", LMH, "mp", "b", "l", "dim", "vocab")
