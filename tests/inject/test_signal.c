/* The injection library's signal handlers (inject_signal.c), each case in a child process:
 * a signal whose action was the default leaves the signal record (kj_spool.h) and still ends the
 * child by that signal; a program's own handler (with SA_SIGINFO or without) is called as it was
 * and nothing is recorded; an ignored signal stays ignored; a fault records no sender; a child
 * forked from a watched process records nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "inject_signal.h"
#include "kj_spool.h"
#include "../unit/tmpdir.h"

static int ready[2];           /* child -> parent: watching */
static volatile sig_atomic_t got_sig, got_pid, got_plain;

/* Read the record of pid into buf (0 when there is none). */
static int read_record(pid_t pid, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/p%ld" KJ_SIGNAL_SUFFIX, dir, (long)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return 1;
}

static int tmp_left(pid_t pid)
{
	char path[512];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/p%ld" KJ_SIGNAL_SUFFIX ".tmp", dir, (long)pid);
	return stat(path, &sb) == 0;
}

/* Fork a child that runs setup (may be NULL), watches, says so, then waits for a signal. */
static pid_t child(void (*setup)(void), int expect_watched)
{
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (setup)
			setup();
		char n = (char)kj_signal_watch(dir);
		if (write(ready[1], &n, 1) != 1)
			_exit(3);
		for (int i = 0; i < 100 && !got_sig && !got_plain; i++)
			usleep(20000);
		_exit(got_sig || got_plain ? 0 : 4);
	}
	close(ready[1]);
	char n = 0;
	assert_int_equal(read(ready[0], &n, 1), 1);
	close(ready[0]);
	assert_int_equal(n, expect_watched);
	return pid;
}

static void dfl_term_recorded(void **state)
{
	(void)state;
	pid_t pid = child(NULL, 8);
	int st;
	char rec[2048], want[64];
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGTERM);
	assert_true(read_record(pid, rec, sizeof(rec)));
	assert_false(tmp_left(pid));
	assert_true(!strncmp(rec, KJ_SIGNAL_HEADER "\nsignal 15\ncode 0\n", strlen(KJ_SIGNAL_HEADER) + 18));
	snprintf(want, sizeof(want), "\npid %ld\n", (long)getpid());
	assert_non_null(strstr(rec, want));
	assert_non_null(strstr(rec, "\nt_ns "));
	assert_non_null(strstr(rec, "\narg0 ")); /* this test program, the sender */
	assert_non_null(strstr(rec, "\ninfo 1\n"));
	assert_non_null(strstr(rec, "test_signal"));
}

static void watch_first(void)
{
	kj_signal_watch(dir);
}

/* Watching twice changes nothing: the second call must not take our handler for the program's
 * (it would then call itself forever); the signal still ends the child, recorded. */
static void watch_twice(void **state)
{
	(void)state;
	pid_t pid = child(watch_first, 8);
	int st;
	char rec[2048];
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGTERM);
	assert_true(read_record(pid, rec, sizeof(rec)));
}

static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_pid = si ? si->si_pid : -1;
	got_sig = sig;
}

static void own_siginfo_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGINT, &sa, NULL);
}

static void on_plain(int sig)
{
	got_plain = sig;
}

static void own_plain_handler(void)
{
	signal(SIGINT, on_plain);
}

/* A program's SA_SIGINFO handler is called with the signal's siginfo (the sender's pid as the
 * handler saw it is checked in the child); the child survives; nothing recorded. */
static void chained_siginfo(void **state)
{
	(void)state;
	assert_int_equal(pipe(ready), 0);
	pid_t me = getpid(), pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		own_siginfo_handler();
		kj_signal_watch(dir);
		if (write(ready[1], "x", 1) != 1)
			_exit(3);
		for (int i = 0; i < 100 && !got_sig; i++)
			usleep(20000);
		_exit(got_sig == SIGINT && got_pid == me ? 0 : 5);
	}
	close(ready[1]);
	char c, rec[64];
	int st;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(kill(pid, SIGINT), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(read_record(pid, rec, sizeof(rec)));
}

