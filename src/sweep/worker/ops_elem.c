/* kjoule-sweep-worker: elementwise and gather operators: gelu (mp, b, l, dim: the FFN activation
 * [b*l, 4*dim/mp], tanh form), silu_mul (mp, b, l, intermediate_size: LLaMA's silu(gate) * up over
 * [b*l, intermediate/mp]), res_add (b, l, dim), RoPE (mp, b, h, l, dim: x [l, b*h/mp, dim/h],
 * rotate-half), embedding (mp, b, l, dim: rows of a [vocab/mp, dim] table). Checked on windows of
 * elements (first and last 64 Ki) or sampled rows against double references. */
#include "ops_common.h"

#define WIN ((int64_t)1 << 16)

enum { GELU, RES, ROPE, EMB, SILU };

struct elem {
	int kind, dt;
	int64_t n, l, bh, d, rows, vocab;
	void *x, *y, *z, *dy, *dx, *dz;
	float *cs, *sn, *dtab;
	int *ids;
};

static int elem_setup(struct sw_ctx *c, int p, const int64_t *v, void **state, int kind)
{
	struct elem *e = calloc(1, sizeof(*e));
	int rc;
	if (!e)
		return sw_fail(c, "setup", "host memory");
	*state = e;
	e->kind = kind, e->dt = sw_dtype_of(p);
	switch (kind) {
	case GELU:
		e->n = v[1] * v[2] * (4 * v[3] / v[0]);
		break;
	case RES:
		e->n = v[0] * v[1] * v[2];
		break;
	case SILU:
		if (v[3] % v[0])
			return sw_fail(c, "shape", "mp must divide intermediate_size");
		e->n = v[1] * v[2] * (v[3] / v[0]);
		break;
	case ROPE:
		if (v[2] % v[0] || v[4] % v[2])
			return sw_fail(c, "shape", "h must divide by mp and dim by h");
		e->l = v[3], e->bh = v[1] * (v[2] / v[0]), e->d = v[4] / v[2], e->n = e->l * e->bh * e->d;
		if (e->d % 2 || (rc = sw_need_pack(c, e->dt, e->d / 2, "dim/h/2")))
			return e->d % 2 ? sw_fail(c, "shape", "dim/h must be even") : rc;
		break;
	default:
		e->rows = v[1] * v[2], e->d = v[3], e->vocab = SW_VOCAB / v[0], e->n = e->rows * e->d;
		if ((rc = sw_need_pack(c, e->dt, e->d, "dim")))
			return rc;
		break;
	}
	if ((rc = sw_need_pack(c, e->dt, e->n, "element count")))
		return rc;
	size_t n = (size_t)e->n;
	if (kind == EMB) {
		if (!(e->x = sw_alloc(c, (size_t)(e->vocab * e->d), e->dt, 1.f)) ||
		    !(e->ids = sw_alloc(c, (size_t)e->rows, SW_I32, (float)e->vocab)) ||
		    !(e->dtab = sw_alloc(c, (size_t)(e->vocab * e->d), SW_F32, 1.f)))
			return KJ_EGPU;
	} else if (!(e->x = sw_alloc(c, n, e->dt, 2.f))) {
		return KJ_EGPU;
	}
	if (!(e->y = sw_alloc(c, n, e->dt, 1.f)) || !(e->dy = sw_alloc(c, n, e->dt, 1.f)))
		return KJ_EGPU;
	if (kind != EMB && !(e->dx = sw_alloc(c, n, e->dt, 1.f)))
		return KJ_EGPU;
	if ((kind == RES || kind == SILU) && (!(e->z = sw_alloc(c, n, e->dt, 1.f)) || !(e->dz = sw_alloc(c, n, e->dt, 1.f))))
		return KJ_EGPU;
	if (kind == ROPE) {
		size_t tn = (size_t)(e->l * e->d / 2);
		float *hc = malloc(tn * sizeof(float)), *hs = malloc(tn * sizeof(float));
		if (!hc || !hs) {
			free(hc), free(hs);
			return sw_fail(c, "setup", "host memory");
		}
		for (int64_t pos = 0; pos < e->l; pos++)
			for (int64_t j = 0; j < e->d / 2; j++) {
				double th = pos * pow(10000.0, -2.0 * (double)j / (double)e->d);
				hc[pos * (e->d / 2) + j] = (float)cos(th), hs[pos * (e->d / 2) + j] = (float)sin(th);
			}
		rc = KJ_EGPU;
		if ((e->cs = sw_alloc(c, tn, SW_F32, 0)) && (e->sn = sw_alloc(c, tn, SW_F32, 0)) &&
		    !sw_cuda(c, cudaMemcpy(e->cs, hc, tn * sizeof(float), cudaMemcpyHostToDevice), "cos table") &&
		    !sw_cuda(c, cudaMemcpy(e->sn, hs, tn * sizeof(float), cudaMemcpyHostToDevice), "sin table"))
			rc = 0;
		free(hc), free(hs);
		if (rc)
			return rc;
	}
	return sw_sync(c, "setup");
}

