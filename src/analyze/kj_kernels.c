#include "kj_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_intervals.h"
#include "kj_kernel_class.h"

#define KEY_WORDS 9

/* A group's identity: word 0 is the kind of key (1 unique id, 0 fallback kernel key,
 * 2 memcpy, 3 memset), the rest its fields. */
struct gkey {
	int64_t w[KEY_WORDS];
};

struct devlist {
	int64_t device_id;
	struct kj_interval *iv;
	size_t n, cap;
};

struct builder {
	struct kj_kernel_report *r;
	size_t cap;            /* of r->rows */
	struct gkey *keys;     /* parallel to r->rows */
	int64_t *name_ids;     /* parallel to r->rows: first launch's name_id, -1 */
	int64_t *slots;        /* hash slots: row index + 1, 0 empty */
	size_t nslots;
	struct devlist *devs;
	size_t ndevs, devcap;
	char **kinds;          /* interned memcpy kinds */
	size_t nkinds;
	int64_t pid;           /* only this process's work; < 0: every process's */
};

static uint64_t key_hash(const struct gkey *k)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < KEY_WORDS; i++) {
		h ^= (uint64_t)k->w[i];
		h *= 1099511628211ull;
		h ^= h >> 29;
	}
	return h;
}

static int grow_slots(struct builder *b)
{
	size_t n = b->nslots ? b->nslots * 2 : 1024;
	int64_t *s = calloc(n, sizeof(*s));
	if (!s)
		return KJ_ENOMEM;
	for (size_t i = 0; i < b->r->n; i++) {
		size_t j = key_hash(&b->keys[i]) & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = (int64_t)i + 1;
	}
	free(b->slots);
	b->slots = s;
	b->nslots = n;
	return 0;
}

/* Find the group of k, creating it (zeroed, -1 integers) when absent. *idx receives its row. */
static int group_get(struct builder *b, const struct gkey *k, enum kj_activity_kind kind,
		     size_t *idx, int *created)
{
	size_t j;
	*created = 0;
	if (b->r->n * 2 >= b->nslots && grow_slots(b))
		return KJ_ENOMEM;
	j = key_hash(k) & (b->nslots - 1);
	while (b->slots[j]) {
		size_t i = (size_t)(b->slots[j] - 1);
		if (!memcmp(&b->keys[i], k, sizeof(*k))) {
			*idx = i;
			return 0;
		}
		j = (j + 1) & (b->nslots - 1);
	}
	if (b->r->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 64;
		void *p = realloc(b->r->rows, nc * sizeof(*b->r->rows));
		if (!p)
			return KJ_ENOMEM;
		b->r->rows = p;
		p = realloc(b->keys, nc * sizeof(*b->keys));
		if (!p)
			return KJ_ENOMEM;
		b->keys = p;
		p = realloc(b->name_ids, nc * sizeof(*b->name_ids));
		if (!p)
			return KJ_ENOMEM;
		b->name_ids = p;
		b->cap = nc;
	}
	*idx = b->r->n++;
	b->keys[*idx] = *k;
	b->name_ids[*idx] = -1;
	struct kj_kernel_stat *s = &b->r->rows[*idx];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->unique_id = -1;
	s->bytes = -1;
	s->shmem_dynamic = s->shmem_static = s->registers = -1;
	s->shmem_executed = s->carveout = -1;
	s->cooperative = -1;
	for (int i = 0; i < 3; i++)
		s->grid[i] = s->block[i] = s->cluster[i] = -1;
	b->slots[j] = (int64_t)*idx + 1;
	*created = 1;
	return 0;
}

static int add_interval(struct builder *b, int64_t dev, int64_t s, int64_t e)
{
	struct devlist *d = NULL;
	for (size_t i = 0; i < b->ndevs; i++)
		if (b->devs[i].device_id == dev) {
			d = &b->devs[i];
			break;
		}
	if (!d) {
		if (b->ndevs == b->devcap) {
			size_t nc = b->devcap ? b->devcap * 2 : 4;
			void *p = realloc(b->devs, nc * sizeof(*b->devs));
			if (!p)
				return KJ_ENOMEM;
			b->devs = p;
			b->devcap = nc;
		}
		d = &b->devs[b->ndevs++];
		memset(d, 0, sizeof(*d));
		d->device_id = dev;
	}
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 4096;
		void *p = realloc(d->iv, nc * sizeof(*d->iv));
		if (!p)
			return KJ_ENOMEM;
		d->iv = p;
		d->cap = nc;
	}
	d->iv[d->n].start_ns = s;
	d->iv[d->n].end_ns = e;
	d->n++;
	return 0;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? strdup((const char *)t) : NULL;
}

