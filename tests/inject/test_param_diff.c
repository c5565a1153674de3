/* kj_param_words_changed: the words of a block that differ from its group's first block, as
 * comparing every 8-byte word (the last partial one zero-extended) would give them, for random
 * blocks of every length with random words changed; refused (UINT32_MAX) once more than cap
 * differ, and exactly cap accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inject_param_diff.h"

#define MAXLEN 700

/* Word by word, as the spool defines a diff: returns the count, all of them written. */
static uint32_t reference(const unsigned char *blob, const unsigned char *ref, uint32_t len,
			  struct kj_word_diff *out)
{
	uint32_t n = 0;
	for (uint32_t w = 0; w * 8 < len; w++) {
		uint64_t a = 0, b = 0;
		uint32_t k = len - w * 8 < 8 ? len - w * 8 : 8;
		memcpy(&a, blob + w * 8, k);
		memcpy(&b, ref + w * 8, k);
		if (a != b)
			out[n].word = w, out[n].pad = 0, out[n].value = a, n++;
	}
	return n;
}

static void test_random_blocks(void **state)
{
	(void)state;
	unsigned char ref[MAXLEN + 8], blob[MAXLEN + 8];
	struct kj_word_diff want[MAXLEN / 8 + 1], got[MAXLEN / 8 + 1];
	srand(11);
	for (int round = 0; round < 20000; round++) {
		uint32_t len = 1 + (uint32_t)(rand() % MAXLEN);
		for (uint32_t i = 0; i < len; i++)
			ref[i] = (unsigned char)rand();
		memcpy(blob, ref, len);
		/* bytes past the block differ: they must not count */
		ref[len] = 1, blob[len] = 2;
		int changes = rand() % 4 == 0 ? 0 : rand() % 12;
		for (int c = 0; c < changes; c++)
			blob[rand() % len] ^= (unsigned char)(1 + rand() % 255);
		uint32_t n = reference(blob, ref, len, want);
		uint32_t got_n = kj_param_words_changed(blob, ref, len, got, MAXLEN / 8 + 1);
		assert_int_equal(got_n, n);
		for (uint32_t i = 0; i < n; i++) {
			assert_int_equal(got[i].word, want[i].word);
			assert_int_equal(got[i].pad, 0);
			assert_true(got[i].value == want[i].value);
		}
		if (n > 0) { /* cap: exactly n fits, one fewer is refused */
			assert_int_equal(kj_param_words_changed(blob, ref, len, got, n), n);
			assert_int_equal(kj_param_words_changed(blob, ref, len, got, n - 1), UINT32_MAX);
		}
	}
}

/* Every word of a 1720-byte block (a cuBLAS kernel's) changed in turn, the last word a partial one
 * in a 1721-byte block. */
static void test_each_word(void **state)
{
	(void)state;
	static unsigned char ref[1728], blob[1728];
	struct kj_word_diff got[4];
	for (uint32_t len = 1720; len <= 1721; len++)
		for (uint32_t w = 0; w * 8 < len; w++) {
			memset(ref, 0x5a, sizeof(ref));
			memcpy(blob, ref, sizeof(blob));
			blob[w * 8 + (len - w * 8 < 8 ? len - w * 8 - 1 : 7)] = 0x11;
			assert_int_equal(kj_param_words_changed(blob, ref, len, got, 4), 1);
			assert_int_equal(got[0].word, w);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_blocks),
		cmocka_unit_test(test_each_word),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
