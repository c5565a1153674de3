// kjoule-sweep-worker: layer norm / RMS norm backward kernels (included by worker_norm.cu after
// worker_memops.cuh's warp_sum; tests/tools/ln_emu.cpp runs them on a CPU).
#ifndef KJ_SWEEP_WORKER_NORM_BWD_CUH
#define KJ_SWEEP_WORKER_NORM_BWD_CUH

// Backward, one pass over x and dy: a block of TPB threads owns PPT 16-byte packs of every row (its
// gamma slice kept in registers) and walks a contiguous range of rows (the next row's x and dy
// loaded before this row's reduction); dgamma/dbeta of its rows summed in registers and written
// once into part_g/part_b [block, cols] fp32, then summed over blocks by ln_colsum_k.
template <typename T, int RMS, int PPT>
__global__ void __launch_bounds__(512) ln_bwd_rows_k(const T *x, const T *g, const T *dy, const float *mean,
						     const float *rstd, T *dx, float *part_g, float *part_b,
						     int64_t rows, int64_t cols, int64_t per)
{
	__shared__ float sh[2][64];
	const int N = Vec<T>::N, lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
	const bool PF = PPT <= 2; // prefetch the next row (registers allow it)
	const int64_t np = cols / N, r0 = blockIdx.x * per, r1 = r0 + per < rows ? r0 + per : rows;
	float ag[PPT][Vec<T>::N], ab[PPT][Vec<T>::N];
	uint4 gr[PPT], cx[PPT], cd[PPT];
#pragma unroll
	for (int i = 0; i < PPT; i++) {
		int64_t p = threadIdx.x + (int64_t)i * blockDim.x;
#pragma unroll
		for (int e = 0; e < N; e++)
			ag[i][e] = 0.f, ab[i][e] = 0.f;
		gr[i] = cx[i] = cd[i] = make_uint4(0, 0, 0, 0);
		if (p < np) {
			gr[i] = *reinterpret_cast<const uint4 *>(g + p * N);
			if (PF && r0 < r1) {
				cx[i] = *reinterpret_cast<const uint4 *>(x + r0 * cols + p * N);
				cd[i] = *reinterpret_cast<const uint4 *>(dy + r0 * cols + p * N);
			}
		}
	}
	for (int64_t r = r0; r < r1; r++) {
		uint4 nx[PPT], nd[PPT];
#pragma unroll
		for (int i = 0; i < PPT; i++) {
			int64_t p = threadIdx.x + (int64_t)i * blockDim.x;
			int64_t rr = PF ? r + 1 : r;
			nx[i] = nd[i] = make_uint4(0, 0, 0, 0);
			if (rr < r1 && p < np) {
				nx[i] = *reinterpret_cast<const uint4 *>(x + rr * cols + p * N);
				nd[i] = *reinterpret_cast<const uint4 *>(dy + rr * cols + p * N);
			}
			if (!PF)
				cx[i] = nx[i], cd[i] = nd[i];
		}
		const float mu = RMS ? 0.f : mean[r], rs = rstd[r];
		float c1 = 0.f, c2 = 0.f;
#pragma unroll
		for (int i = 0; i < PPT; i++) {
			const T *tx = reinterpret_cast<const T *>(&cx[i]), *td = reinterpret_cast<const T *>(&cd[i]);
			const T *tg = reinterpret_cast<const T *>(&gr[i]);
#pragma unroll
			for (int e = 0; e < N; e++) { // packs past the row: dy and gamma 0, no terms
				float wgt = tof(tg[e]) * tof(td[e]);
				c1 += (tof(tx[e]) - mu) * rs * wgt;
				c2 += wgt;
			}
		}
		// both sums over the block, one barrier a row (the two halves of sh alternate)
		c1 = warp_sum(c1);
		if (!RMS)
			c2 = warp_sum(c2);
		float *b = sh[r & 1];
		if (!lane)
			b[w] = c1, b[32 + w] = c2;
		__syncthreads();
		c1 = lane < nw ? b[lane] : 0.f;
		c2 = lane < nw && !RMS ? b[32 + lane] : 0.f;
		c1 = warp_sum(c1) / cols;
		c2 = RMS ? 0.f : warp_sum(c2) / cols;
#pragma unroll
		for (int i = 0; i < PPT; i++) {
			int64_t p = threadIdx.x + (int64_t)i * blockDim.x;
			if (p < np) {
				const T *tx = reinterpret_cast<const T *>(&cx[i]), *td = reinterpret_cast<const T *>(&cd[i]);
				const T *tg = reinterpret_cast<const T *>(&gr[i]);
				float o[Vec<T>::N];
#pragma unroll
				for (int e = 0; e < N; e++) {
					float xh = (tof(tx[e]) - mu) * rs, d = tof(td[e]);
					o[e] = (tof(tg[e]) * d - xh * c1 - c2) * rs;
					ag[i][e] += d * xh;
					if (!RMS)
						ab[i][e] += d;
				}
				st16(dx + r * cols + p * N, o);
			}
			if (PF)
				cx[i] = nx[i], cd[i] = nd[i];
		}
	}
#pragma unroll
	for (int i = 0; i < PPT; i++) {
		int64_t p = threadIdx.x + (int64_t)i * blockDim.x;
		if (p < np) {
			float *pg = part_g + blockIdx.x * cols + p * N;
#pragma unroll
			for (int e = 0; e < N; e += 4)
				*reinterpret_cast<float4 *>(pg + e) = make_float4(ag[i][e], ag[i][e + 1], ag[i][e + 2], ag[i][e + 3]);
			if (!RMS) {
				float *pb = part_b + blockIdx.x * cols + p * N;
#pragma unroll
				for (int e = 0; e < N; e += 4)
					*reinterpret_cast<float4 *>(pb + e) =
						make_float4(ab[i][e], ab[i][e + 1], ab[i][e + 2], ab[i][e + 3]);
			}
		}
	}
}

