#define _GNU_SOURCE
/* The CUPTI subscriber: which callbacks are on, and the dispatch of each to its handler
 * (inject_launch.c, inject_resource.c, inject_api.c, inject_issue.c, inject_copy.c,
 * inject_graph.c, inject_modules.c, inject_capture.c). Runs on the program's own threads. */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"
#include "inject_cost_self.h"

static __thread uint64_t tl_node;
static __thread int tl_in_launch;
static uint8_t *capture_call; /* --capture: per driver id, 1 cuStreamBeginCapture*, 2 cuStreamEndCapture* */
static void on_stream_capture(CUpti_CallbackId id, const CUpti_CallbackData *cb);

/* A launch into a capturing stream made graph node nid (GRAPHNODE_CREATED inside the launch). */
void kj_launch_node_created(uint64_t nid)
{
	if (tl_in_launch)
		tl_node = nid;
}

static int is_launch(CUpti_CallbackId id)
{
	return id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
	       id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
}

static __thread int tl_busy; /* inside our own handling: driver calls we make are not the program's */
static __thread uint32_t tl_own_corr;

uint32_t kj_last_own_correlation(void)
{
	return tl_own_corr;
}

static void dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data);
static int cost_empty_handler; /* cost studies: KJ_COST_EMPTY_HANDLER */

KJ_HOT static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId id, const void *data)
{
	(void)userdata;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) { /* module loads may happen inside our own calls */
		kj_detach_setup_event();
		kj_handle_resource(id, data);
		return;
	}
	if (cost_empty_handler)
		return;
	/* a launch's exit with nothing to do there -- no graph node made, no --api or --snapshot, no
	 * detach waiting: most launches. What dispatch()'s launch-exit branch would do for it, without
	 * the checks before that branch; a change to that branch is a change here too. */
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && tl_in_launch && !tl_node && !tl_busy &&
	    ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT && !kj_cfg.api &&
	    kj_cfg.snapshot_bytes <= 0 && is_launch(id) && !kj_detach_pending()) {
		uint64_t t = kj_self_tick();
		tl_in_launch = 0;
		if (t)
			kj_self_add(KJ_SELF_EXIT, t);
		return;
	}
	if (tl_busy) { /* our own call; --snapshot wants its copies' correlation */
		if (kj_cfg.snapshot_bytes > 0 && domain == CUPTI_CB_DOMAIN_DRIVER_API &&
		    ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER)
			tl_own_corr = ((const CUpti_CallbackData *)data)->correlationId;
		return;
	}
	tl_busy = 1;
	uint64_t t = kj_self_tick();
	dispatch(domain, id, data);
	if (t)
		kj_self_add(domain != CUPTI_CB_DOMAIN_DRIVER_API || !is_launch(id) ? KJ_SELF_OTHER
			    : ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER
				? KJ_SELF_ENTER
				: KJ_SELF_EXIT,
			    t);
	/* the exit site of a driver call, on whichever thread makes one first (a framework may launch
	 * from other threads than the one that ends its ranges): where CUPTI's documentation asks
	 * cuptiFinalize to run */
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
	    ((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_EXIT && kj_detach_pending())
		kj_detach_now();
	tl_busy = 0;
}

static __thread int tl_launch_deferred; /* outside a --capture window: launch looked at on exit */
static int is_always_call(CUpti_CallbackId id);

/* Outside a --capture window (kj_recording 0) only what later iterations need is followed: module
 * loads, mappings, graph instantiations and the launches that make graph nodes (their parameters
 * are what a graph launched inside the window runs); per-launch and per-call records are not. */
