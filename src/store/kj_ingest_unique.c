/* Spool ingest: launches, groups and allocation ranges collected in pass 1; unique kernels
 * decided from the parameter words (pointer / junk / parameter), and their launch parameters. */
#include "kj_ingest_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_grow.h"

char *ing_layout_text(const uint32_t *layout, uint32_t n)
{
	char *text = malloc((size_t)n * 24 + 1);
	size_t len = 0;
	if (!text)
		return NULL;
	text[0] = '\0';
	for (uint32_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "%s%u:%u", i ? "," : "", layout[2 * i], layout[2 * i + 1]);
	return text;
}


int ing_add_launch(struct ingest *in, const struct kj_rec_launch *l)
{
	uint64_t gi;
	size_t diffs = (size_t)l->ndiff * sizeof(struct kj_word_diff);
	uint32_t block_len = in->spool_version >= 3 ? l->block_len : 0; /* version 2: the stream's slot */
	if (sizeof(*l) + diffs + block_len > l->h.size)
		return KJ_EINVAL;
	if (!kj_map_get(in->group_index, l->group, &gi))
		return 0; /* a group record always comes first; without it the launch is not keyed */
	/* a whole block is its group's length, beside a reference to compare it with */
	if (block_len && (!in->groups[gi].ref || block_len != in->groups[gi].rec->blob_len))
		return KJ_EINVAL;
	struct launch_info *nl = kj_grow(in->launches, &in->cap_launches, in->nlaunches, sizeof(*nl), 4096);
	if (!nl)
		return KJ_ENOMEM;
	in->launches = nl;
	struct launch_info *li = &in->launches[in->nlaunches];
	memset(li, 0, sizeof(*li));
	li->launch_ns = l->launch_ns;
	li->tid = l->tid;
	li->correlation = l->correlation; /* the stream comes from the kernel's record */
	li->group = (uint32_t)gi;
	li->ndiff = l->ndiff;
	li->diffs = (const struct kj_word_diff *)(l + 1);
	li->block = block_len ? (const unsigned char *)(l + 1) + diffs : NULL;
	return kj_map_put(in->corr, l->correlation, in->nlaunches++);
}

int ing_add_group(struct ingest *in, const struct kj_rec_group *g)
{
	size_t head = sizeof(*g) + (size_t)g->nparams * 2 * sizeof(uint32_t);
	if (head + g->blob_len > g->h.size)
		return KJ_EINVAL;
	struct group_info *ng = kj_grow(in->groups, &in->cap_groups, in->ngroups, sizeof(*ng), 256);
	if (!ng)
		return KJ_ENOMEM;
	in->groups = ng;
	struct group_info *gi = &in->groups[in->ngroups];
	memset(gi, 0, sizeof(*gi));
	gi->rec = g;
	gi->layout = (const uint32_t *)(g + 1);
	gi->ref = g->blob_len ? (const unsigned char *)g + head : NULL;
	return kj_map_put(in->group_index, g->group, in->ngroups++);
}

/* An allocation at address 0 (CUPTI's record of a graph's memory pool, which has no address of
 * its own) is no range: every small integer would fall in it and count as a pointer, and sizes
 * would no longer tell unique kernels apart. */
int ing_add_range(struct ingest *in, const struct kj_rec_memory *m)
{
	if (m->op != 1 || !m->bytes || !m->address)
		return 0;
	struct range *nr = kj_grow(in->ranges, &in->cap_ranges, in->nranges, sizeof(*nr), 256);
	if (!nr)
		return KJ_ENOMEM;
	in->ranges = nr;
	in->ranges[in->nranges++] = (struct range){m->address, m->address + m->bytes};
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->base < y->base ? -1 : x->base > y->base ? 1 : 0;
}

