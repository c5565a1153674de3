/* kjoule power: log GPU power, the energy counter, clocks, temperature, utilisation and throttle
 * reasons to CSV (one row per reading, update edges marked); --idle measures idle power and, with
 * --db, stores it for later reports. Ctrl-C ends cleanly with a complete file. Read-only: no GPU
 * setting is ever changed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_power_log.h"
#include "kj_sampler.h"
#include "kj_store_w_run.h"

#define MAX_GPUS 64

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule power [--gpu 0,1|all] [--interval-ms N] [--duration S] [-o power.csv]\n"
		"                    [--idle] [--db RUN.kjdb]\n"
		"  Logs per-GPU power (instantaneous and averaged), the total-energy counter (update\n"
		"  edges marked), SM/memory clocks, temperature, utilisation and throttle reasons as CSV\n"
		"  (stdout unless -o). Ends after --duration seconds or on Ctrl-C.\n"
		"  --idle     measure idle power (default 5 s; keep the GPUs quiet): median and spread;\n"
		"             with --db stores it in the run's idle_power table\n"
		"  --db FILE  run database (created if missing) for the samples or the idle figure\n"
		"  --interval-ms N  power polling period (default 5); the counter is read back to back\n");
}

static int parse_gpus(const char *s, int *idx, int *n)
{
	*n = 0;
	if (!strcmp(s, "all"))
		return 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 0 || v >= MAX_GPUS || *n >= MAX_GPUS)
			return -1;
		idx[(*n)++] = (int)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return *n ? 0 : -1;
}

/* Opens the run database at path, creating it when missing. */
static int open_db(const char *path, sqlite3 **db)
{
	struct stat sb;
	if (stat(path, &sb) == 0)
		return kj_db_open(path, 1, db);
	return kj_db_create(path, db);
}

