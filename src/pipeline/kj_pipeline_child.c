/* A worker process spoken to in lines: requests on its stdin, replies on its stdout, each wait
 * bounded (the worker is killed when it overruns). */
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
#include "kj_gpu.h" /* kj_now_ns */
#include "kj_pipeline_child.h"

struct kj_child {
	pid_t pid;
	int in_fd, out_fd;
	char buf[8192];
	size_t len;
	int status; /* waitpid status once exited */
	int exited;
};

int kj_child_start(char *const argv[], struct kj_child **out)
{
	int in[2], o[2];
	*out = NULL;
	struct kj_child *c = calloc(1, sizeof(*c));
	if (!c)
		return KJ_ENOMEM;
	if (pipe(in) || pipe(o)) {
		free(c);
		return KJ_EIO;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		close(in[0]);
		close(in[1]);
		close(o[0]);
		close(o[1]);
		free(c);
		return KJ_EIO;
	}
	if (!c->pid) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		close(in[0]);
		close(in[1]);
		close(o[0]);
		close(o[1]);
		execv(argv[0], argv);
		fprintf(stderr, "kjoule: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(o[1]);
	c->in_fd = in[1];
	c->out_fd = o[0];
	signal(SIGPIPE, SIG_IGN);
	*out = c;
	return 0;
}

static double now_s(void)
{
	return (double)kj_now_ns() * 1e-9;
}

static void reap(struct kj_child *c, int kill_it)
{
	if (c->exited || c->pid <= 0)
		return;
	if (kill_it)
		kill(c->pid, SIGKILL);
	if (waitpid(c->pid, &c->status, 0) == c->pid)
		c->exited = 1;
}

int kj_child_send(struct kj_child *c, const char *line)
{
	size_t n = strlen(line), off = 0;
	while (off < n) {
		ssize_t w = write(c->in_fd, line + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return KJ_EIO;
		off += (size_t)w;
	}
	return 0;
}

int kj_child_line(struct kj_child *c, double timeout_s, char *line, size_t len)
{
	double end = now_s() + timeout_s;
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (nl) {
			size_t l = (size_t)(nl - c->buf);
			snprintf(line, len, "%.*s", (int)l, c->buf);
			memmove(c->buf, nl + 1, c->len - l - 1);
			c->len -= l + 1;
			return 0;
		}
		if (c->len == sizeof(c->buf)) /* an overlong line: cut it */
			c->len = 0;
		double left = end - now_s();
		if (left <= 0) {
			reap(c, 1);
			return KJ_ETIMEDOUT_CHILD;
		}
		struct pollfd pf = {c->out_fd, POLLIN, 0};
		int pr = poll(&pf, 1, (int)(left * 1000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue;
		ssize_t r = read(c->out_fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			reap(c, 0);
			return KJ_EIO;
		}
		c->len += (size_t)r;
	}
}

void kj_child_describe_exit(const struct kj_child *c, char *buf, size_t len)
{
	if (!c->exited)
		snprintf(buf, len, "still running");
	else if (WIFSIGNALED(c->status))
		snprintf(buf, len, "worker killed by signal %d (%s)", WTERMSIG(c->status),
			 strsignal(WTERMSIG(c->status)));
	else
		snprintf(buf, len, "worker exited with status %d", WEXITSTATUS(c->status));
}

int kj_child_alive(const struct kj_child *c)
{
	return c && !c->exited;
}

void kj_child_close(struct kj_child *c)
{
	if (!c)
		return;
	close(c->in_fd); /* EOF on its stdin: the worker ends */
	if (!c->exited) {
		double end = now_s() + 5;
		while (now_s() < end) {
			if (waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
				c->exited = 1;
				break;
			}
			usleep(20000);
		}
		reap(c, 1);
	}
	close(c->out_fd);
	free(c);
}
