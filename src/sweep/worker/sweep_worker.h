/* Internals of kjoule-sweep-worker shared by its files: the worker context (stream, cuBLASLt,
 * buffers of the operator in flight), the operator interface every op file fills in, and the
 * device kernels' extern "C" launchers (worker_norm.cu, worker_softmax.cu, worker_elem.cu,
 * worker_train.cu, worker_colsum.cu, worker_attn.cu, worker_moe.cu). */
#ifndef KJ_SWEEP_WORKER_H
#define KJ_SWEEP_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <cublasLt.h>

#include "kj_gpu_fa2.h"
#include "kj_gpu_fill.h"
#include "kj_sweep_op.h"
#include "worker_request.h"

#define SW_MAX_BUFS 32
#define SW_VOCAB KJ_SWEEP_VOCAB    /* the operator table's vocabulary (50304, padded to 128) */
#define SW_GEMM_WORKSPACE (32u << 20)

enum sw_dtype { SW_F16 = 0, SW_BF16 = 1, SW_F32 = 2, SW_I32 = 3, SW_U8 = 4 };
/* the harness's fill takes the same numbering (kj_gpu_fill.h) */
_Static_assert((int)SW_F16 == (int)KJ_GPU_F16 && (int)SW_BF16 == (int)KJ_GPU_BF16 && (int)SW_F32 == (int)KJ_GPU_F32 &&
		       (int)SW_I32 == (int)KJ_GPU_I32 && (int)SW_U8 == (int)KJ_GPU_U8, "sweep element types are kj_gpu_fill's");

struct sw_buf {
	void *d;
	size_t n;        /* elements */
	int dtype;       /* enum sw_dtype */
};

/* One worker-wide context. bufs hold the current operator's device memory; sw_bufs_free() releases
 * them all, so a failure anywhere in setup leaks nothing. err holds the first failure's text. */
struct sw_ctx {
	cudaStream_t stream;
	cublasLtHandle_t lt;
	void *workspace;
	int device;
	int sms;                  /* multiprocessors of the device */
	int nvml_index;           /* NVML's index of this device (NVML ignores CUDA_VISIBLE_DEVICES); -1 none */
	char nvml_why[160];
	char energy_why[200];     /* why the last pass's energy was not measured ('' when it was) */
	int energy_warm_only;     /* set: energy_why says instead why it holds the warm-L2 energy alone
				     (whoever writes energy_why sets or clears it) */
	struct sw_buf bufs[SW_MAX_BUFS];
	int nbufs;
	void *gemm[16];         /* struct sw_gemm plans of the current op */
	int ngemm;
	int gemm_ran[16];       /* plans run since sw_gemm_ran_reset(), in order of first run */
	int ngemm_ran;
	char kernel_impl[48];   /* what ran the last pass where not cuBLASLt (flash_atten); '' none */
	int oom;                /* set by sw_alloc when cudaMalloc ran out of memory */
	int unsupported;        /* set by sw_fail(c, "shape" or "precision", ...): a shape or precision
				 * this implementation does not take */
	char err[512];
	const char *op;         /* for messages: the op and its shape */
	char shape[96];
	uint64_t seed;
};

/* One operator as the worker runs it. setup() allocates and fills at shape v (ncolumns values)
 * and precision p and may run fwd once so bwd has its saved tensors; fwd/bwd only enqueue work on
 * ctx->stream (they are captured into CUDA graphs); check() compares with a double CPU reference
 * and sets *err (relative L2 error; -1 when that pass does not exist). state is the op's own. All
 * return 0 or < 0 with ctx->err set. bwd NULL: the op has no backward (b_us '-'). */
struct sw_op {
	const char *name;
	const char *columns[KJ_SWEEP_MAX_COLS];
	int ncolumns;
	int (*setup)(struct sw_ctx *c, int p, const int64_t *v, void **state);
	int (*fwd)(struct sw_ctx *c, void *state);
	int (*bwd)(struct sw_ctx *c, void *state);
	int (*check)(struct sw_ctx *c, void *state, double *err_f, double *err_b);
	void (*teardown)(struct sw_ctx *c, void *state);
};

