/* Loading GPU activity, iterations, intervals and maps for the analysis commands. */
#include "kj_acts.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_iterations.h"
#include "kj_kernel_class.h"
#include "kj_map.h"
#include "kj_store_a_run.h"

/* ---- activity ---- */

static int act_cmp(const void *a, const void *b)
{
	const struct kj_act *x = a, *y = b;
	if (x->key_ns != y->key_ns)
		return x->key_ns < y->key_ns ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return 0;
}

static uint8_t copy_dir(const char *kind)
{
	char k[32];
	size_t i;
	if (!kind)
		return KJ_COPY_OTHER;
	for (i = 0; kind[i] && i < sizeof(k) - 1; i++)
		k[i] = (char)tolower((unsigned char)kind[i]);
	k[i] = 0;
	if (strstr(k, "htod") || strstr(k, "h2d"))
		return KJ_COPY_H2D;
	if (strstr(k, "dtoh") || strstr(k, "d2h"))
		return KJ_COPY_D2H;
	if (strstr(k, "dtod") || strstr(k, "d2d"))
		return KJ_COPY_D2D;
	return KJ_COPY_OTHER;
}

/* kj_acts_load's state: the array being filled and its capacity. */
struct acts_load {
	struct kj_acts *out;
	size_t cap;
};

/* Appends one activity row to the kj_acts being loaded, counting the rows it drops. */
static int add_act(void *ud, const struct kj_store_a_activity *r)
{
	struct acts_load *L = ud;
	struct kj_acts *out = L->out;
	struct kj_act a;
	if (!r->has_times) {
		out->dropped++;
		return 0;
	}
	a.type = (uint8_t)r->type;
	a.start_ns = r->start_ns;
	a.end_ns = r->end_ns;
	if (a.end_ns < a.start_ns) {
		out->dropped++;
		return 0;
	}
	a.has_launch = 0;
	a.key_ns = a.start_ns;
	if (r->launch_ns >= 0) {
		if (r->launch_ns <= a.start_ns) {
			a.key_ns = r->launch_ns;
			a.has_launch = 1;
		} else {
			out->launch_after++;
		}
	}
	a.pid = r->pid;
	a.device_id = r->device_id;
	a.stream_id = r->stream_id;
	a.correlation_id = r->correlation_id;
	a.bytes = r->bytes;
	a.unique_id = r->unique_id;
	a.name_id = r->name_id;
	a.dir = a.type == KJ_ACT_MEMCPY ? copy_dir(r->kind) : KJ_COPY_OTHER;
	if (out->n == L->cap) {
		struct kj_act *nv = realloc(out->v, 2 * L->cap * sizeof(*nv));
		if (!nv)
			return KJ_ENOMEM;
		out->v = nv;
		L->cap *= 2;
	}
	out->v[out->n++] = a;
	if (a.type == KJ_ACT_KERNEL)
		out->n_kernels++;
	else if (a.type == KJ_ACT_MEMCPY)
		out->n_copies++;
	else
		out->n_memsets++;
	return 0;
}

int kj_acts_load(sqlite3 *db, struct kj_acts *out)
{
	struct acts_load L = {out, 0};
	int rc;

	memset(out, 0, sizeof(*out));
	{
		int64_t total = kj_db_count(db, "kernel") + kj_db_count(db, "memcpy") +
				kj_db_count(db, "memset");
		L.cap = total > 0 ? (size_t)total : 16;
	}
	out->v = malloc(L.cap * sizeof(*out->v));
	if (!out->v)
		return KJ_ENOMEM;
	if ((rc = kj_store_a_activity_each(db, add_act, &L)) != 0)
		return rc;
	qsort(out->v, out->n, sizeof(*out->v), act_cmp);
	return 0;
}

void kj_acts_free(struct kj_acts *a)
{
	if (!a)
		return;
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

int kj_run_extent(sqlite3 *db, int64_t *t0_ns, int64_t *t1_ns)
{
	return kj_store_a_run_extent(db, t0_ns, t1_ns);
}

/* ---- intervals ---- */

static int ival_cmp(const void *a, const void *b)
{
	const struct kj_ival *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->e < y->e ? -1 : x->e > y->e;
}

int64_t kj_ival_union(struct kj_ival *v, size_t n, int64_t lo, int64_t hi, int64_t *span_s,
		      int64_t *span_e, int64_t *sum)
{
	int64_t total = 0, csum = 0, cs = 0, ce = 0, first = 0, last = 0;
	int open = 0, any = 0;
	size_t i, sorted = 1;
	for (i = 1; i < n && sorted; i++)
		if (ival_cmp(&v[i - 1], &v[i]) > 0)
			sorted = 0;
	if (!sorted)
		qsort(v, n, sizeof(*v), ival_cmp);
	for (i = 0; i < n; i++) {
		int64_t s = v[i].s < lo ? lo : v[i].s;
		int64_t e = v[i].e > hi ? hi : v[i].e;
		if (e <= s)
			continue;
		csum += e - s;
		if (!any) {
			first = s;
			any = 1;
		}
		if (e > last)
			last = e;
		if (!open) {
			cs = s;
			ce = e;
			open = 1;
		} else if (s <= ce) {
			if (e > ce)
				ce = e;
		} else {
			total += ce - cs;
			cs = s;
			ce = e;
		}
	}
	if (open)
		total += ce - cs;
	if (span_s)
		*span_s = any ? first : 0;
	if (span_e)
		*span_e = any ? last : 0;
	if (sum)
		*sum = csum;
	return total;
}

void kj_ival_gaps(const struct kj_ival *v, size_t n, int64_t lo, int64_t hi,
		  void (*fn)(void *ctx, int64_t s, int64_t e), void *ctx)
{
	int64_t ce = 0;
	int open = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t s = v[i].s < lo ? lo : v[i].s;
		int64_t e = v[i].e > hi ? hi : v[i].e;
		if (e <= s)
			continue;
		if (open && s > ce)
			fn(ctx, ce, s);
		if (!open || e > ce)
			ce = e;
		open = 1;
	}
}

