/* The operator table of `kjoule sweep` (kj_sweep_op.h): the seed's operators with their shape
 * columns and their FLOP and byte counts, forward and backward.
 *
 * Shapes follow Megatron-LM with tensor-parallel size mp: activations are [l, b, dim] (sequence
 * first); heads h and the FFN width 4*dim are split over mp ranks, so one rank holds h/mp heads
 * of head size dim/h. Column-parallel linears (linear1 QKV, linear3 FFN up) split their output
 * features, row-parallel ones (linear2, linear4) their input features; the output layer and the
 * embedding split the vocabulary (KJ_SWEEP_VOCAB rows). Attention is causal, as in GPT.
 * Counts are per call on one rank: FLOPs count a multiply-add as 2; bytes are the fewest that
 * must cross device memory (each input read once, each output written once, intermediates kept
 * on chip), so time/(bytes/bandwidth) is an operator's achieved fraction of its memory floor. */
#include <string.h>

#include "kj_sweep_op.h"

/* column values as doubles: products of shapes overflow int64 long after doubles lose a bit */
#define V(i) ((double)v[(i)])

/* ---- GEMM helpers: out[M,N] = in[M,K] x W[K,N] (+ bias[N]) ---------------------------------- */
static double gemm_flops(double m, double n, double k, int bias, int prop)
{
	if (prop == KJ_FWD)
		return 2.0 * m * n * k + (bias ? m * n : 0.0);
	/* data gradient and weight gradient, plus the bias gradient's reduction over M */
	return 4.0 * m * n * k + (bias ? m * n : 0.0);
}

static double gemm_bytes(double m, double n, double k, int bias, int prop, int e)
{
	double b = bias ? n : 0.0;
	if (prop == KJ_FWD)
		return (m * k + k * n + b + m * n) * e;
	/* read dy, x, W; write dx, dW, db */
	return (m * n + m * k + k * n + m * k + k * n + b) * e;
}

/* ---- embedding: mp, b, l, dim — a gather from a [vocab/mp, dim] table --------------------- */
static double embedding_flops(const int64_t *v, int prop)
{
	/* forward: a gather, no arithmetic; backward: scatter-add of b*l rows of dim */
	return prop == KJ_FWD ? 0.0 : V(1) * V(2) * V(3);
}

static double embedding_bytes(const int64_t *v, int prop, int e)
{
	double rows = V(1) * V(2), dim = V(3), ids = rows * 8.0;
	if (prop == KJ_FWD)
		return ids + 2.0 * rows * dim * e;
	/* read ids and dy; read-modify-write the touched rows; the rest of the table's gradient
	 * (vocab/mp rows) is written once (zeroed) */
	return ids + rows * dim * e + 2.0 * rows * dim * e + (double)KJ_SWEEP_VOCAB / V(0) * dim * e;
}

/* ---- layernorm and RMSlayernorm: b, l, dim ------------------------------------------------- */
static double layernorm_flops(const int64_t *v, int prop)
{
	double n = V(0) * V(1) * V(2);
	/* fwd: mean, variance (2), normalise (2), scale and shift (2); bwd: dx (9) + dgamma, dbeta */
	return prop == KJ_FWD ? 7.0 * n : 12.0 * n;
}

static double layernorm_bytes(const int64_t *v, int prop, int e)
{
	double rows = V(0) * V(1), dim = V(2), n = rows * dim;
	/* mean and rstd are kept in fp32, one pair per row */
	if (prop == KJ_FWD)
		return 2.0 * n * e + 2.0 * dim * e + rows * 8.0;
	return 3.0 * n * e + 3.0 * dim * e + rows * 8.0; /* dy, x, dx; gamma, dgamma, dbeta */
}

static double rmsnorm_flops(const int64_t *v, int prop)
{
	double n = V(0) * V(1) * V(2);
	return prop == KJ_FWD ? 4.0 * n : 8.0 * n; /* sum of squares (2), rstd scale, gamma */
}

static double rmsnorm_bytes(const int64_t *v, int prop, int e)
{
	double rows = V(0) * V(1), dim = V(2), n = rows * dim;
	if (prop == KJ_FWD)
		return 2.0 * n * e + dim * e + rows * 4.0;
	return 3.0 * n * e + 2.0 * dim * e + rows * 4.0; /* dy, x, dx; gamma, dgamma */
}

