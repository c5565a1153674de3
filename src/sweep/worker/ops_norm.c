/* kjoule-sweep-worker: layernorm and RMSlayernorm (b, l, dim: rows b*l of dim), forward and backward
 * (dx, dgamma, dbeta), checked on sampled rows (and the full column sums where small enough). */
#include "ops_common.h"

struct norm {
	int dt, rms;
	int64_t rows, cols;
	void *x, *g, *b, *y, *dy, *dx, *dg, *db;
	float *mean, *rstd, *pg, *pb;
	int nparts;
};

static int norm_setup(struct sw_ctx *c, int p, const int64_t *v, void **state, int rms)
{
	struct norm *n = calloc(1, sizeof(*n));
	int rc;
	if (!n)
		return sw_fail(c, "setup", "host memory");
	*state = n;
	n->dt = sw_dtype_of(p), n->rms = rms, n->rows = v[0] * v[1], n->cols = v[2];
	/* backward blocks (each a contiguous range of at least 8 rows, its dgamma/dbeta partial sums in
	 * registers): room for 8 per SM; the launcher takes about 1024 threads a SM of them */
	int64_t parts = 8 * (int64_t)(c->sms > 0 ? c->sms : 132), per8 = n->rows / 8 > 0 ? n->rows / 8 : 1;
	n->nparts = (int)(parts < per8 ? parts : per8);
	if ((rc = sw_need_pack(c, n->dt, n->cols, "dim")))
		return rc;
	size_t rc_n = (size_t)(n->rows * n->cols), cn = (size_t)n->cols;
	if (!(n->x = sw_alloc(c, rc_n, n->dt, 1.f)) || !(n->g = sw_alloc(c, cn, n->dt, 1.f)) ||
	    !(n->b = sw_alloc(c, cn, n->dt, 1.f)) || !(n->y = sw_alloc(c, rc_n, n->dt, 1.f)) ||
	    !(n->dy = sw_alloc(c, rc_n, n->dt, 1.f)) || !(n->dx = sw_alloc(c, rc_n, n->dt, 1.f)) ||
	    !(n->dg = sw_alloc(c, cn, n->dt, 1.f)) || !(n->db = sw_alloc(c, cn, n->dt, 1.f)) ||
	    !(n->mean = sw_alloc(c, (size_t)n->rows, SW_F32, 1.f)) ||
	    !(n->rstd = sw_alloc(c, (size_t)n->rows, SW_F32, 1.f)) ||
	    !(n->pg = sw_alloc(c, (size_t)n->nparts * cn, SW_F32, 1.f)) ||
	    !(n->pb = sw_alloc(c, (size_t)n->nparts * cn, SW_F32, 1.f)))
		return KJ_EGPU;
	return sw_sync(c, "setup");
}

static int ln_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return norm_setup(c, p, v, s, 0); }
static int rms_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return norm_setup(c, p, v, s, 1); }

static int norm_fwd(struct sw_ctx *c, void *s)
{
	struct norm *n = s;
	return SW_LAUNCH(c, kj_sw_layernorm_fwd(n->dt, n->x, n->g, n->b, n->y, n->mean, n->rstd, n->rows, n->cols,
						n->rms, c->stream), "norm forward kernel");
}

static int norm_bwd(struct sw_ctx *c, void *s)
{
	struct norm *n = s;
	return SW_LAUNCH(c, kj_sw_layernorm_bwd(n->dt, n->x, n->g, n->dy, n->mean, n->rstd, n->dx, n->pg, n->pb,
						n->nparts, n->dg, n->db, n->rows, n->cols, n->rms, c->stream),
			 "norm backward kernels");
}

