/* kjoule run: trace an unmodified CUDA program into one run database.
 * The program runs as our child with the injection library named in CUDA_INJECTION64_PATH;
 * each traced process appends to its own spool file in a private directory beside the output;
 * this parent samples power meanwhile, then ingests everything into a temporary database in
 * one transaction and renames it over the output, so a reader never sees a half-written run. */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_db.h"
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_gpu.h"
#include "kj_gpu_watch.h"
#include "kj_ingest.h"

struct run_opts {
	const char *output;
	int params_k;
	int api;
	int snapshot_mb; /* 0: no buffer snapshots */
	int snapshot_graphs; /* --snapshot-graphs: graphs' buffers only, once before their first launch */
	int copy_data_kb; /* keep the bytes of host-to-device copies up to this size (KiB); 0: none */
	int force;
	int params_iteration;
	int runs, warmup;
	const char *iteration_range;
	int power;
	int power_interval_ms;
	int watch_interval_ms; /* 0: do not watch for other processes */
	char **cmd;
};

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t interrupts;   /* SIGINT/SIGTERM/SIGHUP received */
static volatile sig_atomic_t stop_waiting; /* a second SIGINT: keep the trace files and leave */
static volatile sig_atomic_t pending_sig;  /* arrived before the program's pid was known */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule run [-o RUN.kjdb] [--params K | --no-params] [--api[=all]] [--runs N --warmup W]\n"
		"                  [--params-iteration N|auto|none] [--iteration-range NAME] [--snapshot[=MB]]\n"
		"                  [--snapshot-graphs[=MB]] [--copy-data KB]\n"
		"                  [--no-power] [--no-watch] [--watch-interval-ms N]\n"
		"                  [--power-interval-ms N] [--force] -- CMD [ARGS...]\n"
		"Runs CMD (no shell) with kjoule's CUPTI injection library and writes one run database.\n"
		"  -o PATH             output (default kjoule.kjdb); refused if it exists, unless --force\n"
		"  --params K          capture parameters of the first K launches of each unique kernel (1)\n"
		"  --no-params         activity only: no launch parameters (cheapest; no replay later)\n"
		"  --api               also record the CUDA driver and runtime API calls, all but ~45\n"
		"                      query functions (cudaGetDevice, cuCtxGetDevice, ...: docs/tracing.md)\n"
		"  --api=all           every API call, the queries too (they cost ~0.2 us each)\n"
		"  --params-iteration N|auto|none  keep every launch's parameters in the N-th iteration\n"
		"                      (1-based) and its operations in order, for in-sequence replay;\n"
		"                      auto (default): the middle one, when the iteration range repeats\n"
		"  --iteration-range NAME  the NVTX range that marks iterations, for every analysis\n"
		"                      (default: the top-level user range holding the most GPU work)\n"
		"  --snapshot[=MB]     save the device buffers each launch group's first launch points to,\n"
		"                      before and after it (for `kjoule replay --verify`); at most MB MiB\n"
		"                      in all (default 1024). Synchronises around those launches. Graph\n"
		"                      kernels' buffers are saved once, before the first graph launch after\n"
		"                      their capture: sequence replays then run on the program's data\n"
		"  --snapshot-graphs[=MB]  the graphs' buffers alone (one copy per graph, no eager\n"
		"                      launch synchronised; as many as fit in MB MiB, default 4096): what an\n"
		"                      energy-true replay of a graph-launched program needs (docs/replay.md)\n"
		"  --copy-data KB      keep the bytes of each host-to-device copy of up to KB KiB (default\n"
		"                      64; 0: none), 256 MiB in all: a replayed iteration copies what the\n"
		"                      program copied (token ids, positions, block tables of decode loops)\n"
		"  --no-power          do not sample GPU power and energy\n"
		"  --no-watch          do not list the other processes on the GPUs (docs/energy.md)\n"
		"  --watch-interval-ms N  list the processes on the GPUs every N ms (default 200)\n"
		"  --runs N --warmup W run CMD W+N times in one trace; each timed run is an iteration\n"
		"                      (NVTX-like range 'kjoule.run', warm-ups 'kjoule.warmup')\n"
		"SIGINT, SIGTERM and SIGHUP reach CMD and the database is still written; a second\n"
		"SIGINT stops waiting, keeps the trace files and names the kjoule ingest command.\n"
		"Exits with CMD's exit code (127: CMD not found, 128+N: CMD killed by signal N).\n");
}

