/* NVTX's injection entry points (NVTX_INJECTION64_PATH names this library). CUPTI's NVTX hooks go
 * in first, so NVTX ranges reach CUPTI's MARKER activity. Under an NVTX --capture range, kjoule's
 * own hooks then go in front of the range calls: they count the range's instances (opening and
 * closing the window) and call CUPTI's. This replaces CUPTI's NVTX callback domain, which made
 * every program around it slower, not only its NVTX calls: on an H200, a jitted JAX step (18 NVTX
 * ranges) took 1.13 ms under it against 0.62 ms untraced or traced whole (docs/tracing.md).
 *
 * Every library that carries NVTX v3 (torch, XLA, the program itself) has its own table of hooks
 * and initialises it on its first NVTX call; CUPTI installs the same hook in each, so one "next"
 * per slot serves them all. A table whose slot holds another hook is left to CUPTI, said once.
 * While CUPTI is out of the process (inject_detach.c) the hooks count and call nothing below:
 * a call into CUPTI would attach it again. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "inject.h"
#include "inject_nvtx.h"
#include "inject_cupti_study.h"

#define KJ_EXPORT __attribute__((visibility("default")))

enum { CORE = 0, CORE2 = 1 };
#define SLOTS 32 /* more than either module's callback ids (NVTX_CBID_CORE_SIZE, NVTX_CBID_CORE2_SIZE) */
_Static_assert((int)NVTX_CBID_CORE_SIZE <= SLOTS && (int)NVTX_CBID_CORE2_SIZE <= SLOTS, "NVTX slots");
static NvtxFunctionPointer next_hook[2][SLOTS];
static char have_next[2][sizeof(next_hook[0]) / sizeof(next_hook[0][0])];
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t own_ids; /* range ids and string handles when no tool below gives any */

/* The hook below a slot (CUPTI's), or NULL while CUPTI is out of the process: a call into it would
 * attach CUPTI again. Read after kjoule's own counting, which may put CUPTI back. */
#define NEXT(mod, id, type) \
	(kj_cupti_detached() ? (type)NULL : (type)__atomic_load_n(&next_hook[mod][id], __ATOMIC_ACQUIRE))

static int NVTX_API push_a(const char *message)
{
	if (kj_capture_nvtx_on())
		kj_capture_push(NULL, kj_capture_named(message));
	nvtxRangePushA_impl_fntype f = NEXT(CORE, NVTX_CBID_CORE_RangePushA, nvtxRangePushA_impl_fntype);
	return f ? f(message) : NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API push_w(const wchar_t *message)
{
	if (kj_capture_nvtx_on())
		kj_capture_push(NULL, 0);
	nvtxRangePushW_impl_fntype f = NEXT(CORE, NVTX_CBID_CORE_RangePushW, nvtxRangePushW_impl_fntype);
	return f ? f(message) : NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
	if (kj_capture_nvtx_on())
		kj_capture_push(NULL, kj_capture_attr_named(a));
	nvtxRangePushEx_impl_fntype f = NEXT(CORE, NVTX_CBID_CORE_RangePushEx, nvtxRangePushEx_impl_fntype);
	return f ? f(a) : NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API pop(void)
{
	nvtxRangePop_impl_fntype f = NEXT(CORE, NVTX_CBID_CORE_RangePop, nvtxRangePop_impl_fntype);
	int r = f ? f() : NVTX_NO_PUSH_POP_TRACKING;
	if (kj_capture_nvtx_on())
		kj_capture_pop(NULL);
	return r;
}

/* A start/end range: counted (window opened) before CUPTI sees it: its slot, or -1 when it is not
 * the capture range (or too many are open). */
static int opening(int named)
{
	return named ? kj_capture_range_open() : -1;
}

/* ... then tied to the id CUPTI returned (one of kjoule's own when no tool below gives any). */
static nvtxRangeId_t started(int slot, nvtxRangeId_t id)
{
	if (!id)
		id = __atomic_add_fetch(&own_ids, 1, __ATOMIC_RELAXED);
	if (slot >= 0)
		kj_capture_range_tie(slot, id);
	return id;
}

static nvtxRangeId_t NVTX_API start_a(const char *message)
{
	int slot = opening(kj_capture_nvtx_on() && kj_capture_named(message));
	nvtxRangeStartA_impl_fntype f = NEXT(CORE, NVTX_CBID_CORE_RangeStartA, nvtxRangeStartA_impl_fntype);
	return started(slot, f ? f(message) : 0);
}

static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a)
{
	int slot = opening(kj_capture_nvtx_on() && kj_capture_attr_named(a));
	nvtxRangeStartEx_impl_fntype f = NEXT(CORE, NVTX_CBID_CORE_RangeStartEx, nvtxRangeStartEx_impl_fntype);
	return started(slot, f ? f(a) : 0);
}

static void NVTX_API end(nvtxRangeId_t id)
{
	nvtxRangeEnd_impl_fntype f = NEXT(CORE, NVTX_CBID_CORE_RangeEnd, nvtxRangeEnd_impl_fntype);
	if (f)
		f(id);
	if (kj_capture_nvtx_on())
		kj_capture_range_end(id);
}

static int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	if (kj_capture_nvtx_on())
		kj_capture_push(d, kj_capture_attr_named(a));
	nvtxDomainRangePushEx_impl_fntype f =
		NEXT(CORE2, NVTX_CBID_CORE2_DomainRangePushEx, nvtxDomainRangePushEx_impl_fntype);
	return f ? f(d, a) : NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
	nvtxDomainRangePop_impl_fntype f = NEXT(CORE2, NVTX_CBID_CORE2_DomainRangePop, nvtxDomainRangePop_impl_fntype);
	int r = f ? f(d) : NVTX_NO_PUSH_POP_TRACKING;
	if (kj_capture_nvtx_on())
		kj_capture_pop(d);
	return r;
}

static nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	int slot = opening(kj_capture_nvtx_on() && kj_capture_attr_named(a));
	nvtxDomainRangeStartEx_impl_fntype f =
		NEXT(CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, nvtxDomainRangeStartEx_impl_fntype);
	return started(slot, f ? f(d, a) : 0);
}

static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	nvtxDomainRangeEnd_impl_fntype f = NEXT(CORE2, NVTX_CBID_CORE2_DomainRangeEnd, nvtxDomainRangeEnd_impl_fntype);
	if (f)
		f(d, id);
	if (kj_capture_nvtx_on())
		kj_capture_range_end(id);
}

/* Strings are registered once, often before cuInit: followed whenever the range is an NVTX one. */
static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t d, const char *text)
{
	nvtxDomainRegisterStringA_impl_fntype f =
		NEXT(CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, nvtxDomainRegisterStringA_impl_fntype);
	nvtxStringHandle_t h = f ? f(d, text) : NULL;
	if (!h)
		h = (nvtxStringHandle_t)(uintptr_t)__atomic_add_fetch(&own_ids, 1, __ATOMIC_RELAXED);
	if (kj_capture_named(text))
		kj_capture_string_registered(h);
	return h;
}

static const struct {
	int module;
	NvtxCallbackModule nvtx_module;
	unsigned id;
	NvtxFunctionPointer hook;
} hooks[] = {
	{CORE, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a},
	{CORE, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w},
	{CORE, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex},
	{CORE, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pop},
	{CORE, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a},
	{CORE, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)start_ex},
	{CORE, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)end},
	{CORE2, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)domain_push_ex},
	{CORE2, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)domain_pop},
	{CORE2, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)domain_start_ex},
	{CORE2, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)domain_end},
	{CORE2, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)register_string_a},
};

void kj_nvtx_hooks_install(NvtxGetExportTableFunc_t get_export_table)
{
	const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
	static int said;
	if (!cb || !cb->GetModuleFunctionTable) {
		kj_spool_problem("--capture: an NVTX library gave no function table: its ranges are not counted");
		return;
	}
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		NvtxFunctionTable table = NULL;
		unsigned int size = 0;
		if (!cb->GetModuleFunctionTable(hooks[i].nvtx_module, &table, &size) || !table ||
		    hooks[i].id >= size || !table[hooks[i].id])
			continue;
		NvtxFunctionPointer cur = *table[hooks[i].id];
		int m = hooks[i].module, ok = 1;
		if (cur == hooks[i].hook)
			continue;
		pthread_mutex_lock(&hook_lock);
		if (!have_next[m][hooks[i].id]) {
			__atomic_store_n(&next_hook[m][hooks[i].id], cur, __ATOMIC_RELEASE);
			have_next[m][hooks[i].id] = 1;
		} else if (next_hook[m][hooks[i].id] != cur) {
			ok = 0;
		}
		pthread_mutex_unlock(&hook_lock);
		if (ok)
			*table[hooks[i].id] = hooks[i].hook;
		else if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			kj_spool_problem("--capture: an NVTX library holds other hooks than the first one's: "
					 "its ranges are not counted");
	}
}

static void *cupti_symbol(const char *name)
{
	void *h = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libcupti.so", RTLD_LAZY | RTLD_NOLOAD);
	return h ? dlsym(h, name) : NULL;
}

/* Called by each NVTX library at its first call. 1: the hooks are in; 0: NVTX stays a no-op. */
KJ_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
	if (kj_cupti_study_of_env(NULL)->no_nvtx)
		return 0; /* a cost study: NVTX left to itself */
	int (*fn)(NvtxGetExportTableFunc_t) =
		(int (*)(NvtxGetExportTableFunc_t))cupti_symbol("InitializeInjectionNvtx2");
	if (!fn || !fn(get_export_table))
		return 0;
	if (kj_capture_wants_nvtx())
		kj_nvtx_hooks_install(get_export_table);
	return 1;
}

/* The first NVTX injection interface (libraries older than NVTX 2): CUPTI's alone. */
KJ_EXPORT int InitializeInjectionNvtx(void *get_export_table)
{
	int (*fn)(void *) = (int (*)(void *))cupti_symbol("InitializeInjectionNvtx");
	return fn ? fn(get_export_table) : 0;
}
