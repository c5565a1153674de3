/* Power and energy sampler: one thread polls every GPU's power every interval_us (and its
 * clocks, temperature, utilisation and throttle reasons every slow_every-th time); one thread per
 * GPU reads the total-energy counter back to back (a read costs ~4.7 ms on H200) and keeps the
 * reads that bracket each update edge. Rows stay in memory until kj_sampler_close(); NVML errors
 * are counted and kept as text (they become problem rows), never fatal. kj_sampler_db.c writes
 * the rows into a run database. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kj_error.h"
#include "kj_sampler_internal.h"
#include "kj_grow.h"

/* a counter read faster than this is followed by a pause (drivers where the read is cheap) */
#define KJ_MIN_COUNTER_PERIOD_NS 1000000LL

static int push(struct rowvec *r, const struct kj_sampler_row *x)
{
	struct kj_sampler_row *nv = kj_grow(r->v, &r->cap, r->n, sizeof(*nv), 4096);
	if (!nv)
		return KJ_ENOMEM;
	r->v = nv;
	r->v[r->n++] = *x;
	return 0;
}

/* Keeps the vendor's text of an error, once per distinct text, with a count. Caller holds mu. */
static void note_error(struct slot *sl, const char *what, int code, int64_t t)
{
	char buf[200];
	struct kj_sampler *s = sl->owner;
	snprintf(buf, sizeof(buf), "GPU %d (%s): %s: %s (NVML error %d)", sl->index, sl->info.uuid,
		 what, s->be->strerror(s->be->ctx, code), code);
	sl->st.errors++;
	for (int i = 0; i < sl->nerr; i++)
		if (!strcmp(sl->err[i].text, buf)) {
			sl->err[i].count++;
			return;
		}
	if (sl->nerr < KJ_MAX_ERRTEXT) {
		struct errtext *e = &sl->err[sl->nerr++];
		e->t_ns = t;
		e->count = 1;
		snprintf(e->text, sizeof(e->text), "%s", buf);
	}
	if (!s->first_error[0])
		snprintf(s->first_error, sizeof(s->first_error), "%s", buf);
}

static void blank_row(struct kj_sampler_row *r)
{
	r->s.t_ns = 0;
	r->s.power_mw = r->s.power_avg_mw = r->s.energy_mj = -1;
	r->s.energy_updated = 0;
	r->realtime_ns = 0;
	r->st.sm_clock_mhz = r->st.mem_clock_mhz = r->st.temp_c = -1;
	r->st.util_gpu_pct = r->st.util_mem_pct = -1;
	r->st.throttle_reasons = -1;
}

/* Name and visibility of a listed pid: taken from the previous listing when the pid was there,
 * else /proc/<pid>/comm in our namespace, else the driver's name. */
static void watch_describe(struct kj_sampler *s, struct watchvec *w, size_t prev_from,
			   size_t prev_to, struct kj_watch_row *r)
{
	char path[64];
	FILE *f;
	for (size_t i = prev_from; i < prev_to; i++)
		if (w->v[i].pid == r->pid) {
			r->visible = w->v[i].visible;
			memcpy(r->name, w->v[i].name, sizeof(r->name));
			return;
		}
	r->visible = 0;
	r->name[0] = 0;
	snprintf(path, sizeof(path), "/proc/%lld/comm", (long long)r->pid);
	if (r->pid > 0 && (f = fopen(path, "r")) != NULL) {
		r->visible = 1;
		if (fgets(r->name, sizeof(r->name), f))
			r->name[strcspn(r->name, "\n")] = 0;
		fclose(f);
	}
	if (!r->name[0] && s->be->process_name)
		s->be->process_name(s->be->ctx, r->pid, r->name, sizeof(r->name));
}

