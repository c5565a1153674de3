/* Launch parameter words against their group's first launch (inject_param_diff.h). */
#include "inject_param_diff.h"

#include <stdlib.h>
#include <string.h>

static uint64_t word_at(const unsigned char *p, uint32_t w, uint32_t len)
{
	uint64_t v = 0;
	uint32_t n = len - w * 8 < 8 ? len - w * 8 : 8;
	memcpy(&v, p + (size_t)w * 8, n);
	return v;
}

uint32_t kj_param_diff(const unsigned char *blob, const unsigned char *ref, uint32_t len,
		       struct kj_word_diff *stack, uint32_t cap, struct kj_word_diff **diffs)
{
	uint64_t mask[KJ_PARAM_MAX_BYTES / 8 / 64];
	uint32_t words = (len + 7) / 8, full = len / 8, n = 0, k = 0;
	*diffs = stack;
	if (len > KJ_PARAM_MAX_BYTES)
		return 0;
	memset(mask, 0, (words + 63) / 64 * sizeof(mask[0]));
	for (uint32_t w = 0; w < full; w++) { /* each word's inequality into a bit */
		uint64_t a, b;
		memcpy(&a, blob + (size_t)w * 8, 8);
		memcpy(&b, ref + (size_t)w * 8, 8);
		mask[w / 64] |= (uint64_t)(a != b) << (w % 64);
	}
	if (full < words)
		mask[full / 64] |= (uint64_t)(word_at(blob, full, len) != word_at(ref, full, len)) << (full % 64);
	for (uint32_t i = 0; i < (words + 63) / 64; i++)
		n += (uint32_t)__builtin_popcountll(mask[i]);
	if (n > cap) {
		struct kj_word_diff *big = malloc((size_t)n * sizeof(*big));
		if (big)
			*diffs = big;
		else
			n = cap;
	}
	for (uint32_t i = 0; i < (words + 63) / 64 && k < n; i++)
		for (uint64_t m = mask[i]; m && k < n; m &= m - 1) {
			uint32_t w = i * 64 + (uint32_t)__builtin_ctzll(m);
			(*diffs)[k].word = w;
			(*diffs)[k].pad = 0;
			(*diffs)[k].value = word_at(blob, w, len);
			k++;
		}
	return k;
}
