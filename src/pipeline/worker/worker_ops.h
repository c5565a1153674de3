/* kjoule-pipeline-worker's built-in phases (worker_ops.c) and their states, which the GPU tests
 * read back to check outputs against CPU references. */
#ifndef KJ_WORKER_OPS_H
#define KJ_WORKER_OPS_H

#include <cublasLt.h>
#include <cudnn.h>

#include "kj_phase_api.h"
#include "worker_kernels.h"

struct kjw_conv {
	struct kj_phase ph;
	int dtype, algo;
	cudnnTensorDescriptor_t xd, yd;
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	void *x, *w, *y, *ws; /* input N C H W, filter M C/groups R S, output N M P Q (NCHW) */
	size_t ws_bytes;
};

struct kjw_matmul {
	struct kj_phase ph;
	int dtype;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
	void *a, *b, *c, *ws; /* column-major: a K x M (used transposed), b K x N, c M x N */
	size_t ws_bytes;
};

extern const struct kj_phase_ops kjw_conv_ops, kjw_matmul_ops, kjw_simple_ops;

int kjw_dtype(const char *prec);
/** cudaMalloc with an "out of memory: ..." message naming what and how much. */
int kjw_alloc(void **p, size_t bytes, const char *what, char *err, size_t errlen);
int kjw_conv_setup(const struct kj_phase *ph, void **state, char *err, size_t errlen);
int kjw_conv_capture(void *state, cudaStream_t s);
void kjw_conv_teardown(void *state);
int kjw_matmul_setup(const struct kj_phase *ph, void **state, char *err, size_t errlen);
int kjw_matmul_capture(void *state, cudaStream_t s);
void kjw_matmul_teardown(void *state);

#endif
