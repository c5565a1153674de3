// kjoule-sweep-worker: flash_atten's fp32 CUDA-core flash-attention kernels and their launchers.
//
// Any dtype, head sizes up to 128 (KJ_SWEEP_ATTN=cuda-cores): online softmax over 64 x 64 tiles in
// shared memory, no l x l matrix in device memory, forward and backward (worker_attn.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kj_gpu_dev.cuh"
#include "worker_attn.cuh"

#define SS 65 // score tile row stride (padded)

template <typename T>
__device__ __forceinline__ void load_tile(float *dst, int ds, const T *src, int64_t r0, int64_t l, int d)
{
	for (int e = threadIdx.x; e < BR * d; e += blockDim.x) {
		int r = e / d, c = e % d;
		dst[r * ds + c] = r0 + r < l ? tof(src[(r0 + r) * d + c]) : 0.f;
	}
}

template <typename T>
__global__ void __launch_bounds__(256) attn_fwd_k(const T *q, const T *k, const T *v, T *o, float *lse, int64_t l,
						  int d, float scale, int causal)
{
	extern __shared__ float sm[];
	int ds = d + 1, t = threadIdx.x, ti = t >> 2, tq = t & 3;
	float *Qs = sm, *Ks = Qs + BR * ds, *Vs = Ks + BR * ds, *Ss = Vs + BR * ds;
	float *rm = Ss + BR * SS, *rl = rm + BR, *ra = rl + BR;
	int64_t bh = blockIdx.y, q0 = (int64_t)blockIdx.x * BR;
	const T *qb = q + bh * l * d, *kb = k + bh * l * d, *vb = v + bh * l * d;
	load_tile(Qs, ds, qb, q0, l, d);
	if (t < BR)
		rm[t] = -INFINITY, rl[t] = 0.f;
	float acc[32];
#pragma unroll
	for (int u = 0; u < 32; u++)
		acc[u] = 0.f;
	int64_t kend = causal ? (q0 + BR < l ? q0 + BR : l) : l;
	for (int64_t k0 = 0; k0 < kend; k0 += BR) {
		__syncthreads();
		load_tile(Ks, ds, kb, k0, l, d);
		load_tile(Vs, ds, vb, k0, l, d);
		__syncthreads();
		for (int kk = 0; kk < 16; kk++) {
			int j = tq + 4 * kk;
			float s = 0.f;
			for (int c = 0; c < d; c++)
				s += Qs[ti * ds + c] * Ks[j * ds + c];
			s *= scale;
			if (k0 + j >= l || (causal && k0 + j > q0 + ti))
				s = -INFINITY;
			Ss[ti * SS + j] = s;
		}
		__syncthreads();
		if (t < BR) {
			float mx = rm[t];
			for (int j = 0; j < BR; j++)
				mx = fmaxf(mx, Ss[t * SS + j]);
			float alpha = __expf(rm[t] - mx), sum = 0.f;
			for (int j = 0; j < BR; j++) {
				float s = Ss[t * SS + j];
				float p = s == -INFINITY ? 0.f : __expf(s - mx);
				Ss[t * SS + j] = p;
				sum += p;
			}
			rl[t] = rl[t] * alpha + sum;
			rm[t] = mx;
			ra[t] = alpha;
		}
		__syncthreads();
		float a = ra[ti];
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d) {
				float s = acc[u] * a;
				for (int j = 0; j < BR; j++)
					s += Ss[ti * SS + j] * Vs[j * ds + c];
				acc[u] = s;
			}
		}
	}
	__syncthreads();
	if (q0 + ti < l) {
		float inv = 1.f / rl[ti];
		T *ob = o + (bh * l + q0 + ti) * d;
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d)
				ob[c] = fromf<T>(acc[u] * inv);
		}
		if (!tq)
			lse[bh * l + q0 + ti] = rm[ti] + __logf(rl[ti]);
	}
}


