// Checks the bias-gradient column sum of src/sweep/worker/worker_colsum.cuh on a CPU (the kernel
// bodies unchanged, run by fa2_emu.h's thread-per-CUDA-thread emulation with the launch shape of
// kj_sw_colsum) against double sums: fp16, bf16 and fp32, columns a multiple of the 16-byte pack or
// not, one row part or several. Build and run:
//   g++ -std=c++20 -O2 -fno-strict-aliasing -pthread -DFA2_EMU -I/usr/local/cuda/include -Isrc/gpu -Isrc/sweep/worker -Itests/tools \
//       -x c++ tests/tools/colsum_emu.cpp -o /tmp/colsum_emu && /tmp/colsum_emu [quick]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>
#include "kj_gpu_dev.cuh"
#include "fa2_emu.h"
#undef __global__
#define __global__
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static // CTAs run one after another

#include "worker_colsum.cuh"

static uint64_t rng = 4242;
static float urand()
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return ((rng >> 40) + 0.5f) / 16777216.0f * 2.f - 1.f;
}

// One case: x [rows, cols] of T summed over rows in `parts` row parts; the largest error of a column
// over the sum of its |x| (the fp32 accumulation's and the output rounding's scale), against tol.
template <typename T> static int run(const char *name, int64_t rows, int64_t cols, int parts, double tol)
{
	std::vector<T> x((size_t)(rows * cols)), out((size_t)cols, fromf<T>(NAN));
	std::vector<float> part((size_t)parts * cols, NAN);
	for (auto &v : x)
		v = fromf<T>(urand());
	const int VN = Vec<T>::N;
	int64_t per = (rows + parts - 1) / parts;
	int vec = cols % VN == 0;
	dim3 grid((unsigned)((cols + 32 * VN - 1) / (32 * VN)), (unsigned)parts);
	emu_launch(grid, 32 * COLSUM_WARPS, 0, [&] { colsum_k<T>(x.data(), part.data(), out.data(), rows, cols, per, vec); });
	if (parts > 1)
		emu_launch(dim3((unsigned)((cols + 255) / 256)), 256, 0,
			   [&] { colsum_parts_k<T>(part.data(), parts, out.data(), cols); });
	double worst = 0;
	for (int64_t j = 0; j < cols; j++) {
		double ref = 0, mag = 0;
		for (int64_t i = 0; i < rows; i++) {
			double v = tof(x[(size_t)(i * cols + j)]);
			ref += v, mag += fabs(v);
		}
		double got = tof(out[(size_t)j]);
		double e = std::isfinite(got) ? fabs(got - ref) / (mag > 0 ? mag : 1) : INFINITY;
		worst = e > worst ? e : worst;
	}
	int ok = worst <= tol;
	printf("%s %-28s rows %5lld cols %5lld parts %3d: worst error %.2e of sum|x| (tol %.0e)\n", ok ? "ok  " : "FAIL",
	       name, (long long)rows, (long long)cols, parts, worst, tol);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && !strcmp(argv[1], "quick"), fails = 0;
	// half outputs round to 2^-11 (fp16) or 2^-8 (bf16) of the sum: tolerances a little above
	fails += run<__half>("fp16, packs, one part", 64, 1024, 1, 2e-3);
	fails += run<__half>("fp16, cols off the pack", 37, 606, 2, 2e-3);
	fails += run<__nv_bfloat16>("bf16, several parts", 300, 520, 5, 1e-2);
	fails += run<float>("fp32, cols off the pack", 65, 130, 3, 1e-6);
	fails += run<__half>("fp16, one row", 1, 8, 1, 2e-3);
	if (!quick)
		fails += run<__nv_bfloat16>("bf16, wide", 512, 3072, 16, 1e-2);
	return fails ? 1 : 0;
}