/* ---- linears: mp, b, l, dim ---------------------------------------------------------------- */
/* linear1: QKV projection, column-parallel, dim -> 3*dim/mp, with bias */
static double linear1_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), 3.0 * V(3) / V(0), V(3), 1, p); }
static double linear1_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), 3.0 * V(3) / V(0), V(3), 1, p, e); }
/* linear2: attention output, row-parallel, dim/mp -> dim (bias added after the all-reduce) */
static double linear2_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), V(3), V(3) / V(0), 0, p); }
static double linear2_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), V(3), V(3) / V(0), 0, p, e); }
/* linear3: FFN up, column-parallel, dim -> 4*dim/mp, with bias */
static double linear3_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), 4.0 * V(3) / V(0), V(3), 1, p); }
static double linear3_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), 4.0 * V(3) / V(0), V(3), 1, p, e); }
/* linear4: FFN down, row-parallel, 4*dim/mp -> dim */
static double linear4_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), V(3), 4.0 * V(3) / V(0), 0, p); }
static double linear4_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), V(3), 4.0 * V(3) / V(0), 0, p, e); }
/* linear_final: output layer, vocab-parallel, dim -> vocab/mp, no bias */
static double linearf_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), (double)KJ_SWEEP_VOCAB / V(0), V(3), 0, p); }
static double linearf_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), (double)KJ_SWEEP_VOCAB / V(0), V(3), 0, p, e); }

/* ---- LLaMA's gated FFN and output layer: mp, b, l, dim, intermediate_size (vocab) ---------- */
/* ffn_gate_up: gate and up projections fused, column-parallel, dim -> 2*intermediate/mp, no bias */
static double ffn_gate_up_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), 2.0 * V(4) / V(0), V(3), 0, p); }
static double ffn_gate_up_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), 2.0 * V(4) / V(0), V(3), 0, p, e); }
/* ffn_down: row-parallel, intermediate/mp -> dim, no bias */
static double ffn_down_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), V(3), V(4) / V(0), 0, p); }
static double ffn_down_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), V(3), V(4) / V(0), 0, p, e); }
/* lm_head: the output layer of a vocabulary of its own (column vocab), vocab-parallel, no bias */
static double lm_head_flops(const int64_t *v, int p) { return gemm_flops(V(1) * V(2), V(4) / V(0), V(3), 0, p); }
static double lm_head_bytes(const int64_t *v, int p, int e) { return gemm_bytes(V(1) * V(2), V(4) / V(0), V(3), 0, p, e); }

/* ---- silu_mul: mp, b, l, intermediate_size — silu(gate) * up over [b*l, intermediate/mp] ------ */
static double silu_mul_flops(const int64_t *v, int prop)
{
	double n = V(1) * V(2) * V(3) / V(0);
	/* fwd: sigmoid (4), two products; bwd: sigmoid, silu' (4), three products */
	return prop == KJ_FWD ? 6.0 * n : 10.0 * n;
}

static double silu_mul_bytes(const int64_t *v, int prop, int e)
{
	double n = V(1) * V(2) * V(3) / V(0);
	return (prop == KJ_FWD ? 3.0 : 5.0) * n * e; /* gate, up, y | dy, gate, up, dgate, dup */
}

/* ---- gelu: mp, b, l, dim — on the FFN intermediate [b*l, 4*dim/mp], tanh form ----------------- */
static double gelu_flops(const int64_t *v, int prop)
{
	double n = V(1) * V(2) * 4.0 * V(3) / V(0);
	return prop == KJ_FWD ? 8.0 * n : 12.0 * n;
}

static double gelu_bytes(const int64_t *v, int prop, int e)
{
	double n = V(1) * V(2) * 4.0 * V(3) / V(0);
	return (prop == KJ_FWD ? 2.0 : 3.0) * n * e; /* x, y | dy, x, dx */
}

