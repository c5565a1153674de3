/* Cost studies only: kjoule's launch handler timed part by part (inject_cost_self.h); built into
 * the library only with -DKJ_COST_SELF=ON. */
#include "inject_cost_self.h"
#include "inject_thread.h"

#ifdef KJ_COST_SELF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int kj_cost_self;
static uint64_t ticks[KJ_SELF_N], calls[KJ_SELF_N];
static uint64_t tsc0;
static int64_t ns0;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void kj_self_start(void)
{
	const char *e = getenv("KJOULE_COST_SELF");
	kj_cost_self = e && strcmp(e, "1") == 0;
	tsc0 = __rdtsc();
	ns0 = now_ns();
}

uint64_t kj_self_add(enum kj_self_part part, uint64_t t0)
{
	if (!kj_cost_self)
		return 0;
	uint64_t now = __rdtsc();
	__atomic_fetch_add(&ticks[part], now - t0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&calls[part], 1, __ATOMIC_RELAXED);
	return now;
}

void kj_self_report(void)
{
	static const char *const names[KJ_SELF_N] = {"probe", "lookup", "fn_tl", "fn_shared", "fn_query",
						     "gather", "group", "write",
						     "launch_enter", "launch_exit", "other"};
	if (!kj_cost_self)
		return;
	double ns_per_tick = (double)(now_ns() - ns0) / (double)(__rdtsc() - tsc0);
	fprintf(stderr, "kjoule cost study (KJOULE_COST_SELF):");
	for (int i = 0; i < KJ_SELF_N; i++)
		fprintf(stderr, " %s %llu x %.1f ns;", names[i], (unsigned long long)calls[i],
			calls[i] ? (double)ticks[i] * ns_per_tick / (double)calls[i] : 0.0);
	int st = kj_thread_tls_static();
	fprintf(stderr, " thread-local block %s;\n", st > 0 ? "static" : st == 0 ? "dynamic" : "unknown");
}
#else
typedef int kj_cost_self_not_built; /* ISO C wants a declaration in every file */
#endif
