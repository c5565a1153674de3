/* kjoule-sweep-worker: moe (mp, b, l, dim, moe_num_experts, intermediate_size, top_k): a router GEMM
 * [T, dim] x [dim, E], top-k softmax over the chosen logits, dispatch of each token to k of E experts
 * with a fixed capacity ceil(T*k/E) slots each (capacity factor 1; tokens past it are dropped, as in
 * GShard/Switch), each expert a GELU MLP dim -> intermediate/mp -> dim as two batched cuBLASLt GEMMs,
 * and the weighted combine. Backward: every input and weight gradient, router included. Checked on
 * sampled tokens against a double reference that follows the device's routing decisions. */
#include "ops_common.h"

struct moe {
	int p, dt;
	int64_t T, dim, E, I, k, cap;
	void *x, *wr, *w1, *w2, *logits, *xe, *h, *a, *ye, *y;
	void *dy, *dye, *da, *dw2, *dh, *dxe, *dw1, *dlog, *dx, *dwr;
	int *idx, *pos, *count;
	float *wts;
	int g_router, g_w1, g_w2, g_da, g_dw2, g_dxe, g_dw1, g_dx, g_dwr;
};

static int plan(struct sw_ctx *c, int p, int *out, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t lda,
		int64_t ldb, int64_t ldc, int64_t batch, int64_t sa, int64_t sb, int64_t sc, float beta)
{
	*out = sw_gemm_plan(c, p, ta, tb, M, N, K, lda, ldb, ldc, (int)batch, sa, sb, sc, 1.f, beta);
	return *out < 0 ? *out : 0;
}

