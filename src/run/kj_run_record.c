/* kjoule run's environment for the program and its run database (kj_run.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_gpu_watch.h"
#include "kj_iterations.h"
#include "kj_run.h"
#include "kj_sampler.h"
#include "kj_store_w_run.h"

void kj_run_env(const struct kj_run_opts *o, const char *inject, const char *nccl, const char *spool)
{
	if (inject && nccl) {
		/* NCCL's calls with their sizes (src/trace/nccl), first of any preload the user set */
		const char *had = getenv("LD_PRELOAD");
		size_t len = strlen(nccl) + (had ? strlen(had) : 0) + 2;
		char *v = malloc(len);
		if (v) {
			snprintf(v, len, "%s%s%s", nccl, had && *had ? ":" : "", had ? had : "");
			setenv("LD_PRELOAD", v, 1);
			free(v);
		}
	}
	if (inject) {
		char k[16];
		setenv("CUDA_INJECTION64_PATH", inject, 1);
		setenv("NVTX_INJECTION64_PATH", inject, 1);
		setenv("KJOULE_SPOOL", spool, 1);
		snprintf(k, sizeof(k), "%d", o->params_k);
		setenv("KJOULE_PARAMS_K", k, 1);
		setenv("KJOULE_API", o->api == 2 ? "2" : o->api ? "1" : "0", 1);
		snprintf(k, sizeof(k), "%d", o->snapshot_mb);
		setenv("KJOULE_SNAPSHOT_MB", k, 1);
		setenv("KJOULE_SNAPSHOT_GRAPHS_ONLY", o->snapshot_graphs ? "1" : "0", 1);
		snprintf(k, sizeof(k), "%d", o->copy_data_kb);
		setenv("KJOULE_COPY_DATA_KB", k, 1);
		if (o->capture.mode != KJ_CAPTURE_NONE) {
			char spec[KJ_CAPTURE_NAME_MAX + 48];
			kj_capture_format(&o->capture, spec, sizeof(spec));
			setenv("KJOULE_CAPTURE", spec, 1);
		} else {
			unsetenv("KJOULE_CAPTURE");
		}
		if (o->capture_attached)
			setenv("KJOULE_CAPTURE_DETACH", "0", 1);
		else
			unsetenv("KJOULE_CAPTURE_DETACH");
	}
	/* NVLink multicast (NVLS) off in the program and every process it starts, unless the user
	 * chose: its multicast objects are not supported on every lent machine (docs/multi-gpu.md) */
	setenv("NCCL_NVLS_ENABLE", "0", 0);
	setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 0);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
}

int kj_run_spool_remove(const char *dir)
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

/* The trace files, power samples and the watch for other processes into db. */
static void write_trace(const struct kj_run_opts *o, const struct kj_run_result *r, struct kj_sampler *sampler,
			const char *spool, sqlite3 *db, struct kj_ingest_stats *stats,
			struct kj_capture_summary *capture)
{
	const char *iteration_range = o->iteration_range;
	if (sampler && kj_sampler_write_db(sampler, db) != 0)
		kj_warnf("run: power samples could not be written");
	/* a capture run's iterations are its capture range's instances, unless told otherwise */
	if (!iteration_range && o->capture.mode == KJ_CAPTURE_NVTX)
		iteration_range = o->capture.name;
	else if (!iteration_range && o->capture.mode == KJ_CAPTURE_PROFILER)
		iteration_range = KJ_CAPTURE_PROFILER_TEXT;
	struct kj_ingest_opts io = {o->params_k, o->params_iteration, iteration_range, kj_iter_default_range};
	if (kj_ingest_dir(db, spool, &io, stats) != 0)
		kj_warnf("run: some trace files could not be read (see the problem table)");
	if (o->capture.mode != KJ_CAPTURE_NONE) {
		char spec[KJ_CAPTURE_NAME_MAX + 48];
		kj_capture_format(&o->capture, spec, sizeof(spec));
		if (kj_ingest_capture_finish(db, spec, capture) != 0)
			kj_warnf("run: the capture window could not be written");
	}
	if (sampler) {
		int64_t *own = calloc((size_t)r->done_runs + 1, sizeof(*own));
		for (int i = 0; own && i < r->done_runs; i++)
			own[i] = r->run_pid[i];
		if (!own || kj_gpu_watch_write_db(sampler, db, own, (size_t)r->done_runs, o->watch_interval_ms) != 0)
			kj_warnf("run: the watch for other processes could not be written");
		free(own);
		const struct kj_watch_row *wr;
		const int64_t *wl;
		size_t wn, wnl;
		const char *why;
		if (kj_sampler_watch(sampler, 0, &wr, &wn, &wl, &wnl, &why) == KJ_WATCH_BLIND)
			kj_warnf("run: %s", why);
	}
}