static int parse(int argc, char **argv, struct run_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = "kjoule.kjdb";
	o->params_k = 1;
	o->copy_data_kb = 64;
	o->params_iteration = KJ_ITERATION_AUTO;
	o->power = 1;
	o->power_interval_ms = 5;
	o->watch_interval_ms = 200;
	o->runs = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			o->cmd = argv + i + 1;
			return argv[i + 1] ? 0 : -1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && next) {
			o->output = next;
			i++;
		} else if (!strcmp(a, "--params") && next) {
			char *end;
			long k = strtol(next, &end, 10);
			if (*end || k < 0 || k > 1000000) {
				kj_errorf("run: --params wants a count 0..1000000, got '%s'", next);
				return -1;
			}
			o->params_k = (int)k;
			i++;
		} else if (!strcmp(a, "--no-params")) {
			o->params_k = 0;
		} else if (!strcmp(a, "--copy-data") && next) {
			if (kj_cli_parse_int_range("run", "--copy-data (KiB)", next, 0, 1048576, &o->copy_data_kb))
				return -1;
			i++;
		} else if (!strcmp(a, "--api")) {
			o->api = 1;
		} else if (!strcmp(a, "--api=all")) {
			o->api = 2;
		} else if (!strcmp(a, "--snapshot")) {
			o->snapshot_mb = 1024;
		} else if (!strcmp(a, "--snapshot-graphs")) {
			o->snapshot_mb = 4096;
			o->snapshot_graphs = 1;
		} else if (!strncmp(a, "--snapshot=", 11) || !strncmp(a, "--snapshot-graphs=", 18)) {
			int graphs = !strncmp(a, "--snapshot-graphs=", 18);
			const char *v = a + (graphs ? 18 : 11);
			char *end;
			long mb = strtol(v, &end, 10);
			if (*end || end == v || mb < 1 || mb > 1048576) {
				kj_errorf("run: %s=MB wants 1..1048576 MiB, got '%s'", graphs ? "--snapshot-graphs" : "--snapshot", v);
				return -1;
			}
			o->snapshot_mb = (int)mb;
			o->snapshot_graphs = graphs;
		} else if (!strcmp(a, "--force")) {
			o->force = 1;
		} else if (!strcmp(a, "--no-power")) {
			o->power = 0;
		} else if (!strcmp(a, "--no-watch")) {
			o->watch_interval_ms = 0;
		} else if (!strcmp(a, "--watch-interval-ms") && next) {
			if (kj_cli_parse_int_range("run", "--watch-interval-ms", next, 20, 60000, &o->watch_interval_ms))
				return -1;
			i++;
		} else if (!strcmp(a, "--power-interval-ms") && next) {
			o->power_interval_ms = atoi(next);
			if (o->power_interval_ms < 1 || o->power_interval_ms > 10000) {
				kj_errorf("run: --power-interval-ms wants 1..10000, got '%s'", next);
				return -1;
			}
			i++;
		} else if ((!strcmp(a, "--runs") || !strcmp(a, "--warmup")) && next) {
			char *end;
			long v = strtol(next, &end, 10);
			int runs = !strcmp(a, "--runs");
			if (*end || v < (runs ? 1 : 0) || v > 100000) {
				kj_errorf("run: %s wants a count %d..100000, got '%s'", a, runs, next);
				return -1;
			}
			if (runs)
				o->runs = (int)v;
			else
				o->warmup = (int)v;
			i++;
		} else if (!strcmp(a, "--params-iteration") && next) {
			if (kj_cli_parse_iteration("run", next, &o->params_iteration))
				return -1;
			i++;
		} else if (!strcmp(a, "--iteration-range") && next) {
			o->iteration_range = next;
			i++;
		} else if (a[0] != '-') {
			o->cmd = argv + i; /* CMD without "--" */
			return 0;
		} else {
			kj_errorf("run: unknown or incomplete option '%s'", a);
			return -1;
		}
	}
	return -1;
}

/* The injection library: $KJ_INJECT_LIB, else beside this binary (build tree or lib/). */
static int find_inject(char *out, size_t len)
{
	static const char *const rel[] = {"src/trace/inject/libkjoule_inject.so", "libkjoule_inject.so",
					  "../lib/libkjoule_inject.so", "../lib/kjoule/libkjoule_inject.so", NULL};
	return kj_cli_find_beside("KJ_INJECT_LIB", rel, R_OK, out, len);
}

/* SIGTERM, SIGHUP, and SIGINT sent by a process (kill, a job scheduler) go on to the program, or
 * to its whole process group where it leads its own; a SIGINT typed at the terminal reached the
 * foreground group, the program included, already (unless it left our group: then it is sent on).
 * A second SIGINT sets stop_waiting. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "kjoule: interrupted: waiting for the program to end and writing the "
				  "run (interrupt again to stop waiting and keep the trace files)\n";
	pid_t c = child_pid;
	(void)uc;
	if (sig == SIGINT && interrupts > 0 && !stop_waiting) {
		stop_waiting = 1;
		return;
	}
	if (sig == SIGINT && !interrupts) {
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
	}
	interrupts++;
	if (c <= 0) {
		pending_sig = sig; /* start_child sends it on */
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

