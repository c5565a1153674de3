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

int kj_acts_load(sqlite3 *db, struct kj_acts *out)
{
	/* copies and memsets carry the time of the call that issued them in runs recorded since
	 * host calls were (launch_ns); older runs key them by their start */
	static const char *sql_fmt =
		"SELECT 0, start_ns, end_ns, launch_ns, pid, device_id, stream_id, correlation_id,"
		" 0, unique_id, name_id, NULL FROM kernel"
		" UNION ALL SELECT 1, start_ns, end_ns, %s, pid, device_id, stream_id,"
		" correlation_id, bytes, NULL, NULL, kind FROM memcpy"
		" UNION ALL SELECT 2, start_ns, end_ns, %s, pid, device_id, stream_id,"
		" correlation_id, bytes, NULL, NULL, NULL FROM memset";
	char sql[512];
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	{
		int64_t total = kj_db_count(db, "kernel") + kj_db_count(db, "memcpy") +
				kj_db_count(db, "memset");
		cap = total > 0 ? (size_t)total : 16;
	}
	out->v = malloc(cap * sizeof(*out->v));
	if (!out->v)
		return KJ_ENOMEM;
	snprintf(sql, sizeof(sql), sql_fmt,
		 kj_db_caps(db)->memcpy_launch_ns ? "launch_ns" : "NULL",
		 kj_db_caps(db)->memset_launch_ns ? "launch_ns" : "NULL");
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct kj_act a;
		int64_t launch;
		if (sqlite3_column_type(st, 1) == SQLITE_NULL ||
		    sqlite3_column_type(st, 2) == SQLITE_NULL) {
			out->dropped++;
			continue;
		}
		a.type = (uint8_t)sqlite3_column_int(st, 0);
		a.start_ns = sqlite3_column_int64(st, 1);
		a.end_ns = sqlite3_column_int64(st, 2);
		if (a.end_ns < a.start_ns) {
			out->dropped++;
			continue;
		}
		launch = kj_db_col_i64(st, 3, -1);
		a.has_launch = 0;
		a.key_ns = a.start_ns;
		if (launch >= 0) {
			if (launch <= a.start_ns) {
				a.key_ns = launch;
				a.has_launch = 1;
			} else {
				out->launch_after++;
			}
		}
		a.pid = kj_db_col_i64(st, 4, 0);
		a.device_id = kj_db_col_i64(st, 5, 0);
		a.stream_id = kj_db_col_i64(st, 6, 0);
		a.correlation_id = kj_db_col_i64(st, 7, -1);
		a.bytes = kj_db_col_i64(st, 8, 0);
		a.unique_id = kj_db_col_i64(st, 9, -1);
		a.name_id = kj_db_col_i64(st, 10, -1);
		a.dir = a.type == KJ_ACT_MEMCPY
				? copy_dir((const char *)sqlite3_column_text(st, 11))
				: KJ_COPY_OTHER;
		if (out->n == cap) {
			struct kj_act *nv = realloc(out->v, 2 * cap * sizeof(*nv));
			if (!nv) {
				sqlite3_finalize(st);
				return KJ_ENOMEM;
			}
			out->v = nv;
			cap *= 2;
		}
		out->v[out->n++] = a;
		if (a.type == KJ_ACT_KERNEL)
			out->n_kernels++;
		else if (a.type == KJ_ACT_MEMCPY)
			out->n_copies++;
		else
			out->n_memsets++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		kj_errorf("database: reading GPU activity: %s", sqlite3_errmsg(db));
		return KJ_EDB;
	}
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
	static const char *sql =
		"SELECT min(s), max(e) FROM ("
		" SELECT min(start_ns) s, max(end_ns) e FROM kernel"
		" UNION ALL SELECT min(start_ns), max(end_ns) FROM memcpy"
		" UNION ALL SELECT min(start_ns), max(end_ns) FROM memset"
		" UNION ALL SELECT min(start_ns), max(end_ns) FROM api_call"
		" UNION ALL SELECT min(start_ns), max(coalesce(end_ns, start_ns)) FROM nvtx_range"
		" UNION ALL SELECT min(alloc_ns), max(coalesce(free_ns, alloc_ns)) FROM allocation)";
	sqlite3_stmt *st = NULL;
	int rc = KJ_ENOTFOUND;
	if (kj_db_prepare(db, sql, &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*t0_ns = sqlite3_column_int64(st, 0);
		*t1_ns = sqlite3_column_type(st, 1) == SQLITE_NULL ? *t0_ns
								     : sqlite3_column_int64(st, 1);
		if (*t1_ns < *t0_ns)
			*t1_ns = *t0_ns;
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
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

int kj_names_load(sqlite3 *db, struct kj_names *out)
{
	sqlite3_stmt *st = NULL;
	int64_t maxid = -1;
	memset(out, 0, sizeof(*out));
	if (kj_db_prepare(db, "SELECT max(id) FROM kernel_name", &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW)
		maxid = kj_db_col_i64(st, 0, -1);
	sqlite3_finalize(st);
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
	if (kj_db_prepare(db, "SELECT id, demangled, mangled FROM kernel_name", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const char *d = (const char *)sqlite3_column_text(st, 1);
		const char *m = (const char *)sqlite3_column_text(st, 2);
		if (id < 0 || (size_t)id >= out->n || (!d && !m))
			continue;
		/* demangle here when the tracer did not (kj_demangle returns a copy or NULL) */
		out->v[id] = d && *d ? strdup(d) : kj_demangle(m);
		if (!out->v[id] && m)
			out->v[id] = strdup(m);
	}
	sqlite3_finalize(st);
	return 0;
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
