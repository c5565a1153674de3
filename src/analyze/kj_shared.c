/* A run's watch for other processes, read back for the analyses: the intervals kjoule run
 * recorded and which iterations they touch (report's kj_shared_out.c says it in words). An older
 * run has no watch tables: that reads as "not watched", never as "no other processes". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_acts.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_shared.h"
#include "kj_store_a_run.h"

void kj_shared_free(struct kj_shared *sh)
{
	if (!sh)
		return;
	free(sh->proc);
	free(sh->util);
	sh->proc = sh->util = NULL;
	sh->n_proc = sh->n_util = 0;
}

static int meta_flag(sqlite3 *db, const char *key)
{
	char v[16];
	if (kj_db_meta_get(db, key, v, sizeof(v)) || !v[0])
		return -1;
	return v[0] == '1';
}

/* kj_shared_load's state: the watch being filled and its arrays' capacities. */
struct shared_load {
	struct kj_shared *out;
	size_t cap_p, cap_u;
};

/* Files one foreign_activity interval under other processes or utilisation, noting its pid. */
static int add_interval(void *ud, const struct kj_store_a_foreign *f)
{
	struct shared_load *L = ud;
	struct kj_shared *out = L->out;
	struct kj_shared_iv x = {f->device_id, f->pid, f->start_ns, f->end_ns};
	int is_util = f->source && !strcmp(f->source, "utilization");
	struct kj_shared_iv **v_ = is_util ? &out->util : &out->proc;
	size_t *n_ = is_util ? &out->n_util : &out->n_proc;
	struct kj_shared_iv *g = kj_grow(*v_, is_util ? &L->cap_u : &L->cap_p, *n_, sizeof(*g), 64);
	if (!g)
		return KJ_ENOMEM;
	*v_ = g;
	g[(*n_)++] = x;
	if (!is_util && x.pid > 0) {
		size_t k;
		for (k = 0; k < out->n_pids; k++)
			if (out->pids[k] == x.pid)
				break;
		if (k == out->n_pids) {
			if (out->n_pids < KJ_SHARED_MAX_PIDS)
				out->pids[out->n_pids++] = x.pid;
			else
				out->more_pids = 1;
		}
	}
	return 0;
}

int kj_shared_load(sqlite3 *db, struct kj_shared *out)
{
	char v[64];
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->mig = meta_flag(db, "gpu_mig");
	out->mps = meta_flag(db, "gpu_mps");
	if (kj_db_meta_get(db, "gpu_watch", v, sizeof(v)) || !v[0])
		return 0; /* not watched */
	if (!strcmp(v, "blind")) {
		out->watch = KJ_SHARED_BLIND;
		kj_db_meta_get(db, "gpu_watch_note", out->note, sizeof(out->note));
		if (!out->note[0])
			snprintf(out->note, sizeof(out->note), "other processes cannot be seen here");
	} else if (!strcmp(v, "processes")) {
		out->watch = KJ_SHARED_WATCHED;
	} else {
		return 0; /* a value this build does not know: say nothing rather than "alone" */
	}
	if (!kj_db_meta_get(db, "gpu_watch_pid_match", v, sizeof(v)))
		out->pid_match_by_time = !strcmp(v, "time");
	/* only the GPUs the run's work ran on: another job on a GPU beside them shares nothing */
	struct shared_load L = {out, 0, 0};
	rc = kj_store_a_foreign_each(db, add_interval, &L);
	if (rc == KJ_ENOTFOUND) {
		out->watch = KJ_SHARED_NOT_WATCHED;
		out->pid_match_by_time = 0;
		return 0;
	}
	if (rc)
		kj_shared_free(out);
	return rc;
}

static int any_in(const struct kj_shared_iv *v, size_t n, int64_t a, int64_t b)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].start_ns <= b && v[i].end_ns >= a)
			return 1;
	return 0;
}

int kj_shared_foreign_in(const struct kj_shared *sh, int64_t start_ns, int64_t end_ns)
{
	return sh && any_in(sh->proc, sh->n_proc, start_ns, end_ns);
}

int kj_shared_util_in(const struct kj_shared *sh, int64_t start_ns, int64_t end_ns)
{
	return sh && any_in(sh->util, sh->n_util, start_ns, end_ns);
}

void kj_shared_choose(const struct kj_shared *sh, const int64_t *start_ns, const int64_t *end_ns,
		      const unsigned char *use, size_t n, unsigned char *foreign,
		      struct kj_shared_choice *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		foreign[i] = 0;
		if (use && !use[i])
			continue;
		out->n_measured++;
		if (sh->watch == KJ_SHARED_WATCHED && kj_shared_foreign_in(sh, start_ns[i], end_ns[i])) {
			foreign[i] = 1;
			out->n_foreign++;
		}
		if (sh->watch != KJ_SHARED_NOT_WATCHED && kj_shared_util_in(sh, start_ns[i], end_ns[i]))
			out->n_util++;
	}
	out->use_clean = sh->watch == KJ_SHARED_WATCHED && out->n_foreign > 0 &&
			 out->n_measured - out->n_foreign >= KJ_SHARED_MIN_CLEAN;
}

int64_t kj_shared_foreign_ns(const struct kj_shared *sh)
{
	struct kj_ival *v;
	int64_t total;
	if (!sh || !sh->n_proc)
		return 0;
	v = malloc(sh->n_proc * sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < sh->n_proc; i++)
		v[i] = (struct kj_ival){sh->proc[i].start_ns, sh->proc[i].end_ns};
	total = kj_ival_union(v, sh->n_proc, INT64_MIN, INT64_MAX, NULL, NULL, NULL);
	free(v);
	return total;
}
