/* kjoule-sweep-worker: flash_atten (mp, b, h, l, dim): causal fused attention over b*h/mp heads of
 * size dim/h, scale 1/sqrt(dim/h); forward o (and the row log-sum-exp), backward dq, dk, dv.
 * cuDNN's fused attention (kj_gpu_sdpa.c) by default, else kjoule's kernels (worker_attn.cu picks:
 * kj_gpu_fa2_fwd.cu/_bwd.cu, worker_attn_wmma.cu, worker_attn_fp32.cu). Checked on whole heads
 * (the first and the last) in double. */
#include "ops_common.h"

struct attn {
	int dt;
	int64_t bh, l, d;
	float scale;
	void *q, *k, *v, *o, *dout, *dq, *dk, *dv;
	float *lse, *delta, *dq_acc;
};

static int attn_setup(struct sw_ctx *c, int p, const int64_t *v, void **state)
{
	struct attn *a = calloc(1, sizeof(*a));
	if (!a)
		return sw_fail(c, "setup", "host memory");
	*state = a;
	a->dt = sw_dtype_of(p);
	if (v[2] % v[0] || v[4] % v[2])
		return sw_fail(c, "shape", "h must divide by mp and dim by h");
	a->bh = v[1] * (v[2] / v[0]), a->l = v[3], a->d = v[4] / v[2];
	if (a->d > 128)
		return sw_fail(c, "shape", "head size dim/h = %lld > 128 is not supported by this kernel",
			       (long long)a->d);
	if (a->bh > 65535)
		return sw_fail(c, "shape", "b*h/mp = %lld > 65535 heads", (long long)a->bh);
	a->scale = (float)(1.0 / sqrt((double)a->d));
	size_t n = (size_t)(a->bh * a->l * a->d), r = (size_t)(a->bh * a->l);
	if (!(a->q = sw_alloc(c, n, a->dt, 1.f)) || !(a->k = sw_alloc(c, n, a->dt, 1.f)) ||
	    !(a->v = sw_alloc(c, n, a->dt, 1.f)) || !(a->o = sw_alloc(c, n, a->dt, 1.f)) ||
	    !(a->dout = sw_alloc(c, n, a->dt, 1.f)) || !(a->dq = sw_alloc(c, n, a->dt, 1.f)) ||
	    !(a->dk = sw_alloc(c, n, a->dt, 1.f)) || !(a->dv = sw_alloc(c, n, a->dt, 1.f)) ||
	    !(a->lse = sw_alloc(c, r, SW_F32, 1.f)) || !(a->delta = sw_alloc(c, r, SW_F32, 1.f)) ||
	    !(a->dq_acc = sw_alloc(c, n, SW_F32, 0)))
		return KJ_EGPU;
	return sw_sync(c, "setup");
}

static int attn_fwd(struct sw_ctx *c, void *st)
{
	struct attn *a = st;
	int rc = SW_LAUNCH(c, kj_sw_attn_fwd(a->dt, a->q, a->k, a->v, a->o, a->lse, a->bh, a->l, a->d, a->scale, 1,
					     c->stream), "flash attention forward kernel");
	snprintf(c->kernel_impl, sizeof(c->kernel_impl), "%s", kj_sw_attn_ran(0));
	return rc;
}

static int attn_bwd(struct sw_ctx *c, void *st)
{
	struct attn *a = st;
	int rc = SW_LAUNCH(c, kj_sw_attn_bwd(a->dt, a->q, a->k, a->v, a->o, a->dout, a->lse, a->delta, a->dq_acc,
					     a->dq, a->dk, a->dv, a->bh, a->l, a->d, a->scale, 1, c->stream),
			   "flash attention backward kernels");
	snprintf(c->kernel_impl, sizeof(c->kernel_impl), "%s", kj_sw_attn_ran(1));
	return rc;
}

