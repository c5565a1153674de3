/* kjoule-sweep-worker: the GPU side of `kjoule sweep`. Reads one request a line on stdin, answers
 * one KJ_SWEEP line on stdout (protocol: src/sweep/kj_sweep_op.h); --list prints the operators it
 * implements; --selftest checks every operator at a small shape against a double CPU reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "sweep_worker.h"
#ifdef KJ_HAVE_SWEEP_OPS
#include "kj_sweep_op.h"
#endif

static const struct sw_op *const g_ops[] = {
	&sw_op_linear1, &sw_op_linear2, &sw_op_linear3, &sw_op_linear4, &sw_op_linear_final,
	&sw_op_layernorm, &sw_op_rmsnorm, &sw_op_softmax, &sw_op_flash_atten, &sw_op_gelu,
	&sw_op_res_add, &sw_op_rope, &sw_op_embedding, &sw_op_bmm, &sw_op_baddbmm, &sw_op_fillmask,
	&sw_op_masked_softmax, &sw_op_cross_entropy, &sw_op_moe, &sw_op_opt_first, &sw_op_opt_middle,
	&sw_op_opt_last, &sw_op_master_copies, &sw_op_ffn_gate_up, &sw_op_silu_mul, &sw_op_ffn_down,
	&sw_op_lm_head,
};

int sw_op_count(void)
{
	return (int)(sizeof(g_ops) / sizeof(g_ops[0]));
}

const struct sw_op *sw_op_at(int i)
{
	return i >= 0 && i < sw_op_count() ? g_ops[i] : NULL;
}

const struct sw_op *sw_op_find(const char *name)
{
	for (int i = 0; i < sw_op_count(); i++)
		if (!strcmp(g_ops[i]->name, name))
			return g_ops[i];
	return NULL;
}

static int op_ncols(const struct sw_op *op)
{
	int n = 0;
	while (n < KJ_SWEEP_MAX_COLS && op->columns[n])
		n++;
	return n;
}

/* Relative-error bound of the correctness check per precision (METHOD.md's ranges): fp32 without
 * TF32 lands far under 1e-3; fp16 and bf16 operands between 1e-3 and 1e-2. */
static double tolerance(int p)
{
	return p == KJ_FP32 ? 1e-4 : p == KJ_FP16 ? 5e-3 : 1.5e-2;
}

static int ctx_open(struct sw_ctx *c, int device)
{
	memset(c, 0, sizeof(*c));
	c->device = device;
	c->seed = 0x6b6a6f756c65ull;
	c->op = "worker";
	if (sw_cuda(c, cudaSetDevice(device), "cudaSetDevice") ||
	    sw_cuda(c, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "stream create") ||
	    sw_cuda(c, cudaMalloc(&c->workspace, SW_GEMM_WORKSPACE), "GEMM workspace"))
		return KJ_EGPU;
	if (sw_cuda(c, cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, device), "SM count"))
		return KJ_EGPU;
	c->nvml_index = sw_nvml_index(device, c->nvml_why, sizeof(c->nvml_why));
	cublasStatus_t st = cublasLtCreate(&c->lt);
	if (st != CUBLAS_STATUS_SUCCESS)
		return sw_fail(c, "cublasLtCreate", "%s (%s)", cublasLtGetStatusName(st), cublasLtGetStatusString(st));
	return 0;
}

static void ctx_close(struct sw_ctx *c)
{
	sw_bufs_free(c);
	if (c->lt)
		cublasLtDestroy(c->lt);
	cudaFree(c->workspace);
	if (c->stream)
		cudaStreamDestroy(c->stream);
}

