/* inject_nvtx.c: kjoule's NVTX hooks put in front of a fake NVTX library's table whose slots hold
 * a fake tool's functions (CUPTI's place). Each call reaches the tool with its arguments and
 * returns what the tool returned; the capture range sees a push before the tool does and a pop
 * after, a start before (tied to the id the tool returned) and an end after; nothing while the
 * capture is not ready, but for strings registered with the range's name; a second table with the
 * same tool is hooked, a table with another tool is left alone and said once; installing twice
 * changes nothing; a slot the tool left empty still works (its own range ids). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "inject_nvtx.h"

/* ---- what happened, in order ---- */
static char events[64][80];
static int nevents;
static void ev(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (nevents < 64)
		vsnprintf(events[nevents++], sizeof(events[0]), fmt, ap);
	va_end(ap);
}
static void expect(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	assert_int_equal(nevents, n);
	for (int i = 0; i < n; i++)
		assert_string_equal(events[i], va_arg(ap, const char *));
	va_end(ap);
	nevents = 0;
}

/* ---- stand-ins of the capture state (inject_capture.c) and the spool ---- */
static int ready = 1, problems;
int kj_capture_nvtx_on(void) { return ready; }
int kj_capture_wants_nvtx(void) { return 1; }
int kj_capture_named(const char *s) { return s && !strcmp(s, "step"); }
int kj_capture_attr_named(const nvtxEventAttributes_t *a)
{
	return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && kj_capture_named(a->message.ascii);
}
void kj_capture_push(const void *domain, int named) { ev("cap push %s %d", domain ? "dom" : "-", named); }
void kj_capture_pop(const void *domain) { ev("cap pop %s", domain ? "dom" : "-"); }
int kj_capture_range_open(void) { ev("cap open"); return 3; }
void kj_capture_range_tie(int slot, uint64_t id) { ev("cap tie %d %llu", slot, (unsigned long long)id); }
void kj_capture_range_end(uint64_t id) { ev("cap end %llu", (unsigned long long)id); }
void kj_capture_string_registered(const void *h) { ev("cap string %p", h); }
static int cupti_out;
int kj_cupti_detached(void) { return cupti_out; }
void kj_spool_problem(const char *fmt, ...)
{
	(void)fmt;
	problems++;
}

/* ---- the tool below (CUPTI's place) ---- */
static int NVTX_API tool_push_a(const char *m) { ev("tool push %s", m); return 7; }
static int NVTX_API tool_pop(void) { ev("tool pop"); return 6; }
static nvtxRangeId_t NVTX_API tool_start_a(const char *m) { ev("tool start %s", m); return 1234; }
static void NVTX_API tool_end(nvtxRangeId_t id) { ev("tool end %llu", (unsigned long long)id); }
static int NVTX_API tool_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	(void)d;
	ev("tool dpush %s", a->message.ascii);
	return 2;
}
static int NVTX_API tool_dpop(nvtxDomainHandle_t d) { (void)d; ev("tool dpop"); return 1; }
static nvtxStringHandle_t NVTX_API tool_string(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	ev("tool string %s", s);
	return (nvtxStringHandle_t)(uintptr_t)0x5000;
}
static int NVTX_API other_push_a(const char *m) { ev("other push %s", m); return 9; }

/* ---- a fake NVTX library: its globals (the slots) and the export table over them ---- */
struct lib {
	NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE], core2[NVTX_CBID_CORE2_SIZE];
	NvtxFunctionPointer *core_t[NVTX_CBID_CORE_SIZE], *core2_t[NVTX_CBID_CORE2_SIZE];
};
static struct lib *current;

static int NVTX_API get_table(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned int *size)
{
	if (m == NVTX_CB_MODULE_CORE) {
		*out = current->core_t;
		*size = NVTX_CBID_CORE_SIZE;
	} else if (m == NVTX_CB_MODULE_CORE2) {
		*out = current->core2_t;
		*size = NVTX_CBID_CORE2_SIZE;
	} else {
		return 0;
	}
	return 1;
}
static const NvtxExportTableCallbacks callbacks = {sizeof(NvtxExportTableCallbacks), get_table};
static const void *NVTX_API get_export_table(uint32_t id)
{
	return id == NVTX_ETID_CALLBACKS ? &callbacks : NULL;
}

