/* --capture: which part of a long program is traced. Parsed the same way by `kjoule run` (which
 * refuses bad text before the program starts), by the injection library (KJOULE_CAPTURE) and by
 * readers of a run's meta.capture_range. Plain C, no SQLite: the injection library links it. */
#ifndef KJ_CAPTURE_SPEC_H
#define KJ_CAPTURE_SPEC_H

#include <stddef.h>
#include <stdint.h>

/* kj_capture_spec.mode */
enum kj_capture_mode {
	KJ_CAPTURE_NONE = 0,     /* no --capture: everything is traced */
	KJ_CAPTURE_NVTX = 1,     /* instances FIRST .. FIRST+COUNT-1 of the NVTX range NAME */
	KJ_CAPTURE_PROFILER = 2, /* the first cudaProfilerStart .. cudaProfilerStop window */
};

#define KJ_CAPTURE_NAME_MAX 256
#define KJ_CAPTURE_PROFILER_TEXT "cuda-profiler-api"

struct kj_capture_spec {
	int mode;                        /* enum kj_capture_mode */
	char name[KJ_CAPTURE_NAME_MAX];  /* the NVTX range (KJ_CAPTURE_NVTX) */
	int64_t first;                   /* instances counted from 0: FIRST instances are skipped, as --skip N */
	int64_t count;                   /* instances captured, >= 1 */
};

/**
 * @brief Parse a --capture value: "NAME[@FIRST[:COUNT]]" (FIRST >= 0, default 0; COUNT >= 1,
 *        default 1; the last '@' splits, so NAME may hold '@'), or "cuda-profiler-api".
 * @param why on refusal: the reason, naming the bad part (e.g. "COUNT '0' is not in 1..1000000000")
 * @return 0, or KJ_EINVAL with why filled and *out zeroed.
 */
int kj_capture_parse(const char *text, struct kj_capture_spec *out, char *why, size_t whylen);

/** @brief The canonical text of a spec ("step@100:20", "cuda-profiler-api"; "" for none). */
void kj_capture_format(const struct kj_capture_spec *s, char *out, size_t len);

/** @brief 1 when instance (0-based) of the range lies in the captured window. */
int kj_capture_in_window(const struct kj_capture_spec *s, int64_t instance);

#endif
