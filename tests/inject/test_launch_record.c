/* inject_launch.c's launch records over a stand-in driver and spool: a group's first launch sends
 * the group (geometry, layout, its block as the reference) and a launch record without a block;
 * every later launch of the group sends its own whole block, as the kernel received it; another
 * geometry or function is another group, found again from this thread's cache (where two groups
 * share a slot too) and from another thread; without parameter capture no block is sent; a block the layout cannot read (neither
 * params nor a buffer) is sent as none. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inject.h"

/* ---- the stand-in driver: function 0x100 takes (int, pointer, 24-byte struct); 0x200 none ---- */
static const uint32_t layout_a[] = {0, 4, 8, 8, 16, 24};
CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
	if ((uintptr_t)f != 0x100 && (uintptr_t)f != 0x200)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((uintptr_t)f == 0x200 || i >= 3)
		return CUDA_ERROR_INVALID_VALUE;
	*off = layout_a[2 * i], *size = layout_a[2 * i + 1];
	return CUDA_SUCCESS;
}
CUresult cuFuncGetName(const char **name, CUfunction f)
{
	*name = (uintptr_t)f == 0x100 ? "kernel_a" : "kernel_b";
	return CUDA_SUCCESS;
}

#include "launch_stand_ins.h" /* the rest of what the launch path calls */

/* ---- the spool and the clock, stood in: the spool keeps what it is sent ---- */
uint32_t kj_spool_string(const char *s) { return (uint32_t)strlen(s); }
int64_t kj_now_ns(void) { return 1000; }
void kj_spool_warm_tail(void) {}

#define MAXREC 64
static struct {
	uint32_t type;
	unsigned char head[512];
	unsigned char payload[256];
	size_t payload_size;
} recs[MAXREC];
static int nrec;
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

void kj_spool_write2(void *head, size_t head_size, const void *payload, size_t payload_size)
{
	pthread_mutex_lock(&rec_lock);
	assert_true(nrec < MAXREC && head_size <= sizeof(recs[0].head) && payload_size <= sizeof(recs[0].payload));
	recs[nrec].type = ((struct kj_rec_hdr *)head)->type;
	memcpy(recs[nrec].head, head, head_size);
	if (payload_size)
		memcpy(recs[nrec].payload, payload, payload_size);
	recs[nrec].payload_size = payload_size;
	nrec++;
	pthread_mutex_unlock(&rec_lock);
}

/* ---- launches ---- */
struct args {
	int n;
	void *ptr;
	unsigned char s[24];
};

static void launch(uintptr_t f, uint32_t gx, struct args *a, uint32_t corr)
{
	void *params[] = {&a->n, &a->ptr, a->s};
	struct kj_launch l;
	memset(&l, 0, sizeof(l));
	l.f = f;
	l.grid[0] = gx, l.grid[1] = l.grid[2] = 1;
	l.block[0] = 128, l.block[1] = l.block[2] = 1;
	l.params = f == 0x100 ? params : NULL;
	kj_launch_record(corr, NULL, &l);
}

/* The block the kernel receives from a: the layout's bytes, the padding after n zero. */
static void block_of(const struct args *a, unsigned char out[40])
{
	memset(out, 0, 40);
	memcpy(out, &a->n, 4);
	memcpy(out + 8, &a->ptr, 8);
	memcpy(out + 16, a->s, 24);
}

static const struct kj_rec_launch *launch_rec(int i)
{
	assert_int_equal(recs[i].type, KJ_REC_LAUNCH);
	return (const struct kj_rec_launch *)recs[i].head;
}

static void *other_thread(void *arg)
{
	launch(0x100, 4, arg, 40);
	return NULL;
}