/* ---- attention family: mp, b, h, l, dim; per rank h/mp heads of size dim/h -------------------- */
/* elements of one rank's q (or k, v, out): b * h/mp * l * dim/h = b*l*dim/mp */
static double qkv_elems(const int64_t *v) { return V(1) * V(3) * V(4) / V(0); }
/* elements of one rank's score matrix: b * h/mp * l * l */
static double score_elems(const int64_t *v) { return V(1) * V(2) / V(0) * V(3) * V(3); }

static double flash_flops(const int64_t *v, int prop)
{
	/* QK^T and PV: 4*l*l*d per head, halved by the causal mask; backward 2.5x (five GEMMs) */
	double fwd = 4.0 * score_elems(v) * (V(4) / V(2)) * 0.5;
	return prop == KJ_FWD ? fwd : 2.5 * fwd;
}

static double flash_bytes(const int64_t *v, int prop, int e)
{
	double q = qkv_elems(v), lse = V(1) * V(2) / V(0) * V(3) * 4.0;
	if (prop == KJ_FWD)
		return 4.0 * q * e + lse;  /* q, k, v; out; log-sum-exp */
	return 8.0 * q * e + lse;          /* q, k, v, out, dout; dq, dk, dv; log-sum-exp */
}

static double rope_flops(const int64_t *v, int prop)
{
	(void)prop; /* x*cos + rotate(x)*sin, and its transpose for the gradient */
	return 3.0 * qkv_elems(v);
}

static double rope_bytes(const int64_t *v, int prop, int e)
{
	(void)prop; /* one of q or k in and out, plus the l x dim/h cos and sin tables */
	return 2.0 * qkv_elems(v) * e + 2.0 * V(3) * (V(4) / V(2)) * 4.0;
}

static double fillmask_flops(const int64_t *v, int prop)
{
	(void)prop; /* one select per score, forward and backward */
	return score_elems(v);
}

static double fillmask_bytes(const int64_t *v, int prop, int e)
{
	(void)prop; /* scores in and out, a [b, 1, l, l] boolean mask */
	return 2.0 * score_elems(v) * e + V(1) * V(3) * V(3);
}

static double baddbmm_flops(const int64_t *v, int prop)
{
	/* scores = alpha * Q K^T (beta = 0, as Megatron calls it); backward: dQ and dK */
	double f = 2.0 * score_elems(v) * (V(4) / V(2));
	return prop == KJ_FWD ? f : 2.0 * f;
}

static double baddbmm_bytes(const int64_t *v, int prop, int e)
{
	double s = score_elems(v), q = qkv_elems(v);
	if (prop == KJ_FWD)
		return (2.0 * q + s) * e;
	return (s + 2.0 * q + 2.0 * q) * e; /* dS, q, k; dq, dk */
}

static double bmm_flops(const int64_t *v, int prop)
{
	/* context = P V; backward: dP and dV */
	double f = 2.0 * score_elems(v) * (V(4) / V(2));
	return prop == KJ_FWD ? f : 2.0 * f;
}

static double bmm_bytes(const int64_t *v, int prop, int e)
{
	double s = score_elems(v), q = qkv_elems(v);
	if (prop == KJ_FWD)
		return (s + 2.0 * q) * e;
	return (2.0 * s + 3.0 * q) * e; /* dout, P, v; dP, dv */
}

/* ---- softmax family: mp, b, h, l — on one rank's [b, h/mp, l, l] scores ----------------------- */
static double softmax_flops(const int64_t *v, int prop)
{
	double n = score_elems(v);
	return prop == KJ_FWD ? 5.0 * n : 4.0 * n; /* max, sub, exp, sum, div | y*(dy - sum(dy*y)) */
}

static double softmax_bytes(const int64_t *v, int prop, int e)
{
	return (prop == KJ_FWD ? 2.0 : 3.0) * score_elems(v) * e;
}

static double utm_softmax_flops(const int64_t *v, int prop)
{
	return softmax_flops(v, prop) + score_elems(v); /* plus the scale */
}

/* ---- res_add: b, l, dim -------------------------------------------------------------------- */
static double res_add_flops(const int64_t *v, int prop)
{
	(void)prop; /* forward: x + y; backward: the residual stream's two gradients summed */
	return V(0) * V(1) * V(2);
}

