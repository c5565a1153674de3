/* KJOULE_CUPTI_STUDY: CUPTI activity settings other than kjoule's defaults, for cost studies of
 * CUPTI's own floor (bench/trace_overhead/turns.py's cupti_activity_* contestants). A
 * comma-separated list of:
 *   pinned        CUPTI's device-side record buffers in pinned host memory
 *   devbuf=MB     size of each device-side record buffer (CUPTI's default ~3 MB)
 *   prealloc=N    device-side record buffers allocated up front (CUPTI's default 3)
 *   shared_buf    one activity buffer for all threads instead of one per thread
 *   cupti_clock   CUPTI's own timestamps instead of CLOCK_MONOTONIC through a callback
 *   kernels_only  kernel records only: no copies, memsets, allocations or NVTX ranges
 *   no_activity   CUPTI's activity API never started (no GPU records at all)
 *   no_subscribe  no CUPTI callback subscriber (no launch, module, graph or device records)
 *   no_nvtx       NVTX not handed to CUPTI (no NVTX ranges, no --capture instances)
 * The last three take CUPTI apart piece by piece, to find which piece a program pays for.
 * An unknown or malformed item is refused with its text; nothing of the list then applies. A run
 * under any list names it among the run's problems (kj_activity_start), so its figures are never
 * taken for kjoule's defaults. */
#ifndef KJ_INJECT_CUPTI_STUDY_H
#define KJ_INJECT_CUPTI_STUDY_H

#include <stddef.h>

struct kj_cupti_study {
	int pinned;
	size_t devbuf_bytes; /* 0: CUPTI's default */
	size_t prealloc;     /* 0: CUPTI's default */
	int shared_buf;
	int cupti_clock;
	int kernels_only;
	int no_activity;
	int no_subscribe;
	int no_nvtx;
};

/** Parse TEXT (NULL or empty: all defaults) into *OUT. 0 on success; -1 with the offending item
 * in ERR otherwise, and *OUT left all defaults. */
int kj_cupti_study_parse(const char *text, struct kj_cupti_study *out, char *err, size_t err_len);

/** KJOULE_CUPTI_STUDY of this process, parsed once: all defaults when unset or malformed, and
 * then, where why is given, *why says what was refused (NULL when nothing was). */
const struct kj_cupti_study *kj_cupti_study_of_env(const char **why);

#endif
