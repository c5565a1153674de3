/* inject_detach.c over stand-ins of CUPTI, the driver and the rest of the injection library:
 * the detach is asked for only once the program has settled (two quiet instances and a second
 * without a setup event), never where the window is about to open, never after a window a graph
 * ran in, nor before two instances have ended after the last setup event however long ago it was;
 * a detach that CUPTI refuses leaves everything as it was, says so and is not tried again; the
 * attach again compares device memory in use and says a change; an attach while the detach is
 * only asked for calls the trigger off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inject.h"

/* ---- stand-ins ---- */
static int64_t now_ns;
static size_t mem_free = 100 << 20, mem_total = 200 << 20;
static CUptiResult finalize_result = CUPTI_SUCCESS;
static int triggers_on, triggers_off, forgets, finalizes, starts, subscribes, problems, memory_problems;
static int windows[8];

int64_t kj_now_ns(void) { return now_ns; }
CUresult cuMemGetInfo(size_t *f, size_t *t)
{
	*f = mem_free;
	*t = mem_total;
	return CUDA_SUCCESS;
}
CUptiResult cuptiFinalize(void)
{
	finalizes++;
	return finalize_result;
}
CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	(void)r;
	*s = "stand-in";
	return CUPTI_SUCCESS;
}
void kj_callbacks_detach_trigger(int on) { on ? triggers_on++ : triggers_off++; }
void kj_callbacks_forget(void) { forgets++; }
int kj_callbacks_start(void) { subscribes++; return 0; }
int kj_activity_start(int capture) { (void)capture; starts++; return 0; }
void kj_activity_detach(void) {}
void kj_activity_reattached(void) {}
void kj_fncache_invalidate(void) {}
void kj_put_window(int64_t t, int event, int64_t instance) { (void)t, (void)instance; windows[event]++; }
void kj_spool_problem(const char *fmt, ...)
{
	problems++;
	if (strstr(fmt, "memory in use changed"))
		memory_problems++;
}

#define SEC 1000000000LL

/* Instances end every 100 ms; returns after the n-th. */
static void instances(int64_t *i, int n, int may_detach, int after_window)
{
	while (n-- > 0) {
		now_ns += SEC / 10;
		kj_detach_instance_ended((*i)++, may_detach, after_window);
	}
}

/* Seconds after the last setup event, three quiet instances: the detach is asked for. */
static void ask_for_detach(int64_t *i)
{
	now_ns += 5 * SEC;
	instances(i, 3, 1, 0);
	assert_true(kj_detach_pending());
}

static void test_settles_then_detaches_once(void **state)
{
	(void)state;
	int64_t i = 0;
	kj_detach_setup_event(); /* the program's last module load, at t = 0 */
	instances(&i, 5, 1, 0); /* quiet instances, but not yet a second */
	assert_int_equal(triggers_on, 0);
	kj_detach_setup_event(); /* an allocation: not settled */
	instances(&i, 9, 1, 0);
	assert_int_equal(triggers_on, 0);
	instances(&i, 2, 0, 0); /* the window is about to open: never */
	assert_int_equal(triggers_on, 0);
	instances(&i, 1, 1, 0);
	assert_int_equal(triggers_on, 1);
	assert_true(kj_detach_pending());
	instances(&i, 3, 1, 0); /* asked for already */
	assert_int_equal(triggers_on, 1);
	kj_detach_now();
	assert_int_equal(finalizes, 1);
	assert_int_equal(forgets, 1);
	assert_int_equal(windows[KJ_WINDOW_DETACH], 1);
	assert_true(kj_cupti_detached());
	assert_false(kj_detach_pending());
	kj_detach_now(); /* no longer asked for: nothing */
	assert_int_equal(finalizes, 1);
	/* back one instance before the window; memory in use the same: nothing said */
	kj_detach_reattach(29);
	assert_false(kj_cupti_detached());
	assert_int_equal(starts, 1);
	assert_int_equal(subscribes, 1);
	assert_int_equal(windows[KJ_WINDOW_ATTACH], 1);
	assert_int_equal(memory_problems, 0);
}

static void test_memory_change_said(void **state)
{
	(void)state;
	int64_t i = 100;
	ask_for_detach(&i);
	kj_detach_now();
	assert_true(kj_cupti_detached());
	mem_free -= 64 << 20; /* the program allocated 64 MiB while CUPTI was out */
	kj_detach_reattach(150);
	assert_int_equal(memory_problems, 1);
	assert_false(kj_cupti_detached());
}

static void test_after_a_window_with_graphs_never(void **state)
{
	(void)state;
	int64_t i = 200;
	now_ns += 5 * SEC;
	kj_detach_graph_in_window();
	int before = triggers_on;
	instances(&i, 10, 1, 1);
	assert_int_equal(triggers_on, before);
	assert_false(kj_detach_pending());
	instances(&i, 3, 1, 0); /* the rule holds after the window only */
	assert_int_equal(triggers_on, before + 1);
	kj_detach_reattach(300); /* asked for, not done: the trigger is called off */
	assert_false(kj_detach_pending());
	assert_int_equal(triggers_off, 1);
	assert_false(kj_cupti_detached());
}

/* Long after a setup event, time alone does not do: two instances must end after it. */
static void test_two_instances_after_an_event(void **state)
{
	(void)state;
	now_ns += 5 * SEC;
	kj_detach_setup_event();
	now_ns += 2 * SEC;
	int before = triggers_on;
	kj_detach_instance_ended(500, 1, 0); /* the instance the event fell in */
	kj_detach_instance_ended(501, 1, 0);
	assert_int_equal(triggers_on, before);
	kj_detach_instance_ended(502, 1, 0);
	assert_int_equal(triggers_on, before + 1);
	kj_detach_reattach(503); /* called off again */
	assert_false(kj_detach_pending());
}

static void test_refused_detach_stays_attached(void **state)
{
	(void)state;
	int64_t i = 400;
	ask_for_detach(&i);
	int offs = triggers_off, ons = triggers_on, dets = windows[KJ_WINDOW_DETACH], probs = problems;
	finalize_result = CUPTI_ERROR_UNKNOWN;
	kj_detach_now();
	assert_false(kj_cupti_detached());
	assert_int_equal(windows[KJ_WINDOW_DETACH], dets); /* no period recorded */
	assert_int_equal(triggers_off, offs + 1);          /* the callbacks as they were */
	assert_int_equal(problems, probs + 1);             /* said */
	instances(&i, 20, 1, 0);
	assert_int_equal(triggers_on, ons); /* not tried again */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_settles_then_detaches_once),
		cmocka_unit_test(test_memory_change_said),
		cmocka_unit_test(test_after_a_window_with_graphs_never),
		cmocka_unit_test(test_two_instances_after_an_event),
		cmocka_unit_test(test_refused_detach_stays_attached),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
