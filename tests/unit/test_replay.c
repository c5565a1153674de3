/* Replay, CPU side: a launch's parameter block and the memory it points into: layouts, range
 * lookup, pointer classification (inside structs, unaligned edges), relocation, regions. (The
 * worker's lines: test_replay_protocol.c; the plan, storage and report: test_replay_plan.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_replay.h"

static void test_layout_parse(void **state)
{
	(void)state;
	struct kj_replay_param *p = NULL;
	size_t n = 99;
	char err[200];
	assert_int_equal(kj_replay_layout_parse("0:8,8:40,48:4", 52, &p, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	assert_int_equal(p[1].offset, 8);
	assert_int_equal(p[1].size, 40);
	assert_int_equal(p[2].offset, 48);
	free(p);
	assert_int_equal(kj_replay_layout_parse("", 0, &p, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_null(p);
	assert_int_equal(kj_replay_layout_parse(NULL, 0, &p, &n, err, sizeof(err)), 0);
	const char *bad[] = {"0:8,", "a:b", "8:0", "0:8;8:8", "0:", ":8", "0:8,,8:8", "-1:4"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kj_replay_layout_parse(bad[i], SIZE_MAX, &p, &n, err, sizeof(err)), KJ_EINVAL);
		assert_non_null(strstr(err, "layout"));
	}
	/* overlapping, and past the end of the block */
	assert_int_equal(kj_replay_layout_parse("0:8,4:8", SIZE_MAX, &p, &n, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "overlaps"));
	assert_int_equal(kj_replay_layout_parse("0:8,8:8", 12, &p, &n, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "ends past"));
}

static struct kj_replay_range R3[] = {
	{0x7f0000000000ull, 0x1000, 1},
	{0x7f0000001000ull, 0x100, 2}, /* starts where range 1 ends */
	{0x7f0000200000ull, 0x200000, 3},
};

