/* kj_proc, the worker host, against stand-in workers (small shell scripts written here): lines in
 * order, requests answered, a silent worker killed at its limit with its whole process group, a
 * crash reported as its signal, stderr relayed (and filtered) apart from stdout, output larger
 * than a pipe's buffer without a deadlock, overlong lines dropped whole, the environment added,
 * an unrunnable command, a restart, several workers polled at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kj_error.h"
#include "kj_proc.h"
#include "tmpdir.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A stand-in worker: `body` as a /bin/sh script in the test directory; its path into path. */
static void worker(const char *name, const char *body, char *path, size_t len)
{
	snprintf(path, len, "%s/%s.sh", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0755);
}

/* Lines collected by kj_proc_run's callback. */
struct lines {
	char **v;
	size_t n;
};

static void collect(const char *line, void *arg)
{
	struct lines *l = arg;
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = strdup(line);
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Our stderr into a file while fn runs; what was written there into out (NUL-terminated). */
static int saved_err = -1;
static char err_path[300];
static void err_capture_begin(void)
{
	snprintf(err_path, sizeof(err_path), "%s/stderr.txt", dir);
	fflush(stderr);
	saved_err = dup(2);
	int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	dup2(fd, 2);
	close(fd);
}

static void err_capture_end(char *out, size_t len)
{
	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	FILE *f = fopen(err_path, "r");
	assert_non_null(f);
	size_t n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
}

/* Every line, in order, once; the exit status. */
static void test_lines_in_order(void **state)
{
	(void)state;
	char path[400];
	struct lines l = {0};
	int status = -1, timed_out = -1;
	worker("count", "i=1; while [ $i -le 500 ]; do echo \"line $i\"; i=$((i+1)); done; exit 3", path,
	       sizeof(path));
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.limit_s = 10};
	assert_int_equal(kj_proc_run(argv, &o, collect, &l, &status, &timed_out), 0);
	assert_int_equal(timed_out, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	assert_int_equal(l.n, 500);
	for (size_t i = 0; i < l.n; i++) {
		char want[32];
		snprintf(want, sizeof(want), "line %zu", i + 1);
		assert_string_equal(l.v[i], want);
	}
	lines_free(&l);
}

/* Requests on stdin, one answer each; EOF on stdin ends it; the status is read back. */
static void test_requests(void **state)
{
	(void)state;
	char path[400], line[64], why[128];
	worker("echo", "while read r; do echo \"chatter\"; echo \"ans $r\"; done; exit 0", path, sizeof(path));
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.requests = 1, .limit_s = 10};
	struct kj_proc *p;
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	for (int i = 0; i < 3; i++) {
		char req[32], want[32];
		snprintf(req, sizeof(req), "q%d\n", i);
		snprintf(want, sizeof(want), "ans q%d", i);
		assert_int_equal(kj_proc_send(p, req), 0);
		assert_int_equal(kj_proc_line(p, line, sizeof(line)), 0);
		assert_string_equal(line, "chatter");
		assert_int_equal(kj_proc_line(p, line, sizeof(line)), 0);
		assert_string_equal(line, want);
	}
	assert_false(kj_proc_ended(p));
	kj_proc_describe_exit(p, why, sizeof(why));
	assert_string_equal(why, "still running");
	kj_proc_wait(p, 5);
	assert_true(kj_proc_ended(p));
	assert_true(WIFEXITED(kj_proc_status(p)) && WEXITSTATUS(kj_proc_status(p)) == 0);
	assert_int_equal(kj_proc_send(p, "late\n"), KJ_EIO); /* its stdin is closed */
	kj_proc_close(p);
}

/* A worker silent past its limit: killed, its whole group (the child holding its stdout too),
 * reported as timed out; the lines before it kept. */
static void test_silent_killed(void **state)
{
	(void)state;
	char path[400], line[64];
	struct lines l = {0};
	int status = 0, timed_out = 0;
	worker("silent", "echo started; sleep 30; echo never", path, sizeof(path));
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.limit_s = 0.5};
	double t0 = now_s();
	assert_int_equal(kj_proc_run(argv, &o, collect, &l, &status, &timed_out), 0);
	double took = now_s() - t0;
	assert_int_equal(timed_out, 1);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_true(took >= 0.45 && took < 5);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0], "started");
	lines_free(&l);

	/* the same through kj_proc_line: KJ_ETIMEDOUT, and the sleep (its child) is gone too: a
	 * second handle's poll sees its stdout end (the sleep held it open) */
	struct kj_proc *p;
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	assert_int_equal(kj_proc_line(p, line, sizeof(line)), 0);
	assert_int_equal(kj_proc_line(p, line, sizeof(line)), KJ_ETIMEDOUT);
	assert_true(kj_proc_timed_out(p));
	kj_proc_close(p);
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	t0 = now_s();
	while (!kj_proc_eof(p) && now_s() - t0 < 5)
		assert_int_equal(kj_proc_poll(&p, 1, 200), 0);
	assert_true(kj_proc_eof(p));
	assert_true(kj_proc_timed_out(p));
	assert_true(now_s() - t0 < 3);
	kj_proc_close(p);
}

