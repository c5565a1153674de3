/* bf16 GEMM loads for the energy benchmark and GPU tests (cuBLAS, plain C). */
#ifndef KJ_GEMM_LOAD_H
#define KJ_GEMM_LOAD_H

#include <stddef.h>
#include <stdint.h>

struct gemm_load;

/** @brief Buffers for an m x n x k bf16 GEMM (random, non-zero data); 0 or -1 (message printed). */
int gemm_load_open(int m, int n, int k, struct gemm_load **out);
void gemm_load_close(struct gemm_load *g);
/** @brief Enqueue count GEMMs on the load's stream (asynchronous). */
int gemm_load_enqueue(struct gemm_load *g, int count);
/** @brief Wait for everything enqueued. */
int gemm_load_sync(struct gemm_load *g);
/** @brief Capture a CUDA graph of `unroll` GEMMs; gemm_load_graph_launch() enqueues it. */
int gemm_load_capture(struct gemm_load *g, int unroll);
int gemm_load_graph_launch(struct gemm_load *g);
/** @brief Seconds one GEMM takes (timed over `reps` after a warm-up). */
double gemm_load_time(struct gemm_load *g, int reps);
/** @brief 1 if a CUDA GPU is present. */
int gemm_load_have_gpu(void);
/** @brief The NVML index of the CUDA device the loads run on (CUDA_VISIBLE_DEVICES renumbers
 *  CUDA's devices, not NVML's), found by its PCI bus id; -1 with why filled when not found. */
int gemm_load_nvml_index(char *why, size_t why_len);
/** @brief Device name. */
const char *gemm_load_device_name(void);

#endif