/* ---- worker_ctx.c: buffers, errors, host conversions ---- */
/** Record the first failure as "OP PREC SHAPE: what: text" in c->err (what "shape": unsupported). */
int sw_fail(struct sw_ctx *c, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/** Record a CUDA runtime failure with its name and vendor text; 0 when e is cudaSuccess. */
int sw_cuda(struct sw_ctx *c, cudaError_t e, const char *what);
/** Allocate n elements of dtype, filled uniformly in [-scale, scale] (never zeros; scale < 0:
 *  in (0, -scale]; ids: in [0, scale); masks: 0/1), unless scale == 0 (left unfilled); the buffer
 *  belongs to ctx until sw_bufs_free(). NULL on failure. */
void *sw_alloc(struct sw_ctx *c, size_t n, int dtype, float scale);
void sw_bufs_free(struct sw_ctx *c);
size_t sw_dtype_bytes(int dtype);
int sw_dtype_of(int precision);
/** Copy n elements of a device buffer of dtype to a new host double array (caller frees). */
double *sw_download(struct sw_ctx *c, const void *d, size_t n, int dtype);
/** Copy rows [r0, r0+nr) of a row-major device matrix with ncols columns to host doubles
 *  (r0 counts rows: the copy starts at element r0 * ncols). */
double *sw_download_rows(struct sw_ctx *c, const void *d, size_t r0, size_t nr, size_t ncols, int dtype);
/** Copy elements [off, off+n) of a device buffer to host doubles (caller frees). */
double *sw_download_range(struct sw_ctx *c, const void *d, size_t off, size_t n, int dtype);
double sw_rel_err(const double *out, const double *ref, size_t n);
int sw_sync(struct sw_ctx *c, const char *what);
/** NVML's index of CUDA device cuda_device, matched by PCI bus id; -1 with a reason in why. */
int sw_nvml_index(int cuda_device, char *why, size_t why_len);

/* ---- worker_gemm.c: cuBLASLt, row-major ---- */
/** Plan C[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C, row-major, batch strided matrices,
 *  precision p (fp32: plain fp32 arithmetic, no TF32); heuristic algorithm with the context's
 *  workspace. The plan belongs to ctx (freed with sw_bufs_free). Returns an index >= 0 or < 0. */
int sw_gemm_plan(struct sw_ctx *c, int p, int ta, int tb, int64_t M, int64_t N, int64_t K,
		 int64_t lda, int64_t ldb, int64_t ldc, int batch, int64_t sa, int64_t sb, int64_t sc,
		 float alpha, float beta);
/** sw_gemm_plan with cuBLASLt's bias epilogue: C[i,j] = (op(A) op(B))[i,j] + bias[j], bias of N
 *  elements in the GEMM's type (as nn.Linear's fused forward adds it). */
int sw_gemm_plan_bias(struct sw_ctx *c, int p, int ta, int tb, int64_t M, int64_t N, int64_t K,
		      int64_t lda, int64_t ldb, int64_t ldc, const void *bias);
int sw_gemm_run(struct sw_ctx *c, int plan, const void *A, const void *B, void *C);
void sw_gemm_free_all(struct sw_ctx *c);
/** Forget which plans ran; sw_gemm_describe() then names those run after. */
void sw_gemm_ran_reset(struct sw_ctx *c);
/** The cuBLASLt algorithms of the plans run since sw_gemm_ran_reset(), one a plan joined by '+',
 *  each ID.TILE.SPLITK.STAGES.CLUSTER (cublasLtMatmulAlgoConfig's attributes: the algorithm, its
 *  tile, split-K count, stages and cluster shape ids); '' when no GEMM ran. No spaces. */
void sw_gemm_describe(struct sw_ctx *c, char *buf, size_t len);

/* ---- worker_measure.c ---- */
struct sw_measure {
	double us, uj, uj_unc;      /* per call; uj < 0: not measured. With cold energy: their mean */
	double uj_warm, uj_cold;    /* per call, warm L2 and data out of L2; < 0: not measured */
	int unroll;
	double mhz;                 /* mean SM clock over the energy window; < 0: not read */
	double t_mhz;               /* SM clock the timing ran at (settled timing); < 0: not read */
	double win_us;              /* time a call over the energy window; < 0: no window */
	char algo[96];              /* the pass's cuBLASLt algorithms (sw_gemm_describe); '' none */
};
/** Time pass fn (fwd or bwd) of op: U calls captured in a CUDA graph, replayed after at least
 *  100 ms of warm-up, the median of the active replays per call; energy (energy != 0) through
 *  kj_amortize_measure over the same graph (its window's own time a call in win_us).
 *  Energy is the mean of the warm graph's and the same calls' with their data out of L2 (pairs
 *  of a 2 x L2 flush and the call, less the flushes alone), as kjoule replay counts a kernel;
 *  KJ_SWEEP_ENERGY_CACHE=warm: the warm graph's alone.
 *  KJ_SWEEP_TIMING=span: the mean over KJ_SWEEP_TIME_S (0.25) s of back-to-back replays instead,
 *  or the energy window's time where energy is measured; KJ_SWEEP_SETTLE=1: replays until the SM
 *  clock is steady first. */
int sw_measure(struct sw_ctx *c, const struct sw_op *op, void *state,
	       int (*fn)(struct sw_ctx *, void *), int energy, struct sw_measure *m);

/* ---- worker_ceil.c ---- */
/** Print one KJ_CEIL line: a 1 GiB device copy's bandwidth and an 8192^3 bf16 GEMM's rate. */
int sw_ceilings(struct sw_ctx *c);

/* ---- the operators (ops_*.c) ---- */
extern const struct sw_op sw_op_linear1, sw_op_linear2, sw_op_linear3, sw_op_linear4,
	sw_op_linear_final, sw_op_bmm, sw_op_baddbmm, sw_op_layernorm, sw_op_rmsnorm, sw_op_softmax,
	sw_op_masked_softmax, sw_op_fillmask, sw_op_gelu, sw_op_silu_mul, sw_op_res_add, sw_op_rope,
	sw_op_embedding, sw_op_cross_entropy, sw_op_flash_atten, sw_op_opt_first, sw_op_opt_middle,
	sw_op_opt_last, sw_op_moe, sw_op_master_copies, sw_op_ffn_gate_up, sw_op_ffn_down, sw_op_lm_head;
const struct sw_op *sw_op_find(const char *name);
int sw_op_count(void);
const struct sw_op *sw_op_at(int i);

/* ---- device launchers (the worker_*.cu files); return a cudaError_t value ---- */
#ifdef __cplusplus
extern "C" {
#endif
int kj_sw_layernorm_fwd(int dt, const void *x, const void *g, const void *b, void *y, float *mean,
			float *rstd, int64_t rows, int64_t cols, int rms, cudaStream_t s);
int kj_sw_layernorm_bwd(int dt, const void *x, const void *g, const void *dy, const float *mean,
			const float *rstd, void *dx, float *part_g, float *part_b, int nparts, void *dg,
			void *db, int64_t rows, int64_t cols, int rms, cudaStream_t s);
int kj_sw_softmax_fwd(int dt, const void *x, void *y, int64_t rows, int64_t cols, float scale,
		      int causal, cudaStream_t s);
int kj_sw_softmax_bwd(int dt, const void *y, const void *dy, void *dx, int64_t rows, int64_t cols,
		      float scale, cudaStream_t s);
int kj_sw_fillmask(int dt, const void *x, const uint8_t *mask, void *y, int64_t n, int64_t per_mask, int64_t heads,
		   float value, cudaStream_t s);
/* worker_colsum.cu: out[j] = sum_i x[i, j] of a row-major [rows, cols] matrix (a bias gradient) */
int kj_sw_colsum_parts(int dt, int64_t rows, int64_t cols, int sms);
int kj_sw_colsum(int dt, const void *x, float *part, void *out, int64_t rows, int64_t cols, int parts,
		 cudaStream_t s);
int kj_sw_gelu_fwd(int dt, const void *x, void *y, int64_t n, cudaStream_t s);
int kj_sw_gelu_bwd(int dt, const void *x, const void *dy, void *dx, int64_t n, cudaStream_t s);
int kj_sw_add(int dt, const void *a, const void *b, void *y, int64_t n, cudaStream_t s);
int kj_sw_silu_mul_fwd(int dt, const void *g, const void *u, void *y, int64_t n, cudaStream_t s);
int kj_sw_silu_mul_bwd(int dt, const void *g, const void *u, const void *dy, void *dg, void *du, int64_t n,
		       cudaStream_t s);
int kj_sw_rope(int dt, const void *x, const float *cosv, const float *sinv, void *y, int64_t l,
	       int64_t bh, int64_t d, int inverse, cudaStream_t s);
int kj_sw_embedding_fwd(int dt, const int *ids, const void *table, void *y, int64_t n, int64_t dim,
			cudaStream_t s);
int kj_sw_embedding_bwd(int dt, const int *ids, const void *dy, float *dtable, int64_t n,
			int64_t dim, cudaStream_t s);
int kj_sw_xent_fwd(int dt, const void *logits, const int *target, float *loss, void *softmax,
		   int64_t rows, int64_t v, cudaStream_t s);
int kj_sw_xent_bwd(int dt, const void *softmax, const int *target, void *grad, int64_t rows, int64_t v,
		   float dloss, cudaStream_t s);
/* y = x converted between a half type and fp32 (dtype 2), n a multiple of 8 */
int kj_sw_cast(int dt_in, const void *x, int dt_out, void *y, int64_t n, cudaStream_t s);
int kj_sw_adam(float *p, float *m, float *v, const float *g, void *p_half, int dt_half, int64_t n,
	       float lr, float b1, float b2, float eps, float wd, int step, cudaStream_t s);
int kj_sw_attn_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse,
		   int64_t bh, int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
int kj_sw_attn_bwd(int dt, const void *q, const void *k, const void *v, const void *o,
		   const void *dout, const float *lse, float *delta, float *dq_acc, void *dq, void *dk,
		   void *dv, int64_t bh, int64_t l, int64_t d, float scale, int causal, cudaStream_t s);
const char *kj_sw_attn_impl(int dt, int64_t d);
/* The implementation of the last forward (bwd = 0) or backward (1) call, short (cudnn-sdpa.eN,
 * kjoule-flash2, kjoule-flash-wmma, kjoule-flash-fp32): the answer's f_algo and b_algo. */
const char *kj_sw_attn_ran(int bwd);
int kj_sw_moe_route(int dt, const void *logits, int *idx, int *pos, float *wts, int *count, int64_t tokens, int E,
		    int k, int cap, cudaStream_t s);
int kj_sw_moe_dispatch(int dt, const void *x, const int *idx, const int *pos, void *xe, int64_t tokens, int k,
		       int64_t dim, int cap, cudaStream_t s);
int kj_sw_moe_combine(int dt, const void *ye, const int *idx, const int *pos, const float *wts, void *y,
		      int64_t tokens, int k, int64_t dim, int cap, cudaStream_t s);
int kj_sw_moe_scatter(int dt, const void *dy, const int *idx, const int *pos, const float *wts, void *dye,
		      int64_t tokens, int k, int64_t dim, int cap, int E, cudaStream_t s);
int kj_sw_moe_route_bwd(int dt, const void *dy, const void *ye, const int *idx, const int *pos, const float *wts,
			void *dlogits, int64_t tokens, int E, int k, int64_t dim, int cap, cudaStream_t s);
#ifdef __cplusplus
}
#endif

#endif