static int moe_setup(struct sw_ctx *c, int p, const int64_t *v, void **state)
{
	struct moe *m = calloc(1, sizeof(*m));
	int rc;
	if (!m)
		return sw_fail(c, "setup", "host memory");
	*state = m;
	m->p = p, m->dt = sw_dtype_of(p);
	m->T = v[1] * v[2], m->dim = v[3], m->E = v[4], m->I = v[5] / v[0], m->k = v[6];
	if (m->I < 1 || m->k > 8 || m->k > m->E || m->E > 4096)
		return sw_fail(c, "shape", "need intermediate_size >= mp, top_k <= 8, top_k <= experts <= 4096");
	if ((rc = sw_need_pack(c, m->dt, m->dim, "dim")) || (rc = sw_need_pack(c, m->dt, m->I, "intermediate_size/mp")))
		return rc;
	m->cap = (m->T * m->k + m->E - 1) / m->E;
	int64_t T = m->T, D = m->dim, E = m->E, I = m->I, C = m->cap, K = m->k;
	float sd = (float)(1.0 / sqrt((double)D)), si = (float)(1.0 / sqrt((double)I));
	int dt = m->dt;
	if (!(m->x = sw_alloc(c, (size_t)(T * D), dt, 1.f)) || !(m->wr = sw_alloc(c, (size_t)(E * D), dt, sd)) ||
	    !(m->w1 = sw_alloc(c, (size_t)(E * I * D), dt, sd)) || !(m->w2 = sw_alloc(c, (size_t)(E * D * I), dt, si)) ||
	    !(m->logits = sw_alloc(c, (size_t)(T * E), dt, 1.f)) || !(m->xe = sw_alloc(c, (size_t)(E * C * D), dt, 1.f)) ||
	    !(m->h = sw_alloc(c, (size_t)(E * C * I), dt, 1.f)) || !(m->a = sw_alloc(c, (size_t)(E * C * I), dt, 1.f)) ||
	    !(m->ye = sw_alloc(c, (size_t)(E * C * D), dt, 1.f)) || !(m->y = sw_alloc(c, (size_t)(T * D), dt, 1.f)) ||
	    !(m->idx = sw_alloc(c, (size_t)(T * K), SW_I32, 1.f)) || !(m->pos = sw_alloc(c, (size_t)(T * K), SW_I32, 1.f)) ||
	    !(m->count = sw_alloc(c, (size_t)E, SW_I32, 1.f)) || !(m->wts = sw_alloc(c, (size_t)(T * K), SW_F32, 1.f)) ||
	    !(m->dy = sw_alloc(c, (size_t)(T * D), dt, 1.f)) || !(m->dye = sw_alloc(c, (size_t)(E * C * D), dt, 0)) ||
	    !(m->da = sw_alloc(c, (size_t)(E * C * I), dt, 0)) || !(m->dw2 = sw_alloc(c, (size_t)(E * D * I), dt, 1.f)) ||
	    !(m->dh = sw_alloc(c, (size_t)(E * C * I), dt, 0)) || !(m->dxe = sw_alloc(c, (size_t)(E * C * D), dt, 0)) ||
	    !(m->dw1 = sw_alloc(c, (size_t)(E * I * D), dt, 1.f)) || !(m->dlog = sw_alloc(c, (size_t)(T * E), dt, 0)) ||
	    !(m->dx = sw_alloc(c, (size_t)(T * D), dt, 1.f)) || !(m->dwr = sw_alloc(c, (size_t)(E * D), dt, 1.f)))
		return KJ_EGPU;
	if ((rc = plan(c, p, &m->g_router, 0, 1, T, E, D, D, D, E, 1, 0, 0, 0, 0.f)) ||
	    (rc = plan(c, p, &m->g_w1, 0, 1, C, I, D, D, D, I, E, C * D, I * D, C * I, 0.f)) ||
	    (rc = plan(c, p, &m->g_w2, 0, 1, C, D, I, I, I, D, E, C * I, D * I, C * D, 0.f)) ||
	    (rc = plan(c, p, &m->g_da, 0, 0, C, I, D, D, I, I, E, C * D, D * I, C * I, 0.f)) ||
	    (rc = plan(c, p, &m->g_dw2, 1, 0, D, I, C, D, I, I, E, C * D, C * I, D * I, 0.f)) ||
	    (rc = plan(c, p, &m->g_dxe, 0, 0, C, D, I, I, D, D, E, C * I, I * D, C * D, 0.f)) ||
	    (rc = plan(c, p, &m->g_dw1, 1, 0, I, D, C, I, D, D, E, C * I, C * D, I * D, 0.f)) ||
	    (rc = plan(c, p, &m->g_dx, 0, 0, T, D, E, E, D, D, 1, 0, 0, 0, 1.f)) ||
	    (rc = plan(c, p, &m->g_dwr, 1, 0, E, D, T, E, D, D, 1, 0, 0, 0, 0.f)))
		return rc;
	return sw_sync(c, "setup");
}

static int moe_fwd(struct sw_ctx *c, void *st)
{
	struct moe *m = st;
	int rc, cap = (int)m->cap;
	if ((rc = sw_gemm_run(c, m->g_router, m->x, m->wr, m->logits)) ||
	    (rc = SW_LAUNCH(c, kj_sw_moe_route(m->dt, m->logits, m->idx, m->pos, m->wts, m->count, m->T, (int)m->E,
					       (int)m->k, cap, c->stream), "moe router kernel")) ||
	    (rc = SW_LAUNCH(c, kj_sw_moe_dispatch(m->dt, m->x, m->idx, m->pos, m->xe, m->T, (int)m->k, m->dim, cap,
						  c->stream), "moe dispatch kernel")) ||
	    (rc = sw_gemm_run(c, m->g_w1, m->xe, m->w1, m->h)) ||
	    (rc = SW_LAUNCH(c, kj_sw_gelu_fwd(m->dt, m->h, m->a, m->E * m->cap * m->I, c->stream), "moe gelu kernel")) ||
	    (rc = sw_gemm_run(c, m->g_w2, m->a, m->w2, m->ye)))
		return rc;
	return SW_LAUNCH(c, kj_sw_moe_combine(m->dt, m->ye, m->idx, m->pos, m->wts, m->y, m->T, (int)m->k, m->dim, cap,
					      c->stream), "moe combine kernel");
}

