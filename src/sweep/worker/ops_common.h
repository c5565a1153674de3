/* kjoule-sweep-worker: helpers the operator files share (checks on sampled rows or windows). */
#ifndef KJ_SWEEP_OPS_COMMON_H
#define KJ_SWEEP_OPS_COMMON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "sweep_worker.h"

#define SW_CHECK_ROWS 16

/* Row k of SW_CHECK_ROWS rows spread over [0, rows) (first and last included). */
static inline int64_t sw_check_row(int k, int64_t rows)
{
	return rows <= SW_CHECK_ROWS ? (k < rows ? k : rows - 1) : (k * (rows - 1)) / (SW_CHECK_ROWS - 1);
}

/* Accumulate squared error and squared reference. NaN output counts as a failure. */
static inline void sw_acc(double out, double ref, double *num, double *den)
{
	double e = out - ref;
	*num += isnan(out) || isinf(out) ? 1e60 : e * e;
	*den += ref * ref;
}

static inline double sw_err(double num, double den)
{
	return den > 0 ? sqrt(num / den) : (num == 0 ? 0 : 1e30);
}

/* The pack width (elements per 16 bytes) divides n, or the op answers unsupported-shape. */
static inline int sw_need_pack(struct sw_ctx *c, int dt, int64_t n, const char *what)
{
	int64_t N = 16 / (int64_t)sw_dtype_bytes(dt);
	if (n % N)
		return sw_fail(c, "shape", "%s (%lld) must be a multiple of %lld for 16-byte accesses", what,
			       (long long)n, (long long)N);
	return 0;
}

/* GELU, tanh form, and its derivative, in double (references of gelu and moe). */
static inline double sw_gelu_ref(double x)
{
	return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static inline double sw_gelu_dref(double x)
{
	double t = tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
	return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

#define SW_LAUNCH(c, call, what) sw_cuda((c), (cudaError_t)(call), (what))

#endif
