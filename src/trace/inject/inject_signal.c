/* Deaths by signal: which signal ended a traced process, and who sent it.
 *
 * At start the injection library puts a handler (SA_SIGINFO) on each signal that usually ends a
 * process, keeping the action it found:
 *  - the default action (the process is certain to die): the handler writes the signal record
 *    (kj_spool.h) beside the spool, puts the default action back and raises the signal again, so
 *    the process ends exactly as it would have (same signal, same exit status, a core where the
 *    default makes one). A fault re-raised this way is delivered when the handler returns.
 *  - a handler of the program's (Python's SIGINT, faulthandler's fault handlers, ...): nothing is
 *    recorded (the program may survive the signal); the handler is called as it was installed,
 *    with (sig, info, context) when it had SA_SIGINFO, with (sig) when not; ours was installed
 *    with its mask and flags, so the signal is blocked and restarts calls as it asked.
 *  - ignored (SIG_IGN): left alone, no handler of ours.
 * A handler the program installs later replaces ours: that signal is then the program's business.
 * One a library installs after ours by the time a CUDA context exists (the driver's, CUPTI's) is
 * put back behind ours (kj_signal_reassert, at context creation): ours is called first and keeps
 * the signal's details for when that handler passes the signal on to ours without them.
 * When code other than the kernel calls our handler without the signal's details (a handler
 * installed after ours that relays it as a plain one), the record names the file that code lives
 * in ("via": the handler's return address, looked up in /proc/self/maps).
 * The handler uses async-signal-safe calls only (open, read, write, close, rename, getpid,
 * clock_gettime, sigaction, raise): no stdio, no malloc, no locks. The spool's buffered records
 * are not written out (that needs locks): up to its last 100 ms are lost, as with SIGKILL.
 * A child forked without exec inherits the handlers but not the spool: it records nothing. */
#define _GNU_SOURCE
#include "inject_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kj_spool.h"

static const int watched[] = {SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
#define NWATCHED (sizeof(watched) / sizeof(watched[0]))

static struct sigaction prev[NWATCHED]; /* the action found at install; read-only after */
/* A handler a library installed after ours (kj_signal_reassert), put back behind ours: ours is
 * called first, keeps the signal's details, and calls it; when it passes the signal on to ours
 * without them (a plain call, a tail call), ours takes them from the first call. */
static struct sigaction outer[NWATCHED];
static volatile sig_atomic_t has_outer[NWATCHED], in_outer[NWATCHED];
static siginfo_t *outer_si[NWATCHED];
static void *outer_uc[NWATCHED];
static char rec_path[4096], tmp_path[4096];
/* the C library's file, read at install: a caller there is its signal trampoline (the kernel) */
static char libc_path[512];
static pid_t owner; /* the process whose spool the paths are beside */
static int watched_here[NWATCHED]; /* ours was installed on it by kj_signal_watch */

/* Append s (up to max bytes, control characters as '?') to buf[*n..cap). */
static void put_str(char *buf, size_t *n, size_t cap, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max && *n < cap; i++)
		buf[(*n)++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
}

/* Append v in decimal (no snprintf: it is not async-signal-safe). */
static void put_int(char *buf, size_t *n, size_t cap, int64_t v)
{
	char d[24];
	size_t k = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		d[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0 && *n < cap)
		buf[(*n)++] = '-';
	while (k && *n < cap)
		buf[(*n)++] = d[--k];
}

static void put_nl(char *buf, size_t *n, size_t cap)
{
	if (*n < cap)
		buf[(*n)++] = '\n';
}

static void put_line(char *buf, size_t *n, size_t cap, const char *key, int64_t v)
{
	put_str(buf, n, cap, key, 64);
	put_str(buf, n, cap, " ", 1);
	put_int(buf, n, cap, v);
	put_nl(buf, n, cap);
}

/* The sender's first three command-line words, as arg0..arg2 lines (none when unreadable). */
static void put_sender_args(char *buf, size_t *n, size_t cap, pid_t pid)
{
	char path[64] = "/proc/", cmd[3 * KJ_SIGNAL_ARG_MAX + 3];
	size_t pn = 6, got = 0;
	put_int(path, &pn, sizeof(path) - 1, pid);
	put_str(path, &pn, sizeof(path) - 1, "/cmdline", 8);
	path[pn] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (got < sizeof(cmd) - 1) {
		ssize_t r = read(fd, cmd + got, sizeof(cmd) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	cmd[got] = 0;
	static const char *keys[3] = {"arg0 ", "arg1 ", "arg2 "};
	for (size_t at = 0, k = 0; at < got && k < 3; k++) {
		put_str(buf, n, cap, keys[k], 5);
		put_str(buf, n, cap, cmd + at, KJ_SIGNAL_ARG_MAX);
		put_nl(buf, n, cap);
		at += strlen(cmd + at) + 1;
	}
}

/* The file mapped at addr in this process (/proc/self/maps, read with read(2) alone): copied to
 * out (cap bytes, "" when not found or unreadable). */
static void mapped_file_of(uintptr_t addr, char *out, size_t cap)
{
	char buf[4096 + 512];
	size_t have = 0;
	out[0] = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			uintptr_t lo = 0, hi = 0;
			char *c = line;
			for (; *c && *c != '-'; c++)
				lo = lo * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10);
			for (c += *c == '-'; *c && *c != ' '; c++)
				hi = hi * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10);
			if (addr >= lo && addr < hi) {
				const char *path = strchr(line, '/');
				size_t n = 0;
				if (path)
					put_str(out, &n, cap - 1, path, cap - 1);
				out[n] = 0;
				close(fd);
				return;
			}
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have >= sizeof(buf) - 1) /* a line longer than the buffer: drop it */
			have = 0;
	}
	close(fd);
}

