// Checks the flash-attention kernels of src/gpu/kj_gpu_fa2_fwd.cu and _bwd.cu on a CPU: the kernel
// bodies, unchanged, run with the host stand-ins of fa2_emu.h (one std::thread per CUDA thread, warp
// instructions emulated per the PTX ISA fragment layouts) against a double-precision reference,
// forward (o, lse) and backward (dq, dk, dv), causal and not, over head sizes 32/64/96/128 and
// sequence lengths that are not multiples of the tiles. No GPU needed. Build and run:
// (-fno-strict-aliasing: the device helpers read 16-byte vectors through element pointers, as CUDA allows)
//   g++ -std=c++20 -O2 -fno-strict-aliasing -pthread -DFA2_EMU -I/usr/local/cuda/include -Isrc/gpu -Isrc/sweep/worker -Itests/tools \
//       -x c++ tests/tools/fa2_emu.cpp -o /tmp/fa2_emu && /tmp/fa2_emu [quick]
#define FA2_EMU 1
#include <cuda_runtime.h>
#include <thread>
#include <vector>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#undef __global__
#define __global__
#define __launch_bounds__(...)
#include "kj_gpu_fa2_fwd.cu"
#include "kj_gpu_fa2_bwd.cu"

static uint64_t rng = 12345;
static float urand()
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return ((rng >> 40) + 0.5f) / 16777216.0f * 2.f - 1.f;
}