/* A program's plain handler is called with the signal alone; nothing recorded. */
static void chained_plain(void **state)
{
	(void)state;
	int st;
	char rec[64];
	pid_t pid = child(own_plain_handler, 8);
	assert_int_equal(kill(pid, SIGINT), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(read_record(pid, rec, sizeof(rec)));
}

/* A handler installed after kjoule's that relays to it as a plain handler (the signal alone, no
 * siginfo): the record says so (info 0, no sender) instead of reading details that are not there,
 * and the signal still ends the child as its default would. */
static struct sigaction relayed;
static void relay_plain(int sig)
{
	relayed.sa_sigaction(sig, NULL, NULL);
	got_plain = sig; /* not a tail call: our handler returns here */
}

#if defined(__x86_64__)
void (*tail_target)(int, siginfo_t *, void *); /* kjoule's handler, for relay_tail */
#endif

/* A child whose SIGTERM handler, installed after kjoule's, is relay (relaying to ours, saved in
 * `relayed` and `tail_target`), with kjoule's handler put back in front when reassert. */
static pid_t relay_child(void (*relay)(int), int reassert)
{
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;
		close(ready[0]);
		kj_signal_watch(dir);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = relay;
		sigaction(SIGTERM, &sa, &relayed);
#if defined(__x86_64__)
		tail_target = relayed.sa_sigaction;
#endif
		char n = (char)(reassert ? kj_signal_reassert() : 0);
		if (write(ready[1], &n, 1) != 1)
			_exit(3);
		for (int i = 0; i < 100 && !got_plain; i++)
			usleep(20000);
		_exit(got_plain ? 5 : 4);
	}
	close(ready[1]);
	char n = 0;
	assert_int_equal(read(ready[0], &n, 1), 1);
	close(ready[0]);
	assert_int_equal(n, reassert ? 1 : 0);
	return pid;
}

/* SIGTERM sent to the relay child made with relay_child(relay, reassert): it dies by the signal,
 * and its record is read into rec. */
static void term_relay_child(void (*relay)(int), int reassert, char *rec, size_t len)
{
	int st;
	pid_t pid = relay_child(relay, reassert);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGTERM);
	assert_true(read_record(pid, rec, len));
}

/* The record of a SIGTERM relayed to ours without its details: info 0, no sender, and the file
 * of the relay (this test's executable) named; the child dies by the signal. */
static void relayed_record_names_relay(void (*relay)(int))
{
	char rec[2048], exe[1024], want[1100];
	term_relay_child(relay, 0, rec, sizeof(rec));
	assert_non_null(strstr(rec, "\ninfo 0\n"));
	assert_non_null(strstr(rec, "\npid 0\n"));
	assert_non_null(strstr(rec, "\ncode 0\n"));
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;
	snprintf(want, sizeof(want), "\nvia %s\n", exe);
	assert_non_null(strstr(rec, want));
}

static void relay_without_info(void **state)
{
	(void)state;
	relayed_record_names_relay(relay_plain);
}

#if defined(__x86_64__)
/* A relay that ends in a tail call without the signal's details (rsi cleared, then a jump to
 * kjoule's handler): our handler returns to the C library's signal trampoline, as the kernel's own
 * call does. The record then names the file of the handler installed now, the relay's. */
__attribute__((naked)) static void relay_tail(int sig __attribute__((unused)))
{
	__asm__ volatile("xor %esi, %esi\n\txor %edx, %edx\n\tjmp *tail_target(%rip)");
}

static void relay_tail_call(void **state)
{
	(void)state;
	relayed_record_names_relay(relay_tail);
}
#endif

/* Put back in front of a relay that drops the signal's details, kjoule's handler still records
 * the sender: the relay runs (as the kernel would have run it), passes the signal on, and the
 * child dies by it. */
static void reassert_keeps_sender(void (*relay)(int))
{
	char rec[2048], want[64];
	got_plain = 0;
	term_relay_child(relay, 1, rec, sizeof(rec));
	assert_non_null(strstr(rec, "\ninfo 1\n"));
	snprintf(want, sizeof(want), "\npid %ld\n", (long)getpid());
	assert_non_null(strstr(rec, want));
	assert_null(strstr(rec, "\nvia "));
}

static void reassert_plain_relay(void **state)
{
	(void)state;
	reassert_keeps_sender(relay_plain);
}

#if defined(__x86_64__)
static void reassert_tail_relay(void **state)
{
	(void)state;
	reassert_keeps_sender(relay_tail);
}
#endif

/* A later handler that keeps the signal (the program's own) still does so behind ours: the child
 * sees it and exits by itself, and nothing is recorded. */
