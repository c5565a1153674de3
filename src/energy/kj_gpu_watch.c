/* The watch for other processes, turned into rows: which listed pids are the run's own (by pid,
 * or by time when the driver reports another pid namespace's pids), the intervals in which
 * another process was on a GPU, and the secondary signal of GPU utilisation that no traced
 * kernel or copy explains. Everything here runs after the program ended, in kjoule run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_gpu.h"
#include "kj_gpu_watch.h"
#include "kj_grow.h"
#include "kj_store_e_power.h"
#include "kj_store_e_watch.h"

struct own {
	int64_t pid, start_ns, end_ns;
};

/* one distinct listed pid of a GPU */
struct seen {
	int64_t pid, first_ns, last_ns;
	int visible, traced; /* traced: 1 ours, 0 another process, -1 cannot tell */
	char name[64];
};

struct ownset {
	struct own *v;
	size_t n, cap;
};

static int own_add(struct ownset *o, int64_t pid, int64_t start_ns, int64_t end_ns)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].pid == pid)
			return 0;
	struct own *nv = kj_grow(o->v, &o->cap, o->n, sizeof(*nv), 16);
	if (!nv)
		return KJ_ENOMEM;
	o->v = nv;
	o->v[o->n++] = (struct own){pid, start_ns, end_ns};
	return 0;
}

static int own_has(const struct ownset *o, int64_t pid)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].pid == pid)
			return 1;
	return 0;
}

int kj_gpu_watch_mps_present(void)
{
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
	char path[512];
	snprintf(path, sizeof(path), "%s/control", dir && *dir ? dir : "/tmp/nvidia-mps");
	return access(path, F_OK) == 0;
}

/* The distinct pids of one GPU's listings, classified. *by_time is set when no listed pid is one
 * of ours although we have processes: the driver then reports another namespace's pids, and each
 * of our processes takes the unseen pid whose first and last listing lie nearest its lifetime. */
static int classify(const struct kj_watch_row *rows, size_t n, const struct ownset *own,
		    struct seen **out, size_t *n_out, int *by_time)
{
	struct seen *v = NULL;
	size_t nv = 0, cap = 0;
	int matched = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j;
		for (j = 0; j < nv; j++)
			if (v[j].pid == rows[i].pid)
				break;
		if (j == nv) {
			struct seen *g = kj_grow(v, &cap, nv, sizeof(*g), 16);
			if (!g) {
				free(v);
				return KJ_ENOMEM;
			}
			v = g;
			memset(&v[nv], 0, sizeof(v[nv]));
			v[nv].pid = rows[i].pid;
			v[nv].first_ns = rows[i].t_ns;
			memcpy(v[nv].name, rows[i].name, sizeof(v[nv].name));
			nv++;
		}
		v[j].last_ns = rows[i].t_ns;
		v[j].visible |= rows[i].visible;
	}
	for (size_t j = 0; j < nv; j++) {
		if (own_has(own, v[j].pid)) {
			v[j].traced = 1;
			matched = 1;
		} else {
			v[j].traced = v[j].visible ? 0 : -1;
		}
	}
	*by_time = 0;
	if (!matched && own->n > 0) {
		for (size_t k = 0; k < own->n; k++) {
			const struct own *o = &own->v[k];
			size_t best = nv;
			int64_t best_d = INT64_MAX;
			if (o->start_ns <= 0)
				continue;
			for (size_t j = 0; j < nv; j++) {
				if (v[j].traced != -1)
					continue;
				int64_t d = llabs(v[j].first_ns - o->start_ns);
				if (o->end_ns > 0)
					d += llabs(v[j].last_ns - o->end_ns);
				if (d < best_d) {
					best_d = d;
					best = j;
				}
			}
			if (best < nv) {
				v[best].traced = 1;
				*by_time = 1;
			}
		}
	}
	/* a pid we cannot see and could not match is another process, named as the driver reports it */
	for (size_t j = 0; j < nv; j++)
		if (v[j].traced == -1)
			v[j].traced = 0;
	*out = v;
	*n_out = nv;
	return 0;
}