template <typename T, int D, int MT = 1> static int run(int64_t bh, int64_t l, int causal)
{
	int64_t n = bh * l * D;
	std::vector<T> q(n), k(n), v(n), o(n), dout(n), dk(n), dv(n);
	std::vector<float> lse(bh * l, 0), delta(bh * l), dq_acc(n, 0.f);
	for (int64_t i = 0; i < n; i++) {
		q[i] = fromf<T>(urand()), k[i] = fromf<T>(urand()), v[i] = fromf<T>(urand());
		dout[i] = fromf<T>(urand()), o[i] = fromf<T>(NAN), dk[i] = dv[i] = fromf<T>(NAN);
	}
	float scale = (float)(1.0 / sqrt((double)D));
	const T *qp = q.data(), *kp = k.data(), *vp = v.data(), *dp = dout.data();
	T *op = o.data(), *dkp = dk.data(), *dvp = dv.data();
	float *lp = lse.data(), *dlp = delta.data(), *dqa = dq_acc.data();
	double ne[5] = {0}, de[5] = {0};
	emu_launch(dim3((unsigned)((l + Fa2Fwd<D, MT>::BM - 1) / Fa2Fwd<D, MT>::BM), (unsigned)bh), FA_THREADS,
		   fa2_fwd_smem<D, MT>(sizeof(T)), [&] { fa2_fwd_k<T, D, MT>(qp, kp, vp, op, lp, l, scale, causal); });
	for (auto &x : dq_acc)
		x = NAN; // fa2_prep_k zeroes it
	const T *opc = o.data();
	emu_launch(dim3((unsigned)((bh * l + 15) / 16)), 256, 0, [&] { fa2_prep_k<T, D>(opc, dp, dlp, dqa, bh * l); });
	emu_launch(dim3((unsigned)((l + FA_BWD_BN - 1) / FA_BWD_BN), (unsigned)bh), FA_BWD_THREADS, fa2_bwd_smem<D>(sizeof(T)),
		   [&] { fa2_bwd_k<T, D>(qp, kp, vp, dp, lp, dlp, dqa, dkp, dvp, l, scale, causal); });
	std::vector<T> dq(n, fromf<T>(NAN));
	T *dqp = dq.data();
	emu_launch(dim3(3), 256, 0, [&] { fa2_dq_k<T>(dqa, dqp, n / 8); }); // a grid smaller than the work: strides
	for (int64_t r = 0; r < bh * l; r++) { // delta against its definition
		double sd = 0;
		for (int c = 0; c < D; c++)
			sd += (double)tof(o[r * D + c]) * tof(dout[r * D + c]);
		if (fabs(sd - delta[r]) > 1e-4 * (1 + fabs(sd)))
			printf("delta mismatch row %lld: %g vs %g\n", (long long)r, delta[r], sd), ne[1] += 1e60;
	}
	// reference
	std::vector<double> P(l * l), dS(l * l);
	for (int64_t h = 0; h < bh; h++) {
		int64_t b0 = h * l * D;
		auto Q = [&](int64_t i, int c) { return (double)tof(q[b0 + i * D + c]); };
		auto K = [&](int64_t i, int c) { return (double)tof(k[b0 + i * D + c]); };
		auto V = [&](int64_t i, int c) { return (double)tof(v[b0 + i * D + c]); };
		auto G = [&](int64_t i, int c) { return (double)tof(dout[b0 + i * D + c]); };
		std::vector<double> ro(l * D, 0), rq(l * D, 0), rk(l * D, 0), rv(l * D, 0);
		for (int64_t i = 0; i < l; i++) {
			int64_t je = causal ? i + 1 : l;
			double mx = -INFINITY, sum = 0;
			for (int64_t j = 0; j < je; j++) {
				double s = 0;
				for (int c = 0; c < D; c++)
					s += Q(i, c) * K(j, c);
				P[i * l + j] = s * scale, mx = fmax(mx, s * scale);
			}
			for (int64_t j = 0; j < je; j++)
				sum += (P[i * l + j] = exp(P[i * l + j] - mx));
			double rl = mx + log(sum);
			ne[4] += (lse[h * l + i] - rl) * (lse[h * l + i] - rl), de[4] += rl * rl;
			for (int64_t j = 0; j < je; j++)
				P[i * l + j] /= sum;
			for (int64_t j = 0; j < je; j++)
				for (int c = 0; c < D; c++)
					ro[i * D + c] += P[i * l + j] * V(j, c);
			double Dd = 0;
			for (int c = 0; c < D; c++)
				Dd += G(i, c) * ro[i * D + c];
			for (int64_t j = 0; j < je; j++) {
				double s = 0;
				for (int c = 0; c < D; c++)
					s += G(i, c) * V(j, c);
				double ds = P[i * l + j] * (s - Dd);
				for (int c = 0; c < D; c++) {
					rq[i * D + c] += scale * ds * K(j, c);
					rk[j * D + c] += scale * ds * Q(i, c);
					rv[j * D + c] += P[i * l + j] * G(i, c);
				}
			}
		}
		for (int64_t e = 0; e < l * D; e++) {
			double out[4] = {tof(o[b0 + e]), tof(dq[b0 + e]),
					 tof(dk[b0 + e]), tof(dv[b0 + e])};
			double ref[4] = {ro[e], rq[e], rk[e], rv[e]};
			for (int m = 0; m < 4; m++) {
				double d = out[m] - ref[m];
				ne[m] += std::isfinite(out[m]) ? d * d : 1e60;
				de[m] += ref[m] * ref[m];
			}
		}
	}
	double err[5];
	for (int m = 0; m < 5; m++)
		err[m] = sqrt(ne[m] / (de[m] > 0 ? de[m] : 1));
	double tol = sizeof(T) == 2 && std::is_same<T, __half>::value ? 5e-3 : 1.5e-2;
	int bad = 0;
	for (int m = 0; m < 5; m++)
		bad |= !(err[m] <= tol);
	printf("%s %-4s MT=%d D=%3d bh=%lld l=%4lld causal=%d  o %.2e dq %.2e dk %.2e dv %.2e lse %.2e\n", bad ? "FAIL" : "ok  ",
	       std::is_same<T, __half>::value ? "fp16" : "bf16", MT, D, (long long)bh, (long long)l, causal, err[0], err[1],
	       err[2], err[3], err[4]);
	return bad;
}

int main(int argc, char **argv)
{
	int quick = argc > 1;
	int fails = 0;
	const int64_t shapes[][2] = {{1, 1}, {1, 17}, {2, 64}, {1, 100}, {2, 160}, {1, 200}, {1, 300}};
	for (auto &s : shapes) {
		if (quick && s[1] > 100)
			continue;
		for (int causal = 1; causal >= 0; causal--) {
			fails += run<__nv_bfloat16, 64, 2>(s[0], s[1], causal);
			fails += run<__half, 128, 1>(s[0], s[1], causal);
			fails += run<__nv_bfloat16, 32, 2>(s[0], s[1], causal);
			fails += run<__half, 96, 1>(s[0], s[1], causal);
			if (!quick) {
				fails += run<__nv_bfloat16, 128, 2>(s[0], s[1], causal);
				fails += run<__half, 64, 1>(s[0], s[1], causal);
				fails += run<__nv_bfloat16, 128, 1>(s[0], s[1], causal);
				fails += run<__half, 96, 2>(s[0], s[1], causal);
			}
		}
	}
	printf("%d failed\n", fails);
	return fails ? 1 : 0;
}