static int gelu_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return elem_setup(c, p, v, s, GELU); }
static int res_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return elem_setup(c, p, v, s, RES); }
static int rope_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return elem_setup(c, p, v, s, ROPE); }
static int emb_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return elem_setup(c, p, v, s, EMB); }
static int silu_setup(struct sw_ctx *c, int p, const int64_t *v, void **s) { return elem_setup(c, p, v, s, SILU); }

static int elem_fwd(struct sw_ctx *c, void *st)
{
	struct elem *e = st;
	switch (e->kind) {
	case GELU:
		return SW_LAUNCH(c, kj_sw_gelu_fwd(e->dt, e->x, e->y, e->n, c->stream), "gelu kernel");
	case RES:
		return SW_LAUNCH(c, kj_sw_add(e->dt, e->x, e->z, e->y, e->n, c->stream), "add kernel");
	case SILU:
		return SW_LAUNCH(c, kj_sw_silu_mul_fwd(e->dt, e->x, e->z, e->y, e->n, c->stream), "silu_mul kernel");
	case ROPE:
		return SW_LAUNCH(c, kj_sw_rope(e->dt, e->x, e->cs, e->sn, e->y, e->l, e->bh, e->d, 0, c->stream),
				 "rope kernel");
	default:
		return SW_LAUNCH(c, kj_sw_embedding_fwd(e->dt, e->ids, e->x, e->y, e->rows, e->d, c->stream),
				 "embedding kernel");
	}
}

/* Backward: gelu dx = dy gelu'(x); res_add the residual stream's two incoming gradients summed
 * (dx = dy + dz, as autograd accumulates them; the operator table counts the same); RoPE the inverse rotation of dy;
 * embedding the table gradient (zeroed, then rows scatter-added in fp32). */
static int elem_bwd(struct sw_ctx *c, void *st)
{
	struct elem *e = st;
	switch (e->kind) {
	case GELU:
		return SW_LAUNCH(c, kj_sw_gelu_bwd(e->dt, e->x, e->dy, e->dx, e->n, c->stream), "gelu backward kernel");
	case RES:
		return SW_LAUNCH(c, kj_sw_add(e->dt, e->dy, e->dz, e->dx, e->n, c->stream), "add backward kernel");
	case SILU: /* dgate into dx, dup into dz */
		return SW_LAUNCH(c, kj_sw_silu_mul_bwd(e->dt, e->x, e->z, e->dy, e->dx, e->dz, e->n, c->stream),
				 "silu_mul backward kernel");
	case ROPE:
		return SW_LAUNCH(c, kj_sw_rope(e->dt, e->dy, e->cs, e->sn, e->dx, e->l, e->bh, e->d, 1, c->stream),
				 "rope backward kernel");
	default:
		if (sw_cuda(c, cudaMemsetAsync(e->dtab, 0, (size_t)(e->vocab * e->d) * sizeof(float), c->stream),
			    "embedding grad memset"))
			return KJ_EGPU;
		return SW_LAUNCH(c, kj_sw_embedding_bwd(e->dt, e->ids, e->dy, e->dtab, e->rows, e->d, c->stream),
				 "embedding backward kernel");
	}
}

/* One window of elements [off, off+len) of the elementwise ops (gelu, res_add, rope: whole rows of d). */
static int check_window(struct sw_ctx *c, struct elem *e, int64_t off, int64_t len, double *acc)
{
	double *x = sw_download_range(c, e->x, (size_t)off, (size_t)len, e->dt);
	double *y = sw_download_range(c, e->y, (size_t)off, (size_t)len, e->dt);
	double *dy = sw_download_range(c, e->dy, (size_t)off, (size_t)len, e->dt);
	double *dx = sw_download_range(c, e->dx, (size_t)off, (size_t)len, e->dt);
	double *z = e->z ? sw_download_range(c, e->z, (size_t)off, (size_t)len, e->dt) : NULL;
	double *dz = e->dz ? sw_download_range(c, e->dz, (size_t)off, (size_t)len, e->dt) : NULL;
	int ok = x && y && dy && dx && (!e->z || (z && dz));
	for (int64_t i = 0; ok && i < len; i++) {
		if (e->kind == GELU) {
			sw_acc(y[i], sw_gelu_ref(x[i]), acc, acc + 1);
			sw_acc(dx[i], dy[i] * sw_gelu_dref(x[i]), acc + 2, acc + 3);
		} else if (e->kind == RES) {
			sw_acc(y[i], x[i] + z[i], acc, acc + 1);
			sw_acc(dx[i], dy[i] + dz[i], acc + 2, acc + 3);
		} else if (e->kind == SILU) { /* x gate, z up; dx dgate, dz dup */
			double sg = 1.0 / (1.0 + exp(-x[i])), silu = x[i] * sg;
			sw_acc(y[i], silu * z[i], acc, acc + 1);
			sw_acc(dx[i], dy[i] * z[i] * (sg + x[i] * sg * (1.0 - sg)), acc + 2, acc + 3);
			sw_acc(dz[i], dy[i] * silu, acc + 2, acc + 3);
		} else {
			int64_t g = off + i, row = g / e->d, j = g % e->d, h = e->d / 2, pos = row / e->bh;
			int64_t jj = j % h;
			double th = pos * pow(10000.0, -2.0 * (double)jj / (double)e->d), co = cos(th), si = sin(th);
			double a = x[i - j + jj], b = x[i - j + jj + h], da = dy[i - j + jj], dbv = dy[i - j + jj + h];
			double ry = j < h ? a * co - b * si : b * co + a * si;
			double rdx = j < h ? da * co + dbv * si : dbv * co - da * si;
			sw_acc(y[i], ry, acc, acc + 1);
			sw_acc(dx[i], rdx, acc + 2, acc + 3);
		}
	}
	free(x), free(y), free(dy), free(dx), free(z), free(dz);
	return ok ? 0 : KJ_EGPU;
}

