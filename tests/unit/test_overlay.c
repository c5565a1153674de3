/* Ordered writes that leave bytes of their own (kj_overlay.h): hand cases, and random ones
 * against a byte-by-byte replay of the writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kj_overlay.h"

static void hand_cases(void **state)
{
	(void)state;
	/* 0: [0,100) wholly under 1: [0,100) again; 2: [50,60) on top leaves bytes; 3: [200,210) alone;
	 * 4: [90,110) leaves its own [100,110); 5: empty */
	uint64_t a[] = {0, 0, 50, 200, 90, 300};
	size_t b[] = {100, 100, 10, 10, 20, 0};
	unsigned char keep[6];
	assert_int_equal(kj_overlay_visible(a, b, 6, keep), 4);
	unsigned char want[] = {0, 1, 1, 1, 1, 0};
	assert_memory_equal(keep, want, 6);
	/* touching writes do not cover each other */
	uint64_t ta[] = {0, 10};
	size_t tb[] = {10, 10};
	assert_int_equal(kj_overlay_visible(ta, tb, 2, keep), 2);
	/* covered by two later writes together */
	uint64_t ca[] = {0, 0, 5};
	size_t cb[] = {10, 5, 5};
	assert_int_equal(kj_overlay_visible(ca, cb, 3, keep), 2);
	assert_int_equal(keep[0], 0);
	assert_int_equal(kj_overlay_visible(NULL, NULL, 0, keep), 0);
}

/* the memory after applying the writes flagged (all when keep is NULL), each byte the index of
 * its last writer + 1 */
static void apply(const uint64_t *a, const size_t *b, size_t n, const unsigned char *keep, int *mem)
{
	memset(mem, 0, 256 * sizeof(*mem));
	for (size_t i = 0; i < n; i++)
		if (!keep || keep[i])
			for (size_t x = a[i]; x < a[i] + b[i]; x++)
				mem[x] = (int)i + 1;
}

static void random_against_bytes(void **state)
{
	(void)state;
	srand(7);
	for (int round = 0; round < 2000; round++) {
		size_t n = 1 + (size_t)(rand() % 12);
		uint64_t a[12];
		size_t b[12];
		unsigned char keep[12];
		int all[256], some[256];
		for (size_t i = 0; i < n; i++) {
			a[i] = (uint64_t)(rand() % 200);
			b[i] = (size_t)(rand() % 50);
		}
		size_t kept = kj_overlay_visible(a, b, n, keep);
		apply(a, b, n, NULL, all);
		apply(a, b, n, keep, some);
		assert_memory_equal(all, some, sizeof(all));
		/* and nothing kept that shows nowhere */
		size_t shown = 0;
		for (size_t i = 0; i < n; i++) {
			int seen = 0;
			for (int x = 0; x < 256; x++)
				seen |= all[x] == (int)i + 1;
			assert_int_equal(keep[i], seen);
			shown += (size_t)seen;
		}
		assert_int_equal(kept, shown);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hand_cases),
		cmocka_unit_test(random_against_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