static void on_signal(int sig, siginfo_t *si, void *uc);

/* The file of the handler installed now for sig, where it is not ours (a handler installed after
 * ours, which relays to it), into out; "" where there is none. */
static void relay_file(int sig, char *out, size_t cap)
{
	struct sigaction cur;
	out[0] = 0;
	if (sigaction(sig, NULL, &cur) != 0)
		return;
	uintptr_t h = (cur.sa_flags & SA_SIGINFO) ? (uintptr_t)cur.sa_sigaction : (uintptr_t)cur.sa_handler;
	if (h > (uintptr_t)SIG_IGN && h != (uintptr_t)on_signal)
		mapped_file_of(h, out, cap);
}

/* The signal record of sig into tmp_path, renamed to rec_path when whole; caller: the address our
 * handler returns to (the kernel's signal trampoline, or the code that relayed the signal). */
static void write_record(int sig, const siginfo_t *si, const void *caller)
{
	char buf[1024 + 3 * KJ_SIGNAL_ARG_MAX];
	size_t n = 0, cap = sizeof(buf);
	struct timespec ts;
	/* the signal's details, where they came with it: a handler installed after ours that calls
	 * ours as a plain handler (sig alone) hands over no siginfo, or one of another signal */
	int info = si && si->si_signo == sig;
	/* si_pid is meaningful only for a signal a process sent (kill, sigqueue, tgkill); for a
	 * fault the union holds the address there instead */
	int from_process = info && (si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL);
	pid_t sender = from_process ? si->si_pid : 0;
	put_str(buf, &n, cap, KJ_SIGNAL_HEADER, 64);
	put_nl(buf, &n, cap);
	put_line(buf, &n, cap, "signal", sig);
	put_line(buf, &n, cap, "code", info ? si->si_code : 0);
	put_line(buf, &n, cap, "pid", sender);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	put_line(buf, &n, cap, "t_ns", (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	put_line(buf, &n, cap, "info", info);
	if (sender > 0 && sender != owner)
		put_sender_args(buf, &n, cap, sender);
	if (!info) { /* who relayed it: the file of the code that called our handler */
		char file[512] = "";
		if (caller)
			mapped_file_of((uintptr_t)caller, file, sizeof(file));
		/* the C library's signal trampoline: a relay that ended in a tail call returns there
		 * too. The kernel calls the relay, the action installed now: name the file it lives in */
		if (!file[0] || !strcmp(file, libc_path))
			relay_file(sig, file, sizeof(file));
		if (file[0] && strcmp(file, libc_path)) {
			put_str(buf, &n, cap, "via ", 4);
			put_str(buf, &n, cap, file, sizeof(file));
			put_nl(buf, &n, cap);
		}
	}
	int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(fd, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fd);
	if (off == n)
		rename(tmp_path, rec_path);
	else
		unlink(tmp_path);
}

/* Action a for sig as the kernel would take it: its handler called, with the signal's details
 * where it asked for them; an ignored signal dropped. 0 only for the default action (not taken). */
static int take_action(const struct sigaction *a, int sig, siginfo_t *si, void *uc)
{
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(sig, si, uc);
	else if (a->sa_handler == SIG_DFL)
		return 0;
	else if (a->sa_handler != SIG_IGN)
		a->sa_handler(sig);
	return 1;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	const void *caller = __builtin_return_address(0);
	int saved = errno;
	size_t k = 0;
	while (k < NWATCHED && watched[k] != sig)
		k++;
	if (k == NWATCHED)
		return;
	if (has_outer[k] && !in_outer[k]) { /* the later handler first, its details kept */
		in_outer[k] = 1;
		outer_si[k] = si;
		outer_uc[k] = uc;
		take_action(&outer[k], sig, si, uc);
		in_outer[k] = 0;
		errno = saved;
		return;
	}
	if (in_outer[k] && !(si && si->si_signo == sig)) { /* passed on without them */
		si = outer_si[k];
		uc = outer_uc[k];
	}
	const struct sigaction *p = &prev[k];
	if (take_action(p, sig, si, uc))
		return;
	if (getpid() == owner)
		write_record(sig, si, caller);
	/* back to the default, then the same signal again: blocked while this handler runs, it is
	 * delivered (and ends the process) as the handler returns */
	sigaction(sig, p, NULL);
	raise(sig);
	errno = saved;
}

int kj_signal_watch(const char *dir)
{
	int n = 0;
	if (snprintf(rec_path, sizeof(rec_path), "%s/p%ld" KJ_SIGNAL_SUFFIX, dir, (long)getpid()) >=
		    (int)sizeof(rec_path) ||
	    snprintf(tmp_path, sizeof(tmp_path), "%s.tmp", rec_path) >= (int)sizeof(tmp_path))
		return 0;
	owner = getpid();
	mapped_file_of((uintptr_t)&raise, libc_path, sizeof(libc_path));
	for (size_t k = 0; k < NWATCHED; k++) {
		struct sigaction cur, sa;
		if (sigaction(watched[k], NULL, &cur) != 0)
			continue;
		if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
			continue;
		if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal) {
			watched_here[k] = 1;
			n++; /* watched already: ours must never become its own previous action */
			continue;
		}
		prev[k] = cur;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) {
			/* the other watched signals wait while the record is written: one record, whole */
			sigemptyset(&sa.sa_mask);
			for (size_t j = 0; j < NWATCHED; j++)
				sigaddset(&sa.sa_mask, watched[j]);
			sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		} else {
			sa.sa_mask = cur.sa_mask;
			sa.sa_flags = cur.sa_flags | SA_SIGINFO;
		}
		if (sigaction(watched[k], &sa, NULL) == 0) {
			watched_here[k] = 1;
			n++;
		}
	}
	return n;
}

int kj_signal_reassert(void)
{
	int n = 0;
	if (!owner || getpid() != owner)
		return 0;
	for (size_t k = 0; k < NWATCHED; k++) {
		struct sigaction cur, sa;
		/* only the signals other processes send, whose sender is the point; a fault's handler
		 * may leave by siglongjmp (memory probes), which a handler in front of it must not see */
		int sent = watched[k] == SIGTERM || watched[k] == SIGINT || watched[k] == SIGHUP;
		if (!sent || has_outer[k] || sigaction(watched[k], NULL, &cur) != 0)
			continue;
		int ours = (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal;
		int plain = !(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN);
		/* still ours; or set back to the default or ignored: the program's business, as is a
		 * signal we never watched (its previous action is unknown here) */
		if (ours || plain || !watched_here[k])
			continue;
		outer[k] = cur;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		sa.sa_mask = cur.sa_mask;
		sa.sa_flags = (cur.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
		has_outer[k] = 1;
		if (sigaction(watched[k], &sa, NULL) == 0)
			n++;
		else
			has_outer[k] = 0;
	}
	return n;
}
