/* inject_param_diff.c: the words a launch's parameter block differs in from its group's first
 * launch, as a plain word-by-word loop finds them: every length (partial last words included),
 * more differences than the caller's stack array holds, identical and oversized blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inject_param_diff.h"

/* the reference: one word at a time, as the launch path did before */
static uint32_t naive(const unsigned char *a, const unsigned char *b, uint32_t len, struct kj_word_diff *out)
{
	uint32_t n = 0;
	for (uint32_t w = 0; w < (len + 7) / 8; w++) {
		uint64_t x = 0, y = 0;
		uint32_t k = len - w * 8 < 8 ? len - w * 8 : 8;
		memcpy(&x, a + w * 8, k);
		memcpy(&y, b + w * 8, k);
		if (x != y) {
			out[n].word = w;
			out[n].pad = 0;
			out[n].value = x;
			n++;
		}
	}
	return n;
}

static void check(const unsigned char *blob, const unsigned char *ref, uint32_t len)
{
	static struct kj_word_diff want[KJ_PARAM_MAX_BYTES / 8 + 1];
	struct kj_word_diff stack[64], *got;
	uint32_t nw = naive(blob, ref, len, want);
	uint32_t n = kj_param_diff(blob, ref, len, stack, 64, &got);
	assert_int_equal(n, nw);
	assert_true(nw > 64 ? got != stack : got == stack);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(got[i].word, want[i].word);
		assert_int_equal(got[i].pad, 0);
		assert_true(got[i].value == want[i].value);
	}
	if (got != stack)
		free(got);
}

static void test_matches_word_loop(void **state)
{
	static unsigned char blob[KJ_PARAM_MAX_BYTES], ref[KJ_PARAM_MAX_BYTES];
	(void)state;
	srand(7);
	/* every length to 80, then a stride, then the lengths around a mask word's 64 words */
	static const uint32_t edges[] = {504, 511, 512, 513, 519, 520, 1016, 1024, 1025, 1032};
	uint32_t lens[120], nlens = 0;
	for (uint32_t len = 1; len <= 1100; len += (len < 80 ? 1 : 37))
		lens[nlens++] = len;
	for (uint32_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		lens[nlens++] = edges[i];
	for (uint32_t li = 0; li < nlens; li++) {
		uint32_t len = lens[li];
		for (int density = 0; density < 4; density++) { /* none, few, half, all words differ */
			for (uint32_t i = 0; i < len; i++)
				ref[i] = blob[i] = (unsigned char)rand();
			for (uint32_t w = 0; w < (len + 7) / 8; w++)
				if (density == 3 || (density == 1 && rand() % 9 == 0) || (density == 2 && rand() % 2))
					blob[w * 8 + (uint32_t)rand() % (len - w * 8 < 8 ? len - w * 8 : 8)] ^= 0x5a;
			check(blob, ref, len);
		}
	}
}

static void test_large_blocks(void **state)
{
	static unsigned char blob[KJ_PARAM_MAX_BYTES], ref[KJ_PARAM_MAX_BYTES];
	struct kj_word_diff stack[4], *got;
	(void)state;
	memset(ref, 1, sizeof(ref));
	memset(blob, 2, sizeof(blob)); /* every one of 4096 words differs */
	check(blob, ref, KJ_PARAM_MAX_BYTES);
	check(blob, ref, KJ_PARAM_MAX_BYTES - 3);
	memcpy(blob, ref, sizeof(ref));
	assert_int_equal(kj_param_diff(blob, ref, KJ_PARAM_MAX_BYTES, stack, 4, &got), 0);
	assert_ptr_equal(got, stack);
	/* beyond CUDA's limit: nothing compared, nothing read */
	assert_int_equal(kj_param_diff(blob, ref, KJ_PARAM_MAX_BYTES + 8, stack, 4, &got), 0);
	assert_ptr_equal(got, stack);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_word_loop),
		cmocka_unit_test(test_large_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
