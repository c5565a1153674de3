/* The replay worker host: kjoule-replay-worker run by the worker host (kj_proc) with its stdout
 * handed over line by line, a time limit that runs from its last output, and its stderr relayed
 * once it has exited. docs/replay.md describes the protocol. */
#include "kj_replay_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_proc.h"

/* A worker's stderr, once it has exited, onto ours: its own warnings as they are, but the
 * device-side assertion messages of a kernel run on substitute data (one per thread, hundreds;
 * the kernel's result already says which data it ran on) counted instead, unless
 * KJ_REPLAY_DEBUG is set. */
struct relay {
	long asserts;
	int all;
};

static int keep_stderr_line(const char *line, void *arg)
{
	struct relay *r = arg;
	if (!r->all && strstr(line, "Assertion `") && strstr(line, "block: [")) {
		r->asserts++;
		return 0;
	}
	return 1;
}

/* kj_replay_host.h: the worker through kj_proc_run, its stderr captured and folded. */
int kj_replay_host_run(char *const argv[], int timeout_s, void (*on_line)(const char *, void *),
		       void *arg, int *status, int *timed_out)
{
	struct relay r = {0, getenv("KJ_REPLAY_DEBUG") != NULL};
	struct kj_proc_opts o = {.capture_stderr = 1, .stderr_keep = keep_stderr_line, .stderr_arg = &r,
				 .limit_s = timeout_s, .clock = KJ_PROC_SILENCE};
	int rc = kj_proc_run(argv, &o, on_line, arg, status, timed_out);
	if (r.asserts)
		fprintf(stderr, "kjoule replay: %ld device-side assertion message(s) of a kernel run on substitute "
				"data not shown (KJ_REPLAY_DEBUG=1 shows them)\n", r.asserts);
	return rc ? KJ_EIO : 0;
}

/* Errors that random data can cause (indices out of range, counters that never settle). */
int kj_replay_data_dependent(const struct kj_replay_result *r)
{
	static const char *const marks[] = {"ASSERT", "ILLEGAL_ADDRESS", "hung", "LAUNCH_FAILED",
					    "MISALIGNED", "ILLEGAL_INSTRUCTION", "timed out", "signal"};
	if (strcmp(r->status, "failed"))
		return 0;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strstr(r->error, marks[i]))
			return 1;
	return 0;
}
