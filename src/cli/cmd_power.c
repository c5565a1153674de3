/* kjoule power: log GPU power, the energy counter, clocks, temperature, utilisation and throttle
 * reasons to CSV (one row per reading, update edges marked); --idle measures idle power and, with
 * --db, stores it for later reports. Ctrl-C ends cleanly with a complete file. Read-only: no GPU
 * setting is ever changed. */
#include <errno.h>
#include <math.h>
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
#include "kj_sampler.h"
#include "kj_quantile.h"

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

static void iso_time(int64_t rt_ns, char *buf, size_t len)
{
	time_t sec = (time_t)(rt_ns / 1000000000LL);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t k = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, len - k, ".%06lldZ", (long long)(rt_ns % 1000000000LL) / 1000);
}

static void put_opt(FILE *f, int64_t v)
{
	if (v >= 0)
		fprintf(f, ",%lld", (long long)v);
	else
		fputs(",", f);
}

static void put_w(FILE *f, int64_t mw)
{
	if (mw >= 0)
		fprintf(f, ",%.3f", (double)mw / 1000.0);
	else
		fputs(",", f);
}

static void write_row(FILE *f, int gpu, const struct kj_sampler_row *r)
{
	char t[64];
	iso_time(r->realtime_ns, t, sizeof(t));
	fprintf(f, "%s,%lld,%d", t, (long long)r->s.t_ns, gpu);
	put_w(f, r->s.power_mw);
	put_w(f, r->s.power_avg_mw);
	put_opt(f, r->s.energy_mj);
	if (r->s.energy_mj >= 0)
		fprintf(f, ",%d", r->s.energy_updated);
	else
		fputs(",", f);
	put_opt(f, r->st.sm_clock_mhz);
	put_opt(f, r->st.mem_clock_mhz);
	put_opt(f, r->st.temp_c);
	put_opt(f, r->st.util_gpu_pct);
	put_opt(f, r->st.util_mem_pct);
	if (r->st.throttle_reasons >= 0)
		fprintf(f, ",0x%llx\n", (unsigned long long)r->st.throttle_reasons);
	else
		fputs(",\n", f);
}

struct tagged {
	int gpu;
	struct kj_sampler_row r;
};

static int cmp_tagged(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;
	if (x->r.s.t_ns != y->r.s.t_ns)
		return (x->r.s.t_ns > y->r.s.t_ns) - (x->r.s.t_ns < y->r.s.t_ns);
	return x->gpu - y->gpu;
}

/* Writes every row that is ready (all of them once stopped), in time order. */
static int drain(struct kj_sampler *s, struct kj_sampler_cursor *cur, FILE *f,
		 struct kj_sampler_row *buf, size_t cap, int64_t *rows)
{
	struct tagged *all = NULL;
	size_t n = 0, acap = 0;
	for (int g = 0; g < kj_sampler_ndev(s); g++) {
		int idx = 0;
		kj_sampler_info(s, g, &idx);
		size_t got;
		while ((got = kj_sampler_fetch(s, g, &cur[g], buf, cap)) > 0) {
			if (n + got > acap) {
				acap = (n + got) * 2;
				struct tagged *na = realloc(all, acap * sizeof(*na));
				if (!na) {
					free(all);
					return KJ_ENOMEM;
				}
				all = na;
			}
			for (size_t i = 0; i < got; i++)
				all[n++] = (struct tagged){idx, buf[i]};
		}
	}
	if (n)
		qsort(all, n, sizeof(*all), cmp_tagged);
	for (size_t i = 0; f && i < n; i++)
		write_row(f, all[i].gpu, &all[i].r);
	*rows += (int64_t)n;
	free(all);
	if (f && (fflush(f) || ferror(f)))
		return KJ_EIO;
	return 0;
}

/* Idle power of one GPU from what was sampled: per counter period when there are enough
 * periods (the counter is exact), else per instantaneous reading. */
