/* The rules that keep a kernel at its in-situ time because its replay alone is not its own work:
 * it waits on something outside itself (by name, far too long, killed), or it ran only on
 * stand-in data and did other work (kj_kernel_waits.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kj_kernel_waits.h"

static void waits_by_name(void **state)
{
	(void)state;
	char why[128] = "";
	assert_true(kj_kernel_waits_by_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL", why, sizeof(why)));
	assert_non_null(strstr(why, "NCCL"));
	assert_true(kj_kernel_waits_by_name("xla::gpu::DelayKernel(...)", NULL, 0));
	assert_false(kj_kernel_waits_by_name("ampere_sgemm_128x64_nn", why, sizeof(why)));
	assert_false(kj_kernel_waits_by_name(NULL, why, sizeof(why)));
}

static void waits_by_replay(void **state)
{
	(void)state;
	char why[160] = "";
	assert_true(kj_kernel_waits_by_replay(27e3, 101e6, 0, why, sizeof(why))); /* DelayKernel, H200 */
	assert_non_null(strstr(why, "3741x"));
	assert_true(kj_kernel_waits_by_replay(0, 0, 1, why, sizeof(why)));
	/* 20x but under 100 us more: a short kernel on a cold start, not a wait */
	assert_false(kj_kernel_waits_by_replay(2e3, 60e3, 0, NULL, 0));
	assert_false(kj_kernel_waits_by_replay(100e3, 1.9e6, 0, NULL, 0));
}

static void standin_data(void **state)
{
	(void)state;
	char why[320] = "";
	const char *smallint = "data: smallint (random data failed: first launch: CUDA_ERROR_ILLEGAL_ADDRESS)";
	/* FlexAttention's backward on an H200: 122.5 us on small integers, 236.0 us traced */
	assert_true(kj_kernel_standin_data(smallint, 236.0e3, 122.5e3, why, sizeof(why)));
	assert_non_null(strstr(why, "small integers"));
	assert_non_null(strstr(why, "-48 %"));
	assert_true(kj_kernel_standin_data("data: zero (random data failed: assert)", 10e3, 13e3, why, sizeof(why)));
	assert_non_null(strstr(why, "zeros"));
	assert_non_null(strstr(why, "+30 %"));
	/* within 25 %: its replay stands */
	assert_false(kj_kernel_standin_data(smallint, 10e3, 7.6e3, why, sizeof(why)));
	assert_false(kj_kernel_standin_data(smallint, 10e3, 12.4e3, why, sizeof(why)));
	/* random data, no note, another note, unknown times */
	assert_false(kj_kernel_standin_data("data: random", 10e3, 2e3, NULL, 0));
	assert_false(kj_kernel_standin_data(NULL, 10e3, 2e3, NULL, 0));
	assert_false(kj_kernel_standin_data("relocated allocations: 1", 10e3, 2e3, NULL, 0));
	assert_false(kj_kernel_standin_data(smallint, 0, 2e3, NULL, 0));
	assert_false(kj_kernel_standin_data(smallint, 10e3, -1, NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(waits_by_name),
		cmocka_unit_test(waits_by_replay),
		cmocka_unit_test(standin_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