/* The limit from the last request (KJ_PROC_REQUEST): chatter does not hold it off; from the
 * last output (KJ_PROC_SILENCE): it does. */
static void test_limit_clocks(void **state)
{
	(void)state;
	char path[400];
	struct lines l = {0};
	int status = 0, timed_out = 0;
	worker("chatter", "i=0; while [ $i -lt 8 ]; do echo tick; sleep 0.2; i=$((i+1)); done", path, sizeof(path));
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.limit_s = 0.8, .clock = KJ_PROC_SILENCE};
	assert_int_equal(kj_proc_run(argv, &o, collect, &l, &status, &timed_out), 0);
	assert_int_equal(timed_out, 0);
	assert_int_equal(l.n, 8);
	lines_free(&l);
	o.clock = KJ_PROC_REQUEST;
	assert_int_equal(kj_proc_run(argv, &o, collect, &l, &status, &timed_out), 0);
	assert_int_equal(timed_out, 1);
	assert_true(l.n >= 2 && l.n < 8);
	lines_free(&l);

	/* a limit changed after the start (a request longer or shorter than the others) */
	char line[64];
	struct kj_proc *p;
	o.limit_s = 10;
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	kj_proc_set_limit(p, 0.3);
	double t0 = now_s();
	int rc;
	while (!(rc = kj_proc_line(p, line, sizeof(line))))
		;
	assert_int_equal(rc, KJ_ETIMEDOUT);
	assert_true(now_s() - t0 < 1.5);
	kj_proc_close(p);
}

/* A crash: the signal reported, in words too. */
static void test_crash(void **state)
{
	(void)state;
	char path[400], line[64], why[128];
	worker("crash", "read r; echo dying; kill -SEGV $$", path, sizeof(path));
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.requests = 1, .limit_s = 10};
	struct kj_proc *p;
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	assert_int_equal(kj_proc_send(p, "go\n"), 0);
	assert_int_equal(kj_proc_line(p, line, sizeof(line)), 0);
	assert_string_equal(line, "dying");
	assert_int_equal(kj_proc_line(p, line, sizeof(line)), KJ_EIO);
	assert_false(kj_proc_timed_out(p));
	assert_true(kj_proc_ended(p));
	assert_true(WIFSIGNALED(kj_proc_status(p)) && WTERMSIG(kj_proc_status(p)) == SIGSEGV);
	kj_proc_describe_exit(p, why, sizeof(why));
	assert_non_null(strstr(why, "worker killed by signal 11 ("));
	kj_proc_close(p);

	/* a worker that closed its stdin (and then ended, not yet reaped): the write fails (EPIPE),
	 * and no SIGPIPE kills us */
	worker("gone", "exec 0<&-; echo bye", path, sizeof(path));
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	double t0 = now_s();
	while (!kj_proc_eof(p) && now_s() - t0 < 5)
		assert_int_equal(kj_proc_poll(&p, 1, 200), 0);
	assert_true(kj_proc_eof(p));
	assert_int_equal(kj_proc_send(p, "again\n"), KJ_EIO);
	kj_proc_close(p);
}

/* Drops lines naming "drop"; counts them. */
static int keep_no_drop(const char *line, void *arg)
{
	if (strstr(line, "drop")) {
		++*(int *)arg;
		return 0;
	}
	return 1;
}