static void reassert_program_handler(void **state)
{
	(void)state;
	char rec[64];
	int st;
	pid_t pid = relay_child(on_plain, 1);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 5);
	assert_false(read_record(pid, rec, sizeof(rec)));
}

/* body run in a forked child; its return value, the child's exit status */
static int in_child(int (*body)(void))
{
	int st;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(body());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* 0 when only SIGHUP's later handler was put behind ours, SIGSEGV's left in front */
static int faults_left(void)
{
	struct sigaction cur;
	kj_signal_watch(dir);
	signal(SIGSEGV, on_plain);
	signal(SIGHUP, on_plain);
	int n = kj_signal_reassert();
	sigaction(SIGSEGV, NULL, &cur);
	return n == 1 && cur.sa_handler == on_plain ? 0 : 6;
}

/* A fault's handler installed after ours stays in front (it may leave by siglongjmp): only the
 * signals other processes send are put back behind ours. */
static void reassert_leaves_faults(void **state)
{
	(void)state;
	assert_int_equal(in_child(faults_left), 0);
}

/* 0 when a signal set back to its default after ours is left alone */
static int default_left(void)
{
	kj_signal_watch(dir);
	signal(SIGTERM, SIG_DFL);
	return kj_signal_reassert() == 0 ? 0 : 6;
}

/* A signal the program set back to its default after ours: left alone. */
static void reassert_leaves_default(void **state)
{
	(void)state;
	assert_int_equal(in_child(default_left), 0);
}

static void ignore_hup(void)
{
	signal(SIGHUP, SIG_IGN);
}

/* An ignored signal stays ignored: 7 watched, SIGHUP does nothing (the child then times out with
 * exit 4, having seen no signal), no record. */
static void ignored_left_alone(void **state)
{
	(void)state;
	int st;
	char rec[64];
	pid_t pid = child(ignore_hup, 7);
	assert_int_equal(kill(pid, SIGHUP), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 4);
	assert_false(read_record(pid, rec, sizeof(rec)));
}

/* A fault: the record has the signal and the kernel's code, no sender; the child dies by it. */
static void fault_recorded(void **state)
{
	(void)state;
	int st;
	char rec[2048];
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		volatile int *volatile bad = (volatile int *)(uintptr_t)16;
		signal(SIGSEGV, SIG_DFL); /* cmocka catches faults in the test process */
		kj_signal_watch(dir);
		*bad = 1;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSEGV);
	assert_true(read_record(pid, rec, sizeof(rec)));
	assert_non_null(strstr(rec, "\nsignal 11\ncode 1\npid 0\n")); /* SEGV_MAPERR */
	assert_null(strstr(rec, "arg0"));
}

/* A child forked (no exec) from a watched process shares no spool: it records nothing, and still
 * dies by the signal. */
static void forked_child_records_nothing(void **state)
{
	(void)state;
	int st, p[2];
	char rec[64];
	pid_t gc = -1;
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		kj_signal_watch(dir);
		pid_t g = fork();
		if (g == 0) {
			pause();
			_exit(0);
		}
		if (write(p[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
			_exit(3);
		int gs;
		waitpid(g, &gs, 0);
		_exit(WIFSIGNALED(gs) && WTERMSIG(gs) == SIGTERM ? 0 : 6);
	}
	assert_int_equal(read(p[0], &gc, sizeof(gc)), (ssize_t)sizeof(gc));
	close(p[0]);
	close(p[1]);
	usleep(50000);
	assert_int_equal(kill(gc, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(read_record(gc, rec, sizeof(rec)));
	assert_false(read_record(pid, rec, sizeof(rec)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dfl_term_recorded),
		cmocka_unit_test(watch_twice),
		cmocka_unit_test(chained_siginfo),
		cmocka_unit_test(chained_plain),
		cmocka_unit_test(relay_without_info),
#if defined(__x86_64__)
		cmocka_unit_test(relay_tail_call),
#endif
		cmocka_unit_test(reassert_plain_relay),
#if defined(__x86_64__)
		cmocka_unit_test(reassert_tail_relay),
#endif
		cmocka_unit_test(reassert_program_handler),
		cmocka_unit_test(reassert_leaves_default),
		cmocka_unit_test(reassert_leaves_faults),
		cmocka_unit_test(ignored_left_alone),
		cmocka_unit_test(fault_recorded),
		cmocka_unit_test(forked_child_records_nothing),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