/* Account one timed-or-not launch in row s; returns whether it was timed. */
static int account(struct builder *b, struct kj_kernel_stat *s, sqlite3_stmt *st, int c_start,
		   int c_end, int64_t dev, int *err)
{
	int64_t t0, t1, d;
	s->count++;
	*err = 0;
	if (sqlite3_column_type(st, c_start) == SQLITE_NULL ||
	    sqlite3_column_type(st, c_end) == SQLITE_NULL) {
		b->r->untimed++;
		return 0;
	}
	t0 = sqlite3_column_int64(st, c_start);
	t1 = sqlite3_column_int64(st, c_end);
	if (t1 < t0) {
		b->r->untimed++;
		return 0;
	}
	d = t1 - t0;
	if (s->timed == 0 || d < s->min_ns)
		s->min_ns = d;
	if (s->timed == 0 || d > s->max_ns)
		s->max_ns = d;
	s->timed++;
	s->total_ns += d;
	*err = add_interval(b, dev, t0, t1);
	return 1;
}

static int scan_kernels(struct builder *b, sqlite3 *db)
{
	char sql[512];
	/* older runs may lack kernel.shmem_executed / carveout (the L1/shared split) and launch_type */
	snprintf(sql, sizeof(sql),
		 "SELECT device_id, start_ns, end_ns, unique_id, name_id, grid_x, grid_y, grid_z,"
		 " block_x, block_y, block_z, shmem_dynamic, shmem_static, registers, cluster_x,"
		 " cluster_y, cluster_z, %s, %s FROM kernel%s",
		 kj_db_caps(db)->kernel_shmem_executed ? "shmem_executed, carveout" : "NULL, NULL",
		 kj_db_caps(db)->kernel_launch_type ? "launch_type" : "NULL",
		 b->pid >= 0 ? " WHERE pid = ?1" : "");
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, sql, &st), step, err;

	if (rc)
		return rc;
	if (b->pid >= 0)
		sqlite3_bind_int64(st, 1, b->pid);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct gkey k;
		size_t idx;
		int created;
		memset(&k, 0, sizeof(k));
		if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
			k.w[0] = 1;
			k.w[1] = sqlite3_column_int64(st, 3);
		} else {
			k.w[0] = 0;
			k.w[1] = kj_db_col_i64(st, 4, -1);
			for (int i = 0; i < 7; i++)
				k.w[2 + i] = kj_db_col_i64(st, 5 + i, -1);
		}
		if ((rc = group_get(b, &k, KJ_ACT_KERNEL, &idx, &created)))
			goto out;
		struct kj_kernel_stat *s = &b->r->rows[idx];
		if (created) {
			if (k.w[0] == 1)
				s->unique_id = k.w[1];
			b->name_ids[idx] = kj_db_col_i64(st, 4, -1);
			for (int i = 0; i < 3; i++) {
				s->grid[i] = kj_db_col_i64(st, 5 + i, -1);
				s->block[i] = kj_db_col_i64(st, 8 + i, -1);
				s->cluster[i] = kj_db_col_i64(st, 14 + i, -1);
			}
			s->shmem_dynamic = kj_db_col_i64(st, 11, -1);
			s->shmem_static = kj_db_col_i64(st, 12, -1);
			s->registers = kj_db_col_i64(st, 13, -1);
		}
		if (s->shmem_executed < 0) /* the first launch that has them */
			s->shmem_executed = kj_db_col_i64(st, 17, -1);
		if (s->carveout < 0)
			s->carveout = kj_db_col_i64(st, 18, -1);
		if (sqlite3_column_type(st, 19) != SQLITE_NULL) { /* CUPTI's launch types 1, 2: cooperative */
			int64_t lt = sqlite3_column_int64(st, 19);
			int coop = lt == 1 || lt == 2;
			if (coop > s->cooperative)
				s->cooperative = coop;
		}
		b->r->kernel_launches++;
		if (account(b, s, st, 1, 2, kj_db_col_i64(st, 0, -1), &err))
			b->r->kernel_ns += sqlite3_column_int64(st, 2) - sqlite3_column_int64(st, 1);
		if ((rc = err))
			goto out;
	}
	if (step != SQLITE_DONE) {
		kj_errorf("database: reading kernels: %s", sqlite3_errmsg(db));
		rc = KJ_EDB;
	}
out:
	sqlite3_finalize(st);
	return rc;
}

static int64_t intern_kind(struct builder *b, const char *kind)
{
	if (!kind)
		return -1;
	for (size_t i = 0; i < b->nkinds; i++)
		if (!strcmp(b->kinds[i], kind))
			return (int64_t)i;
	void *p = realloc(b->kinds, (b->nkinds + 1) * sizeof(*b->kinds));
	if (!p)
		return -2;
	b->kinds = p;
	if (!(b->kinds[b->nkinds] = strdup(kind)))
		return -2;
	return (int64_t)b->nkinds++;
}

