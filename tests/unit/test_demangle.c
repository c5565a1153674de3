/* kj_demangle: real kernel symbols demangle; C names and garbage come back as copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kj_kernel_class.h"

static void expect(const char *mangled, const char *want)
{
	char *d = kj_demangle(mangled);
	assert_non_null(d);
	assert_string_equal(d, want);
	free(d);
}

static void test_pytorch(void **state)
{
	(void)state;
	expect("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	       "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
	       "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)");
	expect("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIfffEEjfLi4EEEEEvT1_",
	       "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
	       "at::native::MeanOps<float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<"
	       "float, at::native::MeanOps<float, float, float>, unsigned int, float, 4>)");
}

static void test_cutlass_flash(void **state)
{
	(void)state;
	expect("_ZN7cutlass7Kernel2I66cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8EEvNT_6ParamsE",
	       "void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>"
	       "(cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8::Params)");
	expect("_ZN13pytorch_flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi64ELi128ELi128ELi4ELb0ELb0EN7cutlass6half_tEELb0ELb1EEEv16Flash_fwd_params",
	       "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
	       "cutlass::half_t>, false, true>(Flash_fwd_params)");
}

static void test_not_mangled(void **state)
{
	(void)state;
	expect("nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", "nvjet_hsh_64x8_64x16_2x1_v_bz_TNT");
	expect("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	expect("triton_poi_fused_add_0", "triton_poi_fused_add_0");
	expect("", "");
	expect("_Z", "_Z");                   /* looks mangled, is not */
	expect("_ZN3foo", "_ZN3foo");         /* truncated symbol */
	expect("_Zgarbage!!", "_Zgarbage!!");
	char *d = kj_demangle(NULL);
	assert_non_null(d);
	assert_string_equal(d, "");
	free(d);
}

static void test_simple_function(void **state)
{
	(void)state;
	expect("_Z6kernelPfi", "kernel(float*, int)");
	expect("__Z6kernelPfi", "kernel(float*, int)"); /* the extra-underscore spelling */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pytorch),
		cmocka_unit_test(test_cutlass_flash),
		cmocka_unit_test(test_not_mangled),
		cmocka_unit_test(test_simple_function),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