// One block per (key tile, bh): dK, dV accumulated in registers over the query tiles; dQ added
// into dq_acc (fp32, zeroed by the caller) with atomics.
template <typename T>
__global__ void __launch_bounds__(256, 1) attn_bwd_k(const T *q, const T *k, const T *v, const T *dout,
						  const float *lse, const float *delta, float *dq_acc, T *dk,
						  T *dv, int64_t l, int d, float scale, int causal)
{
	extern __shared__ float sm[];
	int ds = d + 1, t = threadIdx.x, ti = t >> 2, tq = t & 3;
	float *Ks = sm, *Vs = Ks + BR * ds, *Qs = Vs + BR * ds, *Ds = Qs + BR * ds;
	float *Ps = Ds + BR * ds, *dPs = Ps + BR * SS, *ls = dPs + BR * SS, *dl = ls + BR;
	int64_t bh = blockIdx.y, k0 = (int64_t)blockIdx.x * BR, base = bh * l * d;
	load_tile(Ks, ds, k + base, k0, l, d);
	load_tile(Vs, ds, v + base, k0, l, d);
	float adk[32], adv[32];
#pragma unroll
	for (int u = 0; u < 32; u++)
		adk[u] = adv[u] = 0.f;
	for (int64_t q0 = causal ? k0 : 0; q0 < l; q0 += BR) {
		__syncthreads();
		load_tile(Qs, ds, q + base, q0, l, d);
		load_tile(Ds, ds, dout + base, q0, l, d);
		if (t < BR) {
			ls[t] = q0 + t < l ? lse[bh * l + q0 + t] : 0.f;
			dl[t] = q0 + t < l ? delta[bh * l + q0 + t] : 0.f;
		}
		__syncthreads();
		for (int kk = 0; kk < 16; kk++) {
			int j = tq + 4 * kk;
			float s = 0.f, dp = 0.f;
			for (int c = 0; c < d; c++) {
				s += Qs[ti * ds + c] * Ks[j * ds + c];
				dp += Ds[ti * ds + c] * Vs[j * ds + c];
			}
			int valid = q0 + ti < l && k0 + j < l && !(causal && k0 + j > q0 + ti);
			float p = valid ? __expf(s * scale - ls[ti]) : 0.f;
			Ps[ti * SS + j] = p;
			dPs[ti * SS + j] = p * (dp - dl[ti]); // dS
		}
		__syncthreads();
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d) {
				float sv = 0.f, sk = 0.f, sq = 0.f;
				for (int i = 0; i < BR; i++) {
					sv += Ps[i * SS + ti] * Ds[i * ds + c];
					sk += dPs[i * SS + ti] * Qs[i * ds + c];
				}
				for (int j = 0; j < BR; j++)
					sq += dPs[ti * SS + j] * Ks[j * ds + c];
				adv[u] += sv;
				adk[u] += sk;
				if (q0 + ti < l)
					atomicAdd(dq_acc + base + (q0 + ti) * d + c, sq * scale);
			}
		}
	}
	if (k0 + ti < l) {
#pragma unroll
		for (int u = 0; u < 32; u++) {
			int c = tq + 4 * u;
			if (c < d) {
				dk[base + (k0 + ti) * d + c] = fromf<T>(adk[u] * scale);
				dv[base + (k0 + ti) * d + c] = fromf<T>(adv[u]);
			}
		}
	}
}

static size_t fwd_smem(int d)
{
	return (size_t)(3 * BR * (d + 1) + BR * SS + 3 * BR) * sizeof(float);
}

static size_t bwd_smem(int d)
{
	return (size_t)(4 * BR * (d + 1) + 2 * BR * SS + 2 * BR) * sizeof(float);
}

extern "C" int kj_sw_attn_fp32_fwd(int dt, const void *q, const void *k, const void *v, void *o, float *lse,
				   int64_t bh, int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	dim3 grid((unsigned)((l + BR - 1) / BR), (unsigned)bh);
	size_t sm = fwd_smem((int)d);
	DISPATCH(dt, {
		static size_t raised; /* set once, outside graph capture (the first call is never captured) */
		if (raised < sm) {
			cudaError_t e = cudaFuncSetAttribute(attn_fwd_k<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
			if (e != cudaSuccess)
				return (int)e;
			raised = sm;
		}
		attn_fwd_k<T><<<grid, 256, sm, s>>>((const T *)q, (const T *)k, (const T *)v, (T *)o, lse, l, (int)d,
						     scale, causal);
	});
	return (int)cudaGetLastError();
}

extern "C" int kj_sw_attn_fp32_bwd(int dt, const void *q, const void *k, const void *v, const void *dout,
				   const float *lse, const float *delta, float *dq_acc, void *dk, void *dv, int64_t bh,
				   int64_t l, int64_t d, float scale, int causal, cudaStream_t s)
{
	dim3 grid((unsigned)((l + BR - 1) / BR), (unsigned)bh);
	cudaError_t e;
	size_t sm = bwd_smem((int)d);
	DISPATCH(dt, {
		static size_t raised;
		if (raised < sm) {
			e = cudaFuncSetAttribute(attn_bwd_k<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm);
			if (e != cudaSuccess)
				return (int)e;
			raised = sm;
		}
		attn_bwd_k<T><<<grid, 256, sm, s>>>((const T *)q, (const T *)k, (const T *)v, (const T *)dout, lse,
						     delta, dq_acc, (T *)dk, (T *)dv, l, (int)d, scale, causal);
	});
	return 0;
}
