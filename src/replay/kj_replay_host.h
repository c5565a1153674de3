/* The replay worker host: one kjoule-replay-worker process run to its end by the worker host
 * (kj_proc.h), its stdout protocol (kj_replay.h) handed over line by line. No CUDA here; the
 * worker links libcuda. */
#ifndef KJ_REPLAY_HOST_H
#define KJ_REPLAY_HOST_H

#include "kj_replay.h"

/**
 * @brief Run argv[0] (a path, not searched) with argv through the worker host (kj_proc_run):
 *        stdin /dev/null, each complete stdout line, without its newline, to on_line(line, arg)
 *        as it arrives (a line longer than KJ_PROC_LINE_MAX is dropped). The worker's process
 *        group is killed (SIGKILL) once it has been silent timeout_s seconds. Its stderr goes to
 *        a temporary file and, once it has exited, onto ours: its lines as they are, but
 *        device-side assertion messages folded into one line with their count unless
 *        KJ_REPLAY_DEBUG is set (without a temporary file it writes to ours directly).
 *        stdout and stderr are flushed before the fork.
 * @param status    receives the child's waitpid status
 * @param timed_out receives 1 if it was killed for silence, else 0
 * @return 0 once the child was reaped (whatever its status); KJ_EIO when it could not start.
 */
int kj_replay_host_run(char *const argv[], int timeout_s, void (*on_line)(const char *, void *),
		       void *arg, int *status, int *timed_out);

/**
 * @brief Whether a failed result is one that the replay's substitute data can cause (indices
 *        out of range, an assertion, a hang, a signal): such a kernel is tried again on other
 *        data. @return 1 or 0 (0 for every status but "failed").
 */
int kj_replay_data_dependent(const struct kj_replay_result *r);

#endif