/* Run one request; fills a (its msg points into c->err or a static string). */
static void serve(struct sw_ctx *c, const struct sw_req *r, struct sw_answer *a)
{
	static char algo_f[96], algo_b[96]; /* the answer's algorithm words, printed after serve() */
	const struct sw_op *op = sw_op_find(r->op);
	void *state = NULL;
	int rc = 0;
	c->err[0] = '\0';
	c->energy_why[0] = '\0';
	c->energy_warm_only = 0;
	c->oom = 0;
	c->unsupported = 0;
	c->op = r->op;
	int len = snprintf(c->shape, sizeof(c->shape), "%s ", sw_precision_name(r->precision));
	for (int i = 0; i < r->nv && len < (int)sizeof(c->shape) - 24; i++)
		len += snprintf(c->shape + len, sizeof(c->shape) - (size_t)len, "%s%lld", i ? "," : "",
				(long long)r->v[i]);
	if (!op) {
		snprintf(c->err, sizeof(c->err), "operator '%s' is not implemented by this worker (--list)", r->op);
		sw_answer_init(a, "unsupported", c->err);
		return;
	}
	if (r->nv != op_ncols(op)) {
		snprintf(c->err, sizeof(c->err), "%s takes %d shape values (", op->name, op_ncols(op));
		for (int i = 0; i < op_ncols(op); i++)
			snprintf(c->err + strlen(c->err), sizeof(c->err) - strlen(c->err), "%s%s", i ? "," : "",
				 op->columns[i]);
		snprintf(c->err + strlen(c->err), sizeof(c->err) - strlen(c->err), "), got %d", r->nv);
		sw_answer_init(a, "error", c->err);
		return;
	}
	sw_answer_init(a, "ok", "");
#ifdef KJ_HAVE_SWEEP_OPS
	const struct kj_sweep_op *t = kj_sweep_op_find(op->name);
	for (int i = 0; t && i < op_ncols(op); i++) {
		if (i >= t->ncolumns || !t->columns[i] || strcmp(t->columns[i], op->columns[i])) {
			snprintf(c->err, sizeof(c->err), "%s: the worker's column %d '%s' differs from the operator "
				 "table's '%s' (rebuild both from one tree)", op->name, i + 1, op->columns[i],
				 i < t->ncolumns && t->columns[i] ? t->columns[i] : "(none)");
			sw_answer_init(a, "error", c->err);
			return;
		}
	}
	if (t && t->flops && t->bytes) {
		int eb = kj_precision_bytes(r->precision);
		a->f_flops = t->flops(r->v, KJ_FWD), a->f_bytes = t->bytes(r->v, KJ_FWD, eb);
		if (op->bwd)
			a->b_flops = t->flops(r->v, KJ_BWD), a->b_bytes = t->bytes(r->v, KJ_BWD, eb);
	}
#endif
	struct sw_measure mf = {-1, -1, -1, -1, -1, 0, -1, -1, -1, ""}, mb = {-1, -1, -1, -1, -1, 0, -1, -1, -1, ""};
	double ef = -1, eb = -1;
	rc = op->setup(c, r->precision, r->v, &state);
	if (!rc && r->check)
		rc = op->check(c, state, &ef, &eb);
	if (!rc)
		rc = sw_measure(c, op, state, op->fwd, r->energy, &mf);
	if (!rc && op->bwd)
		rc = sw_measure(c, op, state, op->bwd, r->energy, &mb);
	if (op->teardown)
		op->teardown(c, state);
	if (!rc)
		rc = sw_sync(c, "after measurement");
	sw_bufs_free(c);
	if (rc) {
		a->status = c->oom ? "oom" : c->unsupported ? "unsupported" : "error";
		a->msg = c->err[0] ? c->err : "failed without a message";
		return;
	}
	a->f_us = mf.us, a->b_us = mb.us;
	a->f_uj = mf.uj, a->f_uj_unc = mf.uj >= 0 ? mf.uj_unc : -1;
	a->b_uj = mb.uj, a->b_uj_unc = mb.uj >= 0 ? mb.uj_unc : -1;
	a->err_f = ef, a->err_b = eb;
	a->f_mhz = mf.mhz, a->b_mhz = mb.mhz;
	a->f_tmhz = mf.t_mhz, a->b_tmhz = mb.t_mhz;
	a->f_wus = mf.win_us, a->b_wus = mb.win_us;
	a->f_uj_warm = mf.uj_warm, a->f_uj_cold = mf.uj_cold;
	a->b_uj_warm = mb.uj_warm, a->b_uj_cold = mb.uj_cold;
	snprintf(algo_f, sizeof(algo_f), "%s", mf.algo);
	snprintf(algo_b, sizeof(algo_b), "%s", mb.algo);
	a->f_algo = algo_f, a->b_algo = algo_b;
	if (r->check && ((ef >= 0 && !(ef <= tolerance(r->precision))) ||
			 (eb >= 0 && !(eb <= tolerance(r->precision))))) {
		snprintf(c->err, sizeof(c->err), "%s %s: correctness check failed: err_f=%.3g err_b=%.3g > %.1g",
			 op->name, c->shape, ef, eb, tolerance(r->precision));
		a->status = "error";
		a->msg = c->err;
	} else {
		int attn = !strcmp(op->name, "flash_atten");
		snprintf(c->err, sizeof(c->err), "unroll_f=%d unroll_b=%d%s%s%s%s", mf.unroll, mb.unroll, attn ? " " : "",
			 attn ? kj_sw_attn_impl(sw_dtype_of(r->precision), r->v[4] / r->v[2]) : "",
			 !c->energy_why[0]      ? ""
			 : c->energy_warm_only ? " energy with warm L2 only: "
					       : " energy not measured: ",
			 c->energy_why);
		a->msg = c->err;
	}
}