/* 1 if v falls inside a device allocation made at any time in this process. */
static int is_device_pointer(const struct ingest *in, uint64_t v)
{
	size_t lo = 0, hi = in->nranges;
	while (lo < hi) { /* first range with base > v */
		size_t mid = (lo + hi) / 2;
		if (in->ranges[mid].base <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges may nest (pools, VMM): look back over a few for one that contains v */
	for (size_t i = lo, back = 0; i > 0 && back < 64; i--, back++)
		if (v < in->ranges[i - 1].end)
			return 1;
	return 0;
}

/* Stack and mmap addresses (0x7f..........), and the heap-sized values junk words carry: 16-byte
 * aligned in [16 MiB, 4 GiB), but not 64 KiB aligned, as large tensor sizes are (BLOOM's
 * 250880 x 1024 embedding: 0xF500000) and a heap pointer is only once in 4096. */
static int looks_like_host_address(uint64_t v)
{
	return (v >> 40) == 0x7f || (v >> 40) == 0x55 || (v >> 40) == 0x56 ||
	       (v >= 0x1000000 && v < 0x100000000ULL && (v & 0xf) == 0 && (v & 0xffff) != 0);
}

/* A word with up to KJ_FEW_WORD_VALUES distinct values is a parameter; one with up to
 * KJ_MAX_WORD_VALUES is a parameter only if its values come back, on average every value in at
 * least two launches (sizes of the layers a model initialises one after another; not heap junk
 * that is new in every forward, nor a random-number offset or step counter, new in every launch);
 * beyond that it is junk. */
#define KJ_FEW_WORD_VALUES 8
#define KJ_MAX_WORD_VALUES 64

struct word_stat {
	uint64_t values[KJ_MAX_WORD_VALUES + 1];
	int n;            /* distinct values seen (capped at KJ_MAX_WORD_VALUES + 1) */
	int all_pointer;  /* every value is a device pointer */
	int any_host;     /* some value (the reference included) looks like a host address */
};

/* Word w of a block of len bytes (w < (len + 7) / 8; a last partial word zero-padded). */
static uint64_t block_word(const unsigned char *block, uint32_t len, uint32_t w)
{
	uint64_t v = 0;
	uint32_t n = len - w * 8 < 8 ? len - w * 8 : 8;
	memcpy(&v, block + (size_t)w * 8, n);
	return v;
}

static uint64_t word_value(const struct group_info *g, const struct launch_info *l, uint32_t w)
{
	if (l->block)
		return block_word(l->block, g->rec->blob_len, w);
	for (uint32_t i = 0; i < l->ndiff; i++)
		if (l->diffs[i].word == w)
			return l->diffs[i].value;
	return g->ref ? block_word(g->ref, g->rec->blob_len, w) : 0;
}

/* The words of launch l that differ from its group's reference block, one a call, in either form
 * the spool gives them: 1 with *w and *v set, 0 when no more are left (*at starts at 0). A word
 * outside the group's block is skipped. */
static int next_changed_word(const struct group_info *g, const struct launch_info *l, uint32_t *at,
			     uint32_t *w, uint64_t *v)
{
	uint32_t len = g->ref ? g->rec->blob_len : 0, words = (len + 7) / 8;
	if (l->block) {
		while (*at < words) {
			uint32_t i = (*at)++;
			uint64_t mine = block_word(l->block, len, i);
			if (mine != block_word(g->ref, len, i)) {
				*w = i, *v = mine;
				return 1;
			}
		}
		return 0;
	}
	while (*at < l->ndiff) {
		const struct kj_word_diff *d = &l->diffs[(*at)++];
		if (d->word < words) {
			*w = d->word, *v = d->value;
			return 1;
		}
	}
	return 0;
}

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* Decide, per group, which parameter words tell work apart (see kj_ingest.h), then give every
 * launch its unique key. Runs between the two passes. */
int ing_classify(struct ingest *in)
{
	struct kj_map *index = kj_map_new();
	struct word_stat *stats = NULL;
	size_t nstats = 0, cap = 0;
	int rc = 0;
	if (!index)
		return KJ_ENOMEM;
	if (in->nranges) /* none: ranges may be NULL, which qsort must not get */
		qsort(in->ranges, in->nranges, sizeof(*in->ranges), cmp_range);
	for (size_t i = 0; i < in->nlaunches; i++)
		in->groups[in->launches[i].group].launches++;
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		const struct launch_info *l = &in->launches[i];
		const struct group_info *g = &in->groups[l->group];
		uint32_t at = 0, word;
		uint64_t v;
		while (next_changed_word(g, l, &at, &word, &v)) {
			uint64_t wkey = ((uint64_t)l->group << 24) | word, si;
			struct word_stat *ws;
			if (word >= (1u << 24))
				continue;
			if (!kj_map_get(index, wkey, &si)) {
				if (nstats == cap) {
					cap = cap ? cap * 2 : 1024;
					struct word_stat *n = realloc(stats, cap * sizeof(*n));
					if (!n) {
						rc = KJ_ENOMEM;
						break;
					}
					stats = n;
				}
				si = nstats++;
				ws = &stats[si];
				memset(ws, 0, sizeof(*ws));
				ws->values[0] = block_word(g->ref, g->rec->blob_len, word);
				ws->n = 1;
				ws->all_pointer = is_device_pointer(in, ws->values[0]);
				ws->any_host = !ws->all_pointer && looks_like_host_address(ws->values[0]);
				if ((rc = kj_map_put(index, wkey, si)) != 0)
					break;
			}
			ws = &stats[si];
			if (ws->n > KJ_MAX_WORD_VALUES)
				continue;
			int seen = 0;
			for (int j = 0; j < ws->n && !seen; j++)
				seen = ws->values[j] == v;
			if (seen)
				continue;
			ws->values[ws->n++] = v;
			if (ws->all_pointer && !is_device_pointer(in, v))
				ws->all_pointer = 0;
			if (!ws->any_host && looks_like_host_address(v) && !is_device_pointer(in, v))
				ws->any_host = 1;
		}
	}
	/* the parameter words of each group: varying, not pointers, not junk */
	for (size_t gi = 0; gi < in->ngroups && !rc; gi++) {
		struct group_info *g = &in->groups[gi];
		uint32_t words = g->ref ? (g->rec->blob_len + 7) / 8 : 0;
		for (uint32_t w = 0; w < words; w++) {
			uint64_t si;
			if (!kj_map_get(index, ((uint64_t)gi << 24) | w, &si))
				continue;
			const struct word_stat *ws = &stats[si];
			if (ws->all_pointer || ws->any_host || ws->n > KJ_MAX_WORD_VALUES ||
			    (ws->n > KJ_FEW_WORD_VALUES && g->launches < 2 * (uint64_t)ws->n))
				continue;
			uint32_t *pw = realloc(g->param_words, (g->nparam_words + 1) * sizeof(*pw));
			if (!pw) {
				rc = KJ_ENOMEM;
				break;
			}
			g->param_words = pw;
			pw[g->nparam_words++] = w;
		}
	}
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		struct launch_info *l = &in->launches[i];
		const struct group_info *g = &in->groups[l->group];
		uint64_t h = g->rec->group;
		for (uint32_t j = 0; j < g->nparam_words; j++)
			h = mix64(mix64(h, g->param_words[j]), word_value(g, l, g->param_words[j]));
		l->key = h;
	}
	free(stats);
	kj_map_free(index);
	return rc;
}