/* One listing of the processes on every GPU; a refusal stops the watch and is kept as text. */
static void watch_tick(struct kj_sampler *s)
{
	struct kj_gpu_proc p[128];
	for (int i = 0; i < s->nslots && s->watch_every; i++) {
		struct slot *sl = &s->slots[i];
		struct watchvec *w = &sl->watch;
		int n = 0, rc;
		int64_t a = kj_now_ns();
		rc = s->be->processes(s->be->ctx, sl->index, p, (int)(sizeof(p) / sizeof(p[0])), &n);
		int64_t t = a + (kj_now_ns() - a) / 2;
		if (rc) {
			snprintf(s->watch_why, sizeof(s->watch_why),
				 "other processes cannot be seen here: the driver did not list the processes"
				 " on GPU %d (%s, NVML error %d)", sl->index, s->be->strerror(s->be->ctx, rc), rc);
			s->watch_state = KJ_WATCH_BLIND;
			s->watch_every = 0;
			return;
		}
		/* rows of the previous listing: [prev_from, w->n) */
		size_t prev_from = w->n;
		while (prev_from > 0 && w->nt > 0 && w->v[prev_from - 1].t_ns == w->t[w->nt - 1])
			prev_from--;
		size_t prev_to = w->n;
		int64_t *nt = kj_grow(w->t, &w->tcap, w->nt, sizeof(*nt), 1024);
		if (!nt)
			return;
		w->t = nt;
		w->t[w->nt++] = t;
		for (int k = 0; k < n; k++) {
			struct kj_watch_row r;
			struct kj_watch_row *nv = kj_grow(w->v, &w->cap, w->n, sizeof(*nv), 1024);
			if (!nv)
				return;
			w->v = nv;
			memset(&r, 0, sizeof(r));
			r.t_ns = t;
			r.pid = p[k].pid;
			r.used_memory_bytes = p[k].used_memory_bytes;
			r.sm_util_pct = p[k].sm_util_pct;
			watch_describe(s, w, prev_from, prev_to, &r);
			w->v[w->n++] = r;
		}
	}
}

static void *power_main(void *arg)
{
	struct kj_sampler *s = arg;
	int64_t next = kj_now_ns(), tick = 0;
	int64_t period = (int64_t)s->interval_us * 1000;

	while (!atomic_load(&s->stop)) {
		for (int i = 0; i < s->nslots; i++) {
			struct slot *sl = &s->slots[i];
			struct kj_sampler_row r;
			int64_t a, b, inst, avg;
			int rc, rc2 = 0;
			blank_row(&r);
			a = kj_now_ns();
			rc = s->be->power(s->be->ctx, sl->index, &inst, &avg);
			b = kj_now_ns();
			r.s.t_ns = a + (b - a) / 2;
			r.realtime_ns = kj_realtime_ns() - (b - r.s.t_ns);
			r.s.power_mw = inst;
			r.s.power_avg_mw = avg;
			if (tick % s->slow_every == 0)
				rc2 = s->be->state(s->be->ctx, sl->index, &r.st);
			pthread_mutex_lock(&sl->mu);
			if (rc)
				note_error(sl, "power read", rc, r.s.t_ns);
			if (rc2)
				note_error(sl, "clock/temperature read", rc2, r.s.t_ns);
			if (!rc) {
				if (push(&sl->power, &r) == 0) {
					sl->st.power_reads++;
					if (!sl->st.first_ns)
						sl->st.first_ns = r.s.t_ns;
					sl->st.last_ns = r.s.t_ns;
				}
			}
			sl->power_latest = r.s.t_ns;
			pthread_mutex_unlock(&sl->mu);
		}
		if (s->watch_every && tick % s->watch_every == 0)
			watch_tick(s);
		tick++;
		next += period;
		int64_t now = kj_now_ns();
		if (next < now)
			next = now; /* fell behind: do not burst to catch up */
		struct timespec ts = {next / 1000000000LL, next % 1000000000LL};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	return NULL;
}

/* Stores the read just before an edge and the edge itself (and the very first read), so every
 * edge has its bracket; reads in between carry no information. */
static void *counter_main(void *arg)
{
	struct slot *sl = arg;
	struct kj_sampler *s = sl->owner;
	struct kj_sampler_row prev;
	int have_prev = 0, prev_stored = 0;

	while (!atomic_load(&s->stop)) {
		struct kj_sampler_row r;
		uint64_t v = 0;
		int64_t a, b;
		int rc;
		blank_row(&r);
		a = kj_now_ns();
		rc = s->be->energy(s->be->ctx, sl->index, &v);
		b = kj_now_ns();
		r.s.t_ns = a + (b - a) / 2;
		r.realtime_ns = kj_realtime_ns() - (b - r.s.t_ns);
		pthread_mutex_lock(&sl->mu);
		sl->counter_latest = r.s.t_ns;
		if (rc) {
			note_error(sl, "energy counter read", rc, r.s.t_ns);
			pthread_mutex_unlock(&sl->mu);
			have_prev = 0; /* the bracket is broken: the next change is not an edge we timed */
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
			continue;
		}
		sl->st.counter_reads++;
		sl->counter_ns_sum += (double)(b - a);
		r.s.energy_mj = (int64_t)v;
		if (!have_prev) {
			push(&sl->counter, &r);
			prev_stored = 1;
		} else if (v != (uint64_t)prev.s.energy_mj) {
			r.s.energy_updated = 1;
			if (!prev_stored)
				push(&sl->counter, &prev);
			push(&sl->counter, &r);
			sl->st.edges++;
			prev_stored = 1;
		} else {
			prev_stored = 0;
		}
		pthread_mutex_unlock(&sl->mu);
		prev = r;
		have_prev = 1;
		if (b - a < KJ_MIN_COUNTER_PERIOD_NS) {
			struct timespec ts = {0, KJ_MIN_COUNTER_PERIOD_NS - (b - a)};
			nanosleep(&ts, NULL);
		}
	}
	/* keep the last read, so the end of the span is known */
	if (have_prev && !prev_stored) {
		pthread_mutex_lock(&sl->mu);
		push(&sl->counter, &prev);
		pthread_mutex_unlock(&sl->mu);
	}
	return NULL;
}

/* Starts the threads; with own set, the sampler takes *be over (copied into itself). */
static int start_impl(const struct kj_sampler_opts *o, struct kj_gpu_backend *be, int own,
		      struct kj_sampler **out)
{
	struct kj_sampler *s;
	int ngpu = 0, rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return KJ_ENOMEM;
	if (own) {
		s->own_be = *be;
		be = &s->own_be;
	}
	s->be = be;
	s->interval_us = o && o->interval_us > 0 ? o->interval_us : 5000;
	s->slow_every = o && o->slow_every > 0 ? o->slow_every : 20;
	rc = be->count(be->ctx, &ngpu);
	if (rc) {
		kj_errorf("cannot count GPUs: %s", be->strerror(be->ctx, rc));
		kj_sampler_close(s);
		return KJ_EGPU;
	}
	s->nslots = o && o->n_indices > 0 ? o->n_indices : ngpu;
	s->slots = calloc((size_t)s->nslots, sizeof(*s->slots));
	if (!s->slots) {
		s->nslots = 0;
		kj_sampler_close(s);
		return KJ_ENOMEM;
	}
	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		sl->owner = s;
		sl->index = o && o->n_indices > 0 ? o->nvml_indices[i] : i;
		pthread_mutex_init(&sl->mu, NULL);
		if (sl->index < 0 || sl->index >= ngpu) {
			kj_errorf("no GPU %d (this machine has %d)", sl->index, ngpu);
			s->nslots = i + 1;
			kj_sampler_close(s);
			return KJ_EINVAL;
		}
		rc = be->info(be->ctx, sl->index, &sl->info);
		if (rc) {
			kj_errorf("GPU %d: %s", sl->index, be->strerror(be->ctx, rc));
			s->nslots = i + 1;
			kj_sampler_close(s);
			return KJ_EGPU;
		}
		if (o && o->no_counter)
			sl->info.energy_counter = 0;
		sl->mig = -1;
		if (o && o->watch_interval_ms > 0 && be->mig_mode) {
			int on = 0;
			if (be->mig_mode(be->ctx, sl->index, &on) == 0)
				sl->mig = on;
		}
	}
	if (o && o->watch_interval_ms > 0 && be->processes) {
		s->watch_every = (int)(((int64_t)o->watch_interval_ms * 1000 + s->interval_us - 1) / s->interval_us);
		if (s->watch_every < 1)
			s->watch_every = 1;
		s->watch_state = KJ_WATCH_OK;
	} else if (o && o->watch_interval_ms > 0) {
		s->watch_state = KJ_WATCH_BLIND;
		snprintf(s->watch_why, sizeof(s->watch_why), "other processes cannot be seen here: this "
			 "NVML has no process list (nvmlDeviceGetComputeRunningProcesses)");
	}
	if (pthread_create(&s->power_thread, NULL, power_main, s)) {
		kj_sampler_close(s);
		return KJ_ENOMEM;
	}
	s->power_started = 1;
	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (!sl->info.energy_counter)
			continue;
		if (pthread_create(&sl->counter_thread, NULL, counter_main, sl) == 0)
			sl->counter_started = 1;
	}
	*out = s;
	return 0;
}