/* stderr apart from stdout: captured and relayed after the end (filtered), or ours directly. */
static void test_stderr(void **state)
{
	(void)state;
	char path[400], err[4096];
	struct lines l = {0};
	int status, timed_out, dropped = 0;
	worker("streams", "echo out1; echo err1 >&2; echo drop me >&2; echo out2; printf 'err2' >&2", path,
	       sizeof(path));
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.limit_s = 10, .capture_stderr = 1, .stderr_keep = keep_no_drop,
				 .stderr_arg = &dropped};
	err_capture_begin();
	int rc = kj_proc_run(argv, &o, collect, &l, &status, &timed_out);
	err_capture_end(err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[0], "out1");
	assert_string_equal(l.v[1], "out2");
	assert_string_equal(err, "err1\nerr2");
	assert_int_equal(dropped, 1);
	lines_free(&l);

	/* inherited: straight onto ours, nothing filtered */
	struct kj_proc_opts inh = {.limit_s = 10};
	err_capture_begin();
	rc = kj_proc_run(argv, &inh, collect, &l, &status, &timed_out);
	err_capture_end(err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(err, "err1\ndrop me\nerr2");
	lines_free(&l);
}

/* Far more than a pipe holds on stdout and stderr at once, then an answer to a request: no
 * deadlock, nothing lost; a line longer than KJ_PROC_LINE_MAX dropped whole. */