/* The run's facts (meta rows), its problems, and each run of a series as a top-level range. */
static void write_facts(const struct kj_run_opts *o, const struct kj_run_result *r, int sampled, sqlite3 *db,
			const struct kj_ingest_stats *stats)
{
	json_t *cmd = command_json(o->cmd);
	char *text = json_dumps(cmd, JSON_COMPACT);
	char cwd[PATH_MAX], opts[256];
	int status = r->status;
	kj_db_meta_set(db, "command", text ? text : "[]");
	free(text);
	json_decref(cmd);
	if (getcwd(cwd, sizeof(cwd)))
		kj_db_meta_set(db, "cwd", cwd);
	kj_db_meta_set(db, "clock", "CLOCK_MONOTONIC");
	kj_db_meta_set(db, "start_realtime", r->started_iso);
	set_meta_int(db, "start_ns", r->start_ns);
	set_meta_int(db, "end_ns", r->end_ns);
	set_meta_int(db, "exit_code", r->exit_code);
	set_meta_int(db, "pid", r->pid);
	kj_db_meta_set(db, "end_status", WIFSIGNALED(status) ? "signaled" : "exited");
	if (WIFSIGNALED(status))
		set_meta_int(db, "signal", WTERMSIG(status));
	if (r->interrupts)
		set_meta_int(db, "interrupts", r->interrupts);
	snprintf(opts, sizeof(opts), "{\"params_k\":%d,\"api\":%d,\"params_iteration\":%d,\"power\":%d,"
		 "\"power_interval_ms\":%d,\"snapshot_mb\":%d,\"snapshot_graphs_only\":%d,\"copy_data_kb\":%d,"
		 "\"watch_interval_ms\":%d}",
		 o->params_k, o->api, o->params_iteration, sampled, o->power_interval_ms, o->snapshot_mb,
		 o->snapshot_graphs, o->params_k ? o->copy_data_kb : 0, sampled ? o->watch_interval_ms : 0);
	kj_db_meta_set(db, "capture", opts);
	kj_db_meta_set(db, "traced", r->traced ? "1" : "0");
	if (r->traced)
		kj_db_meta_set(db, "nccl_calls", r->nccl_calls ? r->nccl_calls : "off");
	if (!r->traced)
		kj_db_problem(db, -1, -1, "error", "injection library not found: nothing was traced");
	if (!sampled && o->power)
		kj_db_problem(db, -1, -1, "warning", "NVML not available: no power or energy samples");
	if (r->descendants_left)
		kj_db_problem(db, -1, -1, "warning",
			      "processes started by the program were still running 10 s after it ended; "
			      "their trace was taken as it stood");
	if (o->warmup + o->runs > 1) {
		/* each run of the series as a top-level range, so compare takes runs as iterations */
		struct kj_store_run_range *rr = calloc((size_t)r->done_runs + 1, sizeof(*rr));
		set_meta_int(db, "runs", o->runs);
		set_meta_int(db, "warmup_runs", o->warmup);
		for (int i = 0; rr && i < r->done_runs; i++)
			rr[i] = (struct kj_store_run_range){r->run_pid[i], r->run_span[2 * i], r->run_span[2 * i + 1],
							    i < o->warmup};
		if (!rr)
			kj_warnf("run: out of memory: the runs of the series are not recorded as ranges");
		else
			kj_store_run_ranges_add(db, rr, (size_t)r->done_runs);
		free(rr);
	}
	if (r->traced && stats->processes == 0)
		kj_db_problem(db, -1, -1, "warning", "no process initialised CUDA: nothing on the GPU was recorded");
}

int kj_run_record(const struct kj_run_opts *o, const struct kj_run_result *r, struct kj_sampler *sampler,
		  const char *spool, const char *outdir, const char *base, struct kj_ingest_stats *stats,
		  struct kj_capture_summary *capture)
{
	char tmpdb[PATH_MAX];
	sqlite3 *db = NULL;
	int rc = KJ_EIO;

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
	if ((rc = kj_db_create(tmpdb, &db)) != 0)
		goto fail;
	kj_write_unjournaled(db);
	if ((rc = kj_write_begin(db)) != 0)
		goto fail;
	memset(stats, 0, sizeof(*stats));
	write_trace(o, r, sampler, spool, db, stats, capture);
	write_facts(o, r, sampler != NULL, db, stats);
	if ((rc = kj_write_commit(db)) != 0)
		goto fail;
	kj_db_close(db);
	db = NULL;
	if (rename(tmpdb, o->output) != 0) {
		kj_errorf("run: cannot rename %s to %s: %s", tmpdb, o->output, strerror(errno));
		rc = KJ_EIO;
		goto fail;
	}
	return 0;
fail:
	kj_db_close(db);
	unlink(tmpdb);
	return rc < 0 ? rc : KJ_EIO;
}
