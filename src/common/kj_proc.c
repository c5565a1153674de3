/* The worker host: a worker process started, spoken to in lines, timed, ended. See kj_proc.h. */
#include "kj_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "kj_error.h"

extern char **environ;

struct kj_proc {
	pid_t pid;          /* > 0 from the start until it is reaped */
	int in_fd, out_fd;  /* our ends of its stdin and stdout, -1 when none or closed */
	FILE *err;          /* its captured stderr, or NULL */
	char buf[KJ_PROC_LINE_MAX + 1]; /* stdout read but not yet taken as lines */
	size_t have;
	int skipping;       /* dropping the rest of a line longer than buf */
	int eof, reaped, status, timed_out;
	double mark_s;      /* when the limit's clock last restarted */
	char **argv, **env; /* our copies, for kj_proc_restart() */
	struct kj_proc_opts o;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int cloexec(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* A NULL-terminated copy of v (strings copied too), or NULL when out of memory. */
static char **copy_strv(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **c = calloc(n + 1, sizeof(*c));
	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			while (i)
				free(c[--i]);
			free(c);
			return NULL;
		}
	return c;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Our environment less the names `add` sets, then `add`: an array the caller frees (not the
 * strings, which stay environ's and add's), or NULL when out of memory. */
static char **child_environ(char **add)
{
	size_t ne = 0, na = 0, k = 0;
	while (environ && environ[ne])
		ne++;
	while (add && add[na])
		na++;
	char **e = calloc(ne + na + 1, sizeof(*e));
	if (!e)
		return NULL;
	for (size_t i = 0; i < ne; i++) {
		size_t len = strcspn(environ[i], "=");
		int over = 0;
		for (size_t j = 0; j < na && !over; j++)
			over = !strncmp(add[j], environ[i], len) && add[j][len] == '=';
		if (!over)
			e[k++] = environ[i];
	}
	for (size_t j = 0; j < na; j++)
		e[k++] = add[j];
	return e;
}

/* In the child: fd onto target (target left open across exec even when fd is target). */
static void child_fd(int fd, int target)
{
	if (fd == target)
		fcntl(fd, F_SETFD, 0);
	else if (fd >= 0)
		dup2(fd, target);
}

/* In the child, after fork: its own process group, killed with the thread that started it (Linux),
 * default signals, its three streams, exec. Never returns. */
static void child_exec(struct kj_proc *p, pid_t parent, int in, int out, int errfd, char **envp,
		       const char *msg)
{
	setpgid(0, 0);
#ifdef __linux__
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
#else
	(void)parent;
#endif
	signal(SIGPIPE, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	child_fd(in, STDIN_FILENO);
	child_fd(out, STDOUT_FILENO);
	child_fd(errfd, STDERR_FILENO);
	execve(p->argv[0], p->argv, envp);
	const char *why = strerror(errno);
	ssize_t w = write(STDERR_FILENO, msg, strlen(msg));
	w += write(STDERR_FILENO, why, strlen(why));
	w += write(STDERR_FILENO, "\n", 1);
	(void)w;
	_exit(127);
}

/* Start p->argv as p->o says into p (whose state is fresh). 0, KJ_ENOMEM or KJ_EIO. */
static int proc_start(struct kj_proc *p)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, rc = KJ_EIO;
	char msg[512];
	char **envp = child_environ(p->env);
	if (!envp)
		return KJ_ENOMEM;
	p->in_fd = p->out_fd = -1;
	if (p->o.requests ? pipe(in) || cloexec(in[0]) || cloexec(in[1])
			  : cloexec(in[0] = open("/dev/null", O_RDONLY)))
		goto out;
	if (p->o.discard_stdout ? cloexec(out[1] = open("/dev/null", O_WRONLY))
				: pipe(out) || cloexec(out[0]) || cloexec(out[1]))
		goto out;
	if (p->o.capture_stderr && (p->err = tmpfile()) && cloexec(fileno(p->err))) {
		fclose(p->err);
		p->err = NULL;
	}
	snprintf(msg, sizeof(msg), "kjoule: cannot run %s: ", p->argv[0]);
	fflush(NULL);
	pid_t parent = getpid();
	p->pid = fork();
	if (p->pid == 0)
		child_exec(p, parent, in[0], out[1], p->err ? fileno(p->err) : -1, envp, msg);
	if (p->pid < 0) {
		p->pid = 0;
		p->reaped = 1;
		if (p->err)
			fclose(p->err);
		p->err = NULL;
		goto out;
	}
	setpgid(p->pid, p->pid); /* also here, so that a kill before its exec reaches the group */
	p->in_fd = in[1];
	p->out_fd = out[0];
	in[1] = out[0] = -1;
	p->eof = p->out_fd < 0;
	p->mark_s = now_s();
	rc = 0;
out:
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	free(envp);
	return rc;
}

int kj_proc_spawn(char *const argv[], const struct kj_proc_opts *o, struct kj_proc **out)
{
	static const struct kj_proc_opts none;
	*out = NULL;
	struct kj_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return KJ_ENOMEM;
	p->o = o ? *o : none;
	p->argv = copy_strv((const char *const *)argv);
	p->env = copy_strv(p->o.env);
	p->o.env = NULL;
	p->in_fd = p->out_fd = -1;
	int rc = p->argv && p->env && p->argv[0] ? proc_start(p) : p->argv && p->env ? KJ_EINVAL : KJ_ENOMEM;
	if (rc) {
		free_strv(p->argv);
		free_strv(p->env);
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* Relay a captured stderr onto ours, each line through o.stderr_keep, and close it. */
static void relay_stderr(struct kj_proc *p)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	if (!p->err)
		return;
	rewind(p->err);
	while ((n = getline(&line, &cap, p->err)) > 0) {
		int nl = line[n - 1] == '\n';
		line[n - nl] = '\0';
		if (!p->o.stderr_keep || p->o.stderr_keep(line, p->o.stderr_arg))
			fprintf(stderr, "%s%s", line, nl ? "\n" : "");
	}
	free(line);
	fclose(p->err);
	p->err = NULL;
}

/* Reap p: block (waitpid) when `block`, else only if it has ended. 1 once reaped. */
static int proc_reap(struct kj_proc *p, int block)
{
	if (p->reaped)
		return 1;
	pid_t r;
	while ((r = waitpid(p->pid, &p->status, block ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return 0;
	if (r < 0)
		p->status = -1; /* not our child any more (SIGCHLD ignored?): nothing to wait for */
	p->reaped = 1;
	p->pid = 0;
	close_fd(&p->in_fd);
	relay_stderr(p);
	return 1;
}

void kj_proc_kill(struct kj_proc *p)
{
	if (!p || p->reaped)
		return;
	if (kill(-p->pid, SIGKILL))
		kill(p->pid, SIGKILL);
}

/* Kill p for its limit when that has passed. 1 when it is (or was already) timed out. */
static int check_limit(struct kj_proc *p, double now)
{
	if (!p->timed_out && !p->reaped && p->o.limit_s > 0 && now - p->mark_s >= p->o.limit_s) {
		kj_proc_kill(p);
		p->timed_out = 1;
	}
	return p->timed_out;
}

/* The buffer after `got` more bytes: the rest of an overlong line dropped; a buffer full without
 * a newline starts dropping one. */
static void take_bytes(struct kj_proc *p, size_t got)
{
	p->have += got;
	if (p->skipping) {
		char *nl = memchr(p->buf, '\n', p->have);
		if (!nl) {
			p->have = 0;
			return;
		}
		p->skipping = 0;
		p->have -= (size_t)(nl + 1 - p->buf);
		memmove(p->buf, nl + 1, p->have);
	}
	if (p->have == sizeof(p->buf) && !memchr(p->buf, '\n', p->have)) {
		p->skipping = 1;
		p->have = 0;
	}
}

/* One read of p's stdout into its buffer (there is room: a full buffer holds a line). */
static void read_some(struct kj_proc *p)
{
	ssize_t r;
	while ((r = read(p->out_fd, p->buf + p->have, sizeof(p->buf) - p->have)) < 0 && errno == EINTR)
		;
	if (r < 0 && errno == EAGAIN)
		return;
	if (r <= 0) {
		p->eof = 1;
		close_fd(&p->out_fd);
		return;
	}
	take_bytes(p, (size_t)r);
	if (p->o.clock == KJ_PROC_SILENCE)
		p->mark_s = now_s();
}

int kj_proc_next_line(struct kj_proc *p, char *line, size_t len)
{
	char *nl = p->skipping ? NULL : memchr(p->buf, '\n', p->have);
	if (!nl)
		return 0;
	size_t n = (size_t)(nl - p->buf);
	if (len)
		snprintf(line, len, "%.*s", (int)n, p->buf);
	p->have -= n + 1;
	memmove(p->buf, nl + 1, p->have);
	return 1;
}

int kj_proc_eof(const struct kj_proc *p)
{
	return p->eof;
}

int kj_proc_poll(struct kj_proc *const p[], size_t n, int wait_ms)
{
	struct pollfd one, *pf = n > 1 ? calloc(n, sizeof(*pf)) : &one;
	double now = now_s();
	if (!pf)
		return KJ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int on = p[i] && !p[i]->eof;
		pf[i].fd = on ? p[i]->out_fd : -1;
		pf[i].events = POLLIN;
		pf[i].revents = 0;
		if (on && p[i]->o.limit_s > 0 && !p[i]->timed_out) {
			double left_ms = (p[i]->mark_s + p[i]->o.limit_s - now) * 1000;
			if (left_ms < wait_ms)
				wait_ms = left_ms < 0 ? 0 : (int)left_ms + 1;
		}
	}
	int pr = poll(pf, (nfds_t)n, wait_ms);
	int rc = pr < 0 && errno != EINTR ? KJ_EIO : 0;
	now = now_s();
	for (size_t i = 0; i < n; i++)
		if (p[i])
			check_limit(p[i], now);
	for (size_t i = 0; pr > 0 && i < n; i++)
		if (pf[i].revents && p[i]->out_fd >= 0)
			read_some(p[i]);
	if (pf != &one)
		free(pf);
	return rc;
}

int kj_proc_line(struct kj_proc *p, char *line, size_t len)
{
	for (;;) {
		if (kj_proc_next_line(p, line, len))
			return 0;
		if (p->timed_out) {
			proc_reap(p, 1);
			return KJ_ETIMEDOUT;
		}
		if (p->eof) {
			proc_reap(p, 1);
			return KJ_EIO;
		}
		int rc = kj_proc_poll(&p, 1, 1000);
		if (rc)
			return rc;
	}
}

int kj_proc_send(struct kj_proc *p, const char *text)
{
	size_t n = strlen(text), off = 0;
	sigset_t pipe_set, old, pending;
	int rc = 0;
	if (p->in_fd < 0)
		return KJ_EIO;
	/* SIGPIPE blocked while we write, and taken back if our write raised it */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	while (off < n) {
		ssize_t w = write(p->in_fd, text + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = KJ_EIO;
			break;
		}
		off += (size_t)w;
	}
	if (rc && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p->mark_s = now_s();
	return rc;
}

int kj_proc_ended(struct kj_proc *p)
{
	return !p || proc_reap(p, 0);
}

void kj_proc_wait(struct kj_proc *p, double grace_s)
{
	if (!p || p->reaped)
		return;
	close_fd(&p->in_fd);
	double end = now_s() + grace_s;
	while (!proc_reap(p, 0) && (grace_s < 0 || now_s() < end)) {
		if (p->out_fd >= 0) {
			struct pollfd pf = {p->out_fd, POLLIN, 0};
			if (poll(&pf, 1, 20) > 0) {
				read_some(p);
				p->have = 0; /* nobody takes these lines */
			}
		} else {
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	if (!p->reaped) {
		kj_proc_kill(p);
		proc_reap(p, 1);
	}
}

int kj_proc_restart(struct kj_proc *p)
{
	kj_proc_kill(p);
	kj_proc_wait(p, 0);
	close_fd(&p->out_fd);
	p->have = 0;
	p->skipping = p->eof = p->status = p->timed_out = 0;
	p->reaped = 0;
	int rc = proc_start(p);
	if (rc) {
		p->reaped = p->eof = 1;
		p->status = -1;
	}
	return rc;
}

void kj_proc_set_limit(struct kj_proc *p, double limit_s)
{
	p->o.limit_s = limit_s;
}

int kj_proc_status(const struct kj_proc *p)
{
	return p->reaped ? p->status : -1;
}

int kj_proc_timed_out(const struct kj_proc *p)
{
	return p->timed_out;
}

void kj_proc_describe_exit(const struct kj_proc *p, char *buf, size_t len)
{
	if (!p->reaped)
		snprintf(buf, len, "still running");
	else if (WIFSIGNALED(p->status))
		snprintf(buf, len, "worker killed by signal %d (%s)", WTERMSIG(p->status),
			 strsignal(WTERMSIG(p->status)));
	else
		snprintf(buf, len, "worker exited with status %d", WEXITSTATUS(p->status));
}

void kj_proc_close(struct kj_proc *p)
{
	if (!p)
		return;
	kj_proc_wait(p, 5);
	close_fd(&p->out_fd);
	if (p->err)
		fclose(p->err);
	free_strv(p->argv);
	free_strv(p->env);
	free(p);
}

int kj_proc_run(char *const argv[], const struct kj_proc_opts *o, void (*on_line)(const char *, void *),
		void *arg, int *status, int *timed_out)
{
	struct kj_proc *p;
	char line[KJ_PROC_LINE_MAX + 1];
	int rc = kj_proc_spawn(argv, o, &p);
	*timed_out = 0;
	if (rc)
		return rc;
	while (!p->eof && !p->timed_out) {
		if ((rc = kj_proc_poll(&p, 1, 1000)))
			break;
		while (kj_proc_next_line(p, line, sizeof(line)))
			on_line(line, arg);
	}
	/* its stdout ended: the rest of its limit to exit */
	while (!p->timed_out && !proc_reap(p, 0)) {
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
		check_limit(p, now_s());
	}
	proc_reap(p, 1);
	*status = p->status;
	*timed_out = p->timed_out;
	kj_proc_close(p);
	return 0;
}
