/* inject_callbacks.c (with inject_issue.c's calls) under --capture, on a stand-in CUPTI that
 * records which callbacks are on:
 * outside the window the calls whose records only the window keeps (event records, memsets, and
 * inject_issue.c's graph launches) are off, graph instantiations stay on, launches are off but while a stream is being
 * captured (a failed begin, or an end with no capture going, changes nothing; an end whose capture
 * broke ends it; two captures at once keep them on until both end), and module loads and mappings
 * stay on; the window turns everything on, and closing it leaves launches on while a capture goes.
 * Asking for CUPTI's detach turns every driver call on until the next call exits (there, and only
 * there, the detach runs; once); called off, the callbacks are as outside the window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inject.h"

/* ---- the stand-in CUPTI ---- */
static CUpti_CallbackFunc cb;
static char on[CUPTI_CB_DOMAIN_SIZE][CUPTI_DRIVER_TRACE_CBID_SIZE + CUPTI_RUNTIME_TRACE_CBID_SIZE];
static int launches_handled;

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *ud)
{
	(void)ud;
	cb = f;
	*s = (CUpti_SubscriberHandle)(uintptr_t)1;
	return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	(void)s;
	on[d][id] = (char)enable;
	return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain d)
{
	(void)s;
	memset(on[d], (char)enable, sizeof(on[d]));
	return CUPTI_SUCCESS;
}
CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t id, const char **name)
{
	if (d != CUPTI_CB_DOMAIN_DRIVER_API)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = id == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2 ? "cuStreamBeginCapture_v2"
		: id == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture     ? "cuStreamEndCapture"
		: id == CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice          ? "cuCtxGetDevice"
		: id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch           ? "cuGraphLaunch"
		: id == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags ? "cuGraphInstantiateWithFlags"
								      : "cuSomethingElse";
	return CUPTI_SUCCESS;
}
CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	(void)r;
	*s = "stand-in";
	return CUPTI_SUCCESS;
}

/* ---- the rest of the injection library, stood in ---- */
struct kj_inject_config kj_cfg = {.params_k = 1};
int kj_recording = 0; /* --capture: the window starts closed */
void kj_activity_pause(int p) { (void)p; }
int kj_api_is_query(int rt, uint32_t id) { (void)rt, (void)id; return 0; }
void kj_api_record(CUpti_CallbackDomain d, CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)d, (void)id, (void)c; }
int kj_capture_profiler_call(CUpti_CallbackDomain d, CUpti_CallbackId id, const CUpti_CallbackData *c)
{
	(void)d, (void)id, (void)c;
	return 0;
}
void kj_capture_subscribe(CUpti_SubscriberHandle s) { (void)s; }
void kj_copy_handle(CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)id, (void)c; }
int kj_copy_init(void) { return 0; }
void kj_graph_on_add_node(CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)id, (void)c; }
void kj_graph_on_cond_handle(const CUpti_CallbackData *c) { (void)c; }
void kj_handle_event(CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)id, (void)c; }
void kj_handle_launch(CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)id, (void)c; launches_handled++; }
void kj_handle_memory(CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)id, (void)c; }
void kj_handle_memset(CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)id, (void)c; }
void kj_handle_resource(CUpti_CallbackId id, const CUpti_ResourceData *r) { (void)id, (void)r; }
CUptiResult cuptiGetGraphExecId(CUgraphExec e, uint32_t *id) { (void)e; *id = 0; return CUPTI_SUCCESS; }
CUptiResult cuptiGetGraphId(CUgraph g, uint32_t *id) { (void)g; *id = 0; return CUPTI_SUCCESS; }
void kj_graph_on_instantiate(const CUpti_CallbackData *c) { (void)c; }
int64_t kj_now_ns(void) { return 0; }
int kj_snapshot_graph(CUstream st, uint32_t corr) { (void)st, (void)corr; return 0; }
void kj_spool_write(const void *rec, size_t size) { (void)rec, (void)size; }
uint32_t kj_thread_id(void) { return 1; }
uint32_t kj_launch_correlation(void) { return 0; }
int kj_module_load_call(CUpti_CallbackId id, const CUpti_CallbackData *c) { (void)id, (void)c; return 0; }
void kj_put_graphnode(uint64_t n, uint64_t c) { (void)n, (void)c; }
void kj_snapshot_after(void) {}
void kj_spool_problem(const char *fmt, ...) { (void)fmt; }
static int detach_pending, detaches;
void kj_detach_setup_event(void) {}
static int graphs_in_window;
void kj_detach_graph_in_window(void) { graphs_in_window++; }
int kj_detach_pending(void) { return detach_pending; }
void kj_detach_now(void) { detaches++; detach_pending = 0; }

#define DRV CUPTI_CB_DOMAIN_DRIVER_API
#define LAUNCH CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel
#define EVENT CUPTI_DRIVER_TRACE_CBID_cuEventRecord
#define MEMSET CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async
#define BEGIN CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2
#define END CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture
#define GRAPH_LAUNCH CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch
#define INSTANTIATE CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags

