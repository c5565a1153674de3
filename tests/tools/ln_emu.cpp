// Checks the layer norm / RMS norm backward kernels of src/sweep/worker/worker_norm_bwd.cuh on a
// CPU (the kernel bodies unchanged, run by fa2_emu.h's thread-per-CUDA-thread emulation, with the
// launch shape of ln_bwd_plan) against a double reference of dx, dgamma and dbeta. Build and run:
// (-fno-strict-aliasing: the device helpers read 16-byte vectors through element pointers, as CUDA allows)
//   g++ -std=c++20 -O2 -fno-strict-aliasing -pthread -DFA2_EMU -I/usr/local/cuda/include -Isrc/gpu -Isrc/sweep/worker -Itests/tools \
//       -x c++ tests/tools/ln_emu.cpp -o /tmp/ln_emu && /tmp/ln_emu [quick]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <vector>
#include "kj_gpu_dev.cuh"
#include "fa2_emu.h"
#undef __global__
#define __global__
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static // CTAs run one after another

inline float warp_sum(float x)
{
	for (int o = 16; o; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

#include "worker_norm_bwd.cuh"

static uint64_t rng = 777;
static float urand()
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return ((rng >> 40) + 0.5f) / 16777216.0f * 2.f - 1.f;
}

template <typename T, int RMS, int PPT>
static void launch(const std::vector<T> &x, const std::vector<T> &g, const std::vector<T> &dy, const std::vector<float> &mean,
		   const std::vector<float> &rstd, std::vector<T> &dx, std::vector<float> &pg, std::vector<float> &pb,
		   int64_t rows, int64_t cols, unsigned tpb, int64_t per, int64_t parts)
{
	emu_launch(dim3((unsigned)parts), tpb, 0, [&] {
		ln_bwd_rows_k<T, RMS, PPT>(x.data(), g.data(), dy.data(), mean.data(), rstd.data(), dx.data(), pg.data(),
					   pb.data(), rows, cols, per);
	});
}

template <typename T, int RMS> static int run(int64_t rows, int64_t cols, int nparts)
{
	int64_t n = rows * cols;
	std::vector<T> x(n), dy(n), dx(n), g(cols), dg(cols), db(cols);
	std::vector<float> mean(rows), rstd(rows), pg((size_t)nparts * cols, NAN), pb((size_t)nparts * cols, NAN);
	for (int64_t i = 0; i < n; i++)
		x[i] = fromf<T>(urand() + 0.3f), dy[i] = fromf<T>(urand()), dx[i] = fromf<T>(NAN);
	for (int64_t i = 0; i < cols; i++)
		g[i] = fromf<T>(urand());
	for (int64_t r = 0; r < rows; r++) { // the forward's statistics (fp32 like ln_fwd_k)
		float s1 = 0, s2 = 0;
		for (int64_t c = 0; c < cols; c++) {
			float v = tof(x[r * cols + c]);
			s1 += v, s2 += v * v;
		}
		float mu = RMS ? 0.f : s1 / cols, var = s2 / cols - mu * mu;
		mean[r] = mu, rstd[r] = 1.f / sqrtf(fmaxf(var, 0.f) + 1e-5f);
	}
	int ppt;
	unsigned tpb;
	int64_t per, parts;
	ln_bwd_plan(cols / Vec<T>::N, rows, nparts, 2, &ppt, &tpb, &per, &parts); // 2 SMs: several rows a block
	if (ppt == 1)
		launch<T, RMS, 1>(x, g, dy, mean, rstd, dx, pg, pb, rows, cols, tpb, per, parts);
	else if (ppt == 2)
		launch<T, RMS, 2>(x, g, dy, mean, rstd, dx, pg, pb, rows, cols, tpb, per, parts);
	else if constexpr (sizeof(T) == 4)
		launch<T, RMS, 4>(x, g, dy, mean, rstd, dx, pg, pb, rows, cols, tpb, per, parts);
	emu_launch(dim3((unsigned)((cols + 31) / 32), RMS ? 1 : 2), 256, 0,
		   [&] { ln_colsum_k<T>(pg.data(), pb.data(), (int)parts, dg.data(), db.data(), cols); });
	double nx = 0, dxx = 0, ng = 0, dgg = 0;
	std::vector<double> rg(cols, 0), rb(cols, 0);
	for (int64_t r = 0; r < rows; r++) {
		double mu = 0, var = 0, c1 = 0, c2 = 0;
		const T *xr = &x[r * cols], *dr = &dy[r * cols];
		for (int64_t i = 0; i < cols; i++)
			mu += tof(xr[i]);
		mu = RMS ? 0 : mu / cols;
		for (int64_t i = 0; i < cols; i++)
			var += (tof(xr[i]) - mu) * (tof(xr[i]) - mu);
		double rs = 1 / sqrt(var / cols + 1e-5);
		for (int64_t i = 0; i < cols; i++) {
			double xh = (tof(xr[i]) - mu) * rs, w = tof(g[i]) * tof(dr[i]);
			c1 += xh * w, c2 += w;
			rg[i] += tof(dr[i]) * xh, rb[i] += tof(dr[i]);
		}
		c1 /= cols, c2 = RMS ? 0 : c2 / cols;
		for (int64_t i = 0; i < cols; i++) {
			double ref = (tof(g[i]) * tof(dr[i]) - (tof(xr[i]) - mu) * rs * c1 - c2) * rs, out = tof(dx[r * cols + i]);
			nx += std::isfinite(out) ? (out - ref) * (out - ref) : 1e60, dxx += ref * ref;
		}
	}
	for (int64_t i = 0; i < cols; i++) {
		double o = tof(dg[i]);
		ng += std::isfinite(o) ? (o - rg[i]) * (o - rg[i]) : 1e60, dgg += rg[i] * rg[i];
		if (!RMS) {
			o = tof(db[i]);
			ng += std::isfinite(o) ? (o - rb[i]) * (o - rb[i]) : 1e60, dgg += rb[i] * rb[i];
		}
	}
	double e1 = sqrt(nx / dxx), e2 = sqrt(ng / dgg);
	double tol = std::is_same<T, float>::value ? 1e-4 : std::is_same<T, __half>::value ? 5e-3 : 1.5e-2;
	int bad = !(e1 <= tol && e2 <= tol);
	printf("%s %s %-4s rows=%lld cols=%lld nparts=%d (ppt %d, %u threads, %lld rows x %lld blocks)  dx %.2e dg/db %.2e\n",
	       bad ? "FAIL" : "ok  ", RMS ? "rms" : "ln ", std::is_same<T, float>::value ? "fp32" : std::is_same<T, __half>::value ? "fp16" : "bf16",
	       (long long)rows, (long long)cols, nparts, ppt, tpb, (long long)per, (long long)parts, e1, e2);
	return bad;
}

int main(int argc, char **argv)
{
	int f = 0, quick = argc > 1; // quick: fewer cases (make test)
	const int64_t shapes[][3] = {{128, 1024, 16}, {5, 8192, 264}, {37, 4104, 4}, {200, 24, 25}, {1, 16, 1}, {19, 4096, 264}};
	for (auto &s : shapes) {
		if (quick && (s[0] == 19 || s[0] == 1))
			continue;
		f += run<__nv_bfloat16, 0>(s[0], s[1], (int)s[2]);
		f += run<float, 1>(s[0], s[1], (int)s[2]);
		if (quick)
			continue;
		f += run<__nv_bfloat16, 1>(s[0], s[1], (int)s[2]);
		f += run<__half, 0>(s[0], s[1], (int)s[2]);
		f += run<float, 0>(s[0], s[1], (int)s[2]);
	}
	printf("%d failed\n", f);
	return f ? 1 : 0;
}
