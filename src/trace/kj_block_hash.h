/* The 64-bit hash that names a launch's parameter block within its group: the tracer sends a
 * block it has sent before as a reference by this hash (KJ_REC_LAUNCH_SAME), and the ingest finds
 * the block again by the same hash of the whole blocks it has read. Four independent lanes of
 * multiply and rotate over 8-byte words, two words a step, so a 1 KiB block takes tens of
 * nanoseconds, then a final avalanche; the group id and the length are mixed in. Not for adversarial input: two different
 * blocks of one group with one hash (odds about n^2 / 2^65 for n distinct blocks) would give the
 * second launch the first one's parameters. */
#ifndef KJ_BLOCK_HASH_H
#define KJ_BLOCK_HASH_H

#include <stdint.h>
#include <string.h>

static inline uint64_t kj_block_hash_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t kj_block_hash_lane(uint64_t h, uint64_t w)
{
	return kj_block_hash_rotl(h ^ (w * 0xc2b2ae3d27d4eb4fULL), 31) * 0x9e3779b185ebca87ULL;
}

/* One lane's step over two words: their products do not wait for the lane. */
static inline uint64_t kj_block_hash_lane2(uint64_t h, uint64_t w0, uint64_t w1)
{
	return kj_block_hash_rotl(h ^ (w0 * 0xc2b2ae3d27d4eb4fULL) ^ kj_block_hash_rotl(w1 * 0x9e3779b185ebca87ULL, 29), 31) *
	       0x9e3779b185ebca87ULL;
}

/** The hash of len bytes of block in group (never 0). */
static inline uint64_t kj_block_hash(uint64_t group, const unsigned char *block, uint32_t len)
{
	uint64_t h0 = group ^ 0x60ea27eeadc0b5d6ULL, h1 = len ^ 0xd6e8feb86659fd93ULL;
	uint64_t h2 = 0x27d4eb2f165667c5ULL, h3 = 0x165667b19e3779f9ULL, w[8];
	uint32_t at = 0;
	for (; at + 64 <= len; at += 64) {
		uint64_t v[8];
		memcpy(v, block + at, 64);
		h0 = kj_block_hash_lane2(h0, v[0], v[1]);
		h1 = kj_block_hash_lane2(h1, v[2], v[3]);
		h2 = kj_block_hash_lane2(h2, v[4], v[5]);
		h3 = kj_block_hash_lane2(h3, v[6], v[7]);
	}
	for (; at + 8 <= len; at += 8) {
		memcpy(w, block + at, 8);
		h0 = kj_block_hash_lane(h0, w[0]);
		h0 = kj_block_hash_rotl(h0, 17);
	}
	if (at < len) {
		w[0] = 0;
		memcpy(w, block + at, len - at);
		h1 = kj_block_hash_lane(h1, w[0]);
	}
	uint64_t h = kj_block_hash_rotl(h0, 1) ^ kj_block_hash_rotl(h1, 7) ^ kj_block_hash_rotl(h2, 12) ^
		     kj_block_hash_rotl(h3, 18);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h ? h : 1;
}

#endif
