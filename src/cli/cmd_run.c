/* kjoule run: trace an unmodified CUDA program into one run database.
 * The program runs as our child with the injection library named in CUDA_INJECTION64_PATH;
 * each traced process appends to its own spool file in a private directory beside the output;
 * this parent samples power meanwhile, then ingests everything into a temporary database in
 * one transaction and renames it over the output, so a reader never sees a half-written run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#include "kj_energy.h"
#include "kj_error.h"
#include "kj_gpu.h"

#include "cmd_run.h"

/* The injection library: $KJ_INJECT_LIB, else beside this binary (build tree or lib/). */
static int find_inject(char *out, size_t len)
{
	static const char *const rel[] = {"src/trace/inject/libkjoule_inject.so", "libkjoule_inject.so",
					  "../lib/libkjoule_inject.so", "../lib/kjoule/libkjoule_inject.so", NULL};
	return kj_cli_find_beside("KJ_INJECT_LIB", rel, R_OK, out, len);
}

/* libkjoule_nccl.so: $KJ_NCCL_LIB, else beside this binary (build tree or lib/). */
static int find_nccl(char *out, size_t len)
{
	static const char *const rel[] = {"src/trace/nccl/libkjoule_nccl.so", "libkjoule_nccl.so",
					  "../lib/libkjoule_nccl.so", "../lib/kjoule/libkjoule_nccl.so", NULL};
	return kj_cli_find_beside("KJ_NCCL_LIB", rel, R_OK, out, len);
}

int cmd_run(int argc, char **argv)
{
	struct kj_run_opts o;
	char inject[PATH_MAX], nccl[PATH_MAX], outdir[PATH_MAX], spool[PATH_MAX], started_iso[40];
	char *base, *dcopy, *bcopy;
	struct kj_sampler *sampler = NULL;
	struct kj_ingest_stats stats;
	struct kj_capture_summary capture = {0};
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
	const char *nccl_calls = "off", *nccl_lib = NULL;
	if (traced && o.nccl_calls) {
		if (find_nccl(nccl, sizeof(nccl)) == 0) {
			nccl_calls = "on";
			nccl_lib = nccl;
		} else {
			kj_warnf("run: libkjoule_nccl.so not found (set KJ_NCCL_LIB): NCCL's calls are not recorded");
			nccl_calls = "missing";
		}
	}
	kj_run_env(&o, traced ? inject : NULL, nccl_lib, spool);
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
			kj_run_spool_remove(spool);
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

	struct kj_run_result res = {started_iso, start_ns, end_ns, status, exit_code, pid, kj_run_interrupts,
				    rc == 1, traced, nccl_calls, done_runs, run_span, run_pid};
	if (kj_run_record(&o, &res, sampler, spool, outdir, base, &stats, &capture) != 0)
		goto fail;
	kj_run_spool_remove(spool);
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
	kj_errorf("run: trace files kept in %s (kjoule ingest %s -o RUN.kjdb)", spool, spool);
	kj_sampler_close(sampler);
	free(dcopy);
	free(bcopy);
	return exit_code ? exit_code : 1;
}