KJ_HOT static void dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data)
{
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		kj_handle_resource(id, data);
		return;
	}
	const CUpti_CallbackData *cb = data;
	int recording = kj_recording_now();
	if (kj_capture_profiler_call(domain, id, cb))
		return;
	if (recording && ((domain == CUPTI_CB_DOMAIN_DRIVER_API && (kj_cfg.api & KJ_API_DRIVER)) ||
			  (domain == CUPTI_CB_DOMAIN_RUNTIME_API && (kj_cfg.api & KJ_API_RUNTIME))))
		kj_api_record(domain, id, cb);
	if (domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (capture_call && id < CUPTI_DRIVER_TRACE_CBID_SIZE && capture_call[id]) {
		on_stream_capture(id, cb);
		return;
	}
	if (is_launch(id)) {
		if (cb->callbackSite == CUPTI_API_ENTER) {
			tl_in_launch = 1;
			tl_node = 0;
			tl_launch_deferred = !recording;
			if (recording)
				kj_handle_launch(id, cb);
		} else { /* its common case is answered in callback() before this (keep the two alike) */
			/* a launch into a capturing stream created a graph node: remember its key */
			if (tl_node) {
				if (tl_launch_deferred)
					kj_handle_launch(id, cb);
				kj_put_graphnode(tl_node, kj_launch_correlation());
			}
			if (!tl_launch_deferred)
				kj_snapshot_after();
			tl_in_launch = 0;
			tl_node = 0;
		}
		return;
	}
	if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode || id == CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2) {
		kj_graph_on_add_node(id, cb);
		return;
	}
	if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphConditionalHandleCreate) {
		kj_graph_on_cond_handle(cb);
		return;
	}
	int op = kj_issue_op(id);
	if (op == KJ_ISSUE_GRAPH_INSTANTIATE || is_always_call(id))
		kj_detach_setup_event(); /* the program is still setting up */
	if (recording && op >= KJ_ISSUE_GRAPH_LAUNCH && op <= KJ_ISSUE_GRAPH_UPLOAD)
		kj_detach_graph_in_window();
	if (kj_module_load_call(id, cb))
		return;
	kj_handle_memory(id, cb);
	if (!recording) {
		if (op == KJ_ISSUE_GRAPH_INSTANTIATE)
			kj_issue_handle(id, cb);
		return;
	}
	kj_issue_handle(id, cb);
	kj_copy_handle(id, cb);
	kj_handle_event(id, cb);
	kj_handle_memset(id, cb);
}

static CUpti_SubscriberHandle subscriber;

/* The driver calls kjoule follows, in three sets. Launches: parameters, and graph nodes made by a
 * launch into a capturing stream. Window calls: event records and waits, memsets' destinations
 * (with inject_issue.c's graph launches and uploads, copies and memsets) -- records that only a
 * --capture window keeps. Always: mappings, the generic node maker (conditional nodes' bodies) and
 * module loads (which module a function came from), which later iterations need. */
static const CUpti_CallbackId launch_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};
static const CUpti_CallbackId window_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
	CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags,
	CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
	CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
};
static const CUpti_CallbackId always_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuMemMap,
	CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
	CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode,
	CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphConditionalHandleCreate,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoad,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary,
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int in_ids(const CUpti_CallbackId *ids, size_t n, CUpti_CallbackId id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* Mappings, node makers and module loads: followed outside the window too, and each a sign that the
 * program is still setting up (inject_detach.c). */
static int is_always_call(CUpti_CallbackId id)
{
	return in_ids(always_ids, COUNT(always_ids), id);
}

static void enable_ids(const CUpti_CallbackId *ids, size_t n, int on)
{
	for (size_t i = 0; i < n; i++)
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
}

/* --snapshot follows its own copies, to know their correlation */
static int snapshot_copy_id(CUpti_CallbackId id)
{
	return kj_cfg.snapshot_bytes > 0 && id == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2;
}

static int is_base_driver_id(CUpti_CallbackId id)
{
	return kj_issue_op(id) || in_ids(launch_ids, COUNT(launch_ids), id) ||
	       in_ids(window_ids, COUNT(window_ids), id) || is_always_call(id) ||
	       snapshot_copy_id(id);
}

/* Switches the API-record callbacks of `bits` (KJ_API_*) on or off; the driver calls kjoule
 * follows anyway stay on. --api leaves the queries out: CUPTI costs ~0.2 us per enabled call,
 * and they are ~90 % of a framework's calls (23,500 cudaGetDevice per 4 BLOOM forwards). */
static void set_api_callbacks(int bits, int on)
{
	for (uint32_t id = 1; (bits & KJ_API_DRIVER) && id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
		if (!is_base_driver_id(id) && ((bits & KJ_API_QUERIES) || !kj_api_is_query(0, id)))
			cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
	for (uint32_t id = 1; (bits & KJ_API_RUNTIME) && id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++) {
		const char *name = NULL;
		if (!(bits & KJ_API_QUERIES) && kj_api_is_query(1, id))
			continue;
		/* cost study: runtime launches left to their driver-level record */
		if ((bits & KJ_API_NO_RUNTIME_LAUNCH) &&
		    cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &name) == CUPTI_SUCCESS && name &&
		    !strncmp(name, "cudaLaunch", 10))
			continue;
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
	}
}

static const CUpti_CallbackId resource_ids[] = {
	CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
	CUPTI_CBID_RESOURCE_MODULE_LOADED,
	CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
	CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
	CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
};

/* The callbacks every trace has: launches, mappings, events, memsets, modules, graph nodes. */
static void set_base_callbacks(int on)
{
	enable_ids(launch_ids, COUNT(launch_ids), on);
	enable_ids(window_ids, COUNT(window_ids), on);
	enable_ids(always_ids, COUNT(always_ids), on);
	for (size_t i = 0; i < sizeof(resource_ids) / sizeof(resource_ids[0]); i++)
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RESOURCE, resource_ids[i]);
	kj_issue_enable(subscriber, on);
	if (snapshot_copy_id(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2))
		cuptiEnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2);
}

