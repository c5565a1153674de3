/* kjoule power's CSV log and idle power over the sampler's rows (kj_power_log.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_store_e_power.h"
#include "kj_error.h"
#include "kj_power_log.h"
#include "kj_quantile.h"

#define LOG_MAX_GPUS 64
#define LOG_BUF_ROWS 8192

struct kj_power_log {
	struct kj_sampler *s;
	FILE *f;
	struct kj_sampler_cursor cur[LOG_MAX_GPUS];
	struct kj_sampler_row *buf;
	int64_t rows;
};

void kj_power_log_header(FILE *f)
{
	fprintf(f, "time_utc_iso8601,t_monotonic_ns,gpu,power_instant_w,power_average_w,"
		   "energy_counter_mj,energy_updated,sm_clock_mhz,mem_clock_mhz,temp_c,"
		   "util_gpu_pct,util_mem_pct,throttle_reasons_hex\n");
	fflush(f);
}

/* rt_ns as UTC ISO 8601 with microseconds. */
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

/* One CSV row; a field that was not read is left empty. */
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

int kj_power_log_open(struct kj_sampler *s, FILE *f, struct kj_power_log **out)
{
	struct kj_power_log *l = calloc(1, sizeof(*l));
	*out = NULL;
	if (!l)
		return KJ_ENOMEM;
	l->buf = malloc(LOG_BUF_ROWS * sizeof(*l->buf));
	if (!l->buf) {
		free(l);
		return KJ_ENOMEM;
	}
	l->s = s;
	l->f = f;
	*out = l;
	return 0;
}

int64_t kj_power_log_rows(const struct kj_power_log *l)
{
	return l->rows;
}

void kj_power_log_close(struct kj_power_log *l)
{
	if (!l)
		return;
	free(l->buf);
	free(l);
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

int kj_power_log_drain(struct kj_power_log *l)
{
	struct tagged *all = NULL;
	size_t n = 0, acap = 0;
	int ndev = kj_sampler_ndev(l->s);
	for (int g = 0; g < ndev && g < LOG_MAX_GPUS; g++) {
		int idx = 0;
		kj_sampler_info(l->s, g, &idx);
		size_t got;
		while ((got = kj_sampler_fetch(l->s, g, &l->cur[g], l->buf, LOG_BUF_ROWS)) > 0) {
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
				all[n++] = (struct tagged){idx, l->buf[i]};
		}
	}
	if (n)
		qsort(all, n, sizeof(*all), cmp_tagged);
	for (size_t i = 0; l->f && i < n; i++)
		write_row(l->f, all[i].gpu, &all[i].r);
	l->rows += (int64_t)n;
	free(all);
	if (l->f && (fflush(l->f) || ferror(l->f)))
		return KJ_EIO;
	return 0;
}

int kj_power_idle_of(struct kj_sampler *s, int slot, struct kj_power_idle *out)
{
	struct kj_sampler_cursor cur = {0, 0};
	struct kj_sampler_stats st;
	kj_sampler_get_stats(s, slot, &st);
	size_t cap = (size_t)(st.power_reads + st.counter_reads + 16);
	struct kj_sampler_row *rows = malloc(cap * sizeof(*rows));
	double *v = malloc(cap * sizeof(double));
	size_t n, nv = 0;
	memset(out, 0, sizeof(*out));
	out->max_util_pct = -1;
	if (!rows || !v) {
		free(rows);
		free(v);
		return KJ_ENOMEM;
	}
	n = kj_sampler_fetch(s, slot, &cur, rows, cap);
	int64_t prev_t = -1, last_edge_t = -1, prev_e = -1, last_edge_e = -1;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].st.util_gpu_pct > out->max_util_pct)
			out->max_util_pct = rows[i].st.util_gpu_pct;
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
	out->source = "nvml-counter";
	if (nv < 5) {
		nv = 0;
		out->source = "nvml-power";
		for (size_t i = 0; i < n; i++) {
			int64_t w = rows[i].s.power_mw >= 0 ? rows[i].s.power_mw : rows[i].s.power_avg_mw;
			if (w >= 0)
				v[nv++] = (double)w / 1000.0;
		}
	}
	free(rows);
	out->count = nv;
	if (!nv) {
		free(v);
		return KJ_ENOTFOUND;
	}
	kj_sort_doubles(v, nv);
	out->median_w = kj_quantile_sorted(v, nv, 0.5);
	out->p10_w = kj_quantile_sorted(v, nv, 0.1);
	out->p90_w = kj_quantile_sorted(v, nv, 0.9);
	free(v);
	return 0;
}

int kj_power_idle_store(sqlite3 *db, const char *db_path, int64_t device_id,
			const struct kj_power_idle *m)
{
	const struct kj_store_idle_power row = {
		llround(m->median_w * 1000), llround(m->p10_w * 1000), llround(m->p90_w * 1000),
		(int64_t)m->count, kj_realtime_ns(), m->source,
	};
	return kj_store_e_idle_power_put(db, db_path, device_id, &row);
}