/* Intervals in which pid g was listed: from the first listing that shows it to the first that
 * no longer does (or the last listing). */
static int write_pid_intervals(struct kj_store_watch_writer *ins, int64_t dev, const struct seen *g,
			       const struct kj_watch_row *rows, size_t n, const int64_t *lt, size_t nlt)
{
	size_t r = 0;
	int64_t open_ns = -1;
	for (size_t i = 0; i < nlt; i++) {
		int present = 0;
		while (r < n && rows[r].t_ns < lt[i])
			r++;
		for (size_t k = r; k < n && rows[k].t_ns == lt[i]; k++)
			if (rows[k].pid == g->pid)
				present = 1;
		if (present && open_ns < 0)
			open_ns = lt[i];
		if (!present && open_ns >= 0) {
			if (kj_store_e_watch_foreign(ins, dev, g->pid, g->name, open_ns, lt[i], "process"))
				return KJ_EDB;
			open_ns = -1;
		}
	}
	if (open_ns >= 0 && kj_store_e_watch_foreign(ins, dev, g->pid, g->name, open_ns, lt[nlt - 1], "process"))
		return KJ_EDB;
	return 0;
}

int kj_watch_util_stretches(const int64_t *t_ns, const int *util, size_t n, const struct kj_interval *iv, size_t m,
			    int64_t **out, size_t *n_out)
{
	int64_t *v = NULL, open_ns = -1, last_ns = -1;
	size_t nv = 0, cap = 0, readings = 0;
	*out = NULL;
	*n_out = 0;
	for (size_t i = 0; i <= n; i++) {
		int fires = 0;
		if (i < n) {
			int64_t t = t_ns[i];
			/* the last merged interval starting at or before t: does it end after t - lookback? */
			size_t lo = kj_intervals_started_by(iv, m, t);
			int explained = lo > 0 && iv[lo - 1].end_ns > t - KJ_WATCH_UTIL_LOOKBACK_NS;
			int inside = m == 0 || (t > iv[0].start_ns && t <= iv[m - 1].end_ns);
			fires = util[i] > 0 && !explained && inside;
			if (fires) {
				if (open_ns < 0)
					open_ns = t, readings = 0;
				last_ns = t;
				readings++;
				continue;
			}
		}
		if (open_ns >= 0 && readings >= KJ_WATCH_UTIL_MIN_READINGS) {
			int64_t *g = kj_grow(v, &cap, 2 * nv + 2, sizeof(*g), 16);
			if (!g) {
				free(v);
				return KJ_ENOMEM;
			}
			v = g;
			v[2 * nv] = open_ns;
			v[2 * nv + 1] = last_ns;
			nv++;
		}
		open_ns = -1;
	}
	*out = v;
	*n_out = nv;
	return 0;
}

/* Secondary signal: kj_watch_util_stretches over the GPU's traced kernels, copies and memsets
 * and its utilisation readings, one foreign_activity row (source 'utilization') each. */
static int write_util_intervals(sqlite3 *db, struct kj_store_watch_writer *ins, int64_t dev)
{
	struct kj_interval *iv = NULL; /* traced activity, merged */
	int64_t *rt = NULL, *sv = NULL;
	int *ru = NULL;
	size_t n = 0, nr = 0, ns = 0;
	int rc = kj_store_e_traced_spans(db, dev, &iv, &n);
	if (rc)
		return rc;
	size_t m = kj_intervals_merge(iv, n);
	rc = kj_store_e_util_readings(db, dev, &rt, &ru, &nr);
	if (rc)
		goto out;
	rc = kj_watch_util_stretches(rt, ru, nr, iv, m, &sv, &ns);
	for (size_t i = 0; i < ns && !rc; i++)
		rc = kj_store_e_watch_foreign(ins, dev, -1, NULL, sv[2 * i], sv[2 * i + 1], "utilization");
out:
	free(iv);
	free(rt);
	free(ru);
	free(sv);
	return rc;
}

