/* kjoule-sweep-worker: row-major GEMM plans through cuBLASLt (heuristic algorithm, the context's
 * workspace), batched with strides. fp16/bf16 accumulate in fp32; fp32 is plain fp32 (no TF32).
 * KJ_SWEEP_GEMM_ALGO=fastest: the first call outside a stream capture times cuBLASLt's first
 * SW_GEMM_CANDIDATES heuristic algorithms on the call's own buffers and keeps the quickest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "sweep_worker.h"

#define SW_GEMM_CANDIDATES 8

struct sw_gemm {
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t a, b, c;
	cublasLtMatmulAlgo_t algo;
	float alpha, beta;
	cublasLtMatmulAlgo_t cand[SW_GEMM_CANDIDATES]; /* heuristic's ranking, for the fastest */
	int ncand, tuned;
};

static int lt_fail(struct sw_ctx *c, cublasStatus_t st, const char *what)
{
	if (st == CUBLAS_STATUS_ALLOC_FAILED)
		c->oom = 1;
	return sw_fail(c, what, "cuBLASLt %s (%s)", cublasLtGetStatusName(st), cublasLtGetStatusString(st));
}

#define LT(call, what)                                   \
	do {                                             \
		cublasStatus_t st_ = (call);             \
		if (st_ != CUBLAS_STATUS_SUCCESS) {      \
			rc = lt_fail(c, st_, what);      \
			goto error;                      \
		}                                        \
	} while (0)

static int layout(struct sw_ctx *c, cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows,
		  int64_t cols, int64_t ld, int batch, int64_t stride)
{
	int rc = 0;
	LT(cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld), "matrix layout");
	if (batch > 1) {
		LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
						    sizeof(batch)), "batch count");
		LT(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
						    sizeof(stride)), "batch stride");
	}
error:
	return rc;
}

/* Row-major C[M,N] = op(A) op(B) is column-major C^T[N,M] = op(B)^T op(A)^T: cuBLASLt gets B as
 * its first operand and A as its second. */
static int plan(struct sw_ctx *c, int p, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t lda,
		int64_t ldb, int64_t ldc, int batch, int64_t sa, int64_t sb, int64_t sc, float alpha, float beta,
		const void *bias)
{
	int rc = 0;
	if (c->ngemm == (int)(sizeof(c->gemm) / sizeof(c->gemm[0])))
		return sw_fail(c, "gemm plan", "too many plans");
	struct sw_gemm *g = calloc(1, sizeof(*g));
	if (!g)
		return sw_fail(c, "gemm plan", "host memory");
	c->gemm[c->ngemm] = g;
	g->alpha = alpha;
	g->beta = beta;
	cudaDataType_t t = p == KJ_FP16 ? CUDA_R_16F : p == KJ_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
	cudaDataType_t st = CUDA_R_32F;
	cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	LT(cublasLtMatmulDescCreate(&g->desc, ct, st), "matmul desc");
	LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)), "transa");
	LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)), "transb");
	if (bias) {
		/* column-major C^T[N,M]: a bias of N elements is one a row, broadcast over the M columns */
		cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
		LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "epilogue");
		LT(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
		   "bias pointer");
	}
	if ((rc = layout(c, &g->a, t, tb ? K : N, tb ? N : K, ldb, batch, sb)))
		goto error;
	if ((rc = layout(c, &g->b, t, ta ? M : K, ta ? K : M, lda, batch, sa)))
		goto error;
	if ((rc = layout(c, &g->c, t, N, M, ldc, batch, sc)))
		goto error;
	cublasLtMatmulPreference_t pref = NULL;
	size_t ws = SW_GEMM_WORKSPACE;
	cublasLtMatmulHeuristicResult_t h[SW_GEMM_CANDIDATES];
	const char *pick = getenv("KJ_SWEEP_GEMM_ALGO");
	int found = 0, want = pick && !strcmp(pick, "fastest") ? SW_GEMM_CANDIDATES : 1;
	LT(cublasLtMatmulPreferenceCreate(&pref), "preference");
	cublasStatus_t s1 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
								 &ws, sizeof(ws));
	cublasStatus_t s2 = s1 == CUBLAS_STATUS_SUCCESS
		? cublasLtMatmulAlgoGetHeuristic(c->lt, g->desc, g->a, g->b, g->c, g->c, pref, want, h, &found)
		: s1;
	cublasLtMatmulPreferenceDestroy(pref);
	if (s2 != CUBLAS_STATUS_SUCCESS) {
		rc = lt_fail(c, s2, "algorithm heuristic");
		goto error;
	}
	if (found < 1) {
		rc = sw_fail(c, "algorithm heuristic", "cuBLASLt found no algorithm for M=%lld N=%lld K=%lld batch=%d",
			     (long long)M, (long long)N, (long long)K, batch);
		goto error;
	}
	g->algo = h[0].algo;
	for (int i = 0; i < found && want > 1; i++)
		if (h[i].state == CUBLAS_STATUS_SUCCESS)
			g->cand[g->ncand++] = h[i].algo;
	g->tuned = g->ncand <= 1 || beta != 0.f; /* tuning reruns the call: an accumulating one would add up */
	return c->ngemm++;
