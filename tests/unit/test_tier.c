/* kj_tier_classify on real kernel names from PyTorch, cuBLAS/cuBLASLt, CUTLASS, nvjet, flash
 * attention, NCCL and Triton (Inductor). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kj_kernel_class.h"

/* Classify a mangled name the way ingest does: with its demangled form. */
static const char *tier_of(const char *mangled)
{
	char *d = kj_demangle(mangled);
	const char *t = kj_tier_classify(mangled, d);
	free(d);
	return t;
}

static const struct {
	const char *name, *tier;
} cases[] = {
	/* elementwise: PyTorch */
	{"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", "elementwise"},
	{"_ZN2at6native27unrolled_elementwise_kernelINS0_13BUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory15LoadWithoutCastENSC_16StoreWithoutCastEEEviT_T0_T2_T3_T4_T5_", "elementwise"},
	{"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::Half)#1} const&)::{lambda(int)#1})", "elementwise"},
	{"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::Half, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::Half, unsigned int>, at::cuda::detail::TensorInfo<c10::Half const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)", "elementwise"},
	{"void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", "elementwise"},
	/* GEMM */
	{"nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", "gemm"},
	{"void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8::Params)", "gemm"},
	{"_ZN7cutlass7Kernel2I66cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8EEvNT_6ParamsE", "gemm"},
	{"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", "gemm"},
	{"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm"},
	{"sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", "gemm"},
	{"_ZN8internal5gemvx6kernelIiiffffLb0ELb1ELb1ELb0ELi7ELb0E16cublasGemvParamsI16cublasGemvTensorIKfES5_S3_IfEfEEENSt9enable_ifIXntT5_EvE4typeET11_", "gemm"},
	{"void splitKreduce_kernel<32, 16, int, float, __half, float, __half, true, false, false>(cublasSplitKParams<float>, float const*, __half const*, __half*, float const*, float const*, __half const*, float const*, __half*, void*, long, float*, int*)", "gemm"},
	{"void gemmSN_TN_kernel<float, 128, 16, 2, 4, 10, 11, false, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half> >(cublasGemmSmallNParams<cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half const>, cublasGemvTensorStridedBatched<__half>, float>)", "gemm"},
	{"volta_sgemm_128x64_nn", "gemm"},
	/* attention */
	{"_ZN13pytorch_flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi64ELi128ELi128ELi4ELb0ELb0EN7cutlass6half_tEELb0ELb1EEEv16Flash_fwd_params", "attention"},
	{"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", "attention"},
	{"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, false, false, false, true, true, false, false>(Flash_fwd_params)", "attention"},
	{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0", "attention"},
	{"void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(int, int, int, int, float, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, float*)", "attention"},
	{"void cudnn::fusion::convert_dq_to_16bits<true>(int, int, int, int, float const*, __nv_bfloat16*)", "attention"},
	/* norm */
	{"_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIN3c104HalfEfEEvifPKT_S6_S6_PT0_S9_PS4_", "norm"},
	{"void at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float, float, float, int>(at::GenericPackedTensorAccessor<float const, 3ul, at::RestrictPtrTraits, int>, float, float, at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, int>)", "norm"},
	{"void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)", "norm"},
	/* reduction */
	{"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIfffEEjfLi4EEEEEvT1_", "reduction"},
	{"_ZN2at6native43_GLOBAL__N__d8d0a9f5_10_SoftMax_cu_9f978f6319cunn_SoftMaxForwardILi4EN3c104HalfEffNS1_22SoftMaxForwardEpilogueEEEvPT2_PKT0_i", "reduction"},
	{"void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 4, false, false>(c10::Half*, c10::Half const*, int, int, int, bool const*, int, bool)", "reduction"},
	/* communication */
	{"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication"},
	{"ncclKernel_AllGather_RING_LL_Sum_int8_t", "communication"},
	/* Triton (Inductor) */
	{"triton_poi_fused_add_mul_0", "elementwise"},
	{"triton_poi_fused_addmm_gelu_1", "elementwise"},
	{"triton_red_fused__softmax_1", "reduction"},
	{"triton_per_fused_native_layer_norm_2", "norm"},
	{"triton_per_fused_sum_3", "reduction"},
	{"triton_tem_fused_mm_4", "gemm"},
	{"triton_tem_fused_flex_attention_5", "attention"},
	{"triton_mm", "gemm"},
	{"triton_custom_op", "other"},
	/* other */
	{"my_custom_kernel", "other"},
	{"_Z6kernelPfi", "other"},
};

static void test_real_names(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = tier_of(cases[i].name);
		if (strcmp(t, cases[i].tier))
			fail_msg("%s: got %s, want %s", cases[i].name, t, cases[i].tier);
	}
}

static void test_static_strings(void **state)
{
	(void)state;
	/* results are the canonical static strings, comparable by pointer */
	assert_ptr_equal(kj_tier_classify("nvjet_x", NULL), kj_tier_canonical("gemm"));
	assert_ptr_equal(kj_tier_classify(NULL, NULL), kj_tier_canonical("other"));
	assert_string_equal(kj_tier_classify(NULL, "ncclDevKernel_Broadcast"), "communication");
	assert_null(kj_tier_canonical("GEMM"));
	assert_null(kj_tier_canonical(NULL));
	assert_string_equal(KJ_TIER_COPY, "copy");
	for (int i = 0; i < KJ_TIER_COUNT; i++)
		assert_ptr_equal(kj_tier_canonical(kj_tier_names[i]), kj_tier_names[i]);
}

static void test_case_sensitive(void **state)
{
	(void)state;
	/* rules are case-sensitive: "GEMM" is a rule of its own, "gEmM" matches nothing */
	assert_string_equal(kj_tier_classify("my_gEmM", NULL), "other");
	assert_string_equal(kj_tier_classify("MY_GEMM", NULL), "gemm");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_names),
		cmocka_unit_test(test_static_strings),
		cmocka_unit_test(test_case_sensitive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