static double res_add_bytes(const int64_t *v, int prop, int e)
{
	(void)prop;
	return 3.0 * V(0) * V(1) * V(2) * e;
}

/* ---- parallel_cross_entropy_128: mp, b, l — logits [l, b, vocab/mp] ------------------------- */
static double xent_flops(const int64_t *v, int prop)
{
	double n = V(1) * V(2) * (double)KJ_SWEEP_VOCAB / V(0);
	return prop == KJ_FWD ? 5.0 * n : 2.0 * n; /* max, sub, exp, sum, div | softmax - onehot, scale */
}

static double xent_bytes(const int64_t *v, int prop, int e)
{
	double rows = V(1) * V(2), n = rows * (double)KJ_SWEEP_VOCAB / V(0);
	(void)prop;
	/* forward reads the logits and keeps the softmax for backward; backward turns it into the
	 * gradient; targets are int64, losses fp32 */
	return 2.0 * n * e + rows * (8.0 + 4.0);
}

/* ---- moe: mp, b, l, dim, moe_num_experts, intermediate_size, top_k -------------------------- */
/* Router GEMM [b*l, dim] x [dim, E], softmax and top-k, then each token through top_k experts,
 * each a two-GEMM MLP dim -> intermediate/mp -> dim (tensor-parallel inside the expert). */
static double moe_flops(const int64_t *v, int prop)
{
	double t = V(1) * V(2), dim = V(3), ex = V(4), inter = V(5) / V(0), k = V(6);
	double router = 2.0 * t * dim * ex + 5.0 * t * ex;
	double experts = 2.0 * t * k * (2.0 * dim * inter) + 8.0 * t * k * inter;
	if (prop == KJ_FWD)
		return router + experts;
	return 2.0 * router + 2.0 * experts + 4.0 * t * k * inter;
}

static double moe_bytes(const int64_t *v, int prop, int e)
{
	double t = V(1) * V(2), dim = V(3), ex = V(4), inter = V(5) / V(0);
	double weights = dim * ex + ex * 2.0 * dim * inter;
	if (prop == KJ_FWD)
		return (t * dim + weights + t * dim) * e;
	return (t * dim + t * dim + weights + t * dim + weights) * e; /* dy, x, W; dx, dW */
}

/* ---- optimizer stages: mp, dim, encoders ---------------------------------------------------- */
/* Parameters one tensor-parallel rank holds for one GPT layer: QKV, projection, FFN weights
 * (12*dim^2/mp), their biases (7*dim/mp column-parallel + 2*dim replicated) and two layernorms. */
static double layer_params(const int64_t *v)
{
	double mp = V(0), dim = V(1);
	return 12.0 * dim * dim / mp + 7.0 * dim / mp + 2.0 * dim + 4.0 * dim;
}

static double stage_params(const int64_t *v, int stage)
{
	double p = V(2) * layer_params(v), emb = (double)KJ_SWEEP_VOCAB / V(0) * V(1);
	if (stage == 0)
		return p + emb;             /* first: the word embedding */
	if (stage == 2)
		return p + 2.0 * V(1) + emb; /* last: final layernorm and the output layer */
	return p;
}

/* Adam with fp32 master weights: per parameter ~16 FLOPs; reads grad (fp32), param, m, v and
 * writes param, m, v (4 bytes each) and, below fp32, the low-precision copy of the weight. */
static double adam_flops(const int64_t *v, int prop, int stage)
{
	return prop == KJ_FWD ? 16.0 * stage_params(v, stage) : 0.0;
}

static double adam_bytes(const int64_t *v, int prop, int e, int stage)
{
	if (prop != KJ_FWD)
		return 0.0; /* an optimizer step has no backward */
	return stage_params(v, stage) * (28.0 + (e < 4 ? (double)e : 0.0));
}

static double opt0_flops(const int64_t *v, int p) { return adam_flops(v, p, 0); }
static double opt1_flops(const int64_t *v, int p) { return adam_flops(v, p, 1); }
static double opt2_flops(const int64_t *v, int p) { return adam_flops(v, p, 2); }
static double opt0_bytes(const int64_t *v, int p, int e) { return adam_bytes(v, p, e, 0); }
static double opt1_bytes(const int64_t *v, int p, int e) { return adam_bytes(v, p, e, 1); }
static double opt2_bytes(const int64_t *v, int p, int e) { return adam_bytes(v, p, e, 2); }

