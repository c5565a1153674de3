/* kjoule-sweep-worker: parallel_cross_entropy_128 (mp, b, l: logits [b*l, vocab/mp], the vocabulary
 * padded to a multiple of 128; one GPU's share, no all-reduce) and the optimizer stages (mp, dim,
 * encoders: one fused AdamW step over the fp32 master parameters of the stage, writing the fp16/bf16
 * model copy). Cross entropy is checked on sampled rows; Adam on windows of parameters. */
#include "ops_common.h"

struct xent {
	int dt;
	int64_t rows, v;
	void *x, *sm, *g;
	int *t;
	float *loss;
};

static int xent_setup(struct sw_ctx *c, int p, const int64_t *v, void **state)
{
	struct xent *x = calloc(1, sizeof(*x));
	int rc;
	if (!x)
		return sw_fail(c, "setup", "host memory");
	*state = x;
	x->dt = sw_dtype_of(p), x->rows = v[1] * v[2], x->v = SW_VOCAB / v[0];
	if ((rc = sw_need_pack(c, x->dt, x->v, "vocab/mp")))
		return rc;
	size_t n = (size_t)(x->rows * x->v);
	if (!(x->x = sw_alloc(c, n, x->dt, 4.f)) || !(x->g = sw_alloc(c, n, x->dt, 1.f)) ||
	    !(x->t = sw_alloc(c, (size_t)x->rows, SW_I32, (float)x->v)) ||
	    !(x->loss = sw_alloc(c, (size_t)x->rows, SW_F32, 1.f)) || !(x->sm = sw_alloc(c, n, x->dt, 1.f)))
		return KJ_EGPU;
	return sw_sync(c, "setup");
}

static int xent_fwd(struct sw_ctx *c, void *st)
{
	struct xent *x = st;
	return SW_LAUNCH(c, kj_sw_xent_fwd(x->dt, x->x, x->t, x->loss, x->sm, x->rows, x->v, c->stream),
			 "cross entropy kernel");
}

static int xent_bwd(struct sw_ctx *c, void *st)
{
	struct xent *x = st;
	return SW_LAUNCH(c, kj_sw_xent_bwd(x->dt, x->sm, x->t, x->g, x->rows, x->v, 1.f / (float)x->rows,
					   c->stream), "cross entropy backward kernel");
}

static int xent_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct xent *x = st;
	double nf = 0, df = 0, nb = 0, db = 0;
	int rc;
	if ((rc = xent_fwd(c, x)) || (rc = xent_bwd(c, x)))
		return rc;
	double *t = sw_download(c, x->t, (size_t)x->rows, SW_I32), *loss = sw_download(c, x->loss, (size_t)x->rows, SW_F32);
	if (!t || !loss) {
		free(t), free(loss);
		return KJ_EGPU;
	}
	for (int k = 0; k < SW_CHECK_ROWS && !rc; k++) {
		int64_t r = sw_check_row(k, x->rows), tg = (int64_t)t[r];
		double *lg = sw_download_rows(c, x->x, (size_t)r, 1, (size_t)x->v, x->dt);
		double *g = sw_download_rows(c, x->g, (size_t)r, 1, (size_t)x->v, x->dt);
		if (lg && g) {
			double mx = -INFINITY, s = 0;
			for (int64_t i = 0; i < x->v; i++)
				mx = fmax(mx, lg[i]);
			for (int64_t i = 0; i < x->v; i++)
				s += exp(lg[i] - mx);
			double lse = mx + log(s);
			sw_acc(loss[r], lse - lg[tg], &nf, &df);
			for (int64_t i = 0; i < x->v; i++)
				sw_acc(g[i], (exp(lg[i] - lse) - (i == tg)) / (double)x->rows, &nb, &db);
		} else {
			rc = KJ_EGPU;
		}
		free(lg), free(g);
	}
	free(t), free(loss);
	if (rc)
		return rc;
	*err_f = sw_err(nf, df), *err_b = sw_err(nb, db);
	return 0;
}

/* ---- optimizer stages ---- */
struct adam {
	int dt;
	int64_t n;
	float *p, *m, *v, *g;
	void *ph;
	int step;
};

#define ADAM_LR 1e-2f /* large enough that an fp32 update's rounding stays under 1e-5 of it */
#define ADAM_B1 0.9f
#define ADAM_B2 0.95f
#define ADAM_EPS 1e-8f
#define ADAM_WD 0.01f