error:
	if (g->a)
		cublasLtMatrixLayoutDestroy(g->a);
	if (g->b)
		cublasLtMatrixLayoutDestroy(g->b);
	if (g->c)
		cublasLtMatrixLayoutDestroy(g->c);
	if (g->desc)
		cublasLtMatmulDescDestroy(g->desc);
	free(g);
	c->gemm[c->ngemm] = NULL;
	return rc ? rc : KJ_EGPU;
}

int sw_gemm_plan(struct sw_ctx *c, int p, int ta, int tb, int64_t M, int64_t N, int64_t K,
		 int64_t lda, int64_t ldb, int64_t ldc, int batch, int64_t sa, int64_t sb, int64_t sc,
		 float alpha, float beta)
{
	return plan(c, p, ta, tb, M, N, K, lda, ldb, ldc, batch, sa, sb, sc, alpha, beta, NULL);
}

int sw_gemm_plan_bias(struct sw_ctx *c, int p, int ta, int tb, int64_t M, int64_t N, int64_t K,
		      int64_t lda, int64_t ldb, int64_t ldc, const void *bias)
{
	return plan(c, p, ta, tb, M, N, K, lda, ldb, ldc, 1, 0, 0, 0, 1.f, 0.f, bias);
}

/* Times each candidate algorithm on the call's buffers (one untimed call, then 5 back to back
 * between two events) and keeps the quickest in g->algo. A candidate that fails is skipped; the
 * heuristic's first stays when none can be timed. Not inside a stream capture. */
static void gemm_tune(struct sw_ctx *c, struct sw_gemm *g, const void *A, const void *B, void *C)
{
	cudaEvent_t e0 = NULL, e1 = NULL;
	float best = -1;
	g->tuned = 1;
	if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
		goto out;
	for (int i = 0; i < g->ncand; i++) {
		cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
		float ms = 0;
		for (int r = 0; r < 6 && st == CUBLAS_STATUS_SUCCESS; r++) {
			if (r == 1)
				cudaEventRecord(e0, c->stream);
			st = cublasLtMatmul(c->lt, g->desc, &g->alpha, B, g->a, A, g->b, &g->beta, C, g->c, C, g->c,
					    &g->cand[i], c->workspace, SW_GEMM_WORKSPACE, c->stream);
		}
		cudaEventRecord(e1, c->stream);
		if (st != CUBLAS_STATUS_SUCCESS || cudaEventSynchronize(e1) != cudaSuccess ||
		    cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
			continue;
		if (best < 0 || ms < best)
			best = ms, g->algo = g->cand[i];
	}
out:
	cudaGetLastError(); /* a candidate's failure is not the caller's */
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
}

void sw_gemm_ran_reset(struct sw_ctx *c)
{
	c->ngemm_ran = 0;
}

void sw_gemm_describe(struct sw_ctx *c, char *buf, size_t len)
{
	static const cublasLtMatmulAlgoConfigAttributes_t attrs[] = {
		CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
		CUBLASLT_ALGO_CONFIG_STAGES_ID, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID};
	size_t n = 0;
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < c->ngemm_ran && n + 1 < len; i++) {
		struct sw_gemm *g = c->gemm[c->gemm_ran[i]];
		for (size_t a = 0; a < sizeof(attrs) / sizeof(attrs[0]); a++) {
			uint32_t v = 0; /* every attribute here is a 32-bit id or count */
			size_t got = 0;
			long long x = cublasLtMatmulAlgoConfigGetAttribute(&g->algo, attrs[a], &v, sizeof(v), &got) ==
						      CUBLAS_STATUS_SUCCESS
					      ? (long long)v
					      : -1;
			int w = snprintf(buf + n, len - n, "%s%lld", a ? "." : i ? "+" : "", x);
			if (w < 0 || (size_t)w >= len - n) {
				buf[n] = '\0';
				return;
			}
			n += (size_t)w;
		}
	}
}

int sw_gemm_run(struct sw_ctx *c, int plan, const void *A, const void *B, void *C)
{
	struct sw_gemm *g = c->gemm[plan];
	int seen = 0;
	for (int i = 0; i < c->ngemm_ran && !seen; i++)
		seen = c->gemm_ran[i] == plan;
	if (!seen && c->ngemm_ran < (int)(sizeof(c->gemm_ran) / sizeof(c->gemm_ran[0])))
		c->gemm_ran[c->ngemm_ran++] = plan;
	enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
	if (!g->tuned && cudaStreamIsCapturing(c->stream, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone)
		gemm_tune(c, g, A, B, C);
	cublasStatus_t st = cublasLtMatmul(c->lt, g->desc, &g->alpha, B, g->a, A, g->b, &g->beta, C, g->c,
					   C, g->c, &g->algo, c->workspace, SW_GEMM_WORKSPACE, c->stream);
	return st == CUBLAS_STATUS_SUCCESS ? 0 : lt_fail(c, st, "cublasLtMatmul");
}

void sw_gemm_free_all(struct sw_ctx *c)
{
	for (int i = 0; i < c->ngemm; i++) {
		struct sw_gemm *g = c->gemm[i];
		if (!g)
			continue;
		cublasLtMatrixLayoutDestroy(g->a);
		cublasLtMatrixLayoutDestroy(g->b);
		cublasLtMatrixLayoutDestroy(g->c);
		cublasLtMatmulDescDestroy(g->desc);
		free(g);
		c->gemm[i] = NULL;
	}
	c->ngemm = 0;
	c->ngemm_ran = 0;
}
