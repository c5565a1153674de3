#include "kj_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_intervals.h"
#include "kj_kernel_class.h"
#include "kj_store_a2_kernels.h"

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

/* Account one timed-or-not launch in row s; returns whether it was timed. */
static int account(struct builder *b, struct kj_kernel_stat *s, int has_times, int64_t t0, int64_t t1,
		   int64_t dev, int *err)
{
	int64_t d;
	s->count++;
	*err = 0;
	if (!has_times) {
		b->r->untimed++;
		return 0;
	}
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

/* One kernel launch into its group. */
static int add_launch(void *ud, const struct kj_store_a2_launch *l)
{
	struct builder *b = ud;
	struct gkey k;
	size_t idx;
	int created, rc, err;
	memset(&k, 0, sizeof(k));
	if (l->has_unique) {
		k.w[0] = 1;
		k.w[1] = l->unique_id;
	} else {
		k.w[0] = 0;
		k.w[1] = l->name_id;
		for (int i = 0; i < 3; i++) {
			k.w[2 + i] = l->grid[i];
			k.w[5 + i] = l->block[i];
		}
		k.w[8] = l->shmem_dynamic;
	}
	if ((rc = group_get(b, &k, KJ_ACT_KERNEL, &idx, &created)))
		return rc;
	struct kj_kernel_stat *s = &b->r->rows[idx];
	if (created) {
		if (k.w[0] == 1)
			s->unique_id = k.w[1];
		b->name_ids[idx] = l->name_id;
		for (int i = 0; i < 3; i++) {
			s->grid[i] = l->grid[i];
			s->block[i] = l->block[i];
			s->cluster[i] = l->cluster[i];
		}
		s->shmem_dynamic = l->shmem_dynamic;
		s->shmem_static = l->shmem_static;
		s->registers = l->registers;
	}
	if (s->shmem_executed < 0) /* the first launch that has them */
		s->shmem_executed = l->shmem_executed;
	if (s->carveout < 0)
		s->carveout = l->carveout;
	if (l->has_launch_type) { /* CUPTI's launch types 1, 2: cooperative */
		int coop = l->launch_type == 1 || l->launch_type == 2;
		if (coop > s->cooperative)
			s->cooperative = coop;
	}
	b->r->kernel_launches++;
	if (account(b, s, l->has_times, l->start_ns, l->end_ns, l->device_id, &err))
		b->r->kernel_ns += l->end_ns - l->start_ns;
	return err;
}

static int scan_kernels(struct builder *b, sqlite3 *db)
{
	return kj_store_a2_launches_each(db, b->pid, add_launch, b);
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

/* A copy scan's builder and table. */
struct copies_ctx {
	struct builder *b;
	int memset_table;
};

/* One memcpy or memset into its group. */
static int add_copy(void *ud, const struct kj_store_a2_copy *c)
{
	struct copies_ctx *x = ud;
	struct builder *b = x->b;
	int memset_table = x->memset_table;
	struct gkey k;
	size_t idx;
	int created, rc, err;
	memset(&k, 0, sizeof(k));
	k.w[0] = memset_table ? 3 : 2;
	k.w[1] = intern_kind(b, c->kind);
	if (k.w[1] == -2)
		return KJ_ENOMEM;
	k.w[2] = c->bytes;
	if ((rc = group_get(b, &k, memset_table ? KJ_ACT_MEMSET : KJ_ACT_MEMCPY, &idx, &created)))
		return rc;
	struct kj_kernel_stat *s = &b->r->rows[idx];
	if (created) {
		s->bytes = k.w[2];
		s->tier = KJ_TIER_COPY;
		if (k.w[1] >= 0 && !(s->copy_kind = strdup(b->kinds[k.w[1]])))
			return KJ_ENOMEM;
	}
	if (memset_table)
		b->r->memsets++;
	else
		b->r->memcpys++;
	account(b, s, c->has_times, c->start_ns, c->end_ns, c->device_id, &err);
	return err;
}

/* memcpy grouped by (kind, bytes); memset by bytes. */
static int scan_copies(struct builder *b, sqlite3 *db, int memset_table)
{
	struct copies_ctx x = {b, memset_table};
	return kj_store_a2_copies_each(db, memset_table, b->pid, add_copy, &x);
}

/* Names, keys and tiers of the kernel groups (one lookup per group, not per launch). */
static int fill_names(struct builder *b, sqlite3 *db)
{
	struct kj_store_a2_names *nm = NULL;
	int rc = kj_store_a2_names_open(db, &nm);
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
		struct kj_store_a2_unique_name u;
		if (s->unique_id >= 0 && kj_store_a2_names_unique(nm, s->unique_id, &u)) {
			s->key = u.key;
			s->keyed_by = u.keyed_by;
			tier_copy = u.tier;
			s->name = u.mangled;
			s->demangled = u.demangled;
		}
		char *demangled = NULL;
		if (!s->name && b->name_ids[i] >= 0 && kj_store_a2_names_of(nm, b->name_ids[i], &s->name, &demangled)) {
			free(s->demangled);
			s->demangled = demangled;
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
	kj_store_a2_names_close(nm);
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