static int answer_print(const struct sw_answer *a)
{
	char line[2048];
	if (sw_answer_format(a, line, sizeof(line)) < 0)
		return -1;
	fputs(line, stdout);
	fflush(stdout);
	return 0;
}

static int serve_loop(struct sw_ctx *c)
{
	char line[1100], msg[256];
	while (fgets(line, sizeof(line), stdin)) {
		struct sw_req r;
		struct sw_answer a;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (!strchr(line, '\n') && !feof(stdin)) {
			int ch;
			while ((ch = getchar()) != EOF && ch != '\n')
				;
			sw_answer_init(&a, "error", "request line too long");
		} else if (sw_req_parse(line, &r, msg, sizeof(msg))) {
			sw_answer_init(&a, "error", msg);
		} else {
			serve(c, &r, &a);
		}
		answer_print(&a);
		/* a fault (illegal address, launch failure) poisons the context for good: say so and exit,
		 * so the caller starts a fresh worker instead of collecting errors for every later shape */
		cudaError_t e = cudaDeviceSynchronize();
		if (e != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess) {
			fprintf(stderr, "kjoule-sweep-worker: CUDA context unusable after the last request: %s (%s)\n",
				cudaGetErrorName(e), cudaGetErrorString(e));
			return 1;
		}
	}
	return 0;
}

/* Small shapes the self-test runs, one per operator, in its columns' order. gelu, res_add and
 * RoPE hold 2 x 64 Ki elements, so their checks read both windows (first and last 64 Ki). */
static const struct {
	const char *op;
	int64_t v[7];
} g_small[] = {
	{"linear1", {2, 2, 64, 256}},	  {"linear2", {2, 2, 64, 256}},
	{"linear3", {2, 2, 64, 256}},	  {"linear4", {2, 2, 64, 256}},
	{"linear_final", {8, 1, 64, 128}}, {"layernorm", {2, 64, 1024}},
	{"RMSlayernorm", {2, 64, 1024}},  {"softmax", {1, 2, 4, 256}},
	{"flash_atten", {1, 2, 4, 160, 256}}, {"flash_atten", {1, 1, 2, 96, 256}},
	{"gelu", {1, 2, 64, 256}},
	{"res_add", {2, 64, 1024}},	  {"RoPE", {1, 2, 4, 128, 512}},
	{"embedding", {8, 2, 64, 256}},	  {"bmm", {1, 2, 4, 128, 256}},
	{"baddbmm", {1, 2, 4, 128, 256}}, {"fillmask", {1, 2, 4, 128, 256}},
	{"ScaledUpperTriangMaskedSoftmax", {1, 2, 4, 256}},
	{"parallel_cross_entropy_128", {8, 2, 32}},
	{"firstStage_optimizer", {8, 256, 2}}, {"middleStage_optimizer", {8, 256, 2}},
	{"lastStage_optimizer", {8, 256, 2}}, {"master_copies", {8, 256, 2}},
	{"linear1", {1, 1, 37, 202}},
	{"moe", {2, 2, 32, 128, 4, 512, 2}},
	{"ffn_gate_up", {2, 2, 64, 256, 688}}, {"ffn_down", {2, 2, 64, 256, 688}},
	{"silu_mul", {2, 2, 64, 688}},	  {"lm_head", {2, 2, 32, 256, 1000}},
};