/* ---- --capture: outside the window, CUPTI's dispatch is spared where nothing is kept ----
 * An enabled callback costs the program's thread CUPTI's dispatch (about a microsecond on an H200,
 * bench/results/trace_event_costs.json) even when kjoule keeps nothing. Outside the window the
 * window calls are off, and the launches are on only while a stream is being captured (a launch
 * then makes a graph node whose parameters a graph launched in the window runs; a node made while
 * they are off is read at instantiation, as a node added by hand). */
static pthread_mutex_t window_lock = PTHREAD_MUTEX_INITIALIZER;
static int callbacks_open = 1;  /* the window's callbacks are on (always without --capture) */
static int streams_capturing;   /* stream captures begun and not yet ended */

static int capture_call_of_name(const char *name)
{
	if (!name)
		return 0;
	return !strncmp(name, "cuStreamBeginCapture", 20) ? 1 : !strncmp(name, "cuStreamEndCapture", 18) ? 2 : 0;
}

/* Under window_lock: the launches on inside the window or while a stream is being captured. */
static void apply_launches(void)
{
	enable_ids(launch_ids, COUNT(launch_ids), callbacks_open || streams_capturing > 0);
}

/* Under window_lock: the window's callbacks, and the launches, as the window and captures want. */
static void apply_window(void)
{
	enable_ids(window_ids, COUNT(window_ids), callbacks_open);
	kj_issue_enable_window(subscriber, callbacks_open);
	if (snapshot_copy_id(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2))
		cuptiEnableCallback(callbacks_open, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
				    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2);
	apply_launches();
}

/* A stream capture began or ended (at the call's exit): counted, the launches switched with it.
 * An end that fails because the capture broke (CUDA_ERROR_STREAM_CAPTURE_*) ends it too. */
static void on_stream_capture(CUpti_CallbackId id, const CUpti_CallbackData *cb)
{
	CUresult r = cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue : CUDA_SUCCESS;
	if (cb->callbackSite != CUPTI_API_EXIT)
		return;
	kj_detach_setup_event();
	pthread_mutex_lock(&window_lock);
	int before = streams_capturing;
	if (capture_call[id] == 1 && r == CUDA_SUCCESS)
		streams_capturing++;
	else if (capture_call[id] == 2 && streams_capturing > 0 &&
		 (r == CUDA_SUCCESS ||
		  (r >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)))
		streams_capturing--;
	if (!callbacks_open && (before > 0) != (streams_capturing > 0))
		apply_launches();
	pthread_mutex_unlock(&window_lock);
}

