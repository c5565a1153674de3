/* A launch's parameter block as kj_param_block_gather copies it: every byte as clearing the block
 * and then copying each parameter to its offset would give (random layouts with padding between
 * parameters and after the last, parameters given as NULL, layouts out of offset order), whatever
 * the buffer held before; from the extra argument's buffer; and refused when neither gives it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>

#include "inject_param_block.h"

#define MAXP 24

/* The block as it is defined: zeros, then each given parameter at its offset. */
static void reference(const uint32_t *layout, uint32_t n, uint32_t total, void **params, unsigned char *out)
{
	memset(out, 0, total);
	for (uint32_t i = 0; i < n; i++)
		if (params[i])
			memcpy(out + layout[2 * i], params[i], layout[2 * i + 1]);
}

static void test_random_layouts(void **state)
{
	(void)state;
	static const uint32_t sizes[] = {1, 2, 4, 8, 16, 24, 216, 600};
	unsigned char args[MAXP][600], got[8192], want[8192];
	void *params[MAXP];
	uint32_t layout[2 * MAXP];
	srand(7);
	for (int round = 0; round < 2000; round++) {
		uint32_t n = (uint32_t)(rand() % MAXP), at = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t size = sizes[rand() % 8], align = size >= 8 ? 8 : size;
			at = (at + align - 1) / align * align + (uint32_t)(rand() % 3 == 0 ? 8 : 0);
			layout[2 * i] = at, layout[2 * i + 1] = size;
			for (uint32_t b = 0; b < size; b++)
				args[i][b] = (unsigned char)(rand() | 1);
			params[i] = rand() % 9 == 0 ? NULL : args[i];
			at += size;
		}
		uint32_t total = at + (uint32_t)(rand() % 2 ? 8 : 0);
		if (n > 2 && round % 10 == 0) { /* out of offset order: swap two parameters' places */
			uint32_t o = layout[0], s = layout[1];
			void *p = params[0];
			layout[0] = layout[2 * (n - 1)], layout[1] = layout[2 * (n - 1) + 1];
			params[0] = params[n - 1];
			layout[2 * (n - 1)] = o, layout[2 * (n - 1) + 1] = s;
			params[n - 1] = p;
		}
		memset(got, 0xa5, sizeof(got)); /* what the buffer held before */
		reference(layout, n, total, params, want);
		assert_int_equal(kj_param_block_gather(layout, n, total, params, NULL, got), 0);
		assert_memory_equal(got, want, total);
	}
}

static void test_extra_buffer(void **state)
{
	(void)state;
	uint32_t layout[] = {0, 8, 8, 4};
	unsigned char block[16], got[12];
	size_t size = sizeof(block);
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, block, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			 CU_LAUNCH_PARAM_END};
	for (int i = 0; i < 16; i++)
		block[i] = (unsigned char)(i + 1);
	assert_int_equal(kj_param_block_gather(layout, 2, 12, NULL, extra, got), 0);
	assert_memory_equal(got, block, 12);
	size = 8; /* a buffer shorter than the block does not give it */
	assert_int_equal(kj_param_block_gather(layout, 2, 12, NULL, extra, got), -1);
	assert_int_equal(kj_param_block_gather(layout, 2, 12, NULL, NULL, got), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_layouts),
		cmocka_unit_test(test_extra_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