/* Write one launch's full parameter block (its group's reference with its words applied). */
int ing_put_launch_params(struct ingest *in, const struct launch_info *l, int64_t ordinal,
			     int iteration)
{
	const struct group_info *g = &in->groups[l->group];
	const struct kj_rec_group *r = g->rec;
	unsigned char *blob;
	char *layout;
	sqlite3_stmt *st = in->st[S_PARAMS];
	int rc;
	if (!g->ref)
		return 0;
	blob = malloc(r->blob_len);
	layout = ing_layout_text(g->layout, r->nparams);
	if (!blob || !layout) {
		free(blob);
		free(layout);
		return KJ_ENOMEM;
	}
	memcpy(blob, l->block ? l->block : g->ref, r->blob_len);
	for (uint32_t d = 0; !l->block && d < l->ndiff; d++) {
		uint32_t w = l->diffs[d].word;
		if ((uint64_t)w * 8 >= r->blob_len)
			continue;
		uint32_t n = r->blob_len - w * 8 < 8 ? r->blob_len - w * 8 : 8;
		memcpy(blob + w * 8, &l->diffs[d].value, n);
	}
	sqlite3_bind_int64(st, 1, l->unique_id);
	sqlite3_bind_int64(st, 2, in->pid);
	sqlite3_bind_int64(st, 3, l->correlation);
	ing_bind_opt_i64(st, 4, ordinal >= 0, ordinal);
	sqlite3_bind_text(st, 5, r->handle_kind == 1 ? "function" : r->handle_kind == 2 ? "kernel" : "unknown",
			  -1, SQLITE_STATIC);
	ing_bind_dims(st, 6, r->grid, r->block, r->cluster);
	sqlite3_bind_int64(st, 15, r->shmem_dynamic);
	sqlite3_bind_int64(st, 16, l->stream);
	sqlite3_bind_int64(st, 17, l->launch_ns);
	ing_bind_opt_i64(st, 18, iteration > 0, iteration);
	sqlite3_bind_text(st, 19, layout, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 20, blob, (int)r->blob_len, SQLITE_TRANSIENT);
	ing_bind_opt_i64(st, 21, r->module_id != 0, r->module_id);
	rc = ing_step_done(in, st);
	free(blob);
	free(layout);
	in->stats->params++;
	return rc;
}

/* Unique-kernel rows for every keyed launch, and the first K parameter blocks of each. */
int ing_put_uniques(struct ingest *in)
{
	struct kj_map *kept = kj_map_new();
	int k = in->opts ? in->opts->params_k : 1;
	int rc = 0;
	if (!kept)
		return KJ_ENOMEM;
	for (size_t i = 0; i < in->nlaunches && !rc; i++) {
		struct launch_info *l = &in->launches[i];
		const struct group_info *g = &in->groups[l->group];
		const struct kj_rec_group *r = g->rec;
		struct unique_desc d;
		uint64_t n = 0;
		memset(&d, 0, sizeof(d));
		d.key = l->key;
		d.by_params = g->ref != NULL;
		d.name_sid = r->name_id;
		memcpy(d.grid, r->grid, sizeof(d.grid));
		memcpy(d.block, r->block, sizeof(d.block));
		memcpy(d.cluster, r->cluster, sizeof(d.cluster));
		d.shmem_dynamic = r->shmem_dynamic;
		d.layout = g->layout;
		d.nparams = r->nparams;
		d.param_bytes = r->blob_len;
		l->unique_id = ing_unique_id(in, &d);
		if (l->unique_id <= 0) {
			rc = KJ_EDB;
			break;
		}
		kj_map_get(kept, (uint64_t)l->unique_id, &n);
		if ((int64_t)n < k && g->ref) {
			rc = ing_put_launch_params(in, l, (int64_t)n, 0);
			kj_map_put(kept, (uint64_t)l->unique_id, n + 1);
		}
	}
	kj_map_free(kept);
	return rc;
}

