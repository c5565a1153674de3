// Host stand-ins for the PTX helpers of src/gpu/kj_gpu_fa2_dev.cuh (included there under
// FA2_EMU by tests/tools/fa2_emu.cpp): every CUDA thread of a CTA is a std::thread; the warp-wide
// instructions (ldmatrix, mma.sync m16n8k16, shfl.xor) meet at a per-warp barrier and compute
// their results from all 32 lanes' operands exactly as the PTX ISA lays the fragments out;
// cp.async copies at once; __syncthreads is a CTA barrier.
#ifndef KJ_FA2_EMU_H
#define KJ_FA2_EMU_H

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

struct EmuWarp {
	std::barrier<> *bar;
	const void *ptr[32];
	uint32_t a[32][4], b[32][2];
	float c[32][4], f[32];
};

struct EmuCta {
	std::barrier<> *bar;
	std::vector<EmuWarp> warps;
	unsigned char *smem;
};

inline thread_local EmuCta *emu_cta;
inline thread_local int emu_lane, emu_warp;
inline thread_local uint3 threadIdx, blockIdx;
inline dim3 gridDim, blockDim;
inline std::mutex emu_atomic_mu;

// Run body as every thread of every CTA of grid (CTAs one after another, so a kernel's static
// __shared__ arrays may be plain statics); smem bytes of dynamic shared memory, filled with 0xff.
template <typename F> void emu_launch(dim3 grid, unsigned threads, size_t smem, F body)
{
	gridDim = grid, blockDim = dim3(threads, 1, 1);
	std::vector<unsigned char> sm(smem + 128);
	for (unsigned by = 0; by < grid.y; by++)
		for (unsigned bx = 0; bx < grid.x; bx++) {
			EmuCta cta;
			std::barrier<> bar(threads);
			cta.bar = &bar;
			cta.warps.resize((threads + 31) / 32);
			for (auto &w : cta.warps)
				w.bar = new std::barrier<>(32);
			memset(sm.data(), 0xff, sm.size()); // NaN patterns: reads of unwritten shared memory show
			cta.smem = sm.data();
			std::vector<std::thread> th;
			for (unsigned t = 0; t < threads; t++)
				th.emplace_back([&, t] {
					threadIdx = make_uint3(t, 0, 0);
					blockIdx = make_uint3(bx, by, 0);
					emu_cta = &cta, emu_lane = t & 31, emu_warp = t >> 5;
					body();
				});
			for (auto &x : th)
				x.join();
			for (auto &w : cta.warps)
				delete w.bar;
		}
}

#define FA2_SMEM(name) unsigned char *name = emu_cta->smem

inline EmuWarp &emu_w() { return emu_cta->warps[emu_warp]; }

inline void __syncthreads() { emu_cta->bar->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned, float v, int o)
{
	EmuWarp &W = emu_w();
	W.f[emu_lane] = v;
	W.bar->arrive_and_wait();
	float r = W.f[emu_lane ^ o];
	W.bar->arrive_and_wait();
	return r;
}

inline void cp_async16(void *dst, const void *src, bool ok)
{
	if (ok)
		memcpy(dst, src, 16);
	else
		memset(dst, 0, 16);
}

inline void cp_async4(void *dst, const void *src, bool ok)
{
	if (ok)
		memcpy(dst, src, 4);
	else
		memset(dst, 0, 4);
}

inline float fexp2(float x) { return exp2f(x); }

inline void cp_async_commit() {}
template <int N> inline void cp_async_wait() {}

inline void emu_ldsm(uint32_t *r, const void *p, bool trans)
{
	EmuWarp &W = emu_w();
	int L = emu_lane;
	W.ptr[L] = p;
	W.bar->arrive_and_wait();
	for (int j = 0; j < 4; j++) {
		if (!trans) { // row L/4 of matrix j, elements 2(L%4), +1
			const uint16_t *row = (const uint16_t *)W.ptr[8 * j + L / 4];
			r[j] = (uint32_t)row[2 * (L % 4)] | (uint32_t)row[2 * (L % 4) + 1] << 16;
		} else { // (row 2(L%4), col L/4) and (row 2(L%4)+1, col L/4)
			const uint16_t *r0 = (const uint16_t *)W.ptr[8 * j + 2 * (L % 4)];
			const uint16_t *r1 = (const uint16_t *)W.ptr[8 * j + 2 * (L % 4) + 1];
			r[j] = (uint32_t)r0[L / 4] | (uint32_t)r1[L / 4] << 16;
		}
	}
	W.bar->arrive_and_wait();
}

inline void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p)
{
	uint32_t r[4];
	emu_ldsm(r, p, false);
	r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}

inline void ldsm_x4_t(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p)
{
	uint32_t r[4];
	emu_ldsm(r, p, true);
	r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}

inline void ldsm_x2_t(uint32_t &r0, uint32_t &r1, const void *p)
{
	uint32_t r[4];
	EmuWarp &W = emu_w();
	W.ptr[emu_lane] = p;
	W.bar->arrive_and_wait();
	int L = emu_lane;
	for (int j = 0; j < 2; j++) { // matrices 0, 1: addresses of lanes 0-15
		const uint16_t *a0 = (const uint16_t *)W.ptr[8 * j + 2 * (L % 4)];
		const uint16_t *a1 = (const uint16_t *)W.ptr[8 * j + 2 * (L % 4) + 1];
		r[j] = (uint32_t)a0[L / 4] | (uint32_t)a1[L / 4] << 16;
	}
	W.bar->arrive_and_wait();
	r0 = r[0], r1 = r[1];
}

template <typename T> inline float emu_h(uint32_t reg, int half)
{
	uint16_t x = (uint16_t)(reg >> (16 * half));
	T t;
	memcpy(&t, &x, 2);
	return tof(t);
}

template <typename T> inline void mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	EmuWarp &W = emu_w();
	int L = emu_lane, g = L >> 2, tq = L & 3;
	memcpy(W.a[L], a, 16);
	W.b[L][0] = b0, W.b[L][1] = b1;
	memcpy(W.c[L], c, 16);
	W.bar->arrive_and_wait();
	float d[4];
	for (int i = 0; i < 4; i++) {
		int row = g + (i >= 2 ? 8 : 0), col = 2 * tq + (i & 1);
		double s = W.c[L][i];
		for (int k = 0; k < 16; k++) {
			int la = (row & 7) * 4 + ((k & 7) >> 1), ra = (row >> 3) + ((k >> 3) << 1);
			int lb = col * 4 + ((k & 7) >> 1), rb = k >> 3;
			s += (double)emu_h<T>(W.a[la][ra], k & 1) * emu_h<T>(W.b[lb][rb], k & 1);
		}
		d[i] = (float)s;
	}
	W.bar->arrive_and_wait();
	memcpy(c, d, 16);
}

inline void red_add2(float *p, float a, float b)
{
	std::lock_guard<std::mutex> lk(emu_atomic_mu);
	p[0] += a, p[1] += b;
}

#endif
