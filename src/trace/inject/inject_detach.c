/* --capture NAME@FIRST:COUNT: CUPTI out of the process outside the window.
 *
 * CUPTI attached to a process costs its thread on every CUDA call, even with no callback and no
 * activity kind enabled: on the compiled decode loop 1.06-1.07x, whichever of CUPTI's activity
 * API, callback subscriber or NVTX hooks is left in (docs/tracing.md). So once the program has
 * settled (QUIET_INSTANCES instances of the range ended and QUIET_NS passed without a module load,
 * context, graph node, graph instantiation, stream capture or allocation), CUPTI is detached
 * (cuptiFinalize, at the exit of the program's next driver call on any thread, where CUPTI's
 * documentation asks for it), and attached again at the start of instance FIRST-1, one instance
 * before the window opens, so the attach's own cost stays outside it. After the window closes it
 * is detached again the same way, unless a CUDA graph ran inside the window: CUPTI instruments a
 * graph it sees launched while kernels are recorded, and after a detach that graph's kernels
 * wrote to CUPTI's freed buffers ("unspecified launch failure" on an H200, driver 580: a CUDA
 * program and a compiled decode loop; pytorch/pytorch#112507 met the same). A graph that only ran
 * while kernels were not recorded is untouched: the detach before the window is safe for it (the
 * same programs, checked by tests/gpu/capture). What happens while it is out is not seen: a module
 * loaded, a graph instantiated or memory allocated then. Device memory in use is compared before
 * and after, and a change is said in the run's problems. KJOULE_CAPTURE_DETACH=0 (`kjoule run
 * --capture-attached`) keeps CUPTI in throughout. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "inject_fncache.h"

#define QUIET_INSTANCES 2
#define QUIET_NS 1000000000LL

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int allowed = 1;
static int pending, detached;
static int64_t last_setup_ns;  /* atomic: the last setup event's time */
static int64_t setup_seen_ns;  /* last_setup_ns at the previous instance's end */
static int quiet;              /* instances ended since the last setup event */
static int graphs_in_window; /* atomic */
static int64_t detached_at_instance;
static size_t used_at_detach;
static int used_known;

static void read_env(void)
{
	const char *v = getenv("KJOULE_CAPTURE_DETACH");
	allowed = !(v && !strcmp(v, "0"));
}

void kj_detach_setup_event(void)
{
	__atomic_store_n(&last_setup_ns, kj_now_ns(), __ATOMIC_RELAXED);
}

int kj_cupti_detached(void)
{
	return __atomic_load_n(&detached, __ATOMIC_ACQUIRE);
}

KJ_HOT int kj_detach_pending(void)
{
	return __atomic_load_n(&pending, __ATOMIC_ACQUIRE);
}

/* Device memory in use now (total - free), 0 with *ok 0 when the driver does not say. */
static size_t memory_in_use(int *ok)
{
	size_t free_b = 0, total_b = 0;
	*ok = cuMemGetInfo(&free_b, &total_b) == CUDA_SUCCESS && total_b >= free_b;
	return *ok ? total_b - free_b : 0;
}

void kj_detach_graph_in_window(void)
{
	__atomic_store_n(&graphs_in_window, 1, __ATOMIC_RELAXED);
}

void kj_detach_instance_ended(int64_t instance, int may_detach, int after_window)
{
	pthread_once(&env_once, read_env);
	int64_t last = __atomic_load_n(&last_setup_ns, __ATOMIC_RELAXED);
	if (last != setup_seen_ns) {
		setup_seen_ns = last;
		quiet = 0;
	} else {
		quiet++;
	}
	if (!allowed || !may_detach || quiet < QUIET_INSTANCES ||
	    (after_window && __atomic_load_n(&graphs_in_window, __ATOMIC_RELAXED)) ||
	    kj_now_ns() - last < QUIET_NS)
		return;
	pthread_mutex_lock(&attach_lock);
	if (!pending && !detached) {
		detached_at_instance = instance;
		__atomic_store_n(&pending, 1, __ATOMIC_RELEASE);
		kj_callbacks_detach_trigger(1);
	}
	pthread_mutex_unlock(&attach_lock);
}

void kj_detach_now(void)
{
	pthread_mutex_lock(&attach_lock);
	if (!pending || detached) {
		pthread_mutex_unlock(&attach_lock);
		return;
	}
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
	kj_activity_detach(); /* CUPTI's buffers handed over, the flush thread kept off CUPTI */
	int64_t t = kj_now_ns();
	CUptiResult r = cuptiFinalize();
	if (r == CUPTI_SUCCESS) {
		kj_put_window(t, KJ_WINDOW_DETACH, detached_at_instance);
		kj_callbacks_forget();
		/* after the finalize: CUPTI's own device buffers (12 MiB on an H200) are freed by it */
		used_at_detach = memory_in_use(&used_known);
		__atomic_store_n(&detached, 1, __ATOMIC_RELEASE);
	} else {
		const char *msg = NULL;
		cuptiGetResultString(r, &msg);
		kj_spool_problem("--capture: CUPTI could not be detached outside the window (cuptiFinalize: "
				 "%s): it stays attached and costs the program throughout", msg ? msg : "?");
		allowed = 0; /* CUPTI and its subscriber stay as they were: the trigger off again */
		kj_activity_reattached();
		kj_callbacks_detach_trigger(0);
	}
	pthread_mutex_unlock(&attach_lock);
}

void kj_detach_reattach(int64_t instance)
{
	pthread_mutex_lock(&attach_lock);
	if (pending) { /* asked for, not yet done: nothing to undo but the trigger */
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
		kj_callbacks_detach_trigger(0);
	} else if (detached) {
		int ok = 0;
		size_t used = memory_in_use(&ok); /* before CUPTI's buffers are made again */
		if (ok && used_known && used != used_at_detach)
			kj_spool_problem("--capture: device memory in use changed by %+.1f MiB while CUPTI was "
					 "detached (instances %ld to %ld): allocations made then are not recorded, "
					 "and kernels using them in the window may not replay (the device's figure: "
					 "other processes count too)",
					 ((double)used - (double)used_at_detach) / 1048576.0,
					 (long)detached_at_instance + 1, (long)instance - 1);
		__atomic_store_n(&detached, 0, __ATOMIC_RELEASE);
		if (kj_activity_start(1) != 0)
			kj_spool_problem("--capture: CUPTI's activity could not be restarted after it was detached");
		kj_activity_reattached();
		kj_callbacks_start();
		kj_fncache_invalidate(); /* a module unloaded meanwhile freed handles the driver reuses */
		kj_put_window(kj_now_ns(), KJ_WINDOW_ATTACH, instance);
	}
	pthread_mutex_unlock(&attach_lock);
}