/* memcpy grouped by (kind, bytes); memset by bytes. */
static int scan_copies(struct builder *b, sqlite3 *db, int memset_table)
{
	char sql[160];
	snprintf(sql, sizeof(sql), "%s%s",
		 memset_table ? "SELECT device_id, start_ns, end_ns, bytes, NULL FROM memset"
			      : "SELECT device_id, start_ns, end_ns, bytes, kind FROM memcpy",
		 b->pid >= 0 ? " WHERE pid = ?1" : "");
	sqlite3_stmt *st = NULL;
	int rc = kj_db_prepare(db, sql, &st), step, err;

	if (rc)
		return rc;
	if (b->pid >= 0)
		sqlite3_bind_int64(st, 1, b->pid);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		struct gkey k;
		size_t idx;
		int created;
		memset(&k, 0, sizeof(k));
		k.w[0] = memset_table ? 3 : 2;
		k.w[1] = intern_kind(b, (const char *)sqlite3_column_text(st, 4));
		if (k.w[1] == -2) {
			rc = KJ_ENOMEM;
			goto out;
		}
		k.w[2] = kj_db_col_i64(st, 3, -1);
		if ((rc = group_get(b, &k, memset_table ? KJ_ACT_MEMSET : KJ_ACT_MEMCPY, &idx,
				    &created)))
			goto out;
		struct kj_kernel_stat *s = &b->r->rows[idx];
		if (created) {
			s->bytes = k.w[2];
			s->tier = KJ_TIER_COPY;
			if (k.w[1] >= 0 && !(s->copy_kind = strdup(b->kinds[k.w[1]]))) {
				rc = KJ_ENOMEM;
				goto out;
			}
		}
		if (memset_table)
			b->r->memsets++;
		else
			b->r->memcpys++;
		account(b, s, st, 1, 2, kj_db_col_i64(st, 0, -1), &err);
		if ((rc = err))
			goto out;
	}
	if (step != SQLITE_DONE) {
		kj_errorf("database: reading %s: %s", memset_table ? "memsets" : "memcpys",
			  sqlite3_errmsg(db));
		rc = KJ_EDB;
	}
out:
	sqlite3_finalize(st);
	return rc;
}

/* Names, keys and tiers of the kernel groups (one lookup per group, not per launch). */
static int fill_names(struct builder *b, sqlite3 *db)
{
	sqlite3_stmt *uk = NULL, *nm = NULL;
	int rc = kj_db_prepare(db,
			       "SELECT u.key, u.keyed_by, u.tier, n.mangled, n.demangled"
			       " FROM unique_kernel u LEFT JOIN kernel_name n ON n.id = u.name_id"
			       " WHERE u.id = ?",
			       &uk);
	if (!rc)
		rc = kj_db_prepare(db, "SELECT mangled, demangled FROM kernel_name WHERE id = ?", &nm);
	for (size_t i = 0; !rc && i < b->r->n; i++) {
		struct kj_kernel_stat *s = &b->r->rows[i];
		const char *dbtier = NULL;
		char *tier_copy = NULL;

		if (s->kind != KJ_ACT_KERNEL) {
			char buf[96];
			if (s->kind == KJ_ACT_MEMSET)
				snprintf(buf, sizeof(buf), "memset");
			else
				snprintf(buf, sizeof(buf), "memcpy %s", s->copy_kind ? s->copy_kind : "?");
			s->name = strdup(buf);
			s->demangled = strdup(buf);
			if (!s->name || !s->demangled)
				rc = KJ_ENOMEM;
			continue;
		}
		if (s->unique_id >= 0) {
			sqlite3_reset(uk);
			sqlite3_bind_int64(uk, 1, s->unique_id);
			if (sqlite3_step(uk) == SQLITE_ROW) {
				s->key = col_dup(uk, 0);
				s->keyed_by = col_dup(uk, 1);
				tier_copy = col_dup(uk, 2);
				s->name = col_dup(uk, 3);
				s->demangled = col_dup(uk, 4);
			}
		}
		if (!s->name && b->name_ids[i] >= 0) {
			sqlite3_reset(nm);
			sqlite3_bind_int64(nm, 1, b->name_ids[i]);
			if (sqlite3_step(nm) == SQLITE_ROW) {
				s->name = col_dup(nm, 0);
				free(s->demangled);
				s->demangled = col_dup(nm, 1);
			}
		}
		if (!s->name)
			s->name = strdup("(unknown)");
		if (!s->demangled && s->name)
			s->demangled = kj_demangle(s->name);
		dbtier = kj_tier_canonical(tier_copy);
		free(tier_copy);
		s->tier = dbtier ? dbtier : kj_tier_classify(s->name, s->demangled);
		if (!s->name || !s->demangled)
			rc = KJ_ENOMEM;
		b->r->unique_kernels++;
	}
	sqlite3_finalize(uk);
	sqlite3_finalize(nm);
	return rc;
}

