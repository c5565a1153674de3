/* The replay worker host: kjoule-replay-worker started with its stdout piped back line by line,
 * a time limit that runs from its last output, and its stderr relayed once it has exited.
 * docs/replay.md describes the protocol. */
#include "kj_replay_host.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kj_error.h"

/* A worker's stderr, once it has exited, onto ours: its own warnings as they are, but the
 * device-side assertion messages of a kernel run on substitute data (one per thread, hundreds;
 * the kernel's result already says which data it ran on) as one line with their count, unless
 * KJ_REPLAY_DEBUG is set. */
static void relay_worker_stderr(FILE *err)
{
	char line[2048];
	long asserts = 0;
	int all = getenv("KJ_REPLAY_DEBUG") != NULL;
	if (!err)
		return;
	rewind(err);
	while (fgets(line, sizeof(line), err)) {
		if (!all && strstr(line, "Assertion `") && strstr(line, "block: [")) {
			asserts++;
			continue;
		}
		fputs(line, stderr);
	}
	if (asserts)
		fprintf(stderr, "kjoule replay: %ld device-side assertion message(s) of a kernel run on substitute "
				"data not shown (KJ_REPLAY_DEBUG=1 shows them)\n", asserts);
	fclose(err);
}

/* Run argv with stdout piped back; each line goes to on_line, and its stderr to ours when it has
 * exited (relay_worker_stderr). Kills the child once it has been silent timeout_s seconds.
 * *status receives the waitpid status; *timed_out 1 if it was killed for time. */
int kj_replay_host_run(char *const argv[], int timeout_s, void (*on_line)(const char *, void *),
		       void *arg, int *status, int *timed_out)
{
	int fd[2];
	pid_t pid;
	char buf[8192];
	size_t have = 0;
	struct timespec t0, t;

	*timed_out = 0;
	if (pipe(fd))
		return KJ_EIO;
	FILE *err = tmpfile(); /* NULL: the worker writes to our stderr directly */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		if (err)
			fclose(err);
		return KJ_EIO;
	}
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		if (err)
			dup2(fileno(err), STDERR_FILENO);
		close(fd[0]);
		close(fd[1]);
		execv(argv[0], argv);
		fprintf(stderr, "kjoule: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {fd[0], POLLIN, 0};
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left_ms = (long)timeout_s * 1000 - ((t.tv_sec - t0.tv_sec) * 1000 +
							 (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left_ms <= 0) {
			kill(pid, SIGKILL);
			*timed_out = 1;
			break;
		}
		int pr = poll(&p, 1, (int)(left_ms > 1000 ? 1000 : left_ms));
		if (pr < 0 && errno != EINTR)
			break;
		if (pr <= 0)
			continue;
		ssize_t r = read(fd[0], buf + have, sizeof(buf) - 1 - have);
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &t0); /* the timeout runs from the last output */
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			on_line(line, arg);
			line = nl + 1;
		}
		have = strlen(line);
		memmove(buf, line, have + 1);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer is not ours: drop it */
	}
	close(fd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	relay_worker_stderr(err);
	return 0;
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
