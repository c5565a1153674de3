/* The operators of `kjoule sweep`: what each one is called, which shape columns it takes, and how
 * much arithmetic and memory traffic one call does. Plain C, no GPU: the CLI (config checks, fit
 * features, predict) and the GPU worker (kjoule-sweep-worker) read the same table.
 *
 * Worker protocol (kjoule-sweep-worker, src/sweep/worker/): one request a line on stdin,
 *     OP PRECISION V1,V2,...,Vn ENERGY CHECK          e.g. "linear1 fp16 1,4,2048,4096 1 1"
 * (ENERGY, CHECK: 0 or 1), one answer a line on stdout, fields space-separated key=value, a
 * figure that was not measured written as '-' (never 0, nan or inf):
 *     KJ_SWEEP status=ok|oom|error|unsupported f_us=.. b_us=.. f_uj=.. f_uj_unc=.. b_uj=..
 *              b_uj_unc=.. err_f=.. err_b=.. [flops_f=.. flops_b=.. bytes_f=.. bytes_b=..
 *              f_mhz=.. b_mhz=.. f_tmhz=.. b_tmhz=.. f_wus=.. b_wus=.. f_algo=.. b_algo=..]
 *              msg="text without newlines"
 * err_f/err_b: relative error ||out-ref||/||ref|| of the correctness check (CHECK=1), else '-'.
 * f_mhz/b_mhz: the mean SM clock over each energy window (ENERGY=1), else '-'. f_tmhz/b_tmhz: the
 * SM clock the timing ran at, after the worker's warm-up settled it (KJ_SWEEP_SETTLE=1), else '-'. f_wus/b_wus: the time a call over the energy window (ENERGY=1), else '-'.
 * f_algo/b_algo: the cuBLASLt algorithms the pass ran, ID.TILE.SPLITK.STAGES.CLUSTER per GEMM
 * joined by '+' (cublasLtMatmulAlgoConfig's ids), '-' for a pass without GEMMs. A reader ignores
 * keys it does not know.
 * `kjoule-sweep-worker --list` prints one line per operator it implements: OP COL1,COL2,...
 * The collectives (all_reduce, all_gather, reduce_scatter, broadcast, send_recv; columns gpus,
 * bytes) are answered by kjoule-nccl-worker (src/sweep/worker_nccl/) in the same protocol, one
 * process a GPU: every rank gets the same requests; rank 0's answer is the row (time: the mean over
 * the ranks; energy: every GPU of the communicator summed) and adds algbw=.. busbw=.. (GB/s). */
#ifndef KJ_SWEEP_OP_H
#define KJ_SWEEP_OP_H

#include <stdint.h>

enum kj_precision { KJ_FP16 = 0, KJ_BF16 = 1, KJ_FP32 = 2 };
enum kj_prop { KJ_FWD = 0, KJ_BWD = 1 };

#define KJ_SWEEP_MAX_COLS 8
/* Vocabulary of embedding, linear_final and parallel_cross_entropy_128 (no column carries it):
 * GPT-2's 50257 tokens padded to a multiple of 128, as Megatron pads them. The worker allocates
 * KJ_SWEEP_VOCAB/mp rows per rank. (Added after the first commit; compatible.) */
#define KJ_SWEEP_VOCAB 50304

/** One operator's description. flops/bytes: for one call at shape v (values in the order of
 *  columns), the floating-point operations and the fewest bytes moved through device memory
 *  (each input read once, each output written once), forward or backward; never negative. */
struct kj_sweep_op {
	const char *name;                          /* as in the seed: "linear1", "flash_atten" */
	const char *columns[KJ_SWEEP_MAX_COLS];    /* shape columns, NULL-terminated: "mp","b","l","dim" */
	int ncolumns;
	double (*flops)(const int64_t *v, int prop);
	double (*bytes)(const int64_t *v, int prop, int elem_bytes);
	int impl_column; /* 1: the worker may run it on more than one implementation (flash_atten:
			  * cuDNN's or kjoule's kernels); its CSVs keep each shape's in column impl */
	int collective;  /* 1: an NCCL collective over `gpus` GPUs, one process a GPU
			  * (kjoule-nccl-worker); its CSVs add algbw(GB/s) and busbw(GB/s) */
};

/** @brief nccl-tests' bus-bandwidth factor of collective op over n GPUs: 2(n-1)/n for all_reduce,
 *  (n-1)/n for all_gather and reduce_scatter, 1 for broadcast and send_recv; 0 for an operator that
 *  is not a collective. busbw = algbw x factor, algbw = bytes / time. */
double kj_sweep_busbw_factor(const struct kj_sweep_op *op, int64_t n);
/** @brief The operator named name, or NULL. */
const struct kj_sweep_op *kj_sweep_op_find(const char *name);
/** @brief Number of operators and the i-th one (0 <= i < kj_sweep_op_count()). */
int kj_sweep_op_count(void);
const struct kj_sweep_op *kj_sweep_op_at(int i);
/** @brief "fp16"/"bf16"/"fp32" to enum kj_precision; -1 when unknown. Bytes per element: 2 or 4. */
int kj_precision_parse(const char *s);
int kj_precision_bytes(int precision);
const char *kj_precision_name(int precision);

#endif
