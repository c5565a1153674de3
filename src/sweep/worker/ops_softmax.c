/* kjoule-sweep-worker: softmax (mp, b, h, l: rows b*h/mp*l of l), ScaledUpperTriangMaskedSoftmax
 * (the same with scale and a causal mask, Megatron's fused kernel) and fillmask (mp, b, h, l, dim:
 * scores [b, h/mp, l, l] filled with -10000 where a [b, l, l] mask is set), forward and backward. */
#include "ops_common.h"

#define MASKED_SCALE 0.125f /* 1/sqrt(64), a typical head size */

struct smx {
	int dt, causal, fill;
	float scale;
	int64_t rows, cols, heads;
	void *x, *y, *dy, *dx;
	uint8_t *mask;
};

static int smx_setup(struct sw_ctx *c, int p, const int64_t *v, void **state, int kind)
{
	struct smx *s = calloc(1, sizeof(*s));
	int rc;
	if (!s)
		return sw_fail(c, "setup", "host memory");
	*state = s;
	s->dt = sw_dtype_of(p);
	if (v[2] < v[0] || v[2] % v[0])
		return sw_fail(c, "shape", "h must be a multiple of mp");
	s->heads = v[2] / v[0];
	s->rows = v[1] * s->heads * v[3], s->cols = v[3];
	s->causal = kind == 1, s->fill = kind == 2;
	s->scale = kind == 1 ? MASKED_SCALE : 1.f;
	if ((rc = sw_need_pack(c, s->dt, s->cols, "l")))
		return rc;
	size_t n = (size_t)(s->rows * s->cols);
	float sc = kind == 1 ? 8.f : 2.f;
	if (!(s->x = sw_alloc(c, n, s->dt, sc)) || !(s->y = sw_alloc(c, n, s->dt, 1.f)) ||
	    !(s->dy = sw_alloc(c, n, s->dt, 1.f)) || !(s->dx = sw_alloc(c, n, s->dt, 1.f)))
		return KJ_EGPU;
	if (s->fill && !(s->mask = sw_alloc(c, (size_t)(v[1] * v[3] * v[3]), SW_U8, 1.f)))
		return KJ_EGPU;
	return sw_sync(c, "setup");
}

static int softmax_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return smx_setup(c, p, v, s, 0); }
static int masked_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return smx_setup(c, p, v, s, 1); }
static int fill_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return smx_setup(c, p, v, s, 2); }

static int smx_fwd(struct sw_ctx *c, void *st)
{
	struct smx *s = st;
	if (s->fill)
		return SW_LAUNCH(c, kj_sw_fillmask(s->dt, s->x, s->mask, s->y, s->rows * s->cols, s->cols * s->cols,
						   s->heads, -10000.f, c->stream), "fillmask kernel");
	return SW_LAUNCH(c, kj_sw_softmax_fwd(s->dt, s->x, s->y, s->rows, s->cols, s->scale, s->causal, c->stream),
			 "softmax forward kernel");
}

static int smx_bwd(struct sw_ctx *c, void *st)
{
	struct smx *s = st;
	if (s->fill)
		return SW_LAUNCH(c, kj_sw_fillmask(s->dt, s->dy, s->mask, s->dx, s->rows * s->cols, s->cols * s->cols,
						   s->heads, 0.f, c->stream), "fillmask backward kernel");
	return SW_LAUNCH(c, kj_sw_softmax_bwd(s->dt, s->y, s->dy, s->dx, s->rows, s->cols, s->scale, c->stream),
			 "softmax backward kernel");
}

static int smx_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct smx *s = st;
	int rc;
	int64_t n = s->cols;
	double nf = 0, df = 0, nb = 0, db = 0;
	if ((rc = smx_fwd(c, s)) || (rc = smx_bwd(c, s)))
		return rc;
	double *ref = malloc((size_t)n * sizeof(double));
	if (!ref)
		return sw_fail(c, "check", "host memory");
	for (int k = 0; k < SW_CHECK_ROWS; k++) {
		int64_t r = sw_check_row(k, s->rows), qi = r % s->cols;
		double *x = sw_download_rows(c, s->x, (size_t)r, 1, (size_t)n, s->dt);
		double *y = sw_download_rows(c, s->y, (size_t)r, 1, (size_t)n, s->dt);
		double *dy = sw_download_rows(c, s->dy, (size_t)r, 1, (size_t)n, s->dt);
		double *dx = sw_download_rows(c, s->dx, (size_t)r, 1, (size_t)n, s->dt);
		double *mk = NULL;
		int ok = x && y && dy && dx;
		if (ok && s->fill) {
			/* mask row of this score row: batch r / (heads*l), row r % l */
			int64_t bi = r / (s->heads * s->cols);
			mk = sw_download_rows(c, s->mask, (size_t)(bi * s->cols + qi), 1, (size_t)n, SW_U8);
			ok = mk != NULL;
			for (int64_t i = 0; ok && i < n; i++) {
				sw_acc(y[i], mk[i] ? -10000.0 : x[i], &nf, &df);
				sw_acc(dx[i], mk[i] ? 0.0 : dy[i], &nb, &db);
			}
		} else if (ok) {
			double mx = -INFINITY, sum = 0, dot = 0;
			for (int64_t i = 0; i < n; i++)
				if (!(s->causal && i > qi))
					mx = fmax(mx, s->scale * x[i]);
			for (int64_t i = 0; i < n; i++) {
				ref[i] = (s->causal && i > qi) ? 0 : exp(s->scale * x[i] - mx);
				sum += ref[i];
			}
			for (int64_t i = 0; i < n; i++)
				ref[i] /= sum, dot += ref[i] * dy[i];
			for (int64_t i = 0; i < n; i++) {
				sw_acc(y[i], ref[i], &nf, &df);
				sw_acc(dx[i], s->scale * ref[i] * (dy[i] - dot), &nb, &db);
			}
		}
		free(x), free(y), free(dy), free(dx), free(mk);
		if (!ok) {
			free(ref);
			return KJ_EGPU;
		}
	}
	free(ref);
	*err_f = sw_err(nf, df), *err_b = sw_err(nb, db);
	return 0;
}

static void smx_teardown(struct sw_ctx *c, void *s)
{
	(void)c;
	free(s);
}

const struct sw_op sw_op_softmax = {"softmax", {"mp", "b", "h", "l", NULL}, 4, softmax_setup, smx_fwd, smx_bwd,
				    smx_check, smx_teardown};
const struct sw_op sw_op_masked_softmax = {"ScaledUpperTriangMaskedSoftmax", {"mp", "b", "h", "l", NULL}, 4,
					   masked_setup, smx_fwd, smx_bwd, smx_check, smx_teardown};
const struct sw_op sw_op_fillmask = {"fillmask", {"mp", "b", "h", "l", "dim", NULL}, 5, fill_setup, smx_fwd,
				     smx_bwd, smx_check, smx_teardown};
