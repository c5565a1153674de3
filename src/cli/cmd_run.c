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
#include "kj_iterations.h"

#include "cmd_run.h"


/* The injection library: $KJ_INJECT_LIB, else beside this binary (build tree or lib/). */
static int find_inject(char *out, size_t len)
{
	static const char *const rel[] = {"src/trace/inject/libkjoule_inject.so", "libkjoule_inject.so",
					  "../lib/libkjoule_inject.so", "../lib/kjoule/libkjoule_inject.so", NULL};
	return kj_cli_find_beside("KJ_INJECT_LIB", rel, R_OK, out, len);
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
	struct kj_capture_summary capture = {0};
	sqlite3 *db = NULL;
	int traced = 1, status = 0, exec_errno = 0, exit_code, rc = 0;
	int64_t start_ns, end_ns;
	pid_t pid = -1;
	int total_runs = 1, done_runs = 0;
	int64_t *run_span = NULL;
	pid_t *run_pid = NULL;

	if (kj_run_parse(argc, argv, &o) != 0) {
		kj_run_usage(stderr);
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
		if (o.capture.mode != KJ_CAPTURE_NONE) {
			char spec[KJ_CAPTURE_NAME_MAX + 48];
			kj_capture_format(&o.capture, spec, sizeof(spec));
			setenv("KJOULE_CAPTURE", spec, 1);
		} else {
			unsetenv("KJOULE_CAPTURE");
		}
	}
	/* NVLink multicast (NVLS) off in the program and every process it starts, unless the user
	 * chose: its multicast objects are not supported on every lent machine (docs/multi-gpu.md) */
	setenv("NCCL_NVLS_ENABLE", "0", 0);
	setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 0);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
	if (o.power) {
		struct kj_sampler_opts so = {.interval_us = o.power_interval_ms * 1000,
					     .watch_interval_ms = o.watch_interval_ms};
		if (kj_sampler_start(&so, &sampler) != 0) {
			kj_warnf("run: GPU power is not sampled (no NVML): the run has no energy figures");
			sampler = NULL;
		}
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	kj_run_iso_now(started_iso, sizeof(started_iso));
	start_ns = kj_now_ns();
	signal(SIGQUIT, SIG_IGN);
	kj_run_install_signals(); /* the program gets SIGINT/SIGTERM/SIGHUP; we write what it did */
	total_runs = o.warmup + o.runs;
	run_span = calloc((size_t)total_runs * 2, sizeof(*run_span));
	run_pid = calloc((size_t)total_runs, sizeof(*run_pid));
	if (!run_span || !run_pid)
		return 1;
	for (int r = 0; r < total_runs; r++) {
		run_span[2 * r] = kj_now_ns();
		pid = kj_run_start_child(o.cmd, &exec_errno);
		if (pid < 0) {
			kj_errorf("run: %s: %s", o.cmd[0], strerror(exec_errno));
			kj_sampler_stop(sampler);
			kj_sampler_close(sampler);
			remove_tree(spool);
			free(run_span);
			free(run_pid);
			return exec_errno == ENOENT || exec_errno == EACCES ? 127 : 126;
		}
		kj_run_child_pid = pid;
		run_pid[r] = pid;
		rc = kj_run_wait_all(pid, &status, 10);
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
		kj_run_child_pid = 0; /* ended: nothing more to forward to */
		run_span[2 * r + 1] = kj_now_ns();
		done_runs++;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || kj_run_interrupts)
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
	/* a capture run's iterations are its capture range's instances, unless told otherwise */
	if (!o.iteration_range && o.capture.mode == KJ_CAPTURE_NVTX)
		o.iteration_range = o.capture.name;
	else if (!o.iteration_range && o.capture.mode == KJ_CAPTURE_PROFILER)
		o.iteration_range = KJ_CAPTURE_PROFILER_TEXT;
	struct kj_ingest_opts io = {o.params_k, o.params_iteration, o.iteration_range, kj_iter_default_range};
	if (kj_ingest_dir(db, spool, &io, &stats) != 0)
		kj_warnf("run: some trace files could not be read (see the problem table)");
	if (o.capture.mode != KJ_CAPTURE_NONE) {
		char spec[KJ_CAPTURE_NAME_MAX + 48];
		kj_capture_format(&o.capture, spec, sizeof(spec));
		if (kj_ingest_capture_finish(db, spec, &capture) != 0)
			kj_warnf("run: the capture window could not be written");
	}
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
		if (kj_run_interrupts)
			set_meta_int(db, "interrupts", kj_run_interrupts);
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
	if (capture.active)
		kj_run_capture_say(&capture, &o.capture);
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