// out[c] = sum over nparts rows of part [nparts, cols] (blockIdx.y 0: part_g -> dg, 1: part_b -> db):
// 32 columns a block, 8 row strides summed in shared memory.
template <typename T>
__global__ void __launch_bounds__(256) ln_colsum_k(const float *part_g, const float *part_b, int nparts, T *dg,
						   T *db, int64_t cols)
{
	__shared__ float sh[8][33];
	const float *part = blockIdx.y ? part_b : part_g;
	T *out = blockIdx.y ? db : dg;
	int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
	int64_t c = blockIdx.x * (int64_t)32 + tx;
	float s = 0.f;
	if (c < cols)
		for (int i = ty; i < nparts; i += 8)
			s += part[(int64_t)i * cols + c];
	sh[ty][tx] = s;
	__syncthreads();
	if (ty == 0 && c < cols) {
#pragma unroll
		for (int j = 1; j < 8; j++)
			s += sh[j][tx];
		out[c] = fromf<T>(s);
	}
}

// The launch shape of ln_bwd_rows_k: packs a thread (1, 2 or 4; 16-bit types up to 2), threads a
// block, rows a block and blocks, for rows of np packs: about 1024 threads a multiprocessor (sms of
// them), at most nparts blocks (the partial buffers' rows).
static inline void ln_bwd_plan(int64_t np, int64_t rows, int nparts, int sms, int *ppt, unsigned *tpb, int64_t *per,
			       int64_t *parts)
{
	*ppt = np <= 512 ? 1 : np <= 1024 ? 2 : 4;
	int64_t t = (np + *ppt - 1) / *ppt;
	*tpb = (unsigned)((t + 31) / 32 * 32);
	int64_t want = (int64_t)(sms > 0 ? sms : 132) * (*tpb >= 1024 ? 1 : 1024 / *tpb);
	if (want > nparts)
		want = nparts;
	*per = (rows + want - 1) / want;
	*parts = (rows + *per - 1) / *per;
}

#endif