static void test_ranges(void **state)
{
	(void)state;
	assert_int_equal(kj_replay_range_find(R3, 3, 0x7f0000000000ull), 0);
	assert_int_equal(kj_replay_range_find(R3, 3, 0x7f0000000fffull), 0);
	assert_int_equal(kj_replay_range_find(R3, 3, 0x7f0000001000ull), 1); /* not range 0's end */
	assert_int_equal(kj_replay_range_find(R3, 3, 0x7f0000001100ull), 1); /* range 1's end pointer */
	assert_int_equal(kj_replay_range_find(R3, 3, 0x7f0000001101ull), -1);
	assert_int_equal(kj_replay_range_find(R3, 3, 0x10), -1);
	assert_int_equal(kj_replay_range_find(R3, 3, 0x7f0000300000ull), 2);
	assert_int_equal(kj_replay_range_find(R3, 3, 0x7f0000400001ull), -1);
	assert_int_equal(kj_replay_range_find(R3, 0, 0x7f0000000000ull), -1);

	/* address reuse: the newer allocation (listed later) wins, zero-sized ones go */
	struct kj_replay_range r[] = {
		{0x2000, 0x1000, 10}, {0x1000, 0x800, 11}, {0x2800, 0x100, 12}, {0x9000, 0, 13}};
	size_t n = kj_replay_ranges_normalize(r, 4);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].id, 11);
	assert_int_equal(r[1].id, 12);
}

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static void test_scan_pointers(void **state)
{
	(void)state;
	uint8_t blob[96];
	struct kj_replay_param layout[4] = {{0, 4}, {8, 40}, {48, 8}, {56, 36}};
	struct kj_replay_ptr *p = NULL;
	size_t n = 0;
	memset(blob, 0, sizeof(blob));
	/* param 0: an int; param 1: struct {int; int; T* a; long; T* b; T* c-end} */
	blob[0] = 7;
	put64(blob, 16, 0x7f0000000010ull);       /* inside struct, aligned: pointer */
	put64(blob, 24, 12345);                   /* a size: not a pointer */
	put64(blob, 32, 0x7f0000200000ull);       /* pointer into range 3 */
	put64(blob, 40, 0x7f0000001100ull);       /* end pointer of range 2 */
	put64(blob, 48, 0x7f0000000800ull);       /* top-level pointer param */
	/* param 3 starts at 56 (aligned): a word at 60 would be unaligned */
	uint64_t unaligned = 0x7f0000000020ull;
	memcpy(blob + 60, &unaligned, 8);
	assert_int_equal(kj_replay_scan_pointers(blob, 92, layout, 4, R3, 3, &p, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(p[0].offset, 16);
	assert_int_equal(p[0].range, 0);
	assert_int_equal(p[1].offset, 32);
	assert_int_equal(p[1].range, 2);
	assert_int_equal(p[2].offset, 40);
	assert_int_equal(p[2].range, 1);
	assert_int_equal(p[3].offset, 48);
	free(p);

	/* a 4-byte parameter never holds a pointer, even if 8 bytes from it would match; a word
	 * straddling two parameters is not one either */
	struct kj_replay_param small[2] = {{0, 4}, {4, 4}};
	uint8_t b2[8];
	put64(b2, 0, 0x7f0000000010ull);
	assert_int_equal(kj_replay_scan_pointers(b2, 8, small, 2, R3, 3, &p, &n), 0);
	assert_int_equal(n, 0);
	assert_null(p);
	/* no layout: the whole block is scanned */
	assert_int_equal(kj_replay_scan_pointers(b2, 8, NULL, 0, R3, 3, &p, &n), 0);
	assert_int_equal(n, 1);
	free(p);
	/* a parameter at an odd offset (packed) with 8 bytes: its aligned word lies outside it */
	struct kj_replay_param odd[1] = {{4, 8}};
	uint8_t b3[16];
	memset(b3, 0, sizeof(b3));
	put64(b3, 4, 0x7f0000000010ull);
	put64(b3, 8, 0x7f0000000010ull);
	assert_int_equal(kj_replay_scan_pointers(b3, 12, odd, 1, R3, 3, &p, &n), 0);
	assert_int_equal(n, 0);
	/* TMA-like 128-byte descriptor: the global address somewhere inside is found */
	uint8_t tma[136];
	struct kj_replay_param tl[2] = {{0, 128}, {128, 8}};
	memset(tma, 0xff, sizeof(tma));
	put64(tma, 0, 0x7f0000200040ull);
	put64(tma, 128, 0x7f0000000000ull);
	assert_int_equal(kj_replay_scan_pointers(tma, 136, tl, 2, R3, 3, &p, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].offset, 0);
	assert_int_equal(p[1].offset, 128);
	free(p);
}

static void test_relocate(void **state)
{
	(void)state;
	uint8_t blob[24];
	struct kj_replay_ptr *p = NULL;
	size_t n = 0;
	memset(blob, 0, sizeof(blob));
	put64(blob, 0, 0x7f0000000010ull);
	put64(blob, 8, 0x7f0000200000ull + 0x1234);
	put64(blob, 16, 0x7f0000001000ull);
	assert_int_equal(kj_replay_scan_pointers(blob, 24, NULL, 0, R3, 3, &p, &n), 0);
	assert_int_equal(n, 3);
	uint64_t nb[3] = {0x500000000000ull, 0, 0x600000000000ull};
	assert_int_equal(kj_replay_relocate(blob, 24, p, n, R3, nb), 2);
	uint64_t v;
	memcpy(&v, blob, 8);
	assert_true(v == 0x500000000010ull);
	memcpy(&v, blob + 8, 8);
	assert_true(v == 0x600000001234ull);
	memcpy(&v, blob + 16, 8);
	assert_true(v == 0x7f0000001000ull); /* range 1 did not move */
	free(p);
}

static void test_regions(void **state)
{
	(void)state;
	int used[3] = {1, 1, 1}, of[3];
	struct kj_replay_region *g = NULL;
	size_t n = 0;
	assert_int_equal(kj_replay_regions(R3, used, 3, 2u << 20, &g, &n, of), 0);
	/* ranges 0 and 1 share the first 2 MB granule; range 2 is the next granule: joined */
	assert_int_equal(n, 1);
	assert_true(g[0].base == 0x7f0000000000ull);
	assert_true(g[0].bytes == 4u << 20);
	free(g);
	used[1] = 0;
	assert_int_equal(kj_replay_regions(R3, used, 3, 64 << 10, &g, &n, of), 0);
	assert_int_equal(n, 2);
	assert_int_equal(of[0], 0);
	assert_int_equal(of[1], -1);
	assert_int_equal(of[2], 1);
	assert_true(g[0].bytes == 64 << 10);
	assert_true(g[1].base == 0x7f0000200000ull && g[1].bytes == 0x200000);
	free(g);
	assert_int_equal(kj_replay_regions(R3, used, 3, 3000, &g, &n, of), KJ_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_parse),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_scan_pointers),
		cmocka_unit_test(test_relocate),
		cmocka_unit_test(test_regions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
