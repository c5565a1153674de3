/* kj_block_hash, which names a parameter block within its group: equal blocks of one group hash
 * alike; a block one bit apart in any byte (its last partial word too), another group or another
 * length hash apart; among many blocks that differ in a counted word, as a loop's pointers and
 * offsets do, no two share a hash; never 0 (the tracer's empty slot). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kj_block_hash.h"

static void test_bits_group_length(void **state)
{
	(void)state;
	unsigned char block[75], copy[75];
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (unsigned char)(i * 37 + 11);
	memcpy(copy, block, sizeof(block));
	uint64_t h = kj_block_hash(0xA, block, sizeof(block));
	assert_true(h != 0);
	assert_true(kj_block_hash(0xA, copy, sizeof(copy)) == h);
	assert_true(kj_block_hash(0xB, block, sizeof(block)) != h);
	assert_true(kj_block_hash(0xA, block, sizeof(block) - 1) != h);
	for (size_t i = 0; i < sizeof(block); i++)
		for (int bit = 0; bit < 8; bit++) {
			copy[i] ^= (unsigned char)(1u << bit);
			assert_true(kj_block_hash(0xA, copy, sizeof(copy)) != h);
			copy[i] ^= (unsigned char)(1u << bit);
		}
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_counted_words(void **state)
{
	(void)state;
	enum { N = 200000 };
	uint64_t *h = malloc(N * sizeof(*h)), block[64];
	assert_non_null(h);
	memset(block, 0, sizeof(block));
	for (uint32_t i = 0; i < N; i++) {
		block[1] = 0x7f0000000000ULL + (uint64_t)(i % 1000) * 4096; /* a pointer */
		block[9] = i / 1000;                                          /* a size */
		h[i] = kj_block_hash(0xC, (const unsigned char *)block, sizeof(block));
		assert_true(h[i] != 0);
	}
	qsort(h, N, sizeof(*h), by_value);
	for (uint32_t i = 1; i < N; i++)
		assert_true(h[i] != h[i - 1]);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bits_group_length),
		cmocka_unit_test(test_counted_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