static void test_groups_and_blocks(void **state)
{
	(void)state;
	struct args a = {5, (void *)0x7000, {1, 2, 3}}, b = {6, (void *)0x8000, {9}};
	unsigned char want[40];
	pthread_t t;
	nrec = 0;
	kj_cfg.params_k = 1;

	launch(0x100, 4, &a, 10); /* first launch: the group with a's block, then the launch */
	assert_int_equal(nrec, 2);
	assert_int_equal(recs[0].type, KJ_REC_GROUP);
	const struct kj_rec_group *g = (const struct kj_rec_group *)recs[0].head;
	assert_int_equal(g->nparams, 3);
	assert_int_equal(g->blob_len, 40);
	assert_int_equal(g->grid[0], 4);
	assert_int_equal(g->stream, 7);
	block_of(&a, want);
	assert_memory_equal(recs[0].payload, want, 40);
	assert_int_equal(launch_rec(1)->group, g->group);
	assert_int_equal(launch_rec(1)->block_len, 0);
	uint64_t group_a = g->group;

	launch(0x100, 4, &b, 11); /* the same group: b's whole block */
	assert_int_equal(nrec, 3);
	assert_int_equal(launch_rec(2)->group, group_a);
	assert_int_equal(launch_rec(2)->block_len, 40);
	assert_int_equal(launch_rec(2)->correlation, 11);
	block_of(&b, want);
	assert_memory_equal(recs[2].payload, want, 40);

	launch(0x100, 8, &a, 12); /* another grid: another group */
	assert_int_equal(nrec, 5);
	assert_int_equal(recs[3].type, KJ_REC_GROUP);
	assert_true(launch_rec(4)->group != group_a);
	assert_int_equal(launch_rec(4)->block_len, 0);

	launch(0x100, 4, &a, 13); /* back to the first: found, not made again */
	assert_int_equal(nrec, 6);
	assert_int_equal(launch_rec(5)->group, group_a);
	assert_int_equal(launch_rec(5)->block_len, 40);

	assert_int_equal(pthread_create(&t, NULL, other_thread, &b), 0); /* another thread's cache */
	pthread_join(t, NULL);
	assert_int_equal(nrec, 7);
	assert_int_equal(launch_rec(6)->group, group_a);
	assert_int_equal(launch_rec(6)->block_len, 40);
	block_of(&b, want);
	assert_memory_equal(recs[6].payload, want, 40);
}

/* Two groups that share a slot of this thread's cache are still told apart. */
static void test_slot_shared(void **state)
{
	(void)state;
	struct args a = {5, (void *)0x7000, {1}};
	uint64_t first, other = 0;
	uint32_t grid = 0;
	kj_cfg.params_k = 1;
	nrec = 0;
	launch(0x100, 1000, &a, 30);
	first = launch_rec(nrec - 1)->group;
	for (uint32_t gx = 1001; gx < 20000 && !grid; gx++) { /* a grid whose group takes first's slot */
		nrec = 0;
		launch(0x100, gx, &a, 31);
		uint64_t id = launch_rec(nrec - 1)->group;
		if (id != first && (id & 255) == (first & 255))
			grid = gx, other = id;
	}
	assert_true(grid != 0);
	nrec = 0;
	launch(0x100, 1000, &a, 32);
	launch(0x100, grid, &a, 33);
	launch(0x100, 1000, &a, 34);
	assert_int_equal(nrec, 3);
	assert_int_equal(launch_rec(0)->group, first);
	assert_int_equal(launch_rec(1)->group, other);
	assert_int_equal(launch_rec(2)->group, first);
}

static void test_no_block(void **state)
{
	(void)state;
	struct args a = {5, (void *)0x7000, {1}};
	nrec = 0;
	kj_cfg.params_k = 0; /* --no-params: groups without a reference, launches without blocks */
	launch(0x100, 16, &a, 20);
	launch(0x100, 16, &a, 21);
	assert_int_equal(nrec, 3);
	assert_int_equal(((const struct kj_rec_group *)recs[0].head)->blob_len, 0);
	assert_int_equal(launch_rec(1)->block_len, 0);
	assert_int_equal(launch_rec(2)->block_len, 0);
	assert_int_equal(recs[2].payload_size, 0);

	kj_cfg.params_k = 1; /* a group made without a reference keeps sending none */
	launch(0x100, 16, &a, 22);
	assert_int_equal(nrec, 4);
	assert_int_equal(launch_rec(3)->block_len, 0);

	nrec = 0; /* a function without parameters: nothing to send */
	launch(0x200, 1, &a, 23);
	launch(0x200, 1, &a, 24);
	assert_int_equal(nrec, 3);
	assert_int_equal(launch_rec(2)->block_len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_groups_and_blocks),
		cmocka_unit_test(test_slot_shared),
		cmocka_unit_test(test_no_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