static void busy_time(struct builder *b)
{
	int64_t first = 0, last = 0;
	int any = 0;
	for (size_t i = 0; i < b->ndevs; i++) {
		struct devlist *d = &b->devs[i];
		size_t m = kj_intervals_merge(d->iv, d->n);
		if (m == 0)
			continue;
		b->r->busy_ns += kj_intervals_union_sorted_ns(d->iv, m);
		b->r->devices++;
		if (!any || d->iv[0].start_ns < first)
			first = d->iv[0].start_ns;
		if (!any || d->iv[m - 1].end_ns > last)
			last = d->iv[m - 1].end_ns;
		any = 1;
	}
	b->r->span_ns = any ? last - first : 0;
	for (size_t i = 0; i < b->r->n; i++) {
		struct kj_kernel_stat *s = &b->r->rows[i];
		s->mean_ns = s->timed ? (double)s->total_ns / (double)s->timed : 0.0;
		s->share_of_busy = b->r->busy_ns > 0 ? (double)s->total_ns / (double)b->r->busy_ns : 0.0;
	}
}

int kj_kernels_analyze(sqlite3 *db, struct kj_kernel_report **out)
{
	return kj_kernels_analyze_pid(db, -1, out);
}

int kj_kernels_analyze_pid(sqlite3 *db, int64_t pid, struct kj_kernel_report **out)
{
	struct builder b;
	int rc;

	*out = NULL;
	memset(&b, 0, sizeof(b));
	b.pid = pid;
	b.r = calloc(1, sizeof(*b.r));
	if (!b.r)
		return KJ_ENOMEM;
	rc = scan_kernels(&b, db);
	if (!rc)
		rc = scan_copies(&b, db, 0);
	if (!rc)
		rc = scan_copies(&b, db, 1);
	if (!rc)
		rc = fill_names(&b, db);
	if (!rc) {
		busy_time(&b);
		kj_kernel_report_sort(b.r, KJ_SORT_TOTAL);
	}
	free(b.keys);
	free(b.name_ids);
	free(b.slots);
	for (size_t i = 0; i < b.ndevs; i++)
		free(b.devs[i].iv);
	free(b.devs);
	for (size_t i = 0; i < b.nkinds; i++)
		free(b.kinds[i]);
	free(b.kinds);
	if (rc) {
		kj_kernel_report_free(b.r);
		return rc;
	}
	*out = b.r;
	return 0;
}

static enum kj_kernel_sort sort_by;

static int cmp_i64_desc(int64_t a, int64_t b)
{
	return a == b ? 0 : (a > b ? -1 : 1);
}

static int stat_cmp(const void *pa, const void *pb)
{
	const struct kj_kernel_stat *a = pa, *b = pb;
	int c = 0;
	switch (sort_by) {
	case KJ_SORT_COUNT:
		c = cmp_i64_desc(a->count, b->count);
		break;
	case KJ_SORT_MEAN:
		c = a->mean_ns == b->mean_ns ? 0 : (a->mean_ns > b->mean_ns ? -1 : 1);
		break;
	case KJ_SORT_TOTAL:
		break;
	}
	if (!c)
		c = cmp_i64_desc(a->total_ns, b->total_ns);
	if (!c)
		c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
	if (!c)
		c = -cmp_i64_desc(a->unique_id, b->unique_id);
	if (!c)
		c = -cmp_i64_desc(a->bytes, b->bytes);
	if (!c)
		c = -cmp_i64_desc(a->grid[0] * 1000003 + a->block[0], b->grid[0] * 1000003 + b->block[0]);
	return c;
}

void kj_kernel_report_sort(struct kj_kernel_report *r, enum kj_kernel_sort by)
{
	if (!r || r->n < 2)
		return;
	sort_by = by; /* qsort has no context argument in C11; sorting is not re-entrant */
	qsort(r->rows, r->n, sizeof(*r->rows), stat_cmp);
}

void kj_kernel_report_free(struct kj_kernel_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->rows[i].key);
		free(r->rows[i].keyed_by);
		free(r->rows[i].name);
		free(r->rows[i].demangled);
		free(r->rows[i].copy_kind);
	}
	free(r->rows);
	free(r);
}
