/* kj_proc: the worker host. One worker process (kjoule-replay-worker, kjoule-sweep-worker,
 * kjoule-nccl-worker, kjoule-pipeline-worker, or a test's stand-in) started with argv and some
 * environment of its own, request lines written to its stdin, its stdout read back line by line,
 * its stderr relayed (at once, or captured and relayed once it has ended), a time limit that
 * kills its whole process group, and how it ended (exit status, signal, timed out). What to do
 * when a worker dies (give up, restart it, go on with the next request) is the caller's;
 * kj_proc_restart() starts the same command again. POSIX only, no kjoule state.
 * docs/architecture.md ("The worker host") says how a new worker uses it. */
#ifndef KJ_PROC_H
#define KJ_PROC_H

#include <stddef.h>

/** The longest stdout line handed over, newline excluded; a longer line is dropped whole. */
#define KJ_PROC_LINE_MAX 8191

struct kj_proc;

/** What restarts a worker's time limit. */
enum kj_proc_clock {
	KJ_PROC_SILENCE = 0, /* its start, every request sent and every output read: "silent for" */
	KJ_PROC_REQUEST,     /* its start and every request sent: "no answer within" */
};

/** How to start a worker. Zeroed, it means: stdin /dev/null, stdout piped back, stderr ours
 *  (inherited), no extra environment, no time limit. */
struct kj_proc_opts {
	/** "NAME=value" entries, NULL-terminated, set in the worker's environment over ours; NULL: none. */
	const char *const *env;
	/** 1: its stdin is a pipe that kj_proc_send() writes; 0: /dev/null. */
	int requests;
	/** 1: its stdout goes to /dev/null (a process whose answers nobody reads); 0: piped back. */
	int discard_stdout;
	/** 1: its stderr goes to a temporary file, relayed onto ours once it has been reaped (line by
	 *  line through stderr_keep; every line when NULL); 0, or no temporary file: ours directly. */
	int capture_stderr;
	/** For a captured stderr: each line (without its newline), 1 to relay it, 0 to drop it. */
	int (*stderr_keep)(const char *line, void *arg);
	void *stderr_arg;
	/** > 0: seconds after which the worker's process group is killed (SIGKILL) and the worker
	 *  marked timed out, counted from the last event `clock` names; <= 0: no limit. The limit is
	 *  enforced while kj_proc_line(), kj_proc_poll() or kj_proc_run() runs. */
	double limit_s;
	enum kj_proc_clock clock;
};

/**
 * @brief Start argv[0] (a path, not searched) with argv, as the leader of a process group of its
 *        own, with o->env added to our environment and its stdin, stdout and stderr as o says.
 *        stdio is flushed before the fork; the pipes are closed in any other child we start.
 *        On Linux the worker is killed when the thread that started it ends (kjoule killed,
 *        or interrupted: a worker in its own group does not see the terminal's Ctrl-C). A
 *        command that cannot be executed exits 127 after "kjoule: cannot run PATH: REASON" on
 *        its stderr. The handle keeps copies of argv and o->env (for kj_proc_restart()).
 * @param out receives the handle (NULL on failure); free it with kj_proc_close().
 * @return 0, KJ_ENOMEM, or KJ_EIO (no pipe, no fork).
 */
int kj_proc_spawn(char *const argv[], const struct kj_proc_opts *o, struct kj_proc **out);

/**
 * @brief Write text (the caller puts in the newline) whole to the worker's stdin; restarts the
 *        time limit. SIGPIPE does not reach us. @return 0, or KJ_EIO: no stdin pipe
 *        (o->requests 0), or the worker has closed it or ended.
 */
int kj_proc_send(struct kj_proc *p, const char *text);

/**
 * @brief The next line of the worker's stdout, without its newline (cut to len - 1 bytes),
 *        waiting for it as long as the time limit allows.
 * @return 0 and a line; KJ_EIO when its stdout ended first (the worker is then reaped);
 *         KJ_ETIMEDOUT when the limit passed first (its group killed, the worker reaped).
 */
int kj_proc_line(struct kj_proc *p, char *line, size_t len);

/**
 * @brief Several workers at once: waits up to wait_ms (less where a limit falls due sooner) for
 *        output from any of p[0..n-1] (NULL entries, and those whose stdout has ended, are left
 *        out; a NULL entry is not timed either), kills those whose limit has passed, and reads what arrived into each one's
 *        buffer. Take the lines with kj_proc_next_line(); kj_proc_eof() says when one's stdout
 *        has ended. @return 0 (also when a signal cut the wait short), or KJ_EIO (poll failed).
 */
int kj_proc_poll(struct kj_proc *const p[], size_t n, int wait_ms);

/** @brief A complete line already read (see kj_proc_poll), without its newline, cut to len - 1
 *  bytes. @return 1 when one was given, 0 when none is buffered. */
int kj_proc_next_line(struct kj_proc *p, char *line, size_t len);

/** @brief 1 once the worker's stdout has ended (lines read before it may still be buffered). */
int kj_proc_eof(const struct kj_proc *p);

/** @brief 1 once the worker has ended (reaping it, without waiting, when it just has); 0 while
 *  it runs. NULL counts as ended. */
int kj_proc_ended(struct kj_proc *p);

/** @brief A new time limit from now on (as kj_proc_opts.limit_s; its clock is not restarted),
 *  for a worker whose requests differ in length; kj_proc_restart() keeps it. */
void kj_proc_set_limit(struct kj_proc *p, double limit_s);

/** @brief Kill the worker's process group now (SIGKILL), unless it has been reaped already. It is
 *  not marked timed out, and not reaped: its stdout ends, or kj_proc_wait() reaps it. */
void kj_proc_kill(struct kj_proc *p);

/**
 * @brief End the worker: close its stdin (a worker reading requests ends at EOF), read and drop
 *        its stdout, wait up to grace_s (< 0: as long as it takes) for it to end, then kill its
 *        group, and reap it; a captured stderr is relayed. Nothing happens once it is reaped.
 */
void kj_proc_wait(struct kj_proc *p, double grace_s);

/**
 * @brief Reap the worker (closing its stdin and killing its group if it still runs) and start
 *        the same argv, environment and options again in the same handle: a fresh buffer, limit
 *        and status. @return as kj_proc_spawn(); on failure the handle stays an ended worker.
 */
int kj_proc_restart(struct kj_proc *p);

/** @brief The waitpid status of the reaped worker, or -1 while it has not been reaped. */
int kj_proc_status(const struct kj_proc *p);

/** @brief 1 if the worker was killed because its time limit passed. */
int kj_proc_timed_out(const struct kj_proc *p);

/** @brief How the worker ended, in words: "worker killed by signal 11 (Segmentation fault)",
 *  "worker exited with status 3", or "still running" before it has been reaped. */
void kj_proc_describe_exit(const struct kj_proc *p, char *buf, size_t len);

/** @brief kj_proc_wait(p, 5) and free. Accepts NULL. */
void kj_proc_close(struct kj_proc *p);

/**
 * @brief Run one worker to its end: start it (kj_proc_spawn), hand each stdout line to
 *        on_line(line, arg) as it arrives, until its stdout ends or its limit passes, and reap it
 *        (after its stdout ended, it still has the rest of the limit to exit).
 * @param status    receives its waitpid status
 * @param timed_out receives 1 if it was killed for its limit, else 0
 * @return 0 once it was reaped (whatever its status); KJ_ENOMEM or KJ_EIO when it could not start.
 */
int kj_proc_run(char *const argv[], const struct kj_proc_opts *o, void (*on_line)(const char *, void *),
		void *arg, int *status, int *timed_out);

#endif