static int moe_bwd(struct sw_ctx *c, void *st)
{
	struct moe *m = st;
	int rc, cap = (int)m->cap;
	if ((rc = SW_LAUNCH(c, kj_sw_moe_scatter(m->dt, m->dy, m->idx, m->pos, m->wts, m->dye, m->T, (int)m->k, m->dim,
						 cap, (int)m->E, c->stream), "moe combine backward kernel")) ||
	    (rc = SW_LAUNCH(c, kj_sw_moe_route_bwd(m->dt, m->dy, m->ye, m->idx, m->pos, m->wts, m->dlog, m->T, (int)m->E,
						   (int)m->k, m->dim, cap, c->stream), "moe router backward kernel")) ||
	    (rc = sw_gemm_run(c, m->g_da, m->dye, m->w2, m->da)) || (rc = sw_gemm_run(c, m->g_dw2, m->dye, m->a, m->dw2)) ||
	    (rc = SW_LAUNCH(c, kj_sw_gelu_bwd(m->dt, m->h, m->da, m->dh, m->E * m->cap * m->I, c->stream),
			    "moe gelu backward kernel")) ||
	    (rc = sw_gemm_run(c, m->g_dxe, m->dh, m->w1, m->dxe)) || (rc = sw_gemm_run(c, m->g_dw1, m->dh, m->xe, m->dw1)) ||
	    (rc = SW_LAUNCH(c, kj_sw_moe_combine(m->dt, m->dxe, m->idx, m->pos, NULL, m->dx, m->T, (int)m->k, m->dim, cap,
						 c->stream), "moe dispatch backward kernel")) ||
	    (rc = sw_gemm_run(c, m->g_dx, m->dlog, m->wr, m->dx)))
		return rc;
	return sw_gemm_run(c, m->g_dwr, m->dlog, m->x, m->dwr);
}

/* Expert e's W1 [I, dim] and W2 [dim, I] as doubles, downloaded once. */
static int expert(struct sw_ctx *c, struct moe *m, int64_t e, double **w1, double **w2)
{
	if (w1[e])
		return 0;
	w1[e] = sw_download_rows(c, m->w1, (size_t)(e * m->I), (size_t)m->I, (size_t)m->dim, m->dt);
	w2[e] = sw_download_rows(c, m->w2, (size_t)(e * m->dim), (size_t)m->dim, (size_t)m->I, m->dt);
	return w1[e] && w2[e] ? 0 : KJ_EGPU;
}

/* Reference y[t] and dx[t] of one token in double, with the device's expert choice and slots. */
static int ref_token(struct sw_ctx *c, struct moe *m, int64_t t, const double *wr, double **w1, double **w2,
		     const double *idx, const double *pos, double *y, double *dx)
{
	int64_t D = m->dim, I = m->I, K = m->k;
	double *x = sw_download_rows(c, m->x, (size_t)t, 1, (size_t)D, m->dt);
	double *g = sw_download_rows(c, m->dy, (size_t)t, 1, (size_t)D, m->dt);
	double *h = malloc((size_t)I * sizeof(double)), *da = malloc((size_t)I * sizeof(double));
	double lg[8], w[8], dw[8], mx = -INFINITY, sum = 0, sw = 0;
	int rc = KJ_EGPU;
	if (!x || !g || !h || !da)
		goto out;
	memset(y, 0, (size_t)D * sizeof(double));
	memset(dx, 0, (size_t)D * sizeof(double));
	for (int64_t s = 0; s < K; s++) {
		int64_t e = (int64_t)idx[t * K + s];
		lg[s] = 0;
		for (int64_t i = 0; i < D; i++)
			lg[s] += x[i] * wr[e * D + i];
		mx = fmax(mx, lg[s]);
	}
	for (int64_t s = 0; s < K; s++)
		sum += exp(lg[s] - mx);
	for (int64_t s = 0; s < K; s++) {
		int64_t e = (int64_t)idx[t * K + s];
		w[s] = exp(lg[s] - mx) / sum, dw[s] = 0;
		if (pos[t * K + s] < 0)
			continue;
		if (expert(c, m, e, w1, w2))
			goto out;
		const double *W1 = w1[e], *W2 = w2[e];
		for (int64_t j = 0; j < I; j++) {
			double a = 0;
			for (int64_t i = 0; i < D; i++)
				a += W1[j * D + i] * x[i];
			h[j] = a;
		}
		for (int64_t j = 0; j < I; j++)
			da[j] = 0;
		for (int64_t i = 0; i < D; i++) {
			double ye = 0;
			for (int64_t j = 0; j < I; j++) {
				ye += W2[i * I + j] * sw_gelu_ref(h[j]);
				da[j] += w[s] * W2[i * I + j] * g[i];
			}
			y[i] += w[s] * ye;
			dw[s] += g[i] * ye;
		}
		for (int64_t j = 0; j < I; j++) {
			double dh = sw_gelu_dref(h[j]) * da[j];
			for (int64_t i = 0; i < D; i++)
				dx[i] += W1[j * D + i] * dh;
		}
	}
	for (int64_t s = 0; s < K; s++)
		sw += w[s] * dw[s];
	for (int64_t s = 0; s < K; s++) {
		int64_t e = (int64_t)idx[t * K + s];
		double dl = w[s] * (dw[s] - sw);
		for (int64_t i = 0; i < D; i++)
			dx[i] += dl * wr[e * D + i];
	}
	rc = 0;
out:
	free(x), free(g), free(h), free(da);
	return rc;
}