/* A driver call as CUPTI reports it: enter, then exit with result r. */
static void call(CUpti_CallbackId id, CUresult r)
{
	CUpti_CallbackData d;
	memset(&d, 0, sizeof(d));
	d.functionReturnValue = &r;
	d.callbackSite = CUPTI_API_ENTER;
	cb(NULL, DRV, id, &d);
	d.callbackSite = CUPTI_API_EXIT;
	cb(NULL, DRV, id, &d);
}

static void test_outside_the_window(void **state)
{
	(void)state;
	assert_int_equal(kj_callbacks_start(), 0);
	assert_false(on[DRV][LAUNCH]);
	assert_false(on[DRV][EVENT]);
	assert_false(on[DRV][MEMSET]);
	assert_false(on[DRV][GRAPH_LAUNCH]);
	assert_true(on[DRV][INSTANTIATE]);
	assert_true(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData]);
	assert_true(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuMemMap]);
	assert_true(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode]);
	assert_true(on[DRV][BEGIN]);
	assert_true(on[DRV][END]);
	assert_false(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice]); /* not a capture call */
}

static void test_launches_follow_stream_captures(void **state)
{
	(void)state;
	call(BEGIN, CUDA_ERROR_INVALID_VALUE); /* a begin that failed */
	assert_false(on[DRV][LAUNCH]);
	call(END, CUDA_ERROR_ILLEGAL_STATE); /* an end with no capture going */
	assert_false(on[DRV][LAUNCH]);
	call(BEGIN, CUDA_SUCCESS);
	assert_true(on[DRV][LAUNCH]);
	assert_false(on[DRV][EVENT]);
	launches_handled = 0;
	call(LAUNCH, CUDA_SUCCESS); /* no graph node made: nothing kept outside the window */
	assert_int_equal(launches_handled, 0);
	call(INSTANTIATE, CUDA_SUCCESS); /* outside the window a graph is not CUPTI's */
	assert_int_equal(graphs_in_window, 0);
	call(BEGIN, CUDA_SUCCESS); /* a second capture, on another stream */
	call(END, CUDA_SUCCESS);
	assert_true(on[DRV][LAUNCH]);
	call(END, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); /* broken, but ended */
	assert_false(on[DRV][LAUNCH]);
	call(END, CUDA_SUCCESS); /* none left: the count stays at 0 */
	call(BEGIN, CUDA_SUCCESS);
	assert_true(on[DRV][LAUNCH]);
	call(END, CUDA_ERROR_ILLEGAL_STATE); /* an end on a stream that was not capturing */
	assert_true(on[DRV][LAUNCH]);
	call(END, CUDA_SUCCESS);
	assert_false(on[DRV][LAUNCH]);
}

static void test_the_window(void **state)
{
	(void)state;
	kj_recording = 1;
	kj_callbacks_window(1);
	assert_true(on[DRV][LAUNCH]);
	assert_true(on[DRV][EVENT]);
	assert_true(on[DRV][MEMSET]);
	assert_true(on[DRV][GRAPH_LAUNCH]);
	call(BEGIN, CUDA_SUCCESS);
	launches_handled = 0;
	call(LAUNCH, CUDA_SUCCESS);
	assert_int_equal(launches_handled, 1); /* inside the window every launch is kept */
	graphs_in_window = 0;
	call(GRAPH_LAUNCH, CUDA_SUCCESS);
	assert_true(graphs_in_window > 0); /* a graph CUPTI instruments: no detach after this window */
	kj_recording = 0;
	kj_callbacks_window(0); /* closed while a capture goes: launches stay on */
	assert_true(on[DRV][LAUNCH]);
	assert_false(on[DRV][EVENT]);
	assert_false(on[DRV][GRAPH_LAUNCH]);
	assert_true(on[DRV][INSTANTIATE]);
	call(END, CUDA_SUCCESS);
	assert_false(on[DRV][LAUNCH]);
	assert_true(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData]);
}

static void test_detach_trigger(void **state)
{
	(void)state;
	detach_pending = 1;
	kj_callbacks_detach_trigger(1);
	assert_true(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice]); /* any call will do */
	CUpti_CallbackData d;
	CUresult r = CUDA_SUCCESS;
	memset(&d, 0, sizeof(d));
	d.functionReturnValue = &r;
	d.callbackSite = CUPTI_API_ENTER;
	cb(NULL, DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, &d);
	assert_int_equal(detaches, 0); /* not at a call's entry */
	d.callbackSite = CUPTI_API_EXIT;
	cb(NULL, DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, &d);
	assert_int_equal(detaches, 1);
	cb(NULL, DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, &d);
	assert_int_equal(detaches, 1); /* no longer asked for: nothing */
	kj_callbacks_detach_trigger(0); /* called off: as outside the window again */
	assert_false(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice]);
	assert_false(on[DRV][LAUNCH]);
	assert_false(on[DRV][EVENT]);
	assert_false(on[DRV][GRAPH_LAUNCH]);
	assert_true(on[DRV][INSTANTIATE]);
	assert_true(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData]);
	assert_true(on[DRV][CUPTI_DRIVER_TRACE_CBID_cuMemMap]);
	assert_true(on[DRV][BEGIN]);
	assert_true(on[DRV][END]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outside_the_window),
		cmocka_unit_test(test_launches_follow_stream_captures),
		cmocka_unit_test(test_the_window),
		cmocka_unit_test(test_detach_trigger),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
