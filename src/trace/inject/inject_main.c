/* Entry points of the injection library: InitializeInjection (CUDA_INJECTION64_PATH) and the
 * NVTX's injection entry points are in inject_nvtx.c. */
#define _GNU_SOURCE
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "inject_cost_self.h"
#include "inject_cupti_study.h"
#include "inject_signal.h"

#define KJ_EXPORT __attribute__((visibility("default")))

struct kj_inject_config kj_cfg = {.params_k = 1};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int started;

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}

static void put_process(void)
{
	char exe[1024] = "", text[8192];
	size_t len = 0;
	struct kj_rec_process p;
	struct timespec rt;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f;
	if (n > 0)
		exe[n] = '\0';
	len = (size_t)snprintf(text, sizeof(text), "%s", exe) + 1;
	f = fopen("/proc/self/cmdline", "r");
	if (f) {
		len += fread(text + len, 1, sizeof(text) - len - 1, f);
		fclose(f);
	}
	memset(&p, 0, sizeof(p));
	p.h.type = KJ_REC_PROCESS;
	p.pid = getpid();
	p.ppid = getppid();
	p.start_ns = kj_now_ns();
	clock_gettime(CLOCK_REALTIME, &rt);
	p.start_realtime_ns = (int64_t)rt.tv_sec * 1000000000LL + rt.tv_nsec;
	p.text_len = (uint32_t)len;
	kj_spool_write2(&p, sizeof(p), text, len);
}

static void put_clock(void)
{
	struct kj_rec_clock c;
	struct timespec rt;
	uint64_t t = 0;
	memset(&c, 0, sizeof(c));
	c.h.type = KJ_REC_CLOCK;
	c.h.size = sizeof(c);
	c.monotonic_ns = kj_now_ns();
	cuptiGetTimestamp(&t);
	c.trace_ns = (int64_t)t;
	clock_gettime(CLOCK_REALTIME, &rt);
	c.realtime_ns = (int64_t)rt.tv_sec * 1000000000LL + rt.tv_nsec;
	kj_spool_write(&c, sizeof(c));
}

static void at_exit(void)
{
	if (!started)
		return;
	kj_capture_at_exit();
	kj_activity_flush();
	if (!kj_cupti_detached()) /* cuptiGetTimestamp would attach CUPTI again */
		put_clock();
	kj_spool_close(1);
	kj_self_report();
}

/* After fork() without exec the child must not write into the parent's spool. */
static void in_forked_child(void)
{
	kj_spool_abandon();
	started = 0;
}

static void start(void)
{
	int capture;
	const char *dir = getenv("KJOULE_SPOOL");
	if (!dir || !*dir) {
		fprintf(stderr, "kjoule: injection library loaded without KJOULE_SPOOL: not tracing "
				"(use `kjoule run -- CMD`)\n");
		return;
	}
	kj_cfg.params_k = env_int("KJOULE_PARAMS_K", 1);
	kj_self_start();
	/* KJOULE_API: 0 off, 1 every call but the queries, 2 every call. KJOULE_API_DOMAINS, for
	 * cost studies: KJ_API_* bits other than KJ_API_QUERIES (default: driver and runtime) */
	kj_cfg.api = env_int("KJOULE_API", 0);
	if (kj_cfg.api)
		kj_cfg.api = (kj_cfg.api == 2 ? KJ_API_QUERIES : 0) |
			     (env_int("KJOULE_API_DOMAINS", KJ_API_DRIVER | KJ_API_RUNTIME) & ~KJ_API_QUERIES);
	kj_cfg.snapshot_bytes = (int64_t)env_int("KJOULE_SNAPSHOT_MB", 0) << 20;
	kj_cfg.snapshot_graphs_only = env_int("KJOULE_SNAPSHOT_GRAPHS_ONLY", 0);
	kj_cfg.debug_graph = env_int("KJOULE_DEBUG_GRAPH", 0);
	/* host-to-device copies' bytes (copies are followed only with launch parameters on) */
	kj_cfg.copy_data_bytes = (int64_t)env_int("KJOULE_COPY_DATA_KB", 64) << 10;
	kj_cfg.copy_data_total = (int64_t)env_int("KJOULE_COPY_DATA_MB", 256) << 20;
	if (kj_spool_open(dir) != 0)
		return;
	started = 1;
	put_process();
	put_clock();
	capture = kj_capture_init();
	const struct kj_cupti_study *study = kj_cupti_study_of_env(NULL);
	if (study->no_activity)
		kj_spool_problem("KJOULE_CUPTI_STUDY=no_activity: no GPU activity recorded");
	else if (kj_activity_start(capture) != 0)
		kj_spool_problem("GPU activity is not recorded in process %ld", (long)getpid());
	if (study->no_subscribe)
		kj_spool_problem("KJOULE_CUPTI_STUDY=no_subscribe: no launches, modules, graphs or devices "
				 "recorded");
	else
		kj_callbacks_start();
	atexit(at_exit);
	pthread_atfork(NULL, NULL, in_forked_child);
	/* a signal that kills the process leaves a note of which one, and who sent it */
	kj_signal_watch(dir);
}

/* Called by the CUDA driver at cuInit when CUDA_INJECTION64_PATH names this library. */
KJ_EXPORT int InitializeInjection(void)
{
	pthread_once(&once, start);
	return 1;
}