int cmd_power(int argc, char **argv)
{
	int gpus[MAX_GPUS], ngpu = 0, interval_ms = 5, idle = 0, rc = 1, err;
	double duration = -1;
	const char *out_path = NULL, *db_path = NULL;
	struct kj_sampler *s = NULL;
	FILE *f = NULL;
	sqlite3 *db = NULL;
	struct kj_power_log *log = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--idle")) {
			idle = 1;
		} else if (!val && (!strcmp(a, "--gpu") || !strcmp(a, "--interval-ms") ||
				    !strcmp(a, "--duration") || !strcmp(a, "-o") || !strcmp(a, "--db"))) {
			fprintf(stderr, "kjoule power: %s needs a value\n", a);
			return 2;
		} else if (!strcmp(a, "--gpu")) {
			if (parse_gpus(val, gpus, &ngpu)) {
				fprintf(stderr, "kjoule power: --gpu '%s': want 0,1,... or all\n", val);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--interval-ms")) {
			long v = strtol(val, &end, 10);
			if (*end || v < 1 || v > 60000) {
				fprintf(stderr, "kjoule power: --interval-ms '%s': want 1..60000\n", val);
				return 2;
			}
			interval_ms = (int)v;
			i++;
		} else if (!strcmp(a, "--duration")) {
			duration = strtod(val, &end);
			if (*end || !(duration > 0) || duration > 1e7) {
				fprintf(stderr, "kjoule power: --duration '%s': want seconds > 0\n", val);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "-o")) {
			out_path = val;
			i++;
		} else if (!strcmp(a, "--db")) {
			db_path = val;
			i++;
		} else {
			fprintf(stderr, "kjoule power: unknown argument '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (idle && duration < 0)
		duration = 5;

	struct kj_sampler_opts so = {.interval_us = interval_ms * 1000, .nvml_indices = gpus,
				     .n_indices = ngpu};
	err = kj_sampler_start(&so, &s);
	if (err) {
		fprintf(stderr, "kjoule power: cannot sample power (%s)\n", kj_strerror(err));
		return 1;
	}
	if (out_path) {
		f = fopen(out_path, "w");
		if (!f) {
			kj_errorf("%s: %s", out_path, strerror(errno));
			goto out;
		}
	} else if (!idle) {
		f = stdout;
	}
	if (f)
		kj_power_log_header(f);
	if (kj_power_log_open(s, f, &log)) {
		kj_errorf("out of memory");
		goto out;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int64_t t0 = kj_now_ns();
	while (!stop_flag && (duration < 0 || (double)(kj_now_ns() - t0) * 1e-9 < duration)) {
		struct timespec ts = {0, 100000000L};
		nanosleep(&ts, NULL);
		if (!idle && kj_power_log_drain(log)) {
			kj_errorf("%s: write failed: %s", out_path ? out_path : "stdout", strerror(errno));
			goto out;
		}
	}
	kj_sampler_stop(s);
	double secs = (double)(kj_now_ns() - t0) * 1e-9;
	if (!idle && kj_power_log_drain(log)) {
		kj_errorf("%s: write failed: %s", out_path ? out_path : "stdout", strerror(errno));
		goto out;
	}
	for (int g = 0; g < kj_sampler_ndev(s); g++) {
		struct kj_sampler_stats st;
		int idx;
		const struct kj_gpu_info *in = kj_sampler_info(s, g, &idx);
		kj_sampler_get_stats(s, g, &st);
		fprintf(stderr,
			"kjoule power: GPU %d (%s): %.1f power samples/s, %.1f counter reads/s (%.2f ms "
			"each), %lld update edges (every %.1f ms)%s\n",
			idx, in->name, (double)st.power_reads / secs, (double)st.counter_reads / secs,
			st.counter_read_ns_mean * 1e-6, (long long)st.edges,
			st.edges ? secs * 1000.0 / (double)st.edges : 0.0,
			in->energy_counter ? "" : "; no energy counter on this GPU");
		if (st.errors)
			fprintf(stderr, "kjoule power: GPU %d: %lld NVML errors, first: %s\n", idx,
				(long long)st.errors, kj_sampler_first_error(s));
	}
	if (!idle)
		fprintf(stderr, "kjoule power: %lld rows in %.1f s%s%s%s\n",
			(long long)kj_power_log_rows(log), secs,
			out_path ? " written to " : "", out_path ? out_path : "",
			stop_flag ? " (interrupted)" : "");
	if (db_path) {
		if (open_db(db_path, &db))
			goto out;
		if (kj_write_begin(db))
			goto out;
	}
	rc = 0;
	if (idle) {
		int64_t ids[MAX_GPUS];
		if (db && kj_sampler_device_ids(s, db, ids)) {
			rc = 1;
			goto out;
		}
		for (int g = 0; g < kj_sampler_ndev(s); g++) {
			struct kj_power_idle m;
			int idx;
			const struct kj_gpu_info *in = kj_sampler_info(s, g, &idx);
			if (kj_power_idle_of(s, g, &m)) {
				kj_errorf("GPU %d: no power readings to measure idle power from", idx);
				rc = 1;
				continue;
			}
			printf("GPU %d (%s, %s): idle %.1f W median (p10 %.1f W, p90 %.1f W) over %zu %s "
			       "in %.1f s\n",
			       idx, in->name, in->uuid, m.median_w, m.p10_w, m.p90_w, m.count,
			       !strcmp(m.source, "nvml-counter") ? "counter periods" : "power readings",
			       secs);
			if (m.max_util_pct > 5) {
				kj_warnf("GPU %d was busy while measuring (utilisation up to %d%%): not idle, "
					 "not stored", idx, m.max_util_pct);
				rc = 1;
				continue;
			}
			if (db) {
				err = kj_power_idle_store(db, db_path, ids[g], &m);
				if (err)
					rc = 1;
				if (err == KJ_EDB)
					goto out; /* no statement: the next GPU would fare no better */
			}
		}
	} else if (db && kj_sampler_write_db(s, db)) {
		rc = 1;
	}
	if (db) {
		if (rc == 0 && kj_write_commit(db))
			rc = 1;
		else if (rc == 0)
			fprintf(stderr, "kjoule power: stored in %s\n", db_path);
	}
out:
	if (f && f != stdout && fclose(f)) {
		kj_errorf("%s: %s", out_path, strerror(errno));
		rc = 1;
	}
	kj_power_log_close(log);
	kj_db_close(db); /* an open transaction is rolled back */
	kj_sampler_close(s);
	return rc;
}