/* A library whose tool filled every slot but RangeStartEx (left empty). */
static void make_lib(struct lib *l, NvtxFunctionPointer push_a)
{
	memset(l, 0, sizeof(*l));
	for (int i = 0; i < NVTX_CBID_CORE_SIZE; i++)
		l->core_t[i] = &l->core[i];
	for (int i = 0; i < NVTX_CBID_CORE2_SIZE; i++)
		l->core2_t[i] = &l->core2[i];
	l->core[NVTX_CBID_CORE_RangePushA] = push_a;
	l->core[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)tool_pop;
	l->core[NVTX_CBID_CORE_RangeStartA] = (NvtxFunctionPointer)tool_start_a;
	l->core[NVTX_CBID_CORE_RangeEnd] = (NvtxFunctionPointer)tool_end;
	l->core2[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)tool_dpush;
	l->core2[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)tool_dpop;
	l->core2[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)tool_string;
}

static void install(struct lib *l)
{
	current = l;
	kj_nvtx_hooks_install(get_export_table);
}

#define CALL(l, mod, id, type) ((type)(l)->mod[id])

static struct lib a, b, c;

static void test_push_pop_order_and_results(void **state)
{
	(void)state;
	make_lib(&a, (NvtxFunctionPointer)tool_push_a);
	install(&a);
	assert_ptr_not_equal(a.core[NVTX_CBID_CORE_RangePushA], (NvtxFunctionPointer)tool_push_a);
	nevents = 0;
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePushA, nvtxRangePushA_impl_fntype)("step"), 7);
	expect(2, "cap push - 1", "tool push step");
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePop, nvtxRangePop_impl_fntype)(), 6);
	expect(2, "tool pop", "cap pop -");
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePushA, nvtxRangePushA_impl_fntype)("layer"), 7);
	expect(2, "cap push - 0", "tool push layer");
}

static void test_start_end_tied_to_the_tools_id(void **state)
{
	(void)state;
	nevents = 0;
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangeStartA, nvtxRangeStartA_impl_fntype)("step"), 1234);
	expect(3, "cap open", "tool start step", "cap tie 3 1234");
	CALL(&a, core, NVTX_CBID_CORE_RangeEnd, nvtxRangeEnd_impl_fntype)(1234);
	expect(2, "tool end 1234", "cap end 1234");
	/* another name: not opened, not tied */
	CALL(&a, core, NVTX_CBID_CORE_RangeStartA, nvtxRangeStartA_impl_fntype)("other");
	expect(1, "tool start other");
}

static void test_empty_slot_gives_own_ids(void **state)
{
	(void)state;
	nvtxEventAttributes_t at;
	memset(&at, 0, sizeof(at));
	at.messageType = NVTX_MESSAGE_TYPE_ASCII;
	at.message.ascii = "step";
	nevents = 0;
	nvtxRangeStartEx_impl_fntype f = CALL(&a, core, NVTX_CBID_CORE_RangeStartEx, nvtxRangeStartEx_impl_fntype);
	assert_non_null(f);
	nvtxRangeId_t x = f(&at), y = f(&at);
	assert_true(x != 0 && y != 0 && x != y);
	assert_int_equal(nevents, 4); /* open, tie; open, tie: no tool */
	assert_string_equal(events[0], "cap open");
	nevents = 0;
}

/* CUPTI out of the process (inject_detach.c): the hooks count and call nothing below, since a
 * call into CUPTI would attach it again; back in, the tool is called as before. */
