/* kjoule-pipeline-worker: the built-in phases as kj_phase_ops: convolution (cuDNN, legacy
 * cudnnConvolutionForward with the heuristic's first algorithm, or the fastest timed on the phase's
 * buffers, as PyTorch with cudnn.benchmark), matmul (cuBLASLt, the TN layout of torch.nn.Linear),
 * pooling, normalisation, activation and attention (worker_kernels.cu). Every failure names the call and carries the
 * vendor's text. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_gpu_fill.h"
#include "worker_ops.h"

/* the harness's fill takes the phases' element types as they are */
_Static_assert((int)KJW_F16 == (int)KJ_GPU_F16 && (int)KJW_BF16 == (int)KJ_GPU_BF16 && (int)KJW_F32 == (int)KJ_GPU_F32,
	       "pipeline element types are kj_gpu_fill's");

static cudnnHandle_t g_cudnn;
static cublasLtHandle_t g_lt;

int kjw_dtype(const char *prec)
{
	return !strcmp(prec, "bf16") ? KJW_BF16 : !strcmp(prec, "fp32") ? KJW_F32 : KJW_F16;
}

int kjw_alloc(void **p, size_t bytes, const char *what, char *err, size_t errlen)
{
	cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);
	if (e) {
		*p = NULL;
		cudaGetLastError();
		snprintf(err, errlen, "out of memory: cudaMalloc(%zu bytes) for %s: %s (%s)", bytes, what,
			 cudaGetErrorName(e), cudaGetErrorString(e));
		return KJ_ENOMEM;
	}
	return 0;
}

static int cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
	if (!e)
		return 0;
	snprintf(err, errlen, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
	return KJ_EGPU;
}

/* Random buffer of n elements (values around scale); 0 or an error in err. */
static int rand_buf(void **p, size_t n, int dtype, uint64_t seed, float scale, const char *what, char *err,
		    size_t errlen)
{
	size_t es = dtype == KJW_F32 ? 4 : 2;
	int rc = kjw_alloc(p, n * es, what, err, errlen);
	if (rc)
		return rc;
	return cuda_fail((cudaError_t)kj_gpu_fill(*p, n, dtype, KJ_GPU_FILL_MAGNITUDE, scale, seed, 0), "random fill", err, errlen);
}

static int rand_f32(float **p, size_t n, uint64_t seed, float lo_scale, const char *what, char *err,
		    size_t errlen)
{
	return rand_buf((void **)p, n, KJW_F32, seed, lo_scale, what, err, errlen);
}