/* master_copies: the half gradients cast into fp32 ones and the fp32 masters into the half weights,
 * over the last stage's parameters: read e + 4 and write 4 + e bytes a parameter */
static double copies_flops(const int64_t *v, int prop)
{
	(void)v, (void)prop;
	return 0.0;
}

static double copies_bytes(const int64_t *v, int prop, int e)
{
	return prop == KJ_FWD ? stage_params(v, 2) * (8.0 + 2.0 * e) : 0.0;
}

/* ---- NCCL collectives: gpus, bytes — the message size as nccl-tests counts it: the buffer of
 * all_reduce and broadcast, the whole gathered (scattered) buffer of all_gather (reduce_scatter),
 * what each rank sends to the next for send_recv. Bytes: what crosses a rank's links (the message
 * times the bus-bandwidth factor); FLOPs: the additions of the reducing ones, per rank. */
static double coll_flops_of(const int64_t *v, int prop, const char *name)
{
	double n = V(0), elems = V(1) / 4.0; /* elements of fp32; FLOPs stay a feature, not a count */
	if (prop != KJ_FWD)
		return 0.0;
	if (!strcmp(name, "all_reduce") || !strcmp(name, "reduce_scatter"))
		return elems * (n - 1.0) / n;
	return 0.0;
}

static double coll_bytes_of(const int64_t *v, int prop, const char *name)
{
	double n = V(0);
	if (prop != KJ_FWD)
		return 0.0; /* a collective has no backward */
	if (!strcmp(name, "all_reduce"))
		return V(1) * 2.0 * (n - 1.0) / n;
	if (!strcmp(name, "all_gather") || !strcmp(name, "reduce_scatter"))
		return V(1) * (n - 1.0) / n;
	return V(1);
}

#define COLL(fn, nm)                                                                                 \
	static double fn##_flops(const int64_t *v, int p) { return coll_flops_of(v, p, nm); }        \
	static double fn##_bytes(const int64_t *v, int p, int e) { (void)e; return coll_bytes_of(v, p, nm); }
COLL(allreduce, "all_reduce")
COLL(allgather, "all_gather")
COLL(reducescatter, "reduce_scatter")
COLL(broadcast, "broadcast")
COLL(sendrecv, "send_recv")

#define C4(a, b, c, d) {a, b, c, d, NULL}, 4
#define C3(a, b, c) {a, b, c, NULL}, 3
#define C5(a, b, c, d, e) {a, b, c, d, e, NULL}, 5