/* Parameters of one pipeline stage holding `encoders` transformer layers, tensor-parallel over mp
 * (Megatron GPT: per layer QKV 3d^2/mp + 3d/mp, proj d^2/mp + d, FFN 8d^2/mp + 4d/mp + d, two
 * layernorms 4d); the first stage adds the word embedding (V/mp x d), the last the final
 * layernorm (2d) and an untied output layer (V/mp x d): the operator table's count. */
static int64_t stage_params(int kind, int64_t mp, int64_t d, int64_t enc)
{
	int64_t layer = 12 * d * d / mp + 7 * d / mp + 6 * d;
	int64_t n = enc * layer;
	if (kind == 0)
		n += SW_VOCAB / mp * d;
	if (kind == 2)
		n += 2 * d + SW_VOCAB / mp * d;
	return (n + 3) / 4 * 4;
}

static int adam_setup(struct sw_ctx *c, int p, const int64_t *v, void **state, int kind)
{
	struct adam *a = calloc(1, sizeof(*a));
	if (!a)
		return sw_fail(c, "setup", "host memory");
	*state = a;
	a->dt = sw_dtype_of(p), a->n = stage_params(kind, v[0], v[1], v[2]), a->step = 10;
	size_t n = (size_t)a->n;
	if (!(a->p = sw_alloc(c, n, SW_F32, 1.f)) || !(a->m = sw_alloc(c, n, SW_F32, 0.01f)) ||
	    !(a->v = sw_alloc(c, n, SW_F32, -1e-4f)) || !(a->g = sw_alloc(c, n, SW_F32, 0.01f)) ||
	    (a->dt != SW_F32 && !(a->ph = sw_alloc(c, n, a->dt, 1.f))))
		return KJ_EGPU;
	return sw_sync(c, "setup");
}

static int opt_first(struct sw_ctx *c, int p, const int64_t *v, void **s) { return adam_setup(c, p, v, s, 0); }
static int opt_middle(struct sw_ctx *c, int p, const int64_t *v, void **s) { return adam_setup(c, p, v, s, 1); }
static int opt_last(struct sw_ctx *c, int p, const int64_t *v, void **s) { return adam_setup(c, p, v, s, 2); }

static int adam_fwd(struct sw_ctx *c, void *st)
{
	struct adam *a = st;
	return SW_LAUNCH(c, kj_sw_adam(a->p, a->m, a->v, a->g, a->ph, a->dt, a->n, ADAM_LR, ADAM_B1, ADAM_B2, ADAM_EPS,
				       ADAM_WD, a->step, c->stream), "adam kernel");
}

static int adam_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct adam *a = st;
	int64_t w = a->n < 65536 ? a->n : 65536;
	double num = 0, den = 0;
	double *p0 = sw_download(c, a->p, (size_t)w, SW_F32), *m0 = sw_download(c, a->m, (size_t)w, SW_F32);
	double *v0 = sw_download(c, a->v, (size_t)w, SW_F32), *g = sw_download(c, a->g, (size_t)w, SW_F32);
	double *p1 = NULL, *m1 = NULL, *v1 = NULL, *ph = NULL;
	int rc = KJ_EGPU;
	if (!p0 || !m0 || !v0 || !g || adam_fwd(c, a))
		goto out;
	p1 = sw_download(c, a->p, (size_t)w, SW_F32), m1 = sw_download(c, a->m, (size_t)w, SW_F32);
	v1 = sw_download(c, a->v, (size_t)w, SW_F32);
	ph = a->ph ? sw_download(c, a->ph, (size_t)w, a->dt) : NULL;
	if (!p1 || !m1 || !v1 || (a->ph && !ph))
		goto out;
	double c1 = 1 - pow(ADAM_B1, a->step), c2 = 1 - pow(ADAM_B2, a->step);
	for (int64_t i = 0; i < w; i++) {
		double m = ADAM_B1 * m0[i] + (1 - ADAM_B1) * g[i];
		double v = ADAM_B2 * v0[i] + (1 - ADAM_B2) * g[i] * g[i];
		double p = p0[i] - ADAM_LR * ((m / c1) / (sqrt(v / c2) + ADAM_EPS) + ADAM_WD * p0[i]);
		/* compare the update (p1 - p0), not p1, so the check sees the step's own error */
		sw_acc(p1[i] - p0[i], p - p0[i], &num, &den);
		sw_acc(m1[i], m, &num, &den);
		sw_acc(v1[i], v, &num, &den);
		if (ph)
			sw_acc(ph[i], p1[i], &num, &den);
	}
	*err_f = sw_err(num, den), *err_b = -1;
	rc = 0;
