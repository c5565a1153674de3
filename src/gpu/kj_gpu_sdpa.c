/* The GPU harness (sweep and pipeline workers): causal fused attention through cuDNN's graph API
 * (the backend descriptors, no C++ frontend): the forward and backward operation graphs that cuDNN's fused flash-attention
 * engines recognise, built from matmul, pointwise, reduction and reshape operations; a plan per
 * (precision, heads, length, head size, direction), kept for the shape's calls.
 *
 * Layout as the rest of the worker: q, k, v, o, do, dq, dk, dv [bh, l, d] row-major (cuDNN dims
 * [1, bh, l, d]); lse [bh, l] fp32, the row's natural log-sum-exp of the scaled scores, which is
 * cuDNN's softmax "stats" as well, so either forward feeds either backward.
 *
 * Forward:  S = Q K^T (K read transposed through its strides), S *= scale, S = row >= col ? S : -inf,
 *           m = rowmax S, E = exp(S - m), z = rowsum E, lse = m + log z, O = (E / z) V.
 * Backward: t = rowsum(dO * O) (kept in the workspace), S as above minus lse, masked, P = exp S;
 *           dV = P^T dO, dS = P (dO V^T - t) scale, dK = dS^T Q, dQ = dS K (fp32 in the workspace,
 *           then converted).
 * fp16 and bf16 only; head sizes as cuDNN supports them (a multiple of 8, up to 256). */
#include <cudnn.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_gpu_sdpa.h"

#define SDPA_MAX_DESC 128
#define SDPA_MAX_OPS 32
#define SDPA_PLANS 64 /* slots; the sweep keeps SDPA_LIVE plans at a time, a pipeline all */
#define SDPA_LIVE 4

/* Tensor ids of the graphs (virtual tensors from 100 on). */
enum { T_Q = 1, T_K, T_V, T_O, T_STATS, T_DO, T_DQ, T_DK, T_DV, T_SCALE, T_NEGINF, T_ONE, T_DOT, T_DQACC };

struct sdpa_build {
	cudnnBackendDescriptor_t d[SDPA_MAX_DESC];
	int nd;
	cudnnBackendDescriptor_t ops[SDPA_MAX_OPS];
	int nops;
	int64_t next_virtual;
	int failed;
};

struct sdpa_plan {
	int used, dt, causal, bwd;
	int64_t bh, l, d;
	cudnnBackendDescriptor_t plan;
	struct sdpa_build *build; /* the graph's descriptors, kept while the plan lives */
	void *work;          /* the plan's workspace, then (backward) these two: */
	void *dot, *dqacc;   /* rowsum(dO*O) [bh, l] and the fp32 dQ [bh, l, d], inside work */
	int64_t engine;
	unsigned long stamp;
};

/* Shapes whose graph cuDNN refused, with why: not asked again. */
struct sdpa_refused {
	int used, dt, causal, bwd;
	int64_t bh, l, d;
	char why[512];
};

static cudnnHandle_t g_dnn;
static struct sdpa_refused g_refused[SDPA_PLANS];
static int g_refused_next;
static int g_keep_plans; /* kj_gpu_sdpa_keep_plans(1): plans are never freed before kj_gpu_sdpa_release */
static struct sdpa_plan g_plans[SDPA_PLANS];
static unsigned long g_stamp;
static char g_why[512];
static int64_t g_engine_f = -1, g_engine_b = -1;

/* Records the first failure: which call, cuDNN's status and its last error text. */
static int dnn_ok(struct sdpa_build *b, cudnnStatus_t st, const char *what)
{
	if (st == CUDNN_STATUS_SUCCESS)
		return 1;
	if (!b || !b->failed) {
		char last[256] = "";
		cudnnGetLastErrorString(last, sizeof(last));
		snprintf(g_why, sizeof(g_why), "cuDNN %s: %s%s%s", what, cudnnGetErrorString(st), last[0] ? ": " : "",
			 last);
	}
	if (b)
		b->failed = 1;
	return 0;
}