static int selftest(struct sw_ctx *c, const char *only)
{
	int fails = 0, ran = 0;
	printf("%-32s %-5s %10s %10s %10s %10s %s\n", "op", "prec", "err_f", "err_b", "f_us", "b_us", "status");
	for (size_t i = 0; i < sizeof(g_small) / sizeof(g_small[0]); i++) {
		const struct sw_op *op = sw_op_find(g_small[i].op);
		if (!op || (only && strcmp(only, op->name)))
			continue;
		for (int p = 0; p < 3; p++) {
			struct sw_req r;
			struct sw_answer a;
			memset(&r, 0, sizeof(r));
			snprintf(r.op, sizeof(r.op), "%s", op->name);
			r.precision = p, r.nv = op_ncols(op), r.check = 1;
			memcpy(r.v, g_small[i].v, sizeof(r.v[0]) * (size_t)r.nv);
			serve(c, &r, &a);
			/* an fp32 model has no half copies: master_copies answers unsupported there */
			int refused = p == KJ_FP32 && !strcmp(op->name, "master_copies");
			int ok = refused ? !strcmp(a.status, "unsupported")
					 : !strcmp(a.status, "ok") && a.err_f >= 0 && (!op->bwd || a.err_b >= 0);
			fails += !ok;
			ran++;
			printf("%-32s %-5s %10.3g %10.3g %10.4g %10.4g %s%s%s\n", op->name,
			       sw_precision_name(p), a.err_f, a.err_b, a.f_us, a.b_us,
			       ok ? (refused ? "ok (unsupported, as it should be)" : "ok") : "FAIL", ok ? "" : ": ",
			       ok ? "" : a.msg);
			fflush(stdout);
		}
	}
	/* protocol: a bad line and an allocation far past any GPU's memory, then a good op again */
	struct sw_req r;
	struct sw_answer a;
	char msg[256];
	if (!sw_req_parse("linear1 fp16 1,4,2048 0 0\n", &r, msg, sizeof(msg))) {
		serve(c, &r, &a);
		int ok = !strcmp(a.status, "error");
		fails += !ok;
		printf("%-32s %-5s %s (%s)\n", "protocol: wrong column count", "fp16", ok ? "ok" : "FAIL", a.msg);
	}
	if (!sw_req_parse("linear3 fp16 1,64,65536,65536 0 0\n", &r, msg, sizeof(msg))) {
		serve(c, &r, &a);
		int ok = !strcmp(a.status, "oom");
		fails += !ok;
		printf("%-32s %-5s %s (%s)\n", "protocol: out of memory", "fp16", ok ? "ok" : "FAIL", a.msg);
	}
	printf("selftest: %d run, %d failed\n", ran, fails);
	return fails ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kjoule-sweep-worker [--device N] [--list | --selftest [OP] | --ceilings]\n"
		   "  reads 'OP PRECISION V1,...,Vn ENERGY CHECK' lines on stdin, answers KJ_SWEEP lines\n");
}

int main(int argc, char **argv)
{
	int device = 0, list = 0, self = 0, ceil = 0, n;
	const char *only = NULL;
	struct sw_ctx c;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list"))
			list = 1;
		else if (!strcmp(argv[i], "--ceilings"))
			ceil = 1;
		else if (!strcmp(argv[i], "--selftest")) {
			self = 1;
			if (i + 1 < argc && argv[i + 1][0] != '-')
				only = argv[++i];
		} else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			device = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (list) {
		for (int i = 0; i < sw_op_count(); i++) {
			const struct sw_op *op = sw_op_at(i);
			printf("%s ", op->name);
			for (int k = 0; k < op_ncols(op); k++)
				printf("%s%s", k ? "," : "", op->columns[k]);
			printf("\n");
		}
		return 0;
	}
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		cudaGetLastError();
		fprintf(stderr, "kjoule-sweep-worker: no CUDA device\n");
		return self ? 77 : 1;
	}
	if (ctx_open(&c, device)) {
		fprintf(stderr, "kjoule-sweep-worker: %s\n", c.err);
		ctx_close(&c);
		return 1;
	}
	int rc = ceil ? (sw_ceilings(&c) ? 1 : 0) : self ? selftest(&c, only) : serve_loop(&c);
	ctx_close(&c);
	return rc;
}
