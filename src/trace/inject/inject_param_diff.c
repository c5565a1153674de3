/* Parameter words against the group's first block (inject_param_diff.h). */
#include <string.h>

#include "inject_param_diff.h"

static inline uint64_t load_word(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Appends word w (value v) to diffs; 0, or -1 when that would make more than cap. */
static inline int put_diff(struct kj_word_diff *diffs, uint32_t *n, uint32_t cap, uint32_t w,
			   uint64_t v)
{
	if (*n >= cap)
		return -1;
	diffs[*n].word = w;
	diffs[*n].pad = 0;
	diffs[*n].value = v;
	(*n)++;
	return 0;
}

uint32_t kj_param_words_changed(const unsigned char *blob, const unsigned char *ref, uint32_t len,
				struct kj_word_diff *diffs, uint32_t cap)
{
	uint32_t full = len / 8, n = 0, w = 0;
	for (; w + 8 <= full; w += 8) { /* a 64-byte stretch: one test when nothing differs */
		const unsigned char *a = blob + (size_t)w * 8, *b = ref + (size_t)w * 8;
		uint64_t any = 0;
		for (int k = 0; k < 8; k++)
			any |= load_word(a + 8 * k) ^ load_word(b + 8 * k);
		if (!any)
			continue;
		for (uint32_t k = 0; k < 8; k++) {
			uint64_t v = load_word(a + 8 * k);
			if (v != load_word(b + 8 * k) && put_diff(diffs, &n, cap, w + k, v))
				return UINT32_MAX;
		}
	}
	for (; w < full; w++) {
		uint64_t v = load_word(blob + (size_t)w * 8);
		if (v != load_word(ref + (size_t)w * 8) && put_diff(diffs, &n, cap, w, v))
			return UINT32_MAX;
	}
	if (full * 8 < len) { /* the last partial word, zero-extended */
		uint64_t v = 0, r = 0;
		memcpy(&v, blob + (size_t)full * 8, len - full * 8);
		memcpy(&r, ref + (size_t)full * 8, len - full * 8);
		if (v != r && put_diff(diffs, &n, cap, full, v))
			return UINT32_MAX;
	}
	return n;
}