/* ---- convolution ---- */
#define DNN(call, what)                                                                            \
	do {                                                                                       \
		cudnnStatus_t s_ = (call);                                                         \
		if (s_ != CUDNN_STATUS_SUCCESS) {                                                  \
			char m_[256] = "";                                                         \
			cudnnGetLastErrorString(m_, sizeof(m_));                                   \
			snprintf(err, errlen, "%s: %s%s%s", what, cudnnGetErrorString(s_), m_[0] ? ": " : "", m_); \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

void kjw_conv_teardown(void *state)
{
	struct kjw_conv *c = state;
	if (!c)
		return;
	cudaFree(c->x);
	cudaFree(c->w);
	cudaFree(c->y);
	cudaFree(c->ws);
	if (c->xd)
		cudnnDestroyTensorDescriptor(c->xd);
	if (c->yd)
		cudnnDestroyTensorDescriptor(c->yd);
	if (c->wd)
		cudnnDestroyFilterDescriptor(c->wd);
	if (c->cd)
		cudnnDestroyConvolutionDescriptor(c->cd);
	free(c);
}

/* The workspace cuDNN may use, at most; an algorithm that needs more is passed over. */
#define KJW_CONV_WS_MAX ((size_t)1 << 31)

/* One algorithm's time on c's buffers as the phase will run it: a first call (CUDA loads modules
 * lazily), then KJW_CONV_UNROLL calls captured in a CUDA graph (cuDNN's host work per call, about
 * as long as a small convolution, would otherwise sit between event records), launched once to
 * warm and KJW_CONV_TRIALS times timed; the best trial's ms a call, or -1 if cuDNN refuses it. */
#define KJW_CONV_UNROLL 10
#define KJW_CONV_TRIALS 3
static float conv_time_algo(struct kjw_conv *c, cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes)
{
	float one = 1.f, zero = 0.f, best = -1;
	cudaStream_t s = NULL;
	cudaEvent_t a = NULL, b = NULL;
	cudaGraph_t g = NULL;
	cudaGraphExec_t ge = NULL;
	int ok = 1;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
	    cudnnSetStream(g_cudnn, s) != CUDNN_STATUS_SUCCESS ||
	    cudnnConvolutionForward(g_cudnn, &one, c->xd, c->x, c->wd, c->w, c->cd, algo, ws, ws_bytes, &zero, c->yd,
				    c->y) != CUDNN_STATUS_SUCCESS ||
	    cudaStreamSynchronize(s) != cudaSuccess || cudaEventCreate(&a) != cudaSuccess ||
	    cudaEventCreate(&b) != cudaSuccess ||
	    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
		goto done;
	for (int i = 0; i < KJW_CONV_UNROLL && ok; i++)
		ok = cudnnConvolutionForward(g_cudnn, &one, c->xd, c->x, c->wd, c->w, c->cd, algo, ws, ws_bytes, &zero,
					     c->yd, c->y) == CUDNN_STATUS_SUCCESS;
	if (cudaStreamEndCapture(s, &g) != cudaSuccess || !ok ||
	    cudaGraphInstantiate(&ge, g, 0) != cudaSuccess || cudaGraphLaunch(ge, s) != cudaSuccess ||
	    cudaStreamSynchronize(s) != cudaSuccess)
		goto done;
	for (int t = 0; t < KJW_CONV_TRIALS; t++) {
		float ms = -1;
		if (cudaEventRecord(a, s) != cudaSuccess || cudaGraphLaunch(ge, s) != cudaSuccess ||
		    cudaEventRecord(b, s) != cudaSuccess || cudaEventSynchronize(b) != cudaSuccess ||
		    cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
			break;
		ms /= KJW_CONV_UNROLL;
		if (best < 0 || ms < best)
			best = ms;
	}
done:
	if (ge)
		cudaGraphExecDestroy(ge);
	if (g)
		cudaGraphDestroy(g);
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	cudnnSetStream(g_cudnn, 0);
	if (s)
		cudaStreamDestroy(s);
	cudaGetLastError();
	return best;
}

/* Picks c's forward algorithm and allocates its workspace. Heuristic (conv_algo: heuristic, the
 * default): the first one cuDNN's heuristics rank that fits, as eager PyTorch without
 * cudnn.benchmark. Fastest (conv_algo: fastest): every algorithm cuDNN supports for the shape, up to
 * KJW_CONV_WS_MAX of workspace, timed on the phase's own buffers and the quickest kept, as PyTorch
 * with cudnn.benchmark; grouped convolutions keep the heuristic's (timing their algorithms ran past
 * a minute on EfficientNet's depthwise layers). Own timing rather than
 * cudnnFindConvolutionForwardAlgorithmEx, whose single timed call per algorithm includes lazy module
 * loading. 0, or an error in err. */
static int conv_choose_algo(struct kjw_conv *c, char *err, size_t errlen)
{
	cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	int got = 0;
	size_t offer = 0;
	DNN(cudnnGetConvolutionForwardAlgorithm_v7(g_cudnn, c->xd, c->wd, c->cd, c->yd,
						   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
	    "cudnnGetConvolutionForwardAlgorithm_v7");
	c->algo = -1;
	for (int i = 0; i < got; i++)
		if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= KJW_CONV_WS_MAX) {
			if (c->algo < 0)
				c->algo = (int)perf[i].algo, c->ws_bytes = perf[i].memory;
			if (perf[i].memory > offer)
				offer = perf[i].memory;
		}
	if (c->algo < 0) {
		snprintf(err, errlen, "cuDNN has no forward algorithm for this shape and precision");
		return KJ_EGPU;
	}
	int timed = c->ph.conv_fastest && c->ph.groups <= 1;
	if (timed && offer && cudaMalloc(&c->ws, offer) != cudaSuccess) {
		cudaGetLastError();
		c->ws = NULL;
		offer = 0; /* no room for a workspace: the algorithms that need none */
	}
	if (timed) {
		float best = -1;
		for (int i = 0; i < got; i++) {
			if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > offer)
				continue;
			float ms = conv_time_algo(c, perf[i].algo, c->ws, perf[i].memory);
			if (ms >= 0 && (best < 0 || ms < best))
				best = ms, c->algo = (int)perf[i].algo, c->ws_bytes = perf[i].memory;
		}
		fprintf(stderr, "kjoule-pipeline-worker: conv N%" PRId64 " C%" PRId64 " %" PRId64 "x%" PRId64 " M%" PRId64
			" %" PRId64 "x%" PRId64 ": algorithm %d, the fastest of those timed (%.4f ms a call)\n", c->ph.N,
			c->ph.C, c->ph.H, c->ph.W, c->ph.M, c->ph.R, c->ph.S, c->algo, best);
		if (c->ws && c->ws_bytes < offer) { /* keep only what the choice needs */
			cudaFree(c->ws);
			c->ws = NULL;
		}
	}
	if (c->ws_bytes && !c->ws && kjw_alloc(&c->ws, c->ws_bytes, "cuDNN workspace", err, errlen))
		return KJ_ENOMEM;
	return 0;
fail:
	return KJ_EGPU;
}

int kjw_conv_setup(const struct kj_phase *ph, void **state, char *err, size_t errlen)
{
	struct kjw_conv *c = calloc(1, sizeof(*c));
	cudnnDataType_t dt;
	int rc = KJ_EGPU;
	*state = NULL;
	if (!c)
		return KJ_ENOMEM;
	c->ph = *ph;
	c->dtype = kjw_dtype(ph->precision);
	dt = c->dtype == KJW_BF16 ? CUDNN_DATA_BFLOAT16 : c->dtype == KJW_F32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
	if (!g_cudnn)
		DNN(cudnnCreate(&g_cudnn), "cudnnCreate");
	DNN(cudnnCreateTensorDescriptor(&c->xd), "cudnnCreateTensorDescriptor");
	DNN(cudnnCreateTensorDescriptor(&c->yd), "cudnnCreateTensorDescriptor");
	DNN(cudnnCreateFilterDescriptor(&c->wd), "cudnnCreateFilterDescriptor");
	DNN(cudnnCreateConvolutionDescriptor(&c->cd), "cudnnCreateConvolutionDescriptor");
	cudnnTensorFormat_t fmt = ph->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
	DNN(cudnnSetTensor4dDescriptor(c->xd, fmt, dt, (int)ph->N, (int)ph->C, (int)ph->H, (int)ph->W),
	    "cudnnSetTensor4dDescriptor(input N C H W)");
	DNN(cudnnSetFilter4dDescriptor(c->wd, dt, fmt, (int)ph->M, (int)(ph->C / ph->groups),
				       (int)ph->R, (int)ph->S),
	    "cudnnSetFilter4dDescriptor(M C/groups R S)");
	DNN(cudnnSetConvolution2dDescriptor(c->cd, (int)ph->pad_h, (int)ph->pad_w, (int)ph->stride_h,
					    (int)ph->stride_w, (int)ph->dil_h, (int)ph->dil_w, CUDNN_CROSS_CORRELATION,
					    c->dtype == KJW_F32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_FLOAT),
	    "cudnnSetConvolution2dDescriptor(pad, stride, dilation)");
	DNN(cudnnSetConvolutionGroupCount(c->cd, (int)ph->groups), "cudnnSetConvolutionGroupCount");
	DNN(cudnnSetConvolutionMathType(c->cd, c->dtype == KJW_F32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH),
	    "cudnnSetConvolutionMathType");
	int n, m, p, q;
	DNN(cudnnGetConvolution2dForwardOutputDim(c->cd, c->xd, c->wd, &n, &m, &p, &q),
	    "cudnnGetConvolution2dForwardOutputDim");
	if (p != ph->P || q != ph->Q || m != ph->M) {
		snprintf(err, errlen, "cuDNN output %dx%dx%dx%d differs from the checked shape N x M x P x Q", n, m, p, q);
		goto fail;
	}
	DNN(cudnnSetTensor4dDescriptor(c->yd, fmt, dt, n, m, p, q), "cudnnSetTensor4dDescriptor(output)");
	if ((rc = rand_buf(&c->x, (size_t)(ph->N * ph->C * ph->H * ph->W), c->dtype, 11, 1.0f, "conv input", err, errlen)))
		goto fail;
	float ws = 1.0f / sqrtf((float)(ph->C / ph->groups * ph->R * ph->S));
	if ((rc = rand_buf(&c->w, (size_t)(ph->M * (ph->C / ph->groups) * ph->R * ph->S), c->dtype, 12, ws,
			   "conv filter", err, errlen)))
		goto fail;
	if ((rc = kjw_alloc(&c->y, (size_t)(n * m * p * q) * (c->dtype == KJW_F32 ? 4 : 2), "conv output", err, errlen)))
		goto fail;
	if ((rc = conv_choose_algo(c, err, errlen)))
		goto fail;
	*state = c;
	return 0;
fail:
	kjw_conv_teardown(c);
	return rc ? rc : KJ_EGPU;
}

int kjw_conv_capture(void *state, cudaStream_t s)
{
	struct kjw_conv *c = state;
	float one = 1.f, zero = 0.f;
	if (cudnnSetStream(g_cudnn, s) != CUDNN_STATUS_SUCCESS)
		return KJ_EGPU;
	cudnnStatus_t st = cudnnConvolutionForward(g_cudnn, &one, c->xd, c->x, c->wd, c->w, c->cd,
						   (cudnnConvolutionFwdAlgo_t)c->algo, c->ws, c->ws_bytes, &zero, c->yd, c->y);
	if (st != CUDNN_STATUS_SUCCESS) {
		char m[256] = "";
		cudnnGetLastErrorString(m, sizeof(m));
		fprintf(stderr, "kjoule-pipeline-worker: cudnnConvolutionForward: %s %s\n", cudnnGetErrorString(st), m);
		return KJ_EGPU;
	}
	return 0;
}

/* ---- matmul ---- */
#define LT(call, what)                                                                    \
	do {                                                                              \
		cublasStatus_t s_ = (call);                                               \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                        \
			snprintf(err, errlen, "%s: %s (%s)", what, cublasLtGetStatusName(s_), \
				 cublasLtGetStatusString(s_));                            \
			goto fail;                                                        \
		}                                                                         \
	} while (0)

void kjw_matmul_teardown(void *state)
{
	struct kjw_matmul *g = state;
	if (!g)
		return;
	cudaFree(g->a);
	cudaFree(g->b);
	cudaFree(g->c);
	cudaFree(g->ws);
	if (g->op)
		cublasLtMatmulDescDestroy(g->op);
	if (g->la)
		cublasLtMatrixLayoutDestroy(g->la);
	if (g->lb)
		cublasLtMatrixLayoutDestroy(g->lb);
	if (g->lc)
		cublasLtMatrixLayoutDestroy(g->lc);
	free(g);
}

int kjw_matmul_setup(const struct kj_phase *ph, void **state, char *err, size_t errlen)
{
	struct kjw_matmul *g = calloc(1, sizeof(*g));
	int rc = KJ_EGPU;
	*state = NULL;
	if (!g)
		return KJ_ENOMEM;
	g->ph = *ph;
	g->dtype = kjw_dtype(ph->precision);
	cudaDataType_t dt = g->dtype == KJW_BF16 ? CUDA_R_16BF : g->dtype == KJW_F32 ? CUDA_R_32F : CUDA_R_16F;
	size_t es = g->dtype == KJW_F32 ? 4 : 2;
	uint64_t M = (uint64_t)ph->M, K = (uint64_t)ph->K, N = (uint64_t)ph->N;
	int32_t cnt = (int32_t)ph->count;
	if (!g_lt)
		LT(cublasLtCreate(&g_lt), "cublasLtCreate");
	LT(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	LT(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "TRANSA");
	LT(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "TRANSB");
	/* column-major: A is the K x M weight (op T), B the K x N input, C the M x N output */
	LT(cublasLtMatrixLayoutCreate(&g->la, dt, K, M, (int64_t)K), "cublasLtMatrixLayoutCreate(A: K x M)");
	LT(cublasLtMatrixLayoutCreate(&g->lb, dt, K, N, (int64_t)K), "cublasLtMatrixLayoutCreate(B: K x N)");
	LT(cublasLtMatrixLayoutCreate(&g->lc, dt, M, N, (int64_t)M), "cublasLtMatrixLayoutCreate(C: M x N)");
	if (cnt > 1) {
		int64_t sa = (int64_t)(K * M), sb = (int64_t)(K * N), sc = (int64_t)(M * N);
		LT(cublasLtMatrixLayoutSetAttribute(g->la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &cnt, sizeof(cnt)), "batch");
		LT(cublasLtMatrixLayoutSetAttribute(g->lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &cnt, sizeof(cnt)), "batch");
		LT(cublasLtMatrixLayoutSetAttribute(g->lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &cnt, sizeof(cnt)), "batch");
		LT(cublasLtMatrixLayoutSetAttribute(g->la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof(sa)), "stride");
		LT(cublasLtMatrixLayoutSetAttribute(g->lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof(sb)), "stride");
		LT(cublasLtMatrixLayoutSetAttribute(g->lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof(sc)), "stride");
	}
	g->ws_bytes = (size_t)32 << 20;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur;
	int found = 0;
	LT(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
	cublasStatus_t ps = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
								 &g->ws_bytes, sizeof(g->ws_bytes));
	cublasStatus_t hs = ps ? ps : cublasLtMatmulAlgoGetHeuristic(g_lt, g->op, g->la, g->lb, g->lc, g->lc, pref, 1,
								       &heur, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	LT(hs, "cublasLtMatmulAlgoGetHeuristic");
	if (!found) {
		snprintf(err, errlen, "cublasLt has no algorithm for M=%" PRIu64 " K=%" PRIu64 " N=%" PRIu64 " %s", M, K,
			 N, ph->precision);
		goto fail;
	}
	g->algo = heur.algo;
	if ((rc = rand_buf(&g->a, (size_t)(M * K) * (size_t)cnt, g->dtype, 21, 1.0f / sqrtf((float)K), "matmul A",
			   err, errlen)) ||
	    (rc = rand_buf(&g->b, (size_t)(K * N) * (size_t)cnt, g->dtype, 22, 1.0f, "matmul B", err, errlen)) ||
	    (rc = kjw_alloc(&g->c, (size_t)(M * N) * (size_t)cnt * es, "matmul C", err, errlen)) ||
	    (rc = kjw_alloc(&g->ws, g->ws_bytes, "cublasLt workspace", err, errlen)))
		goto fail;
	*state = g;
	return 0;
fail:
	kjw_matmul_teardown(g);
	return rc ? rc : KJ_EGPU;
}

int kjw_matmul_capture(void *state, cudaStream_t s)
{
	struct kjw_matmul *g = state;
	float one = 1.f, zero = 0.f;
	cublasStatus_t st = cublasLtMatmul(g_lt, g->op, &one, g->a, g->la, g->b, g->lb, &zero, g->c, g->lc, g->c, g->lc,
					   &g->algo, g->ws, g->ws_bytes, s);
	if (st != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "kjoule-pipeline-worker: cublasLtMatmul: %s\n", cublasLtGetStatusString(st));
		return KJ_EGPU;
	}
	return 0;
}

/* ---- pooling, normalisation, activation, attention: worker_kernels.cu ---- */
struct simple {
	struct kj_phase ph;
	int dtype, op;
	void *x, *b, *y, *k, *v;
	float *sa, *sb, *lse; /* lse: the fused attention's log-sum-exp scratch */
	float *ws;            /* the split-key attention's scratch (decode shapes) */
};

static void simple_teardown(void *state)
{
	struct simple *s = state;
	if (!s)
		return;
	cudaFree(s->x);
	cudaFree(s->b);
	cudaFree(s->y);
	cudaFree(s->k);
	cudaFree(s->v);
	cudaFree(s->sa);
	cudaFree(s->sb);
	cudaFree(s->lse);
	cudaFree(s->ws);
	free(s);
}

static int act_op(const char *op)
{
	static const char *const names[] = {"relu", "relu6", "gelu", "silu", "sigmoid", "hardswish",
					    "hardsigmoid", "add", "mul", "add_relu"};
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(op, names[i]))
			return i;
	return -1;
}

static int simple_setup(const struct kj_phase *ph, void **state, char *err, size_t errlen)
{
	struct simple *s = calloc(1, sizeof(*s));
	int rc = 0;
	*state = NULL;
	if (!s)
		return KJ_ENOMEM;
	s->ph = *ph;
	s->dtype = kjw_dtype(ph->precision);
	size_t es = s->dtype == KJW_F32 ? 4 : 2;
	size_t nx = (size_t)(ph->N * ph->C * ph->H * ph->W);
	switch (ph->kind) {
	case KJ_PHASE_POOL:
		s->op = !strcmp(ph->op, "avg");
		rc = rand_buf(&s->x, nx, s->dtype, 31, 1.0f, "pool input", err, errlen);
		if (!rc)
			rc = kjw_alloc(&s->y, (size_t)(ph->N * ph->C * ph->P * ph->Q) * es, "pool output", err, errlen);
		break;
	case KJ_PHASE_NORM:
		s->op = !strcmp(ph->op, "batch") ? 0 : !strcmp(ph->op, "layer") ? 1 : 2;
		rc = rand_buf(&s->x, nx, s->dtype, 41, 1.0f, "norm input", err, errlen);
		if (!rc)
			rc = rand_f32(&s->sa, (size_t)ph->C, 42, 1.0f, "norm scale", err, errlen);
		if (!rc)
			rc = rand_f32(&s->sb, (size_t)ph->C, 43, 0.5f, "norm shift", err, errlen);
		if (!rc)
			rc = kjw_alloc(&s->y, nx * es, "norm output", err, errlen);
		break;
	case KJ_PHASE_ACT:
		s->op = act_op(ph->op);
		rc = rand_buf(&s->x, nx, s->dtype, 51, 2.0f, "activation input", err, errlen);
		if (!rc && (s->op == KJW_ADD || s->op == KJW_ADD_RELU))
			rc = rand_buf(&s->b, nx, s->dtype, 52, 2.0f, "second input", err, errlen);
		if (!rc && s->op == KJW_MUL)
			rc = rand_buf(&s->b, (size_t)(ph->N * ph->C), s->dtype, 53, 1.0f, "scale input", err, errlen);
		if (!rc)
			rc = kjw_alloc(&s->y, nx * es, "activation output", err, errlen);
		break;
	case KJ_PHASE_ATTN: {
		size_t nq = (size_t)(ph->N * ph->heads * ph->seq_q * ph->K);
		size_t nk = (size_t)(ph->N * ph->heads * ph->seq_kv * ph->K);
		rc = rand_buf(&s->x, nq, s->dtype, 61, 1.0f, "attention Q", err, errlen);
		if (!rc)
			rc = rand_buf(&s->k, nk, s->dtype, 62, 1.0f, "attention K", err, errlen);
		if (!rc)
			rc = rand_buf(&s->v, nk, s->dtype, 63, 1.0f, "attention V", err, errlen);
		if (!rc)
			rc = kjw_alloc(&s->y, nq * es, "attention output", err, errlen);
		if (!rc && kjw_attention_fused(s->dtype, ph->N * ph->heads, ph->seq_q, ph->seq_kv, (int)ph->K))
			rc = kjw_alloc((void **)&s->lse, (size_t)(ph->N * ph->heads * ph->seq_q) * sizeof(float),
				       "attention log-sum-exp", err, errlen);
		size_t nws = kjw_attention_split_floats(s->dtype, ph->N * ph->heads, ph->seq_q, ph->seq_kv, (int)ph->K);
		if (!rc && nws)
			rc = kjw_alloc((void **)&s->ws, nws * sizeof(float), "attention split-key scratch", err, errlen);
		break;
	}
	default:
		snprintf(err, errlen, "type: not a built-in kernel phase");
		rc = KJ_EINVAL;
	}
	if (rc) {
		simple_teardown(s);
		return rc;
	}
	*state = s;
	return 0;
}

static int simple_capture(void *state, cudaStream_t st)
{
	struct simple *s = state;
	const struct kj_phase *ph = &s->ph;
	int e = 0;
	switch (ph->kind) {
	case KJ_PHASE_POOL:
		e = kjw_pool(s->x, s->y, s->dtype, ph->N * ph->C, ph->H, ph->W, ph->P, ph->Q, (int)ph->R, (int)ph->S,
			     (int)ph->stride_h, (int)ph->stride_w, (int)ph->pad_h, (int)ph->pad_w, s->op, st);
		break;
	case KJ_PHASE_NORM:
		/* channels-last batch norm: the channel is the fastest index (N*H*W rows of C) */
		if (ph->nhwc && s->op == 0)
			e = kjw_norm(s->x, s->y, s->dtype, s->op, s->sa, s->sb, ph->N * ph->H * ph->W, ph->C, 1, st);
		else
			e = kjw_norm(s->x, s->y, s->dtype, ph->bn_plane && s->op == 0 ? 3 : s->op, s->sa, s->sb, ph->N,
				     ph->C, ph->H * ph->W, st);
		break;
	case KJ_PHASE_ACT:
		e = kjw_act(s->x, s->b, s->y, s->dtype, s->op, (size_t)(ph->N * ph->C * ph->H * ph->W), ph->H * ph->W, st);
		break;
	case KJ_PHASE_ATTN:
		e = kjw_attention(s->x, s->k, s->v, s->y, s->dtype, ph->N * ph->heads, ph->seq_q, ph->seq_kv, (int)ph->K,
				  (int)ph->causal, s->lse, s->ws, st);
		break;
	default:
		return KJ_EINVAL;
	}
	if (e) {
		fprintf(stderr, "kjoule-pipeline-worker: %s kernel launch: %s\n", kj_phase_kind_name(ph->kind),
			cudaGetErrorString((cudaError_t)e));
		return KJ_EGPU;
	}
	return 0;
}

const struct kj_phase_ops kjw_conv_ops = {"conv", kjw_conv_setup, kjw_conv_capture, kjw_conv_teardown};
const struct kj_phase_ops kjw_matmul_ops = {"matmul", kjw_matmul_setup, kjw_matmul_capture, kjw_matmul_teardown};
const struct kj_phase_ops kjw_simple_ops = {"kernels", simple_setup, simple_capture, simple_teardown};

int kj_fill_random(void *buf, size_t n, const char *prec, uint64_t seed, float scale, cudaStream_t s)
{
	return kj_gpu_fill(buf, n, kjw_dtype(prec), KJ_GPU_FILL_MAGNITUDE, scale, seed, s) ? KJ_EGPU : 0;
}