static cudnnBackendDescriptor_t make(struct sdpa_build *b, cudnnBackendDescriptorType_t type, const char *what)
{
	cudnnBackendDescriptor_t d = NULL;
	if (b->failed || b->nd >= SDPA_MAX_DESC) {
		if (!b->failed)
			snprintf(g_why, sizeof(g_why), "cuDNN graph: more than %d descriptors", SDPA_MAX_DESC);
		b->failed = 1;
		return NULL;
	}
	if (!dnn_ok(b, cudnnBackendCreateDescriptor(type, &d), what))
		return NULL;
	b->d[b->nd++] = d;
	return d;
}

static void set(struct sdpa_build *b, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
		cudnnBackendAttributeType_t type, int64_t n, const void *v, const char *what)
{
	if (!b->failed && d)
		dnn_ok(b, cudnnBackendSetAttribute(d, name, type, n, v), what);
}

static void finalize(struct sdpa_build *b, cudnnBackendDescriptor_t d, const char *what)
{
	if (!b->failed && d)
		dnn_ok(b, cudnnBackendFinalize(d), what);
}

/* A 4-d tensor [1, bh, rows, cols] with the given strides (NULL: packed), or [1, bh, rows, 1]. */
static cudnnBackendDescriptor_t tensor(struct sdpa_build *b, int64_t uid, cudnnDataType_t dt, const int64_t dims[4],
				       const int64_t *strides, int is_virtual, int by_value)
{
	int64_t st[4], align = 16;
	if (strides)
		memcpy(st, strides, sizeof(st));
	else
		st[3] = 1, st[2] = dims[3], st[1] = dims[2] * dims[3], st[0] = dims[1] * dims[2] * dims[3];
	if (uid == 0)
		uid = b->next_virtual++;
	cudnnBackendDescriptor_t t = make(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor descriptor");
	bool virt = is_virtual != 0, byv = by_value != 0;
	set(b, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
	set(b, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dimensions");
	set(b, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st, "tensor strides");
	set(b, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor id");
	set(b, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
	set(b, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "tensor virtual");
	if (byv)
		set(b, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byv, "tensor by value");
	finalize(b, t, "tensor finalize");
	return t;
}

static void add_op(struct sdpa_build *b, cudnnBackendDescriptor_t op)
{
	if (b->failed || !op)
		return;
	if (b->nops >= SDPA_MAX_OPS) {
		snprintf(g_why, sizeof(g_why), "cuDNN graph: more than %d operations", SDPA_MAX_OPS);
		b->failed = 1;
		return;
	}
	b->ops[b->nops++] = op;
}

/* y = mode(x[, b][, t]); axis >= 0 for GEN_INDEX; prec the math precision. */
static void pointwise(struct sdpa_build *b, cudnnPointwiseMode_t mode, cudnnDataType_t prec, int64_t axis,
		      cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t bb, cudnnBackendDescriptor_t t,
		      cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t pw = make(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise descriptor");
	set(b, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
	set(b, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise precision");
	if (axis >= 0)
		set(b, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis");
	finalize(b, pw, "pointwise finalize");
	cudnnBackendDescriptor_t op = make(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation");
	set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pointwise op");
	set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pointwise x");
	if (bb)
		set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bb, "pointwise b");
	if (t)
		set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "pointwise t");
	set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pointwise y");
	finalize(b, op, "pointwise operation finalize");
	add_op(b, op);
}

/* An operation of kind type holding descriptor desc (under attribute desc_attr, NULL: none) and the
 * n tensors ts under attributes names; finalized and added to the graph. */
static void operation(struct sdpa_build *b, cudnnBackendDescriptorType_t type, cudnnBackendAttributeName_t desc_attr,
		      cudnnBackendDescriptor_t desc, int n, const cudnnBackendAttributeName_t *names,
		      const cudnnBackendDescriptor_t *ts, const char *what)
{
	cudnnBackendDescriptor_t op = make(b, type, what);
	if (desc)
		set(b, op, desc_attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc, what);
	for (int i = 0; i < n; i++)
		set(b, op, names[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ts[i], what);
	finalize(b, op, what);
	add_op(b, op);
}

/* A reduction or matmul descriptor computing in fp32 (not finalized: the caller may add attributes). */
static cudnnBackendDescriptor_t fp32_desc(struct sdpa_build *b, cudnnBackendDescriptorType_t type,
					  cudnnBackendAttributeName_t comp_attr, const char *what)
{
	cudnnDataType_t f = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t d = make(b, type, what);
	set(b, d, comp_attr, CUDNN_TYPE_DATA_TYPE, 1, &f, what);
	return d;
}

static void reduction(struct sdpa_build *b, cudnnReduceTensorOp_t how, cudnnBackendDescriptor_t x,
		      cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t r = fp32_desc(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_COMP_TYPE,
					       "reduction descriptor");
	set(b, r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how, "reduction operator");
	finalize(b, r, "reduction finalize");
	const cudnnBackendAttributeName_t names[2] = {CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
						      CUDNN_ATTR_OPERATION_REDUCTION_YDESC};
	const cudnnBackendDescriptor_t ts[2] = {x, y};
	operation(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r, 2, names, ts,
		  "reduction operation");
}

static void matmul(struct sdpa_build *b, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t bm,
		   cudnnBackendDescriptor_t c)
{
	cudnnBackendDescriptor_t m = fp32_desc(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_ATTR_MATMUL_COMP_TYPE,
					       "matmul descriptor");
	finalize(b, m, "matmul finalize");
	const cudnnBackendAttributeName_t names[3] = {CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
						      CUDNN_ATTR_OPERATION_MATMUL_CDESC};
	const cudnnBackendDescriptor_t ts[3] = {a, bm, c};
	operation(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, CUDNN_ATTR_OPERATION_MATMUL_DESC, m, 3, names, ts,
		  "matmul operation");
}

static void reshape(struct sdpa_build *b, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
	const cudnnBackendAttributeName_t names[2] = {CUDNN_ATTR_OPERATION_RESHAPE_XDESC,
						      CUDNN_ATTR_OPERATION_RESHAPE_YDESC};
	const cudnnBackendDescriptor_t ts[2] = {x, y};
	operation(b, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, NULL, 2, names, ts,
		  "reshape operation");
}

/* The scores' shape helpers: [1, bh, l, l] float virtual, and [1, bh, l, 1] float. */
static cudnnBackendDescriptor_t scores(struct sdpa_build *b, int64_t bh, int64_t l, cudnnDataType_t dt)
{
	int64_t dims[4] = {1, bh, l, l};
	return tensor(b, 0, dt, dims, NULL, 1, 0);
}

static cudnnBackendDescriptor_t rowvec(struct sdpa_build *b, int64_t uid, int64_t bh, int64_t l, int is_virtual)
{
	int64_t dims[4] = {1, bh, l, 1};
	return tensor(b, uid, CUDNN_DATA_FLOAT, dims, NULL, is_virtual, 0);
}

static cudnnBackendDescriptor_t scalar(struct sdpa_build *b, int64_t uid)
{
	int64_t dims[4] = {1, 1, 1, 1};
	return tensor(b, uid, CUDNN_DATA_FLOAT, dims, NULL, 0, 1);
}

/* s masked to row >= col (keys after the query get -inf), returned as a new virtual tensor. */
static cudnnBackendDescriptor_t causal_mask(struct sdpa_build *b, cudnnBackendDescriptor_t s, int64_t bh, int64_t l,
					    cudnnBackendDescriptor_t neginf)
{
	cudnnBackendDescriptor_t row = scores(b, bh, l, CUDNN_DATA_INT32), col = scores(b, bh, l, CUDNN_DATA_INT32);
	cudnnBackendDescriptor_t keep = scores(b, bh, l, CUDNN_DATA_BOOLEAN), out = scores(b, bh, l, CUDNN_DATA_FLOAT);
	pointwise(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 2, s, NULL, NULL, row);
	pointwise(b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 3, s, NULL, NULL, col);
	pointwise(b, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, -1, row, col, NULL, keep);
	pointwise(b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, s, neginf, keep, out);
	return out;
}

static void build_fwd(struct sdpa_build *b, cudnnDataType_t io, int64_t bh, int64_t l, int64_t d, int causal)
{
	int64_t qd[4] = {1, bh, l, d}, ktd[4] = {1, bh, d, l}, kts[4] = {bh * l * d, l * d, 1, d};
	const cudnnDataType_t F = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t q = tensor(b, T_Q, io, qd, NULL, 0, 0), kt = tensor(b, T_K, io, ktd, kts, 0, 0);
	cudnnBackendDescriptor_t v = tensor(b, T_V, io, qd, NULL, 0, 0), o = tensor(b, T_O, io, qd, NULL, 0, 0);
	cudnnBackendDescriptor_t stats = rowvec(b, T_STATS, bh, l, 0), scale = scalar(b, T_SCALE);
	cudnnBackendDescriptor_t s0 = scores(b, bh, l, F), s1 = scores(b, bh, l, F), s;
	matmul(b, q, kt, s0);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, s0, scale, NULL, s1);
	s = causal ? causal_mask(b, s1, bh, l, scalar(b, T_NEGINF)) : s1;
	cudnnBackendDescriptor_t m = rowvec(b, 0, bh, l, 1), sm = scores(b, bh, l, F), e = scores(b, bh, l, F);
	cudnnBackendDescriptor_t z = rowvec(b, 0, bh, l, 1), lz = rowvec(b, 0, bh, l, 1);
	cudnnBackendDescriptor_t p = scores(b, bh, l, io); /* the probabilities in the inputs' type, as bmm2 reads them */
	reduction(b, CUDNN_REDUCE_TENSOR_MAX, s, m);
	pointwise(b, CUDNN_POINTWISE_SUB, F, -1, s, m, NULL, sm);
	pointwise(b, CUDNN_POINTWISE_EXP, F, -1, sm, NULL, NULL, e);
	reduction(b, CUDNN_REDUCE_TENSOR_ADD, e, z);
	pointwise(b, CUDNN_POINTWISE_LOG, F, -1, z, NULL, NULL, lz);
	pointwise(b, CUDNN_POINTWISE_ADD, F, -1, m, lz, NULL, stats);
	pointwise(b, CUDNN_POINTWISE_DIV, F, -1, e, z, NULL, p);
	matmul(b, p, v, o);
}

static void build_bwd(struct sdpa_build *b, cudnnDataType_t io, int64_t bh, int64_t l, int64_t d, int causal)
{
	int64_t qd[4] = {1, bh, l, d}, ktd[4] = {1, bh, d, l}, kts[4] = {bh * l * d, l * d, 1, d};
	int64_t ssd[4] = {1, bh, l, l}, sts[4] = {bh * l * l, l * l, 1, l}; /* scores read transposed */
	const cudnnDataType_t F = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t q = tensor(b, T_Q, io, qd, NULL, 0, 0), kt = tensor(b, T_K, io, ktd, kts, 0, 0);
	cudnnBackendDescriptor_t vt = tensor(b, T_V, io, ktd, kts, 0, 0), o = tensor(b, T_O, io, qd, NULL, 0, 0);
	cudnnBackendDescriptor_t dout = tensor(b, T_DO, io, qd, NULL, 0, 0), stats = rowvec(b, T_STATS, bh, l, 0);
	cudnnBackendDescriptor_t dq = tensor(b, T_DQ, io, qd, NULL, 0, 0), dk = tensor(b, T_DK, io, qd, NULL, 0, 0);
	cudnnBackendDescriptor_t dv = tensor(b, T_DV, io, qd, NULL, 0, 0), scale = scalar(b, T_SCALE);
	/* t = rowsum(dO * O), kept (non-virtual, in the workspace) */
	cudnnBackendDescriptor_t doo = tensor(b, 0, F, qd, NULL, 1, 0), t0 = rowvec(b, 0, bh, l, 1);
	cudnnBackendDescriptor_t t = rowvec(b, T_DOT, bh, l, 0);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, dout, o, NULL, doo);
	reduction(b, CUDNN_REDUCE_TENSOR_ADD, doo, t0);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, t0, scalar(b, T_ONE), NULL, t);
	/* P = exp(S scale - lse), masked */
	cudnnBackendDescriptor_t s0 = scores(b, bh, l, F), s1 = scores(b, bh, l, F), s2 = scores(b, bh, l, F), s;
	matmul(b, q, kt, s0);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, s0, scale, NULL, s1);
	pointwise(b, CUDNN_POINTWISE_SUB, F, -1, s1, stats, NULL, s2);
	s = causal ? causal_mask(b, s2, bh, l, scalar(b, T_NEGINF)) : s2;
	cudnnBackendDescriptor_t p = scores(b, bh, l, F), pt = tensor(b, 0, io, ssd, sts, 1, 0);
	pointwise(b, CUDNN_POINTWISE_EXP, F, -1, s, NULL, NULL, p);
	reshape(b, p, pt);
	matmul(b, pt, dout, dv);
	/* dS = P (dO V^T - t) scale */
	cudnnBackendDescriptor_t dp = scores(b, bh, l, F), ds0 = scores(b, bh, l, F), ds1 = scores(b, bh, l, F);
	cudnnBackendDescriptor_t ds = scores(b, bh, l, F), dst = tensor(b, 0, io, ssd, sts, 1, 0);
	matmul(b, dout, vt, dp);
	pointwise(b, CUDNN_POINTWISE_SUB, F, -1, dp, t, NULL, ds0);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, ds0, p, NULL, ds1);
	pointwise(b, CUDNN_POINTWISE_MUL, F, -1, ds1, scale, NULL, ds);
	reshape(b, ds, dst);
	matmul(b, dst, q, dk);
	/* dQ = dS K, accumulated in fp32 (non-virtual, in the workspace), then converted */
	cudnnBackendDescriptor_t kk = tensor(b, 0, io, qd, NULL, 1, 0), dqacc = tensor(b, T_DQACC, F, qd, NULL, 0, 0);
	reshape(b, kt, kk);
	matmul(b, ds, kk, dqacc);
	pointwise(b, CUDNN_POINTWISE_IDENTITY, F, -1, dqacc, NULL, NULL, dq);
}

static void build_free(struct sdpa_build *b)
{
	for (int i = b->nd - 1; i >= 0; i--)
		cudnnBackendDestroyDescriptor(b->d[i]);
	b->nd = b->nops = 0;
}

/* The first engine configuration of heuristics mode A that finalizes as a plan on this handle. */
static int plan_for(struct sdpa_build *b, cudnnBackendDescriptor_t *plan, int64_t *engine)
{
	cudnnBackendDescriptor_t graph = make(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
	set(b, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, b->nops, b->ops, "graph ops");
	set(b, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_dnn, "graph handle");
	finalize(b, graph, "operation graph finalize");
	cudnnBackendDescriptor_t heur = make(b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
	cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
	set(b, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph");
	set(b, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
	finalize(b, heur, "heuristics finalize");
	if (b->failed)
		return -1;
	enum { NCFG = 8 };
	cudnnBackendDescriptor_t cfg[NCFG];
	int64_t n = 0;
	for (int i = 0; i < NCFG; i++)
		if (!(cfg[i] = make(b, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config")))
			return -1;
	if (!dnn_ok(b, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
						  NCFG, &n, cfg), "heuristics results"))
		return -1;
	if (n <= 0) {
		snprintf(g_why, sizeof(g_why), "cuDNN has no engine for this attention graph");
		return -1;
	}
	for (int64_t i = 0; i < n; i++) {
		cudnnBackendDescriptor_t p = NULL;
		if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p) != CUDNN_STATUS_SUCCESS)
			continue;
		cudnnStatus_t st = cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_dnn);
		if (st == CUDNN_STATUS_SUCCESS)
			st = cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
						      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
		if (st == CUDNN_STATUS_SUCCESS)
			st = cudnnBackendFinalize(p);
		if (st != CUDNN_STATUS_SUCCESS) {
			dnn_ok(NULL, st, "execution plan");
			cudnnBackendDestroyDescriptor(p);
			continue;
		}
		cudnnBackendDescriptor_t eng = NULL;
		int64_t got = 0;
		*engine = -1;
		if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) == CUDNN_STATUS_SUCCESS) {
			if (cudnnBackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
						     &got, &eng) == CUDNN_STATUS_SUCCESS &&
			    got == 1)
				cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, engine);
			cudnnBackendDestroyDescriptor(eng);
		}
		*plan = p;
		return 0;
	}
	return -1;
}

static size_t align256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

/* The plan for this call, built (outside stream capture) on the key's first call. */
static struct sdpa_plan *plan_make(int dt, int64_t bh, int64_t l, int64_t d, int causal, int bwd);

static void plan_drop(struct sdpa_plan *p)
{
	cudnnBackendDestroyDescriptor(p->plan);
	if (p->build) {
		build_free(p->build);
		free(p->build);
	}
	cudaFree(p->work);
	memset(p, 0, sizeof(*p));
}

static struct sdpa_plan *plan_get(int dt, int64_t bh, int64_t l, int64_t d, int causal, int bwd, cudaStream_t s)
{
	if (!kj_gpu_sdpa_supported(dt, d)) {
		snprintf(g_why, sizeof(g_why), "cuDNN attention: fp16/bf16 with head size a multiple of 8 up to 256 only");
		return NULL;
	}
	for (int i = 0; i < SDPA_PLANS; i++) {
		struct sdpa_plan *p = &g_plans[i];
		if (p->used && p->dt == dt && p->bh == bh && p->l == l && p->d == d && p->causal == causal &&
		    p->bwd == bwd) {
			p->stamp = ++g_stamp;
			return p;
		}
	}
	for (int i = 0; i < SDPA_PLANS; i++) {
		struct sdpa_refused *r = &g_refused[i];
		if (r->used && r->dt == dt && r->bh == bh && r->l == l && r->d == d && r->causal == causal &&
		    r->bwd == bwd) {
			snprintf(g_why, sizeof(g_why), "%s", r->why);
			return NULL;
		}
	}
	enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
	if (cudaStreamIsCapturing(s, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone) {
		snprintf(g_why, sizeof(g_why), "cuDNN attention plan first needed inside a stream capture");
		return NULL;
	}
	struct sdpa_plan *made = plan_make(dt, bh, l, d, causal, bwd);
	if (!made) {
		struct sdpa_refused *r = &g_refused[g_refused_next++ % SDPA_PLANS];
		r->used = 1, r->dt = dt, r->bh = bh, r->l = l, r->d = d, r->causal = causal, r->bwd = bwd;
		snprintf(r->why, sizeof(r->why), "%s", g_why);
	}
	return made;
}

/* A new plan in the least recently used slot; NULL with g_why set. */
static struct sdpa_plan *plan_make(int dt, int64_t bh, int64_t l, int64_t d, int causal, int bwd)
{
	if (!g_dnn && !dnn_ok(NULL, cudnnCreate(&g_dnn), "cudnnCreate"))
		return NULL;
	/* a free slot; past SDPA_LIVE plans (the sweep: one shape at a time) the least recently used
	 * goes, unless plans are kept (a pipeline's graphs hold every phase's workspace) */
	struct sdpa_plan *slot = NULL, *lru = NULL;
	int live = 0;
	for (int i = 0; i < SDPA_PLANS; i++) {
		if (!g_plans[i].used) {
			slot = slot ? slot : &g_plans[i];
			continue;
		}
		live++;
		if (!lru || g_plans[i].stamp < lru->stamp)
			lru = &g_plans[i];
	}
	if (g_keep_plans ? !slot : live >= SDPA_LIVE)
		slot = g_keep_plans ? NULL : lru;
	if (!slot) {
		snprintf(g_why, sizeof(g_why), "cuDNN attention: more than %d shapes' plans kept", SDPA_PLANS);
		return NULL;
	}
	if (slot->used) { /* the least recently used shape's plan goes */
		cudaDeviceSynchronize();
		plan_drop(slot);
	}
	struct sdpa_build *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(g_why, sizeof(g_why), "cuDNN attention: host memory");
		return NULL;
	}
	b->next_virtual = 100;
	cudnnDataType_t io = dt == 0 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
	if (bwd)
		build_bwd(b, io, bh, l, d, causal);
	else
		build_fwd(b, io, bh, l, d, causal);
	cudnnBackendDescriptor_t plan = NULL;
	int64_t engine = -1, ws = 0, got = 0;
	int rc = b->failed ? -1 : plan_for(b, &plan, &engine);
	if (!rc && !dnn_ok(NULL, cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
							 CUDNN_TYPE_INT64, 1, &got, &ws), "plan workspace size")) {
		cudnnBackendDestroyDescriptor(plan);
		rc = -1;
	}
	/* the backward's two tensors follow the plan's own workspace */
	size_t dot_at = align256((size_t)ws), dq_at = dot_at + align256((size_t)(bh * l) * sizeof(float));
	size_t total = bwd ? dq_at + (size_t)(bh * l * d) * sizeof(float) : dot_at;
	void *work = NULL;
	if (!rc && total && cudaMalloc(&work, total) != cudaSuccess) {
		snprintf(g_why, sizeof(g_why), "cuDNN attention workspace of %zu bytes: out of device memory", total);
		cudaGetLastError();
		cudnnBackendDestroyDescriptor(plan);
		rc = -1;
	}
	if (rc) {
		build_free(b);
		free(b);
		return NULL;
	}
	slot->build = b, slot->used = 1, slot->dt = dt, slot->bh = bh, slot->l = l, slot->d = d, slot->causal = causal;
	slot->bwd = bwd, slot->plan = plan, slot->work = work, slot->engine = engine, slot->stamp = ++g_stamp;
	slot->dot = bwd ? (char *)work + dot_at : NULL, slot->dqacc = bwd ? (char *)work + dq_at : NULL;
	return slot;
}

static int execute(struct sdpa_plan *p, int n, const int64_t *uids, void **ptrs, cudaStream_t s)
{
	cudnnBackendDescriptor_t pack = NULL;
	int ok = dnn_ok(NULL, cudnnSetStream(g_dnn, s), "set stream") &&
		 dnn_ok(NULL, cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack), "variant pack");
	ok = ok && dnn_ok(NULL, cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids),
			  "variant pack ids");
	ok = ok && dnn_ok(NULL, cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n,
							 ptrs), "variant pack pointers");
	ok = ok && dnn_ok(NULL, cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
							 &p->work), "variant pack workspace");
	ok = ok && dnn_ok(NULL, cudnnBackendFinalize(pack), "variant pack finalize");
	ok = ok && dnn_ok(NULL, cudnnBackendExecute(g_dnn, p->plan, pack), "execute");
	if (pack)
		cudnnBackendDestroyDescriptor(pack);
	return ok ? 0 : -1;
}