static const struct kj_sweep_op ops[] = {
	{"embedding", C4("mp", "b", "l", "dim"), embedding_flops, embedding_bytes, 0, 0},
	{"layernorm", C3("b", "l", "dim"), layernorm_flops, layernorm_bytes, 0, 0},
	{"RMSlayernorm", C3("b", "l", "dim"), rmsnorm_flops, rmsnorm_bytes, 0, 0},
	{"linear1", C4("mp", "b", "l", "dim"), linear1_flops, linear1_bytes, 0, 0},
	{"linear2", C4("mp", "b", "l", "dim"), linear2_flops, linear2_bytes, 0, 0},
	{"linear3", C4("mp", "b", "l", "dim"), linear3_flops, linear3_bytes, 0, 0},
	{"linear4", C4("mp", "b", "l", "dim"), linear4_flops, linear4_bytes, 0, 0},
	{"linear_final", C4("mp", "b", "l", "dim"), linearf_flops, linearf_bytes, 0, 0},
	{"flash_atten", C5("mp", "b", "h", "l", "dim"), flash_flops, flash_bytes, 1, 0},
	{"gelu", C4("mp", "b", "l", "dim"), gelu_flops, gelu_bytes, 0, 0},
	{"ffn_gate_up", C5("mp", "b", "l", "dim", "intermediate_size"), ffn_gate_up_flops, ffn_gate_up_bytes, 0, 0},
	{"silu_mul", C4("mp", "b", "l", "intermediate_size"), silu_mul_flops, silu_mul_bytes, 0, 0},
	{"ffn_down", C5("mp", "b", "l", "dim", "intermediate_size"), ffn_down_flops, ffn_down_bytes, 0, 0},
	{"lm_head", C5("mp", "b", "l", "dim", "vocab"), lm_head_flops, lm_head_bytes, 0, 0},
	{"RoPE", C5("mp", "b", "h", "l", "dim"), rope_flops, rope_bytes, 0, 0},
	{"res_add", C3("b", "l", "dim"), res_add_flops, res_add_bytes, 0, 0},
	{"parallel_cross_entropy_128", C3("mp", "b", "l"), xent_flops, xent_bytes, 0, 0},
	{"softmax", C4("mp", "b", "h", "l"), softmax_flops, softmax_bytes, 0, 0},
	{"fillmask", C5("mp", "b", "h", "l", "dim"), fillmask_flops, fillmask_bytes, 0, 0},
	{"baddbmm", C5("mp", "b", "h", "l", "dim"), baddbmm_flops, baddbmm_bytes, 0, 0},
	{"bmm", C5("mp", "b", "h", "l", "dim"), bmm_flops, bmm_bytes, 0, 0},
	{"ScaledUpperTriangMaskedSoftmax", C4("mp", "b", "h", "l"), utm_softmax_flops, softmax_bytes, 0, 0},
	{"moe", {"mp", "b", "l", "dim", "moe_num_experts", "intermediate_size", "top_k", NULL}, 7,
	 moe_flops, moe_bytes, 0, 0},
	{"firstStage_optimizer", C3("mp", "dim", "encoders"), opt0_flops, opt0_bytes, 0, 0},
	{"middleStage_optimizer", C3("mp", "dim", "encoders"), opt1_flops, opt1_bytes, 0, 0},
	{"lastStage_optimizer", C3("mp", "dim", "encoders"), opt2_flops, opt2_bytes, 0, 0},
	{"master_copies", C3("mp", "dim", "encoders"), copies_flops, copies_bytes, 0, 0},
	{"all_reduce", {"gpus", "bytes", NULL}, 2, allreduce_flops, allreduce_bytes, 0, 1},
	{"all_gather", {"gpus", "bytes", NULL}, 2, allgather_flops, allgather_bytes, 0, 1},
	{"reduce_scatter", {"gpus", "bytes", NULL}, 2, reducescatter_flops, reducescatter_bytes, 0, 1},
	{"broadcast", {"gpus", "bytes", NULL}, 2, broadcast_flops, broadcast_bytes, 0, 1},
	{"send_recv", {"gpus", "bytes", NULL}, 2, sendrecv_flops, sendrecv_bytes, 0, 1},
};

double kj_sweep_busbw_factor(const struct kj_sweep_op *op, int64_t n)
{
	if (!op || !op->collective || n < 1)
		return 0.0;
	if (!strcmp(op->name, "all_reduce"))
		return 2.0 * (double)(n - 1) / (double)n;
	if (!strcmp(op->name, "all_gather") || !strcmp(op->name, "reduce_scatter"))
		return (double)(n - 1) / (double)n;
	return 1.0;
}

#define NOPS ((int)(sizeof(ops) / sizeof(ops[0])))

const struct kj_sweep_op *kj_sweep_op_find(const char *name)
{
	for (int i = 0; name && i < NOPS; i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	return NULL;
}

int kj_sweep_op_count(void)
{
	return NOPS;
}

const struct kj_sweep_op *kj_sweep_op_at(int i)
{
	return i >= 0 && i < NOPS ? &ops[i] : NULL;
}

static const char *const precision_names[] = {"fp16", "bf16", "fp32"};

int kj_precision_parse(const char *s)
{
	for (int i = 0; s && i < 3; i++)
		if (!strcmp(s, precision_names[i]))
			return i;
	return -1;
}

int kj_precision_bytes(int precision)
{
	return precision == KJ_FP32 ? 4 : 2;
}

const char *kj_precision_name(int precision)
{
	return precision >= 0 && precision < 3 ? precision_names[precision] : "?";
}