int kj_sampler_start_with(const struct kj_sampler_opts *o, struct kj_gpu_backend *be,
			  struct kj_sampler **out)
{
	return start_impl(o, be, 0, out);
}

int kj_sampler_start(const struct kj_sampler_opts *o, struct kj_sampler **out)
{
	char why[512];
	struct kj_gpu_backend be;
	int rc;

	*out = NULL;
	rc = kj_gpu_nvml_open(&be, why, sizeof(why));
	if (rc) {
		kj_errorf("%s", why);
		return rc;
	}
	return start_impl(o, &be, 1, out); /* closes the back-end itself on failure */
}

int kj_sampler_stop(struct kj_sampler *s)
{
	if (!s || s->stopped)
		return 0;
	atomic_store(&s->stop, 1);
	if (s->power_started)
		pthread_join(s->power_thread, NULL);
	for (int i = 0; i < s->nslots; i++)
		if (s->slots[i].counter_started)
			pthread_join(s->slots[i].counter_thread, NULL);
	s->stopped = 1;
	return 0;
}

void kj_sampler_close(struct kj_sampler *s)
{
	if (!s)
		return;
	kj_sampler_stop(s);
	for (int i = 0; i < s->nslots; i++) {
		free(s->slots[i].power.v);
		free(s->slots[i].counter.v);
		free(s->slots[i].watch.v);
		free(s->slots[i].watch.t);
		pthread_mutex_destroy(&s->slots[i].mu);
	}
	free(s->slots);
	if (s->be == &s->own_be)
		kj_gpu_backend_close(&s->own_be);
	free(s);
}