out:
	free(p0), free(m0), free(v0), free(g), free(p1), free(m1), free(v1), free(ph);
	return rc;
}

/* master_copies: the two casts a mixed-precision step pays when its optimizer does not read the
 * half gradients and write the half weights itself (PyTorch's AdamW over fp32 master copies):
 * half gradients into fp32 ones before the step, fp32 masters into the half weights after it,
 * over the last stage's parameters (the lastStage_optimizer's count). */
struct copies {
	int dt;
	int64_t n;
	void *gh, *ph;
	float *g, *p;
};

static int copies_setup(struct sw_ctx *c, int p, const int64_t *v, void **state)
{
	struct copies *k = calloc(1, sizeof(*k));
	if (!k)
		return sw_fail(c, "setup", "host memory");
	*state = k;
	k->dt = sw_dtype_of(p), k->n = (stage_params(2, v[0], v[1], v[2]) + 7) / 8 * 8;
	if (k->dt == SW_F32)
		return sw_fail(c, "precision", "an fp32 model has no half copies to make");
	size_t n = (size_t)k->n;
	if (!(k->gh = sw_alloc(c, n, k->dt, 0.01f)) || !(k->g = sw_alloc(c, n, SW_F32, 1.f)) ||
	    !(k->p = sw_alloc(c, n, SW_F32, 1.f)) || !(k->ph = sw_alloc(c, n, k->dt, 1.f)))
		return KJ_EGPU;
	return sw_sync(c, "setup");
}

static int copies_fwd(struct sw_ctx *c, void *st)
{
	struct copies *k = st;
	int rc = SW_LAUNCH(c, kj_sw_cast(k->dt, k->gh, SW_F32, k->g, k->n, c->stream), "gradient cast");
	return rc ? rc : SW_LAUNCH(c, kj_sw_cast(SW_F32, k->p, k->dt, k->ph, k->n, c->stream), "weight cast");
}

static int copies_check(struct sw_ctx *c, void *st, double *err_f, double *err_b)
{
	struct copies *k = st;
	int64_t w = k->n < 65536 ? k->n : 65536;
	double num = 0, den = 0, *gh = NULL, *g = NULL, *p = NULL, *ph = NULL;
	int rc = KJ_EGPU;
	if (copies_fwd(c, k) || sw_sync(c, "check run"))
		goto out;
	gh = sw_download(c, k->gh, (size_t)w, k->dt), g = sw_download(c, k->g, (size_t)w, SW_F32);
	p = sw_download(c, k->p, (size_t)w, SW_F32), ph = sw_download(c, k->ph, (size_t)w, k->dt);
	if (!gh || !g || !p || !ph)
		goto out;
	for (int64_t i = 0; i < w; i++) {
		sw_acc(g[i], gh[i], &num, &den);  /* exact: every half value is an fp32 value */
		sw_acc(ph[i], p[i], &num, &den);  /* rounded to the half type */
	}
	*err_f = sw_err(num, den), *err_b = -1;
	rc = 0;
out:
	free(gh), free(g), free(p), free(ph);
	return rc;
}

static void plain_teardown(struct sw_ctx *c, void *s)
{
	(void)c;
	free(s);
}

const struct sw_op sw_op_cross_entropy = {"parallel_cross_entropy_128", {"mp", "b", "l", NULL}, 3, xent_setup,
					  xent_fwd, xent_bwd, xent_check, plain_teardown};
const struct sw_op sw_op_opt_first = {"firstStage_optimizer", {"mp", "dim", "encoders", NULL}, 3, opt_first,
				      adam_fwd, NULL, adam_check, plain_teardown};
const struct sw_op sw_op_opt_middle = {"middleStage_optimizer", {"mp", "dim", "encoders", NULL}, 3, opt_middle,
				       adam_fwd, NULL, adam_check, plain_teardown};
const struct sw_op sw_op_opt_last = {"lastStage_optimizer", {"mp", "dim", "encoders", NULL}, 3, opt_last,
				     adam_fwd, NULL, adam_check, plain_teardown};
const struct sw_op sw_op_master_copies = {"master_copies", {"mp", "dim", "encoders", NULL}, 3, copies_setup,
					  copies_fwd, NULL, copies_check, plain_teardown};