static void test_cupti_out_not_called(void **state)
{
	(void)state;
	cupti_out = 1;
	nevents = 0;
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePushA, nvtxRangePushA_impl_fntype)("step"),
			 NVTX_NO_PUSH_POP_TRACKING);
	expect(1, "cap push - 1");
	CALL(&a, core, NVTX_CBID_CORE_RangePop, nvtxRangePop_impl_fntype)();
	expect(1, "cap pop -");
	nvtxRangeId_t id = CALL(&a, core, NVTX_CBID_CORE_RangeStartA, nvtxRangeStartA_impl_fntype)("step");
	assert_true(id != 0 && id != 1234); /* one of kjoule's own */
	char tie[64], end[64];
	snprintf(tie, sizeof(tie), "cap tie 3 %llu", (unsigned long long)id);
	snprintf(end, sizeof(end), "cap end %llu", (unsigned long long)id);
	expect(2, "cap open", tie);
	CALL(&a, core, NVTX_CBID_CORE_RangeEnd, nvtxRangeEnd_impl_fntype)(id);
	expect(1, end);
	cupti_out = 0;
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePushA, nvtxRangePushA_impl_fntype)("step"), 7);
	expect(2, "cap push - 1", "tool push step");
}

static void test_domains_and_strings(void **state)
{
	(void)state;
	nvtxEventAttributes_t at;
	memset(&at, 0, sizeof(at));
	at.messageType = NVTX_MESSAGE_TYPE_ASCII;
	at.message.ascii = "step";
	nvtxDomainHandle_t d = (nvtxDomainHandle_t)(uintptr_t)0x77;
	nevents = 0;
	assert_int_equal(CALL(&a, core2, NVTX_CBID_CORE2_DomainRangePushEx, nvtxDomainRangePushEx_impl_fntype)(d, &at), 2);
	expect(2, "cap push dom 1", "tool dpush step");
	assert_int_equal(CALL(&a, core2, NVTX_CBID_CORE2_DomainRangePop, nvtxDomainRangePop_impl_fntype)(d), 1);
	expect(2, "tool dpop", "cap pop dom");
	/* strings are followed before the capture is ready (they are registered once, early) */
	ready = 0;
	nvtxStringHandle_t h =
		CALL(&a, core2, NVTX_CBID_CORE2_DomainRegisterStringA, nvtxDomainRegisterStringA_impl_fntype)(d, "step");
	assert_ptr_equal(h, (nvtxStringHandle_t)(uintptr_t)0x5000);
	char want[80];
	snprintf(want, sizeof(want), "cap string %p", (const void *)h);
	expect(2, "tool string step", want);
	ready = 1;
}

static void test_not_ready_only_the_tool(void **state)
{
	(void)state;
	ready = 0;
	nevents = 0;
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePushA, nvtxRangePushA_impl_fntype)("step"), 7);
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePop, nvtxRangePop_impl_fntype)(), 6);
	expect(2, "tool push step", "tool pop");
	ready = 1;
}

static void test_tables_same_other_and_twice(void **state)
{
	(void)state;
	/* installed twice: the hook is not taken for the tool (no call into itself) */
	NvtxFunctionPointer hooked = a.core[NVTX_CBID_CORE_RangePushA];
	install(&a);
	assert_ptr_equal(a.core[NVTX_CBID_CORE_RangePushA], hooked);
	nevents = 0;
	assert_int_equal(CALL(&a, core, NVTX_CBID_CORE_RangePushA, nvtxRangePushA_impl_fntype)("step"), 7);
	expect(2, "cap push - 1", "tool push step");
	/* a second library with the same tool: hooked too */
	make_lib(&b, (NvtxFunctionPointer)tool_push_a);
	install(&b);
	assert_ptr_equal(b.core[NVTX_CBID_CORE_RangePushA], hooked);
	/* a library with another tool in that slot: left to it, said once */
	problems = 0;
	make_lib(&c, (NvtxFunctionPointer)other_push_a);
	install(&c);
	install(&c);
	assert_ptr_equal(c.core[NVTX_CBID_CORE_RangePushA], (NvtxFunctionPointer)other_push_a);
	assert_int_equal(problems, 1);
	assert_ptr_equal(c.core[NVTX_CBID_CORE_RangePop], a.core[NVTX_CBID_CORE_RangePop]); /* its other slots: hooked */
	nevents = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_pop_order_and_results),
		cmocka_unit_test(test_start_end_tied_to_the_tools_id),
		cmocka_unit_test(test_empty_slot_gives_own_ids),
		cmocka_unit_test(test_cupti_out_not_called),
		cmocka_unit_test(test_domains_and_strings),
		cmocka_unit_test(test_not_ready_only_the_tool),
		cmocka_unit_test(test_tables_same_other_and_twice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