int kj_sampler_ndev(const struct kj_sampler *s)
{
	return s ? s->nslots : 0;
}

const struct kj_gpu_info *kj_sampler_info(const struct kj_sampler *s, int slot, int *nvml_index)
{
	if (!s || slot < 0 || slot >= s->nslots)
		return NULL;
	if (nvml_index)
		*nvml_index = s->slots[slot].index;
	return &s->slots[slot].info;
}

size_t kj_sampler_fetch(struct kj_sampler *s, int slot, struct kj_sampler_cursor *cur,
			struct kj_sampler_row *buf, size_t max)
{
	struct slot *sl;
	size_t k = 0;
	int64_t water = INT64_MAX;
	if (!s || slot < 0 || slot >= s->nslots)
		return 0;
	sl = &s->slots[slot];
	pthread_mutex_lock(&sl->mu);
	if (!s->stopped) {
		water = sl->power_latest;
		/* a counter read in flight may still store a row as old as its start */
		if (sl->counter_started && sl->counter_latest - 20000000LL < water)
			water = sl->counter_latest - 20000000LL;
	}
	while (k < max) {
		const struct kj_sampler_row *p = cur->power < sl->power.n ? &sl->power.v[cur->power] : NULL;
		const struct kj_sampler_row *c =
		    cur->counter < sl->counter.n ? &sl->counter.v[cur->counter] : NULL;
		const struct kj_sampler_row *take;
		if (p && c)
			take = p->s.t_ns <= c->s.t_ns ? p : c;
		else
			take = p ? p : c;
		if (!take || take->s.t_ns > water)
			break;
		buf[k++] = *take;
		if (take == p)
			cur->power++;
		else
			cur->counter++;
	}
	pthread_mutex_unlock(&sl->mu);
	return k;
}

int kj_sampler_samples(struct kj_sampler *s, int slot, struct kj_power_sample **out, size_t *n)
{
	struct kj_sampler_cursor cur = {0, 0};
	struct kj_sampler_row *rows;
	size_t total, got;
	*out = NULL;
	*n = 0;
	if (!s || slot < 0 || slot >= s->nslots)
		return KJ_EINVAL;
	pthread_mutex_lock(&s->slots[slot].mu);
	total = s->slots[slot].power.n + s->slots[slot].counter.n;
	pthread_mutex_unlock(&s->slots[slot].mu);
	rows = malloc((total + 1) * sizeof(*rows));
	struct kj_power_sample *v = malloc((total + 1) * sizeof(*v));
	if (!rows || !v) {
		free(rows);
		free(v);
		return KJ_ENOMEM;
	}
	got = kj_sampler_fetch(s, slot, &cur, rows, total);
	for (size_t i = 0; i < got; i++)
		v[i] = rows[i].s;
	free(rows);
	*out = v;
	*n = got;
	return 0;
}

void kj_sampler_get_stats(struct kj_sampler *s, int slot, struct kj_sampler_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s || slot < 0 || slot >= s->nslots)
		return;
	pthread_mutex_lock(&s->slots[slot].mu);
	*st = s->slots[slot].st;
	if (st->counter_reads)
		st->counter_read_ns_mean = s->slots[slot].counter_ns_sum / (double)st->counter_reads;
	pthread_mutex_unlock(&s->slots[slot].mu);
}

int kj_sampler_watch(const struct kj_sampler *s, int slot, const struct kj_watch_row **rows,
		     size_t *n, const int64_t **listings, size_t *n_listings, const char **why)
{
	*rows = NULL;
	*listings = NULL;
	*n = *n_listings = 0;
	*why = "";
	if (!s)
		return KJ_WATCH_OFF;
	*why = s->watch_why;
	if (slot >= 0 && slot < s->nslots && s->stopped) {
		*rows = s->slots[slot].watch.v;
		*n = s->slots[slot].watch.n;
		*listings = s->slots[slot].watch.t;
		*n_listings = s->slots[slot].watch.nt;
	}
	return s->watch_state;
}

int kj_sampler_mig(const struct kj_sampler *s, int slot)
{
	if (!s || slot < 0 || slot >= s->nslots)
		return -1;
	return s->slots[slot].mig;
}

const char *kj_sampler_first_error(struct kj_sampler *s)
{
	return s ? s->first_error : "";
}
