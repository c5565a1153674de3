// The GPU harness: device helpers shared by the .cu files of src/gpu and of the sweep worker:
// fp16/bf16/fp32 conversions, 16-byte vector loads and stores as float arrays, and a dtype dispatch.
#ifndef KJ_GPU_DEV_CUH
#define KJ_GPU_DEV_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T> __device__ __forceinline__ float tof(T x);
template <> __device__ __forceinline__ float tof<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float tof<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float tof<float>(float x) { return x; }
template <typename T> __device__ __forceinline__ T fromf(float x);
template <> __device__ __forceinline__ __half fromf<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ float fromf<float>(float x) { return x; }

// Elements per 16-byte access.
template <typename T> struct Vec {
	static const int N = 16 / sizeof(T);
};

template <typename T> __device__ __forceinline__ void ld16(const T *p, float *f)
{
	uint4 u = *reinterpret_cast<const uint4 *>(p);
	const T *t = reinterpret_cast<const T *>(&u);
#pragma unroll
	for (int i = 0; i < Vec<T>::N; i++)
		f[i] = tof(t[i]);
}

template <typename T> __device__ __forceinline__ void st16(T *p, const float *f)
{
	uint4 u;
	T *t = reinterpret_cast<T *>(&u);
#pragma unroll
	for (int i = 0; i < Vec<T>::N; i++)
		t[i] = fromf<T>(f[i]);
	*reinterpret_cast<uint4 *>(p) = u;
}

// Run body with T the element type of dtype (0 fp16, 1 bf16, else fp32).
#define DISPATCH(dt, ...)                             \
	do {                                          \
		if ((dt) == 0) {                      \
			typedef __half T;             \
			__VA_ARGS__                   \
		} else if ((dt) == 1) {               \
			typedef __nv_bfloat16 T;      \
			__VA_ARGS__                   \
		} else {                              \
			typedef float T;              \
			__VA_ARGS__                   \
		}                                     \
	} while (0)

#endif