static int idle_of(struct kj_sampler *s, int slot, double *med, double *p10, double *p90,
		   size_t *count, const char **source, int *max_util)
{
	struct kj_sampler_cursor cur = {0, 0};
	struct kj_sampler_stats st;
	kj_sampler_get_stats(s, slot, &st);
	size_t cap = (size_t)(st.power_reads + st.counter_reads + 16);
	struct kj_sampler_row *rows = malloc(cap * sizeof(*rows));
	double *v = malloc(cap * sizeof(double));
	size_t n, nv = 0;
	if (!rows || !v) {
		free(rows);
		free(v);
		return KJ_ENOMEM;
	}
	n = kj_sampler_fetch(s, slot, &cur, rows, cap);
	*max_util = -1;
	int64_t prev_t = -1, last_edge_t = -1, prev_e = -1, last_edge_e = -1;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].st.util_gpu_pct > *max_util)
			*max_util = rows[i].st.util_gpu_pct;
		if (rows[i].s.energy_mj < 0)
			continue;
		if (prev_t >= 0 && rows[i].s.energy_mj != prev_e) {
			int64_t te = prev_t + (rows[i].s.t_ns - prev_t) / 2;
			if (last_edge_t >= 0 && rows[i].s.energy_mj > last_edge_e)
				v[nv++] = (double)(rows[i].s.energy_mj - last_edge_e) /
					  ((double)(te - last_edge_t) * 1e-9) / 1000.0;
			last_edge_t = te;
			last_edge_e = rows[i].s.energy_mj;
		}
		prev_t = rows[i].s.t_ns;
		prev_e = rows[i].s.energy_mj;
	}
	*source = "nvml-counter";
	if (nv < 5) {
		nv = 0;
		*source = "nvml-power";
		for (size_t i = 0; i < n; i++) {
			int64_t w = rows[i].s.power_mw >= 0 ? rows[i].s.power_mw : rows[i].s.power_avg_mw;
			if (w >= 0)
				v[nv++] = (double)w / 1000.0;
		}
	}
	free(rows);
	*count = nv;
	if (!nv) {
		free(v);
		return KJ_ENOTFOUND;
	}
	kj_sort_doubles(v, nv);
	*med = kj_quantile_sorted(v, nv, 0.5);
	*p10 = kj_quantile_sorted(v, nv, 0.1);
	*p90 = kj_quantile_sorted(v, nv, 0.9);
	free(v);
	return 0;
}

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
	struct kj_sampler_row *buf = NULL;
	const size_t cap = 8192;
	int64_t rows = 0;

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
	if (f) {
		fprintf(f, "time_utc_iso8601,t_monotonic_ns,gpu,power_instant_w,power_average_w,"
			   "energy_counter_mj,energy_updated,sm_clock_mhz,mem_clock_mhz,temp_c,"
			   "util_gpu_pct,util_mem_pct,throttle_reasons_hex\n");
		fflush(f);
	}
	buf = malloc(cap * sizeof(*buf));
	struct kj_sampler_cursor cur[MAX_GPUS];
	memset(cur, 0, sizeof(cur));
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int64_t t0 = kj_now_ns();
	while (!stop_flag && (duration < 0 || (double)(kj_now_ns() - t0) * 1e-9 < duration)) {
		struct timespec ts = {0, 100000000L};
		nanosleep(&ts, NULL);
		if (!idle && drain(s, cur, f, buf, cap, &rows)) {
			kj_errorf("%s: write failed: %s", out_path ? out_path : "stdout", strerror(errno));
			goto out;
		}
	}
	kj_sampler_stop(s);
	double secs = (double)(kj_now_ns() - t0) * 1e-9;
	if (!idle && drain(s, cur, f, buf, cap, &rows)) {
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
		fprintf(stderr, "kjoule power: %lld rows in %.1f s%s%s%s\n", (long long)rows, secs,
			out_path ? " written to " : "", out_path ? out_path : "",
			stop_flag ? " (interrupted)" : "");
	if (db_path) {
		if (open_db(db_path, &db))
			goto out;
		if (kj_db_exec(db, "BEGIN", "begin"))
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
			double med, p10, p90;
			size_t cnt;
			const char *src;
			int idx, mu;
			const struct kj_gpu_info *in = kj_sampler_info(s, g, &idx);
			if (idle_of(s, g, &med, &p10, &p90, &cnt, &src, &mu)) {
				kj_errorf("GPU %d: no power readings to measure idle power from", idx);
				rc = 1;
				continue;
			}
			printf("GPU %d (%s, %s): idle %.1f W median (p10 %.1f W, p90 %.1f W) over %zu %s "
			       "in %.1f s\n",
			       idx, in->name, in->uuid, med, p10, p90, cnt,
			       !strcmp(src, "nvml-counter") ? "counter periods" : "power readings", secs);
			if (mu > 5) {
				kj_warnf("GPU %d was busy while measuring (utilisation up to %d%%): not idle, "
					 "not stored", idx, mu);
				rc = 1;
				continue;
			}
			if (db) {
				sqlite3_stmt *st = NULL;
				if (kj_db_prepare(db, "INSERT OR REPLACE INTO idle_power(device_id, median_mw,"
						  " p10_mw, p90_mw, samples, measured_ns, source)"
						  " VALUES(?,?,?,?,?,?,?)", &st)) {
					rc = 1;
					goto out;
				}
				sqlite3_bind_int64(st, 1, ids[g]);
				sqlite3_bind_int64(st, 2, llround(med * 1000));
				sqlite3_bind_int64(st, 3, llround(p10 * 1000));
				sqlite3_bind_int64(st, 4, llround(p90 * 1000));
				sqlite3_bind_int64(st, 5, (int64_t)cnt);
				sqlite3_bind_int64(st, 6, kj_realtime_ns());
				sqlite3_bind_text(st, 7, src, -1, SQLITE_STATIC);
				if (sqlite3_step(st) != SQLITE_DONE) {
					kj_errorf("%s: idle_power: %s", db_path, sqlite3_errmsg(db));
					rc = 1;
				}
				sqlite3_finalize(st);
			}
		}
	} else if (db && kj_sampler_write_db(s, db)) {
		rc = 1;
	}
	if (db) {
		if (rc == 0 && kj_db_exec(db, "COMMIT", "commit"))
			rc = 1;
		else if (rc == 0)
			fprintf(stderr, "kjoule power: stored in %s\n", db_path);
	}
out:
	if (f && f != stdout && fclose(f)) {
		kj_errorf("%s: %s", out_path, strerror(errno));
		rc = 1;
	}
	free(buf);
	kj_db_close(db); /* an open transaction is rolled back */
	kj_sampler_close(s);
	return rc;
}
