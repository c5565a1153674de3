// The pipeline worker's device helpers shared by its kernel files (worker_kernels.cu,
// worker_attention.cu): an element of fp16, bf16 or fp32 loaded as float and stored from float.
#ifndef KJ_WORKER_KERNELS_CUH
#define KJ_WORKER_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>

template <typename T> __device__ __forceinline__ float ld(const T *p, size_t i) { return (float)p[i]; }
template <> __device__ __forceinline__ float ld<__half>(const __half *p, size_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16 *p, size_t i)
{
	return __bfloat162float(p[i]);
}
template <typename T> __device__ __forceinline__ void st(T *p, size_t i, float v) { p[i] = (T)v; }
template <> __device__ __forceinline__ void st<__half>(__half *p, size_t i, float v) { p[i] = __float2half(v); }
template <> __device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16 *p, size_t i, float v)
{
	p[i] = __float2bfloat16(v);
}

#endif