/* Whole-head reference in double (P kept: l*l doubles) against the device's o, dq, dk, dv. */
static int check_head(struct sw_ctx *c, struct attn *a, int64_t h, double *acc)
{
	int64_t l = a->l, d = a->d, ld = l * d;
	size_t r0 = (size_t)(h * l);
	double *Q = sw_download_rows(c, a->q, r0, (size_t)l, (size_t)d, a->dt);
	double *K = sw_download_rows(c, a->k, r0, (size_t)l, (size_t)d, a->dt);
	double *V = sw_download_rows(c, a->v, r0, (size_t)l, (size_t)d, a->dt);
	double *dO = sw_download_rows(c, a->dout, r0, (size_t)l, (size_t)d, a->dt);
	double *O = sw_download_rows(c, a->o, r0, (size_t)l, (size_t)d, a->dt);
	double *dQ = sw_download_rows(c, a->dq, r0, (size_t)l, (size_t)d, a->dt);
	double *dK = sw_download_rows(c, a->dk, r0, (size_t)l, (size_t)d, a->dt);
	double *dV = sw_download_rows(c, a->dv, r0, (size_t)l, (size_t)d, a->dt);
	double *P = malloc((size_t)(l * l) * sizeof(double));
	double *ro = calloc((size_t)ld, sizeof(double)), *rq = calloc((size_t)ld, sizeof(double));
	double *rk = calloc((size_t)ld, sizeof(double)), *rv = calloc((size_t)ld, sizeof(double));
	double *dp = malloc((size_t)l * sizeof(double));
	int rc = KJ_EGPU;
	if (!Q || !K || !V || !dO || !O || !dQ || !dK || !dV || !P || !ro || !rq || !rk || !rv || !dp)
		goto out;
	for (int64_t i = 0; i < l; i++) {
		double mx = -INFINITY, sum = 0, D = 0;
		double *Pi = P + i * l;
		for (int64_t j = 0; j <= i; j++) {
			double s = 0;
			for (int64_t x = 0; x < d; x++)
				s += Q[i * d + x] * K[j * d + x];
			Pi[j] = s * a->scale;
			mx = fmax(mx, Pi[j]);
		}
		for (int64_t j = 0; j <= i; j++)
			sum += (Pi[j] = exp(Pi[j] - mx));
		for (int64_t j = 0; j < l; j++)
			Pi[j] = j <= i ? Pi[j] / sum : 0;
		for (int64_t j = 0; j <= i; j++)
			for (int64_t x = 0; x < d; x++)
				ro[i * d + x] += Pi[j] * V[j * d + x];
		for (int64_t x = 0; x < d; x++)
			D += dO[i * d + x] * ro[i * d + x];
		for (int64_t j = 0; j <= i; j++) {
			double s = 0;
			for (int64_t x = 0; x < d; x++)
				s += dO[i * d + x] * V[j * d + x];
			dp[j] = Pi[j] * (s - D); /* dS */
		}
		for (int64_t j = 0; j <= i; j++)
			for (int64_t x = 0; x < d; x++) {
				rq[i * d + x] += a->scale * dp[j] * K[j * d + x];
				rk[j * d + x] += a->scale * dp[j] * Q[i * d + x];
				rv[j * d + x] += Pi[j] * dO[i * d + x];
			}
	}
	for (int64_t e = 0; e < ld; e++) {
		sw_acc(O[e], ro[e], acc, acc + 1);
		sw_acc(dQ[e], rq[e], acc + 2, acc + 3);
		sw_acc(dK[e], rk[e], acc + 2, acc + 3);
		sw_acc(dV[e], rv[e], acc + 2, acc + 3);
	}
	rc = 0;
out:
	if (rc)
		sw_fail(c, "check", "download or host memory for a %lld x %lld head", (long long)l, (long long)d);
	free(Q), free(K), free(V), free(dO), free(O), free(dQ), free(dK), free(dV), free(P);
	free(ro), free(rq), free(rk), free(rv), free(dp);
	return rc;
}

static int attn_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct attn *a = st;
	double acc[4] = {0, 0, 0, 0};
	int rc;
	if ((rc = attn_fwd(c, a)) || (rc = attn_bwd(c, a)) || (rc = sw_sync(c, "check run")))
		return rc;
	if ((rc = check_head(c, a, 0, acc)))
		return rc;
	if (a->bh > 1 && a->l <= 1024 && (rc = check_head(c, a, a->bh - 1, acc)))
		return rc;
	*err_f = sw_err(acc[0], acc[1]), *err_b = sw_err(acc[2], acc[3]);
	return 0;
}

static void attn_teardown(struct sw_ctx *c, void *s)
{
	(void)c;
	free(s);
}

const struct sw_op sw_op_flash_atten = {"flash_atten", {"mp", "b", "h", "l", "dim", NULL}, 5, attn_setup,
					attn_fwd, attn_bwd, attn_check, attn_teardown};
