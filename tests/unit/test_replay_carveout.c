/* The carveout a replayed function is asked for (kj_replay_carveout): the program's own request
 * first, else the traced split as a percentage that the driver rounds back to that split (H100:
 * 228 KB of shared memory per SM), unknown figures left to the driver, and the override. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kj_replay_carveout.h"

#define H100_PER_SM 233472L

static void test_traced_split(void **state)
{
	(void)state;
	/* the largest split: 100 %; XLA's fusion_27 ran so */
	assert_int_equal(kj_replay_carveout(NULL, -1, 233472, 1, H100_PER_SM), 100);
	/* 64 KB is 28.07 %: 28 % asks 63.8 KB, which the driver rounds up to 64 KB, not to 100 KB */
	assert_int_equal(kj_replay_carveout(NULL, -1, 65536, 1, H100_PER_SM), 28);
	assert_int_equal(kj_replay_carveout(NULL, -1, 32768, 0, H100_PER_SM), 14);
	assert_int_equal(kj_replay_carveout(NULL, -1, 167936, 1, H100_PER_SM), 71);
	/* no shared memory used, none given: all L1 */
	assert_int_equal(kj_replay_carveout("", -1, 0, 0, H100_PER_SM), 0);
	/* traced on a GPU with more shared memory than the replay's: all it has */
	assert_int_equal(kj_replay_carveout(NULL, -1, 233472, 1, 167936), 100);
}

static void test_requested_and_unknown(void **state)
{
	(void)state;
	/* the program's own carveout wins over the split the driver gave */
	assert_int_equal(kj_replay_carveout(NULL, 50, 233472, 1, H100_PER_SM), 50);
	assert_int_equal(kj_replay_carveout(NULL, 0, 233472, 1, H100_PER_SM), 0);
	/* a run without the split (NULL in the database), a 0 for a launch that used shared
	 * memory, or an unknown device figure: the driver chooses */
	assert_int_equal(kj_replay_carveout(NULL, -1, -1, 1, H100_PER_SM), -1);
	assert_int_equal(kj_replay_carveout(NULL, -1, 0, 1, H100_PER_SM), -1);
	assert_int_equal(kj_replay_carveout(NULL, -1, 65536, 1, 0), -1);
}

static void test_override(void **state)
{
	(void)state;
	assert_int_equal(kj_replay_carveout("100", 50, 32768, 1, H100_PER_SM), 100);
	assert_int_equal(kj_replay_carveout("0", -1, 233472, 1, H100_PER_SM), 0);
	assert_int_equal(kj_replay_carveout("250", -1, -1, 1, H100_PER_SM), 100);
	assert_int_equal(kj_replay_carveout("-1", 50, 233472, 1, H100_PER_SM), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traced_split),
		cmocka_unit_test(test_requested_and_unknown),
		cmocka_unit_test(test_override),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