static void test_large_output(void **state)
{
	(void)state;
	char path[400], err[256];
	struct lines l = {0};
	int status, timed_out;
	worker("flood", "i=0; while [ $i -lt 4000 ]; do "
	       "echo \"$i 0123456789012345678901234567890123456789012345678901234567890123456789\"; "
	       "echo \"e$i 0123456789012345678901234567890123456789\" >&2; i=$((i+1)); done; "
	       "head -c 20000 /dev/zero | tr '\\0' x; echo; echo after", path, sizeof(path));
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.limit_s = 20, .capture_stderr = 1};
	err_capture_begin();
	int rc = kj_proc_run(argv, &o, collect, &l, &status, &timed_out);
	err_capture_end(err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(timed_out, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(l.n, 4001);
	for (size_t i = 0; i < 4000; i += 999)
		assert_int_equal(atoi(l.v[i]), (int)i);
	assert_string_equal(l.v[4000], "after");
	assert_int_equal(strncmp(err, "e0 ", 3), 0);
	lines_free(&l);

	/* stderr inherited (a pipe nobody reads would be the deadlock): 300 KB to our stderr file */
	struct kj_proc_opts inh = {.limit_s = 20};
	err_capture_begin();
	rc = kj_proc_run(argv, &inh, collect, &l, &status, &timed_out);
	err_capture_end(err, sizeof(err));
	assert_int_equal(timed_out, 0);
	assert_int_equal(l.n, 4001);
	lines_free(&l);
}

/* The environment: entries added and overriding ours (once, not doubled), the rest of ours kept. */
static void test_env(void **state)
{
	(void)state;
	struct lines l = {0};
	int status, timed_out, keep = 0, over = 0, add = 0;
	setenv("KJ_PROC_T_KEEP", "kept", 1);
	setenv("KJ_PROC_T_OVER", "ours", 1);
	char *argv[] = {"/usr/bin/env", NULL}; /* the environment as given, not a shell's view of it */
	const char *env[] = {"KJ_PROC_T_OVER=theirs", "KJ_PROC_T_NEW=new", NULL};
	struct kj_proc_opts o = {.limit_s = 10, .env = env};
	assert_int_equal(kj_proc_run(argv, &o, collect, &l, &status, &timed_out), 0);
	for (size_t i = 0; i < l.n; i++) {
		keep += !strcmp(l.v[i], "KJ_PROC_T_KEEP=kept");
		over += !strncmp(l.v[i], "KJ_PROC_T_OVER=", 15);
		add += !strcmp(l.v[i], "KJ_PROC_T_NEW=new");
		if (!strncmp(l.v[i], "KJ_PROC_T_OVER=", 15))
			assert_string_equal(l.v[i], "KJ_PROC_T_OVER=theirs");
	}
	assert_int_equal(keep, 1);
	assert_int_equal(over, 1);
	assert_int_equal(add, 1);
	assert_string_equal(getenv("KJ_PROC_T_OVER"), "ours"); /* ours untouched */
	lines_free(&l);
}

/* A command that cannot run: exit 127 and the reason on (captured) stderr. */
static void test_cannot_run(void **state)
{
	(void)state;
	char path[400], err[512];
	struct lines l = {0};
	int status, timed_out;
	snprintf(path, sizeof(path), "%s/no-such-worker", dir);
	char *argv[] = {path, NULL};
	struct kj_proc_opts o = {.limit_s = 10, .capture_stderr = 1};
	err_capture_begin();
	int rc = kj_proc_run(argv, &o, collect, &l, &status, &timed_out);
	err_capture_end(err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 127);
	assert_non_null(strstr(err, "kjoule: cannot run "));
	assert_non_null(strstr(err, "no-such-worker: No such file or directory"));
	assert_int_equal(l.n, 0);
}

/* A worker that ends after each request: restarted with the same command, it answers again. A
 * worker that ignores EOF on its stdin is killed after the grace. */
static void test_restart_and_grace(void **state)
{
	(void)state;
	char path[400], line[64];
	worker("once", "read r; echo \"ans $r $KJ_PROC_T_NEW\"", path, sizeof(path));
	char *argv[] = {path, NULL};
	const char *env[] = {"KJ_PROC_T_NEW=env", NULL};
	struct kj_proc_opts o = {.requests = 1, .limit_s = 10, .env = env};
	struct kj_proc *p;
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	argv[0] = "/nonexistent"; /* the handle keeps its own copy */
	for (int i = 0; i < 2; i++) {
		if (i) {
			assert_true(kj_proc_ended(p));
			assert_int_equal(kj_proc_restart(p), 0);
			assert_false(kj_proc_ended(p));
		}
		assert_int_equal(kj_proc_send(p, i ? "b\n" : "a\n"), 0);
		assert_int_equal(kj_proc_line(p, line, sizeof(line)), 0);
		assert_string_equal(line, i ? "ans b env" : "ans a env");
		assert_int_equal(kj_proc_line(p, line, sizeof(line)), KJ_EIO);
	}
	kj_proc_close(p);

	worker("stubborn", "trap '' TERM; exec sleep 30 < /dev/null", path, sizeof(path));
	argv[0] = path;
	assert_int_equal(kj_proc_spawn(argv, &o, &p), 0);
	double t0 = now_s();
	kj_proc_wait(p, 0.3);
	assert_true(now_s() - t0 < 3);
	assert_true(WIFSIGNALED(kj_proc_status(p)) && WTERMSIG(kj_proc_status(p)) == SIGKILL);
	assert_false(kj_proc_timed_out(p));
	kj_proc_close(p);
}

/* Several at once: each one's lines to it, one killed at its limit, the other answering. */
static void test_poll_many(void **state)
{
	(void)state;
	char fast[400], slow[400], line[64];
	worker("fast", "while read r; do echo \"fast $r\"; done", fast, sizeof(fast));
	worker("slow", "while read r; do sleep 30; done", slow, sizeof(slow));
	char *af[] = {fast, NULL}, *as[] = {slow, NULL};
	struct kj_proc_opts o = {.requests = 1, .limit_s = 0.5, .clock = KJ_PROC_REQUEST};
	struct kj_proc *p[3] = {NULL, NULL, NULL};
	assert_int_equal(kj_proc_spawn(af, &o, &p[0]), 0);
	assert_int_equal(kj_proc_spawn(as, &o, &p[2]), 0); /* p[1] NULL: left out */
	assert_int_equal(kj_proc_send(p[0], "x\n"), 0);
	assert_int_equal(kj_proc_send(p[2], "y\n"), 0);
	int got = 0;
	double t0 = now_s();
	while (!kj_proc_eof(p[2]) && now_s() - t0 < 5) {
		struct kj_proc *busy[3] = {got ? NULL : p[0], NULL, p[2]}; /* an idle one is not timed */
		assert_int_equal(kj_proc_poll(busy, 3, 1000), 0);
		while (kj_proc_next_line(p[0], line, sizeof(line))) {
			assert_string_equal(line, "fast x");
			got++;
		}
		assert_int_equal(kj_proc_next_line(p[2], line, sizeof(line)), 0);
	}
	assert_int_equal(got, 1);
	assert_true(kj_proc_eof(p[2]) && kj_proc_timed_out(p[2]));
	assert_false(kj_proc_timed_out(p[0])); /* its answer came in time */
	assert_false(kj_proc_ended(p[0]));
	kj_proc_close(p[0]);
	kj_proc_close(p[2]);
}

int main(void)
{
	alarm(60); /* a deadlock in the host fails the test instead of hanging it */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_in_order),  cmocka_unit_test(test_requests),
		cmocka_unit_test(test_silent_killed),   cmocka_unit_test(test_limit_clocks),
		cmocka_unit_test(test_crash),           cmocka_unit_test(test_stderr),
		cmocka_unit_test(test_large_output),    cmocka_unit_test(test_env),
		cmocka_unit_test(test_cannot_run),      cmocka_unit_test(test_restart_and_grace),
		cmocka_unit_test(test_poll_many),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