int kj_gpu_sdpa_supported(int dt, int64_t d)
{
	return (dt == 0 || dt == 1) && d % 8 == 0 && d >= 8 && d <= 256;
}

int kj_gpu_sdpa_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse, int64_t bh, int64_t l,
		   int64_t d, float scale, int causal, cudaStream_t s)
{
	struct sdpa_plan *p = plan_get(dt, bh, l, d, causal, 0, s);
	if (!p)
		return -1;
	static float ninf;
	static float sc;
	ninf = -INFINITY, sc = scale;
	int64_t uids[7] = {T_Q, T_K, T_V, T_O, T_STATS, T_SCALE, T_NEGINF};
	void *ptrs[7] = {(void *)q, (void *)k, (void *)v, o, lse, &sc, &ninf};
	g_engine_f = p->engine;
	return execute(p, causal ? 7 : 6, uids, ptrs, s);
}

int kj_gpu_sdpa_bwd(int dt, const void *q, const void *k, const void *v, const void *o, const void *dout,
		   const float *lse, void *dq, void *dk, void *dv, int64_t bh, int64_t l, int64_t d, float scale, int causal,
		   cudaStream_t s)
{
	struct sdpa_plan *p = plan_get(dt, bh, l, d, causal, 1, s);
	if (!p)
		return -1;
	static float ninf, sc, one;
	ninf = -INFINITY, sc = scale, one = 1.f;
	int64_t uids[14] = {T_Q, T_K, T_V, T_O, T_DO, T_STATS, T_DQ, T_DK, T_DV, T_SCALE, T_ONE, T_DOT, T_DQACC, T_NEGINF};
	void *ptrs[14] = {(void *)q, (void *)k, (void *)v, (void *)o, (void *)dout, (void *)lse, dq, dk, dv, &sc,
			  &one, p->dot, p->dqacc, &ninf};
	g_engine_b = p->engine;
	return execute(p, causal ? 14 : 13, uids, ptrs, s);
}

void kj_gpu_sdpa_keep_plans(int keep)
{
	g_keep_plans = keep != 0;
}

const char *kj_gpu_sdpa_why(void)
{
	return g_why[0] ? g_why : "no reason recorded";
}

int64_t kj_gpu_sdpa_engine(int bwd)
{
	return bwd ? g_engine_b : g_engine_f;
}

void kj_gpu_sdpa_release(void)
{
	for (int i = 0; i < SDPA_PLANS; i++)
		if (g_plans[i].used)
			plan_drop(&g_plans[i]);
	if (g_dnn)
		cudnnDestroy(g_dnn), g_dnn = NULL;
}