/* ---- maps ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

size_t kj_imap_get(const struct kj_imap *m, int64_t key)
{
	if (!m->cap)
		return (size_t)-1;
	for (size_t i = mix64((uint64_t)key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->vals[i] == (size_t)-1)
			return (size_t)-1;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

int kj_imap_put(struct kj_imap *m, int64_t key, size_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 64;
		struct kj_imap nm = {malloc(ncap * sizeof(int64_t)), malloc(ncap * sizeof(size_t)),
				     ncap, 0};
		if (!nm.keys || !nm.vals) {
			free(nm.keys);
			free(nm.vals);
			return KJ_ENOMEM;
		}
		memset(nm.vals, 0xff, ncap * sizeof(size_t));
		for (size_t i = 0; i < m->cap; i++)
			if (m->vals[i] != (size_t)-1)
				kj_imap_put(&nm, m->keys[i], m->vals[i]);
		kj_imap_free(m);
		*m = nm;
	}
	for (size_t i = mix64((uint64_t)key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->vals[i] == (size_t)-1) {
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			return 0;
		}
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	}
}

void kj_imap_free(struct kj_imap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

size_t kj_smap_intern(struct kj_smap *m, const char *name)
{
	size_t i;
	if (m->nslots) {
		for (i = kj_hash_str(name) & (m->nslots - 1); m->slots[i];
		     i = (i + 1) & (m->nslots - 1))
			if (!strcmp(m->names[m->slots[i] - 1], name))
				return m->slots[i] - 1;
	}
	if ((m->n + 1) * 2 > m->nslots) {
		size_t ns = m->nslots ? m->nslots * 2 : 64;
		size_t *sl = calloc(ns, sizeof(*sl));
		if (!sl)
			return (size_t)-1;
		for (size_t k = 0; k < m->n; k++) {
			for (i = kj_hash_str(m->names[k]) & (ns - 1); sl[i]; i = (i + 1) & (ns - 1))
				;
			sl[i] = k + 1;
		}
		free(m->slots);
		m->slots = sl;
		m->nslots = ns;
	}
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 32;
		char **nn = realloc(m->names, nc * sizeof(*nn));
		if (!nn)
			return (size_t)-1;
		m->names = nn;
		m->cap = nc;
	}
	m->names[m->n] = strdup(name);
	if (!m->names[m->n])
		return (size_t)-1;
	for (i = kj_hash_str(name) & (m->nslots - 1); m->slots[i]; i = (i + 1) & (m->nslots - 1))
		;
	m->slots[i] = m->n + 1;
	return m->n++;
}

void kj_smap_free(struct kj_smap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->names[i]);
	free(m->names);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- names and text ---- */

/* Keeps one kernel_name row in the kj_names being loaded (ud). */
static int add_name(void *ud, int64_t id, const char *d, const char *m)
{
	struct kj_names *out = ud;
	if (id < 0 || (size_t)id >= out->n || (!d && !m))
		return 0;
	/* demangle here when the tracer did not (kj_demangle returns a copy or NULL) */
	out->v[id] = d && *d ? strdup(d) : kj_demangle(m);
	if (!out->v[id] && m)
		out->v[id] = strdup(m);
	return 0;
}

int kj_names_load(sqlite3 *db, struct kj_names *out)
{
	int64_t maxid = -1;
	memset(out, 0, sizeof(*out));
	if (kj_store_a_kernel_name_max_id(db, &maxid))
		return KJ_EDB;
	if (maxid < 0)
		return 0;
	if (maxid > 50000000) {
		kj_errorf("kernel_name: id %lld is implausibly large", (long long)maxid);
		return KJ_EINVAL;
	}
	out->n = (size_t)maxid + 1;
	out->v = calloc(out->n, sizeof(*out->v));
	if (!out->v)
		return KJ_ENOMEM;
	return kj_store_a_kernel_names_each(db, add_name, out);
}

void kj_names_free(struct kj_names *nm)
{
	if (!nm)
		return;
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	nm->v = NULL;
	nm->n = 0;
}

const char *kj_names_get(const struct kj_names *nm, int64_t id)
{
	if (id >= 0 && (size_t)id < nm->n && nm->v[id])
		return nm->v[id];
	return "kernel?";
}

int kj_parse_time_ns(const char *s, int64_t *out_ns)
{
	char *end = NULL;
	double v, mult = 1000.0; /* default unit: microseconds */
	if (!s || !*s)
		return KJ_EINVAL;
	v = strtod(s, &end);
	if (end == s)
		return KJ_EINVAL;
	if (!strcmp(end, "") || !strcmp(end, "us"))
		mult = 1e3;
	else if (!strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "s"))
		mult = 1e9;
	else
		return KJ_EINVAL;
	if (!(v * mult < 9.0e18 && v * mult > -9.0e18))
		return KJ_EINVAL;
	*out_ns = (int64_t)(v * mult);
	return 0;
}