static int emb_check(struct sw_ctx *c, struct elem *e, double *acc)
{
	int rc = KJ_EGPU;
	double *ids = sw_download(c, e->ids, (size_t)e->rows, SW_I32);
	double *ref = calloc((size_t)e->d, sizeof(double));
	if (!ids || !ref)
		goto out;
	for (int k = 0; k < SW_CHECK_ROWS; k++) {
		int64_t r = sw_check_row(k, e->rows), id = (int64_t)ids[r];
		double *y = sw_download_rows(c, e->y, (size_t)r, 1, (size_t)e->d, e->dt);
		double *t = sw_download_rows(c, e->x, (size_t)id, 1, (size_t)e->d, e->dt);
		double *g = sw_download_rows(c, e->dtab, (size_t)id, 1, (size_t)e->d, SW_F32);
		int ok = y && t && g;
		if (ok) {
			/* the table row's gradient: the sum of dy over every position holding this id */
			memset(ref, 0, (size_t)e->d * sizeof(double));
			for (int64_t q = 0; q < e->rows && ok; q++) {
				if ((int64_t)ids[q] != id)
					continue;
				double *dy = sw_download_rows(c, e->dy, (size_t)q, 1, (size_t)e->d, e->dt);
				ok = dy != NULL;
				for (int64_t i = 0; ok && i < e->d; i++)
					ref[i] += dy[i];
				free(dy);
			}
			for (int64_t i = 0; ok && i < e->d; i++) {
				sw_acc(y[i], t[i], acc, acc + 1);
				sw_acc(g[i], ref[i], acc + 2, acc + 3);
			}
		}
		free(y), free(t), free(g);
		if (!ok)
			goto out;
	}
	rc = 0;
out:
	free(ids), free(ref);
	return rc;
}

static int elem_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct elem *e = st;
	double acc[4] = {0, 0, 0, 0};
	int rc;
	if ((rc = elem_fwd(c, e)) || (rc = elem_bwd(c, e)))
		return rc;
	if (e->kind == EMB) {
		rc = emb_check(c, e, acc);
	} else {
		int64_t w = e->n < WIN ? e->n : WIN;
		if (e->kind == ROPE)
			w = w / e->d * e->d > 0 ? w / e->d * e->d : e->d;
		rc = check_window(c, e, 0, w, acc);
		if (!rc && e->n > w)
			rc = check_window(c, e, e->n - w, w, acc);
	}
	if (rc)
		return rc;
	*err_f = sw_err(acc[0], acc[1]), *err_b = sw_err(acc[2], acc[3]);
	return 0;
}

static void elem_teardown(struct sw_ctx *c, void *s)
{
	(void)c;
	free(s);
}

const struct sw_op sw_op_gelu = {"gelu", {"mp", "b", "l", "dim", NULL}, 4, gelu_setup, elem_fwd, elem_bwd,
				 elem_check, elem_teardown};
const struct sw_op sw_op_silu_mul = {"silu_mul", {"mp", "b", "l", "intermediate_size", NULL}, 4, silu_setup, elem_fwd,
				     elem_bwd, elem_check, elem_teardown};
const struct sw_op sw_op_res_add = {"res_add", {"b", "l", "dim", NULL}, 3, res_setup, elem_fwd, elem_bwd,
				    elem_check, elem_teardown};
const struct sw_op sw_op_rope = {"RoPE", {"mp", "b", "h", "l", "dim", NULL}, 5, rope_setup, elem_fwd, elem_bwd,
				 elem_check, elem_teardown};
const struct sw_op sw_op_embedding = {"embedding", {"mp", "b", "l", "dim", NULL}, 4, emb_setup, elem_fwd,
				      elem_bwd, elem_check, elem_teardown};