/* Reference of one row in double: y and dx (and this row's dgamma/dbeta terms into rg/rb). */
static void norm_ref_row(const double *x, const double *g, const double *b, const double *dy, int64_t n, int rms,
			 double *y, double *dx, double *rg, double *rb)
{
	double mu = 0, var = 0, c1 = 0, c2 = 0;
	for (int64_t i = 0; i < n; i++)
		mu += x[i];
	mu = rms ? 0 : mu / n;
	for (int64_t i = 0; i < n; i++)
		var += (x[i] - mu) * (x[i] - mu);
	double rs = 1 / sqrt(var / n + 1e-5);
	for (int64_t i = 0; i < n; i++) {
		double xh = (x[i] - mu) * rs, w = g[i] * dy[i];
		y[i] = xh * g[i] + (rms ? 0 : b[i]);
		c1 += xh * w, c2 += w;
		if (rg)
			rg[i] += dy[i] * xh, rb[i] += dy[i];
	}
	c1 /= n, c2 = rms ? 0 : c2 / n;
	for (int64_t i = 0; i < n; i++)
		dx[i] = (g[i] * dy[i] - (x[i] - mu) * rs * c1 - c2) * rs;
}

static int norm_check(struct sw_ctx *c, void *s, double *err_f, double *err_b)
{
	struct norm *n = s;
	int rc = KJ_EGPU, full = n->rows * n->cols <= (1 << 22);
	int64_t cols = n->cols, nrows = full ? n->rows : SW_CHECK_ROWS;
	double nf = 0, df = 0, nb = 0, db = 0;
	double *g = NULL, *b = NULL, *rg = NULL, *rb = NULL, *dg = NULL, *dbb = NULL, *yr = NULL, *dxr = NULL;
	if ((rc = norm_fwd(c, n)) || (rc = norm_bwd(c, n)))
		return rc;
	rc = KJ_EGPU;
	g = sw_download(c, n->g, (size_t)cols, n->dt), b = sw_download(c, n->b, (size_t)cols, n->dt);
	rg = calloc((size_t)cols, sizeof(double)), rb = calloc((size_t)cols, sizeof(double));
	yr = malloc((size_t)cols * sizeof(double)), dxr = malloc((size_t)cols * sizeof(double));
	if (!g || !b || !rg || !rb || !yr || !dxr)
		goto out;
	for (int64_t k = 0; k < nrows; k++) {
		int64_t r = full ? k : sw_check_row((int)k, n->rows);
		double *x = sw_download_rows(c, n->x, (size_t)r, 1, (size_t)cols, n->dt);
		double *dy = sw_download_rows(c, n->dy, (size_t)r, 1, (size_t)cols, n->dt);
		double *y = sw_download_rows(c, n->y, (size_t)r, 1, (size_t)cols, n->dt);
		double *dx = sw_download_rows(c, n->dx, (size_t)r, 1, (size_t)cols, n->dt);
		int ok = x && dy && y && dx;
		if (ok) {
			norm_ref_row(x, g, b, dy, cols, n->rms, yr, dxr, full ? rg : NULL, rb);
			for (int64_t i = 0; i < cols; i++)
				sw_acc(y[i], yr[i], &nf, &df), sw_acc(dx[i], dxr[i], &nb, &db);
		}
		free(x), free(dy), free(y), free(dx);
		if (!ok)
			goto out;
	}
	if (full) {
		dg = sw_download(c, n->dg, (size_t)cols, n->dt), dbb = sw_download(c, n->db, (size_t)cols, n->dt);
		if (!dg || !dbb)
			goto out;
		for (int64_t i = 0; i < cols; i++) {
			sw_acc(dg[i], rg[i], &nb, &db);
			if (!n->rms)
				sw_acc(dbb[i], rb[i], &nb, &db);
		}
	}
	*err_f = sw_err(nf, df), *err_b = sw_err(nb, db);
	rc = 0;
out:
	free(g), free(b), free(rg), free(rb), free(dg), free(dbb), free(yr), free(dxr);
	return rc;
}

static void norm_teardown(struct sw_ctx *c, void *s)
{
	(void)c;
	free(s);
}

const struct sw_op sw_op_layernorm = {"layernorm", {"b", "l", "dim", NULL}, 3, ln_setup, norm_fwd, norm_bwd,
				      norm_check, norm_teardown};
const struct sw_op sw_op_rmsnorm = {"RMSlayernorm", {"b", "l", "dim", NULL}, 3, rms_setup, norm_fwd, norm_bwd,
				    norm_check, norm_teardown};