/* --capture at start (the window closed): captures followed, the window's callbacks off. */
static void start_window_callbacks(void)
{
	if (!capture_call) /* kept over a detach: other threads may still read it */
		capture_call = kj_driver_cbid_table(capture_call_of_name);
	if (!capture_call) {
		kj_spool_problem("--capture: out of memory: the callbacks stay on outside the window");
		return;
	}
	for (uint32_t id = 1; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
		if (capture_call[id])
			cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
	pthread_mutex_lock(&window_lock);
	callbacks_open = 0;
	apply_window();
	pthread_mutex_unlock(&window_lock);
}

/* Cost studies only (bench/api_cost/api_toggle.py, bench/trace_overhead/turn_worker.py, through
 * ctypes in the traced program): switch the tracing while the program runs. `bits`: KJ_API_* (the
 * API records, as KJOULE_API_DOMAINS), plus KJ_COST_NO_PARAMS (no parameter capture, as
 * --no-params), KJ_COST_ACTIVITY_ONLY (CUPTI's activity records without any kjoule callback: the
 * floor a CUPTI tracer stands on), KJ_COST_EMPTY_HANDLER (the callbacks stay enabled but return at
 * once: what CUPTI's dispatch costs without kjoule's handlers; records then go missing, so a cost
 * study's database is not a trace) or KJ_COST_OFF (no callbacks and no activity: the program as if
 * untraced, but for CUPTI being loaded). Call it between iterations, from the thread that makes
 * the CUDA calls. Returns the previous bits. */
__attribute__((visibility("default"))) int kjoule_cost_study_set_api(int bits)
{
	static int saved_params_k = -1, current, base_on = 1, activity_on = 1;
	if (!subscriber)
		return -1;
	if (saved_params_k < 0) {
		saved_params_k = kj_cfg.params_k;
		current = kj_cfg.api;
	}
	int old = current;
	int want_base = !(bits & (KJ_COST_OFF | KJ_COST_ACTIVITY_ONLY));
	int want_activity = !(bits & KJ_COST_OFF);
	if (base_on)
		set_api_callbacks(kj_cfg.api, 0);
	if (want_base != base_on)
		set_base_callbacks(want_base);
	if (want_activity != activity_on)
		kj_activity_pause(!want_activity);
	base_on = want_base;
	activity_on = want_activity;
	kj_cfg.params_k = (bits & KJ_COST_NO_PARAMS) ? 0 : saved_params_k;
	cost_empty_handler = !!(bits & KJ_COST_EMPTY_HANDLER);
	kj_cfg.api = bits & (KJ_API_DRIVER | KJ_API_RUNTIME | KJ_API_NO_RECORDS | KJ_API_QUERIES |
			     KJ_API_NO_RUNTIME_LAUNCH);
	if (base_on)
		set_api_callbacks(kj_cfg.api, 1);
	current = bits;
	return old;
}

int kj_callbacks_start(void)
{
	CUptiResult r = cuptiSubscribe(&subscriber, callback, NULL);
	if (r != CUPTI_SUCCESS) {
		const char *msg = NULL;
		cuptiGetResultString(r, &msg);
		kj_spool_problem("launch parameters, unique-kernel keys, modules and devices not recorded: "
				 "cuptiSubscribe: %s (another CUPTI client, such as a profiler, holds it)",
				 msg ? msg : "?");
		return -1;
	}
	if (kj_copy_init() != 0)
		kj_spool_problem("copy addresses and data not recorded: out of memory");
	set_base_callbacks(1);
	set_api_callbacks(kj_cfg.api, kj_recording_now());
	kj_capture_subscribe(subscriber);
	if (!kj_recording_now())
		start_window_callbacks();
	/* cost studies of programs that cannot call kjoule_cost_study_set_api themselves (JAX, compiled
	 * loops; bench/trace_overhead/capture_pairs.py): KJOULE_COST_STUDY=BITS holds for the whole run */
	const char *study = getenv("KJOULE_COST_STUDY");
	if (study && *study)
		kjoule_cost_study_set_api(atoi(study));
	return 0;
}

void kj_callbacks_detach_trigger(int on)
{
	if (!subscriber)
		return;
	if (on) {
		cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
		return;
	}
	/* back to what the closed window wants, as at the start: the domain off, then the base
	 * callbacks and the window's state over them */
	cuptiEnableDomain(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	set_base_callbacks(1);
	start_window_callbacks();
}

void kj_callbacks_forget(void)
{
	subscriber = NULL;
	pthread_mutex_lock(&window_lock);
	streams_capturing = 0;
	pthread_mutex_unlock(&window_lock);
}

void kj_callbacks_window(int open)
{
	if (subscriber && capture_call) {
		pthread_mutex_lock(&window_lock);
		callbacks_open = open;
		apply_window();
		pthread_mutex_unlock(&window_lock);
	}
	if (subscriber && kj_cfg.api) {
		set_api_callbacks(kj_cfg.api, open);
		kj_capture_subscribe(subscriber); /* cudaProfilerStart/Stop are runtime calls too */
	}
}