static void install_signals(void)
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

static void iso_now(char *buf, size_t len)
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
static pid_t start_child(char **cmd, int *exec_errno)
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
	child_pid = pid; /* before the exec is confirmed: a signal may come at once */
	if (pending_sig)
		kill(pid, pending_sig);
	pending_sig = 0;
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
 * 2 (stop_waiting was set: the program may still run), -1 (no child). */
static int wait_all(pid_t child, int *status, int grace_s)
{
	int st = 0, have = 0;
	int64_t deadline = 0;
	for (;;) {
		int s;
		if (stop_waiting)
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

static json_t *command_json(char **cmd)
{
	json_t *a = json_array();
	for (char **c = cmd; *c; c++)
		json_array_append_new(a, json_string(*c));
	return a;
}

static void set_meta_int(sqlite3 *db, const char *key, long long v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", v);
	kj_db_meta_set(db, key, buf);
}

static int remove_tree(const char *dir)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *e;
	d = opendir(dir);
	if (d) {
		while ((e = readdir(d)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	return rmdir(dir);
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o;
	char inject[PATH_MAX], outdir[PATH_MAX], spool[PATH_MAX], tmpdb[PATH_MAX], started_iso[40];
	char *base, *dcopy, *bcopy;
	struct kj_sampler *sampler = NULL;
	struct kj_ingest_stats stats;
	sqlite3 *db = NULL;
	int traced = 1, status = 0, exec_errno = 0, exit_code, rc = 0;
	int64_t start_ns, end_ns;
	pid_t pid = -1;
	int total_runs = 1, done_runs = 0;
	int64_t *run_span = NULL;
	pid_t *run_pid = NULL;

	if (parse(argc, argv, &o) != 0) {
		usage(stderr);
		return 2;
	}
	if (!o.params_k && o.params_iteration > 0) {
		kj_errorf("run: --params-iteration needs launch parameters: drop --no-params");
		return 2;
	}
	if (!o.params_k)
		o.params_iteration = 0;
	if (o.snapshot_mb && !o.params_k) {
		kj_errorf("run: --snapshot%s needs launch parameters (it saves what they point to): drop --no-params",
			  o.snapshot_graphs ? "-graphs" : "");
		return 2;
	}
	struct stat sb;
	if (lstat(o.output, &sb) == 0 && !o.force) {
		kj_errorf("run: %s exists; choose another -o or add --force", o.output);
		return 1;
	}
	if (lstat(o.output, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		kj_errorf("run: %s exists and is not a regular file; not replacing it", o.output);
		return 1;
	}
	dcopy = strdup(o.output);
	bcopy = strdup(o.output);
	if (!dcopy || !bcopy)
		return 1;
	snprintf(outdir, sizeof(outdir), "%s", dirname(dcopy));
	base = basename(bcopy);
	if (snprintf(spool, sizeof(spool), "%s/.%s.spool.XXXXXX", outdir, base) >= (int)sizeof(spool)) {
		kj_errorf("run: output path too long: %s", o.output);
		return 1;
	}
	if (!mkdtemp(spool)) {
		kj_errorf("run: cannot create a temporary directory in %s: %s", outdir, strerror(errno));
		return 1;
	}
	if (find_inject(inject, sizeof(inject)) != 0) {
		kj_warnf("run: injection library libkjoule_inject.so not found (set KJ_INJECT_LIB): "
			 "the program runs untraced");
		traced = 0;
	}
	if (traced) {
		char k[16];
		setenv("CUDA_INJECTION64_PATH", inject, 1);
		setenv("NVTX_INJECTION64_PATH", inject, 1);
		setenv("KJOULE_SPOOL", spool, 1);
		snprintf(k, sizeof(k), "%d", o.params_k);
		setenv("KJOULE_PARAMS_K", k, 1);
		setenv("KJOULE_API", o.api == 2 ? "2" : o.api ? "1" : "0", 1);
		snprintf(k, sizeof(k), "%d", o.snapshot_mb);
		setenv("KJOULE_SNAPSHOT_MB", k, 1);
		setenv("KJOULE_SNAPSHOT_GRAPHS_ONLY", o.snapshot_graphs ? "1" : "0", 1);
		snprintf(k, sizeof(k), "%d", o.copy_data_kb);
		setenv("KJOULE_COPY_DATA_KB", k, 1);
	}
	if (o.power) {
		struct kj_sampler_opts so = {.interval_us = o.power_interval_ms * 1000,
					     .watch_interval_ms = o.watch_interval_ms};
		if (kj_sampler_start(&so, &sampler) != 0) {
			kj_warnf("run: GPU power is not sampled (no NVML): the run has no energy figures");
			sampler = NULL;
		}
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	iso_now(started_iso, sizeof(started_iso));
	start_ns = kj_now_ns();
	signal(SIGQUIT, SIG_IGN);
	install_signals(); /* the program gets SIGINT/SIGTERM/SIGHUP; we write what it did */
	total_runs = o.warmup + o.runs;
	run_span = calloc((size_t)total_runs * 2, sizeof(*run_span));
	run_pid = calloc((size_t)total_runs, sizeof(*run_pid));
	if (!run_span || !run_pid)
		return 1;
	for (int r = 0; r < total_runs; r++) {
		run_span[2 * r] = kj_now_ns();
		pid = start_child(o.cmd, &exec_errno);
		if (pid < 0) {
			kj_errorf("run: %s: %s", o.cmd[0], strerror(exec_errno));
			kj_sampler_stop(sampler);
			kj_sampler_close(sampler);
			remove_tree(spool);
			free(run_span);
			free(run_pid);
			return exec_errno == ENOENT || exec_errno == EACCES ? 127 : 126;
		}
		child_pid = pid;
		run_pid[r] = pid;
		rc = wait_all(pid, &status, 10);
		if (rc == 2) {
			/* a second interrupt: the program may still be writing; leave its files whole */
			kj_sampler_stop(sampler);
			kj_sampler_close(sampler);
			fprintf(stderr, "kjoule: stopped waiting for the program (pid %d), which may still run; no "
				"database written. Trace files kept in %s; when the program has ended, build the run "
				"with:\n  kjoule ingest %s -o %s\n(power samples are not kept)\n",
				(int)pid, spool, spool, o.output);
			free(run_span);
			free(run_pid);
			free(dcopy);
			free(bcopy);
			return 130;
		}
		child_pid = 0; /* ended: nothing more to forward to */
		run_span[2 * r + 1] = kj_now_ns();
		done_runs++;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || interrupts)
			break; /* a failing or interrupted run ends the series: its code is the answer */
	}
	end_ns = kj_now_ns();
	kj_sampler_stop(sampler);
	if (WIFEXITED(status))
		exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		exit_code = 128 + WTERMSIG(status);
	else
		exit_code = 1;

	if (snprintf(tmpdb, sizeof(tmpdb), "%s/.%s.XXXXXX.tmp", outdir, base) >= (int)sizeof(tmpdb))
		goto fail;
	{
		int fd = mkstemps(tmpdb, 4);
		if (fd < 0) {
			kj_errorf("run: cannot create a temporary file in %s: %s", outdir, strerror(errno));
			goto fail;
		}
		close(fd);
		unlink(tmpdb); /* kj_db_create wants to create it itself; the name stays ours */
	}
	if (kj_db_create(tmpdb, &db) != 0)
		goto fail;
	kj_db_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", "pragmas");
	if (kj_db_exec(db, "BEGIN", "begin"))
		goto fail;
	memset(&stats, 0, sizeof(stats));
	if (sampler && kj_sampler_write_db(sampler, db) != 0)
		kj_warnf("run: power samples could not be written");
	struct kj_ingest_opts io = {o.params_k, o.params_iteration, o.iteration_range};
	if (kj_ingest_dir(db, spool, &io, &stats) != 0)
		kj_warnf("run: some trace files could not be read (see the problem table)");
	if (sampler) {
		int64_t *own = calloc((size_t)done_runs + 1, sizeof(*own));
		for (int r = 0; own && r < done_runs; r++)
			own[r] = run_pid[r];
		if (!own || kj_gpu_watch_write_db(sampler, db, own, (size_t)done_runs, o.watch_interval_ms) != 0)
			kj_warnf("run: the watch for other processes could not be written");
		free(own);
		const struct kj_watch_row *wr;
		const int64_t *wl;
		size_t wn, wnl;
		const char *why;
		if (kj_sampler_watch(sampler, 0, &wr, &wn, &wl, &wnl, &why) == KJ_WATCH_BLIND)
			kj_warnf("run: %s", why);
	}
	{
		json_t *cmd = command_json(o.cmd);
		char *text = json_dumps(cmd, JSON_COMPACT);
		char cwd[PATH_MAX], opts[256];
		kj_db_meta_set(db, "command", text ? text : "[]");
		free(text);
		json_decref(cmd);
		if (getcwd(cwd, sizeof(cwd)))
			kj_db_meta_set(db, "cwd", cwd);
		kj_db_meta_set(db, "clock", "CLOCK_MONOTONIC");
		kj_db_meta_set(db, "start_realtime", started_iso);
		set_meta_int(db, "start_ns", start_ns);
		set_meta_int(db, "end_ns", end_ns);
		set_meta_int(db, "exit_code", exit_code);
		set_meta_int(db, "pid", pid);
		kj_db_meta_set(db, "end_status", WIFSIGNALED(status) ? "signaled" : "exited");
		if (WIFSIGNALED(status))
			set_meta_int(db, "signal", WTERMSIG(status));
		if (interrupts)
			set_meta_int(db, "interrupts", interrupts);
		snprintf(opts, sizeof(opts), "{\"params_k\":%d,\"api\":%d,\"params_iteration\":%d,\"power\":%d,"
			 "\"power_interval_ms\":%d,\"snapshot_mb\":%d,\"snapshot_graphs_only\":%d,\"copy_data_kb\":%d,"
			 "\"watch_interval_ms\":%d}",
			 o.params_k, o.api, o.params_iteration, sampler != NULL, o.power_interval_ms, o.snapshot_mb,
			 o.snapshot_graphs, o.params_k ? o.copy_data_kb : 0,
			 sampler ? o.watch_interval_ms : 0);
		kj_db_meta_set(db, "capture", opts);
		kj_db_meta_set(db, "traced", traced ? "1" : "0");
		if (!traced)
			kj_db_problem(db, -1, -1, "error", "injection library not found: nothing was traced");
		if (!sampler && o.power)
			kj_db_problem(db, -1, -1, "warning", "NVML not available: no power or energy samples");
		if (rc == 1)
			kj_db_problem(db, -1, -1, "warning",
				      "processes started by the program were still running 10 s after it ended; "
				      "their trace was taken as it stood");
		if (total_runs > 1) {
			/* each run of the series as a top-level range, so compare takes runs as iterations */
			sqlite3_stmt *st = NULL;
			set_meta_int(db, "runs", o.runs);
			set_meta_int(db, "warmup_runs", o.warmup);
			if (kj_db_prepare(db, "INSERT INTO nvtx_range(pid, tid, domain, name, start_ns, end_ns,"
					  " depth, kind) VALUES(?, ?, 'kjoule', ?, ?, ?, 0, 'run')", &st) == 0) {
				for (int r = 0; r < done_runs; r++) {
					sqlite3_bind_int64(st, 1, run_pid[r]);
					sqlite3_bind_int64(st, 2, run_pid[r]);
					sqlite3_bind_text(st, 3, r < o.warmup ? "kjoule.warmup" : "kjoule.run", -1,
							  SQLITE_STATIC);
					sqlite3_bind_int64(st, 4, run_span[2 * r]);
					sqlite3_bind_int64(st, 5, run_span[2 * r + 1]);
					sqlite3_step(st);
					sqlite3_reset(st);
				}
				sqlite3_finalize(st);
			}
		}
		if (traced && stats.processes == 0)
			kj_db_problem(db, -1, -1, "warning",
				      "no process initialised CUDA: nothing on the GPU was recorded");
	}
	if (kj_db_exec(db, "COMMIT", "commit"))
		goto fail;
	kj_db_close(db);
	db = NULL;
	if (rename(tmpdb, o.output) != 0) {
		kj_errorf("run: cannot rename %s to %s: %s", tmpdb, o.output, strerror(errno));
		goto fail;
	}
	remove_tree(spool);
	kj_sampler_close(sampler);
	free(run_span);
	free(run_pid);
	fprintf(stderr,
		"kjoule: wrote %s: %lld processes, %lld kernels (%lld unique), %lld copies, %lld memsets,"
		" %lld NVTX ranges, %lld modules, %lld parameter captures\n",
		o.output, (long long)stats.processes, (long long)stats.kernels,
		(long long)stats.unique_kernels, (long long)stats.memcpys, (long long)stats.memsets,
		(long long)stats.nvtx_ranges, (long long)stats.modules, (long long)stats.params);
	free(dcopy);
	free(bcopy);
	return exit_code;
fail:
	free(run_span);
	free(run_pid);
	kj_db_close(db);
	unlink(tmpdb);
	kj_errorf("run: trace files kept in %s (kjoule ingest %s -o RUN.kjdb)", spool, spool);
	kj_sampler_close(sampler);
	free(dcopy);
	free(bcopy);
	return exit_code ? exit_code : 1;
}
