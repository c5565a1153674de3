/* kjoule run's child: started without a shell, signals sent on to it, waited for with its
 * descendants (the parent is their subreaper). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd_run.h"
#include "kj_cli.h"
#include "kj_gpu.h"

volatile sig_atomic_t kj_run_child_pid;
volatile sig_atomic_t kj_run_interrupts;
volatile sig_atomic_t kj_run_stop_waiting;
static volatile sig_atomic_t kj_run_pending_sig; /* arrived before the program's pid was known */

/* SIGTERM, SIGHUP, and SIGINT sent by a process (kill, a job scheduler) go on to the program, or
 * to its whole process group where it leads its own; a SIGINT typed at the terminal reached the
 * foreground group, the program included, already (unless it left our group: then it is sent on).
 * A second SIGINT sets kj_run_stop_waiting. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "kjoule: interrupted: waiting for the program to end and writing the "
				  "run (interrupt again to stop waiting and keep the trace files)\n";
	pid_t c = kj_run_child_pid;
	(void)uc;
	if (sig == SIGINT && kj_run_interrupts > 0 && !kj_run_stop_waiting) {
		kj_run_stop_waiting = 1;
		return;
	}
	if (sig == SIGINT && !kj_run_interrupts) {
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
	}
	kj_run_interrupts++;
	if (c <= 0) {
		kj_run_pending_sig = sig; /* start_child sends it on */
		return;
	}
	pid_t g = getpgid(c);
	int own_group = g > 0 && g != getpgrp(); /* the terminal's signal did not reach it */
	if (sig != SIGINT || own_group || si->si_code == SI_USER || si->si_code == SI_QUEUE ||
	    si->si_code == SI_TKILL) {
		if (own_group)
			kill(-g, sig); /* the program leads its own group: all of it */
		else
			kill(c, sig);
	}
}

void kj_run_install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid returns EINTR, so a stop is seen */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void kj_run_iso_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* Fork and exec CMD with the tracing environment. Returns the child's pid, or -1 with *exec_errno
 * set when CMD could not be started. */
pid_t kj_run_start_child(char **cmd, int *exec_errno)
{
	int pipefd[2];
	pid_t pid;
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		*exec_errno = errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execvp(cmd[0], cmd);
		int e = errno;
		ssize_t w = write(pipefd[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(pipefd[1]);
	kj_run_child_pid = pid; /* before the exec is confirmed: a signal may come at once */
	if (kj_run_pending_sig)
		kill(pid, kj_run_pending_sig);
	kj_run_pending_sig = 0;
	int e = 0;
	ssize_t r;
	do
		r = read(pipefd[0], &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	close(pipefd[0]);
	if (r == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		*exec_errno = e;
		return -1;
	}
	return pid;
}

/* Wait for the child; as a subreaper, also for descendants it left behind (torchrun workers),
 * at most grace_s seconds after the child itself ended. Returns 0, 1 (descendants still running),
 * 2 (kj_run_stop_waiting was set: the program may still run), -1 (no child). */
int kj_run_wait_all(pid_t child, int *status, int grace_s)
{
	int st = 0, have = 0;
	int64_t deadline = 0;
	for (;;) {
		int s;
		if (kj_run_stop_waiting)
			return 2;
		pid_t p = waitpid(-1, &s, deadline ? WNOHANG : 0);
		if (p == child) {
			st = s;
			have = 1;
			deadline = kj_now_ns() + (int64_t)grace_s * 1000000000LL;
			continue;
		}
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: nobody left */
		}
		if (p == 0) {
			if (kj_now_ns() > deadline)
				return have ? (*status = st, 1) : -1; /* descendants still running */
			usleep(20000);
		}
	}
	*status = st;
	return have ? 0 : -1;
}