static int moe_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct moe *m = st;
	int rc;
	double nf = 0, df = 0, nb = 0, db = 0;
	if ((rc = moe_fwd(c, m)) || (rc = moe_bwd(c, m)) || (rc = sw_sync(c, "check run")))
		return rc;
	int ntok = m->I * m->dim > (1 << 24) ? 2 : 8;
	double **w1 = calloc((size_t)m->E, sizeof(double *)), **w2 = calloc((size_t)m->E, sizeof(double *));
	double *wr = sw_download(c, m->wr, (size_t)(m->E * m->dim), m->dt);
	double *idx = sw_download(c, m->idx, (size_t)(m->T * m->k), SW_I32);
	double *pos = sw_download(c, m->pos, (size_t)(m->T * m->k), SW_I32);
	double *y = malloc((size_t)m->dim * sizeof(double)), *dx = malloc((size_t)m->dim * sizeof(double));
	rc = KJ_EGPU;
	if (!w1 || !w2 || !wr || !idx || !pos || !y || !dx)
		goto out;
	for (int q = 0; q < ntok; q++) {
		int64_t t = m->T <= ntok ? (q < m->T ? q : m->T - 1) : (q * (m->T - 1)) / (ntok - 1);
		double *oy = sw_download_rows(c, m->y, (size_t)t, 1, (size_t)m->dim, m->dt);
		double *odx = sw_download_rows(c, m->dx, (size_t)t, 1, (size_t)m->dim, m->dt);
		int bad = !oy || !odx || ref_token(c, m, t, wr, w1, w2, idx, pos, y, dx);
		for (int64_t i = 0; !bad && i < m->dim; i++) {
			sw_acc(oy[i], y[i], &nf, &df);
			sw_acc(odx[i], dx[i], &nb, &db);
		}
		free(oy), free(odx);
		if (bad)
			goto out;
	}
	*err_f = sw_err(nf, df), *err_b = sw_err(nb, db);
	rc = 0;
out:
	for (int64_t e = 0; w1 && w2 && e < m->E; e++)
		free(w1[e]), free(w2[e]);
	free(w1), free(w2), free(wr), free(idx), free(pos), free(y), free(dx);
	return rc;
}

static void moe_teardown(struct sw_ctx *c, void *s)
{
	(void)c;
	free(s);
}

const struct sw_op sw_op_moe = {"moe", {"mp", "b", "l", "dim", "moe_num_experts", "intermediate_size", "top_k", NULL},
				7, moe_setup, moe_fwd, moe_bwd, moe_check, moe_teardown};
