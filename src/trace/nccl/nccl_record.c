/* The per-process NCCL call file of libkjoule_nccl.so (kj_spool.h, KJ_NCCL_HEADER): lines
 * buffered under a mutex, written every 256 lines, at a call 200 ms or more after the last write,
 * and at exit (atexit and a destructor, whichever comes first). The file is opened at the first call, so a process that never calls NCCL writes
 * nothing; nothing at all is recorded when KJOULE_SPOOL is unset (the library outside kjoule run).
 * A child forked without exec drops the parent's buffered lines and writes a file of its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kj_spool.h"
#include "nccl_shim.h"

#define LINES_PER_WRITE 256
#define LINE_MAX_BYTES 160
/* buffered lines go out at least this often, so a process that dies without running its exit
 * handlers (a signal, _exit) loses at most the calls of its last 200 ms */
#define WRITE_EVERY_NS 200000000LL

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char spool[4096];      /* KJOULE_SPOOL; "" when not recording */
static int fd = -1;
static pid_t owner;           /* the process fd and buf belong to */
static char buf[LINES_PER_WRITE * LINE_MAX_BYTES];
static size_t used, lines;
static long long last_write_ns; /* when the lines last went out (0: never) */
static int failed;

static const int type_bytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

int kj_nccl_type_bytes(kj_nccl_datatype dt)
{
	if (dt < 0 || (size_t)dt >= sizeof(type_bytes) / sizeof(type_bytes[0]))
		return -1;
	return type_bytes[dt];
}

int kj_nccl_recording(void)
{
	return spool[0] != 0;
}

/* With lock held: stop recording, saying why once. */
static void fail_locked(const char *what, const char *path)
{
	failed = 1;
	used = lines = 0;
	fprintf(stderr, "kjoule: %s %s: %s; NCCL calls of process %ld are no longer recorded\n", what, path,
		strerror(errno), (long)getpid());
}

/* With lock held: a forked child forgets the parent's file and lines. */
static void adopt_locked(void)
{
	pid_t me = getpid();
	if (owner == me)
		return;
	if (fd >= 0)
		close(fd);
	fd = -1;
	used = lines = 0;
	owner = me;
}

/* With lock held: write the buffered lines (the file opened, with its header, at the first write). */
static void write_out_locked(void)
{
	char path[4200], head[64];
	size_t off = 0;
	if (failed || !used)
		return;
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/p%ld" KJ_NCCL_SUFFIX, spool, (long)owner);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			fail_locked("cannot create", path);
			return;
		}
		int n = snprintf(head, sizeof(head), KJ_NCCL_HEADER " pid %ld\n", (long)owner);
		if (write(fd, head, (size_t)n) != n) {
			fail_locked("cannot write", path);
			return;
		}
	}
	while (off < used) {
		ssize_t w = write(fd, buf + off, used - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fail_locked("cannot write the NCCL call file in", spool);
			return;
		}
		off += (size_t)w;
	}
	used = lines = 0;
}

void kj_nccl_record(const struct kj_nccl_call *c, int depth)
{
	struct timespec ts;
	long long t_ns;
	if (!spool[0])
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	pthread_mutex_lock(&lock);
	adopt_locked();
	if (!failed) {
		int n = snprintf(buf + used, sizeof(buf) - used, "%lld %ld %s %zu %d %lld %d %d %d\n", t_ns,
				 (long)gettid(), c->op, c->count, c->datatype, (long long)c->bytes, c->nranks,
				 c->peer, depth);
		if (n > 0 && (size_t)n < sizeof(buf) - used) {
			used += (size_t)n;
			lines++;
		}
		if (lines >= LINES_PER_WRITE || sizeof(buf) - used < LINE_MAX_BYTES ||
		    t_ns - last_write_ns >= WRITE_EVERY_NS) {
			write_out_locked();
			last_write_ns = t_ns;
		}
	}
	pthread_mutex_unlock(&lock);
}

/* At exit: the last lines out, the file closed (only the process's own: a forked child that
 * recorded nothing writes nothing). */
static void at_exit(void)
{
	pthread_mutex_lock(&lock);
	adopt_locked();
	write_out_locked();
	if (fd >= 0)
		close(fd);
	fd = -1;
	pthread_mutex_unlock(&lock);
}

static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void after_fork_child(void)
{
	pthread_mutex_unlock(&lock);
	pthread_mutex_lock(&lock);
	adopt_locked();
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void start(void)
{
	const char *dir = getenv("KJOULE_SPOOL");
	if (!dir || !*dir || strlen(dir) >= sizeof(spool))
		return;
	snprintf(spool, sizeof(spool), "%s", dir);
	owner = getpid();
	atexit(at_exit);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

__attribute__((destructor)) static void stop(void)
{
	if (spool[0])
		at_exit();
}