/* one row of the process table into the run's own set (ctx) */
static int own_row(void *ctx, int64_t pid, int64_t start_ns, int64_t end_ns)
{
	return own_add(ctx, pid, start_ns, end_ns);
}

static int load_own(sqlite3 *db, const int64_t *own_pids, size_t n_own, struct ownset *own)
{
	int rc = kj_store_e_processes(db, own_row, own);
	for (size_t i = 0; i < n_own && !rc; i++)
		rc = own_add(own, own_pids[i], 0, 0);
	return rc;
}

int kj_gpu_watch_write_db(struct kj_sampler *s, sqlite3 *db, const int64_t *own_pids,
			  size_t n_own, int watch_interval_ms)
{
	const struct kj_watch_row *rows;
	const int64_t *lt;
	const char *why;
	size_t n, nlt;
	struct ownset own = {NULL, 0, 0};
	struct kj_store_watch_writer *ins = NULL;
	int64_t ids[64];
	int nd = kj_sampler_ndev(s), by_time_any = 0, mig_any = 0, mps = kj_gpu_watch_mps_present();
	char buf[32];
	int state = kj_sampler_watch(s, 0, &rows, &n, &lt, &nlt, &why);
	int rc;

	if (!s || state == KJ_WATCH_OFF)
		return 0;
	if (nd > 64)
		nd = 64;
	rc = kj_store_e_watch_tables(db);
	if (!rc)
		rc = kj_sampler_device_ids(s, db, ids);
	if (!rc)
		rc = load_own(db, own_pids, n_own, &own);
	if (!rc)
		rc = kj_store_e_watch_writer_open(db, &ins);
	for (int d = 0; d < nd && !rc; d++) {
		struct seen *v = NULL;
		size_t nv = 0;
		int by_time = 0;
		if (kj_sampler_mig(s, d) == 1)
			mig_any = 1;
		if (state == KJ_WATCH_OK) {
			kj_sampler_watch(s, d, &rows, &n, &lt, &nlt, &why);
			rc = classify(rows, n, &own, &v, &nv, &by_time);
			by_time_any |= by_time;
			for (size_t i = 0; i < n && !rc; i++) {
				int traced = 0;
				for (size_t j = 0; j < nv; j++)
					if (v[j].pid == rows[i].pid)
						traced = v[j].traced;
				if (!strcmp(rows[i].name, "nvidia-cuda-mps-server"))
					mps = 1;
				const struct kj_store_gpu_process_sample r = {
					ids[d], rows[i].t_ns, rows[i].pid, rows[i].name,
					rows[i].used_memory_bytes, rows[i].sm_util_pct, traced,
				};
				rc = kj_store_e_watch_sample(ins, &r);
			}
			for (size_t j = 0; j < nv && !rc; j++)
				if (v[j].traced == 0)
					rc = write_pid_intervals(ins, ids[d], &v[j], rows, n, lt, nlt);
			free(v);
		}
		/* under MIG our kernels sit on an instance's device row, not this GPU's: cannot tell */
		if (!rc && kj_sampler_mig(s, d) != 1)
			rc = write_util_intervals(db, ins, ids[d]);
	}
	if (!rc) {
		kj_db_meta_set(db, "gpu_watch", state == KJ_WATCH_OK ? "processes" : "blind");
		if (state == KJ_WATCH_BLIND) {
			kj_db_meta_set(db, "gpu_watch_note", why);
			rc = kj_db_problem(db, -1, -1, "warning", why);
		}
		snprintf(buf, sizeof(buf), "%d", watch_interval_ms);
		kj_db_meta_set(db, "gpu_watch_interval_ms", buf);
		if (state == KJ_WATCH_OK)
			kj_db_meta_set(db, "gpu_watch_pid_match", by_time_any ? "time" : "pid");
		kj_db_meta_set(db, "gpu_mig", mig_any ? "1" : "0");
		kj_db_meta_set(db, "gpu_mps", mps ? "1" : "0");
	}
	kj_store_e_watch_writer_close(ins);
	free(own.v);
	return rc;
}
