/* Cost studies only: where kjoule's own launch handler spends its time on the program's thread,
 * part by part, in TSC ticks, printed at exit. Compiled in only by `cmake -DKJ_COST_SELF=ON`
 * (then switched on by KJOULE_COST_SELF=1); in every other build each probe is nothing. */
#ifndef KJ_INJECT_COST_SELF_H
#define KJ_INJECT_COST_SELF_H

#include <stdint.h>

enum kj_self_part {
	KJ_SELF_PROBE,   /* nothing: what one probe costs */
	KJ_SELF_LOOKUP,  /* the function's facts (cached per handle) */
	KJ_SELF_FN_TL,   /* ... found in this thread's cache */
	KJ_SELF_FN_SHARED, /* ... found in the shared table */
	KJ_SELF_FN_QUERY,  /* ... asked of the driver */
	KJ_SELF_GATHER,  /* the parameter block copied out of the launch's arguments */
	KJ_SELF_GROUP,   /* the launch group found (or made) */
	KJ_SELF_WRITE,   /* the launch record appended to the spool */
	KJ_SELF_ENTER,   /* a launch callback's entry, whole */
	KJ_SELF_EXIT,    /* a launch callback's exit, whole */
	KJ_SELF_OTHER,   /* every other driver callback kjoule follows */
	KJ_SELF_N
};

#ifdef KJ_COST_SELF
#include <x86intrin.h>

extern int kj_cost_self;

/** A timestamp when the study is on, 0 otherwise. */
static inline uint64_t kj_self_tick(void)
{
	return kj_cost_self ? __rdtsc() : 0;
}

/** Adds the ticks since t0 to part (nothing when the study is off); returns now. */
uint64_t kj_self_add(enum kj_self_part part, uint64_t t0);
/** Reads KJOULE_COST_SELF. */
void kj_self_start(void);
/** Prints each part's calls and mean nanoseconds on stderr (nothing when the study is off). */
void kj_self_report(void);
#else
static inline uint64_t kj_self_tick(void)
{
	return 0;
}
static inline uint64_t kj_self_add(enum kj_self_part part, uint64_t t0)
{
	(void)part;
	return t0;
}
static inline void kj_self_start(void) {}
static inline void kj_self_report(void) {}
#endif

#endif
