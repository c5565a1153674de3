// Program for the --snapshot / replay --verify GPU test: runs the replay test kernels (pointers
// in by-value structs, a TensorIterator-like array, a cluster launch, 64 KB of dynamic shared
// memory, a stream-ordered buffer, a template, a TMA descriptor) through the runtime, plus a
// cuBLAS SGEMM, once each on deterministic non-zero data, then copies one result back (its only
// device-to-host copy). Traced by `kjoule run --snapshot`; each kernel replayed with --verify.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "replay_kernels.cu"

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
			      const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
			      CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

int main()
{
	const int n = 1 << 16, W = 256, H = 256, G = 256;
	std::vector<float> h(n);
	for (int i = 0; i < n; i++)
		h[i] = 0.25f + (float)((i * 2654435761u) % 1000) / 997.0f;
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "verify_target: no GPU\n");
		return 77;
	}
	float *x, *y, *out, *out2, *out3, *img, *out4, *A, *B, *C, *buf;
	CK(cudaMalloc(&x, n * 4));
	CK(cudaMalloc(&y, n * 4));
	CK(cudaMalloc(&out, n * 4));
	CK(cudaMalloc(&out2, n * 4));
	CK(cudaMalloc(&out3, n * 4));
	CK(cudaMalloc(&img, W * H * 4));
	CK(cudaMalloc(&out4, W * H * 4));
	CK(cudaMalloc(&A, G * G * 4));
	CK(cudaMalloc(&B, G * G * 4));
	CK(cudaMalloc(&C, G * G * 4));
	CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(y, h.data() + 7, (n - 7) * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(img, h.data(), W * H * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(A, h.data(), G * G * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(B, h.data() + 3, G * G * 4, cudaMemcpyHostToDevice));
	CK(cudaMemset(out, 0, n * 4));

	AxpyArgs a = {x, y, out, n, 2.0f};
	kj_axpy_struct<<<n / 256, 256>>>(a);
	Iter it = {2, 0, {256, n / 256}, {out2, x, out}};
	kj_iter_add<<<64, 256>>>(1, it, 0.5f);

	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute attr;
	attr.id = cudaLaunchAttributeClusterDimension;
	attr.val.clusterDim.x = 2, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
	cfg.gridDim = dim3(n / 256), cfg.blockDim = dim3(256), cfg.attrs = &attr, cfg.numAttrs = 1;
	CK(cudaLaunchKernelEx(&cfg, kj_cluster_scale, (const float *)x, out3, n));

	CK(cudaFuncSetAttribute(kj_big_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
	kj_big_smem<<<n / 256, 256, 65536>>>(y, out2, n);

	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMallocAsync(&buf, n * 4, s));
	CK(cudaMemcpyAsync(buf, x, n * 4, cudaMemcpyDeviceToDevice, s));
	kj_async_scale<<<n / 256, 256, 0, s>>>(buf, n, 3.0f);
	CK(cudaMemcpyAsync(out3, buf, n * 4, cudaMemcpyDeviceToDevice, s));
	CK(cudaFreeAsync(buf, s));
	CK(cudaStreamSynchronize(s));

	kj_templ<float><<<n / 256, 256>>>(out, n);

	encode_fn encode = NULL;
	cudaDriverEntryPointQueryResult q;
	CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000, cudaEnableDefault, &q));
	CUtensorMap tmap;
	cuuint64_t dims[2] = {(cuuint64_t)W, (cuuint64_t)H}, strides[1] = {(cuuint64_t)W * 4};
	cuuint32_t box[2] = {32, 32}, estr[2] = {1, 1};
	if (!encode || encode(&tmap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, img, dims, strides, box, estr,
			      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
			      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
		fprintf(stderr, "verify_target: cuTensorMapEncodeTiled failed\n");
		return 1;
	}
	kj_tma_copy<<<dim3(W / 32, H / 32), 128>>>(tmap, out4, W);

	cublasHandle_t hb;
	if (cublasCreate(&hb) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "verify_target: cublasCreate failed\n");
		return 1;
	}
	const float one = 1.0f, zero = 0.0f;
	if (cublasSgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, G, G, G, &one, A, G, B, G, &zero, C, G) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "verify_target: cublasSgemm failed\n");
		return 1;
	}
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(h.data(), C, 4 * 16, cudaMemcpyDeviceToHost));
	cublasDestroy(hb);
	printf("verify_target: ok %.3f\n", h[0]);
	return 0;
}
