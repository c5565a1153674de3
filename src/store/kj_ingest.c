/* Spool ingest: one process's trace file into the run database, in two passes over the
 * mapped file (pass 1 collects strings, launches, groups, ranges; pass 2 writes rows). The
 * statements the rows go in through live in kj_ingest_db.c, the row writers in kj_ingest_rows.c. */
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

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"


/* The tracer numbers a file's strings 1, 2, ... as it writes them, so no id can pass the count of
 * string records the file has room for: a larger one is a damaged record, refused before the
 * tables grow to it (an id near 2^27 would ask for gigabytes). */
static int add_string(struct ingest *in, const struct kj_rec_string *s)
{
	if (!ing_payload_fits(&s->h, sizeof(*s), s->len) || s->id > in->n / sizeof(*s))
		return KJ_EINVAL;
	if (s->id >= in->nstrings) {
		size_t n = in->nstrings ? in->nstrings : 256;
		while (n <= s->id)
			n *= 2;
		char **ns = realloc(in->strings, n * sizeof(*ns));
		int64_t *ni = realloc(in->name_ids, n * sizeof(*ni));
		if (ns)
			in->strings = ns;
		if (ni)
			in->name_ids = ni;
		if (!ns || !ni)
			return KJ_ENOMEM;
		memset(in->strings + in->nstrings, 0, (n - in->nstrings) * sizeof(*ns));
		memset(in->name_ids + in->nstrings, 0, (n - in->nstrings) * sizeof(*ni));
		in->nstrings = n;
	}
	free(in->strings[s->id]);
	in->strings[s->id] = strndup((const char *)(s + 1), s->len);
	return in->strings[s->id] ? 0 : KJ_ENOMEM;
}


static int add_marker(struct ingest *in, const struct kj_rec_marker *m)
{
	struct marker *nm = kj_grow(in->markers, &in->cap_markers, in->nmarkers, sizeof(*nm), 1024);
	if (!nm)
		return KJ_ENOMEM;
	in->markers = nm;
	in->markers[in->nmarkers++] = (struct marker){m->t_ns, m->id, m->flags, m->name_id, m->domain_id, m->tid};
	return 0;
}

static int add_seqop(struct ingest *in, const struct kj_rec_seqop *r)
{
	struct kj_rec_seqop *v = kj_grow(in->seqops, &in->cap_seqops, in->nseqops, sizeof(*v), 256);
	if (!v)
		return KJ_ENOMEM;
	in->seqops = v;
	in->seqops[in->nseqops++] = *r;
	return 0;
}

static int add_issue(struct ingest *in, const struct kj_rec_issue *r)
{
	struct kj_rec_issue *v = kj_grow(in->issues, &in->cap_issues, in->nissues, sizeof(*v), 256);
	if (!v)
		return KJ_ENOMEM;
	in->issues = v;
	in->issues[in->nissues] = *r;
	return kj_map_put(in->issue_index, r->correlation, in->nissues++) ? KJ_ENOMEM : 0;
}

const struct kj_rec_issue *ing_issue(const struct ingest *in, uint32_t correlation)
{
	uint64_t at;
	return in->nissues && kj_map_get(in->issue_index, correlation, &at) ? &in->issues[at] : NULL;
}

static int add_memset_dst(struct ingest *in, const struct kj_rec_memset_dst *r)
{
	struct kj_rec_memset_dst *v = kj_grow(in->msets, &in->cap_msets, in->nmsets, sizeof(*v), 256);
	if (!v)
		return KJ_ENOMEM;
	in->msets = v;
	in->msets[in->nmsets] = *r;
	return kj_map_put(in->mset_index, r->correlation, in->nmsets++) ? KJ_ENOMEM : 0;
}

/* A copy call's addresses (and data): found again by correlation when its memcpy row goes in. */
static int add_copy_args(struct ingest *in, const struct kj_rec_copy_args *r)
{
	if (!in->copy_index && !(in->copy_index = kj_map_new()))
		return KJ_ENOMEM;
	return kj_map_put(in->copy_index, r->correlation, (uint64_t)((const unsigned char *)r - in->data) + 1)
		       ? KJ_ENOMEM : 0;
}

const struct kj_rec_copy_args *ing_copy_args(const struct ingest *in, uint32_t correlation)
{
	uint64_t at;
	return in->copy_index && kj_map_get(in->copy_index, correlation, &at)
		       ? (const struct kj_rec_copy_args *)(const void *)(in->data + at - 1) : NULL;
}

static int add_graph_memset(struct ingest *in, const struct kj_rec_graph_memset *r)
{
	struct kj_rec_graph_memset *v = kj_grow(in->gmsets, &in->cap_gmsets, in->ngmsets, sizeof(*v), 64);
	if (!v)
		return KJ_ENOMEM;
	in->gmsets = v;
	in->gmsets[in->ngmsets] = *r;
	if (!in->gmset_index && !(in->gmset_index = kj_map_new()))
		return KJ_ENOMEM;
	return kj_map_put(in->gmset_index, r->node_id, in->ngmsets++) ? KJ_ENOMEM : 0;
}

/* A launch's stream, from its kernel's activity record (the launch callback does not ask CUPTI
 * for the stream id: that would cost every launch): launch_params and iteration sequences need
 * it to keep kernels, copies and memsets on their streams. An activity record always comes after
 * its launch's record: the launch is written in the API call, the activity when CUPTI hands its
 * buffer over. */
static void note_launch_stream(struct ingest *in, const struct kj_rec_kernel *k)
{
	uint64_t v;
	if (!k->graph_node_id && kj_map_get(in->corr, k->correlation, &v) && !in->launches[v].stream)
		in->launches[v].stream = k->stream;
}

/* Walk the records of the file; pass 1 collects strings, launches and graph nodes, pass 2
 * writes rows, pass 3 (only when some graph records lack a correlation) collects graph records.
 * Returns the offset of the first incomplete record (== n when none). */
static int walk(struct ingest *in, int pass, size_t *stop)
{
	size_t off = sizeof(struct kj_rec_file);
	int rc = 0;
	while (off + sizeof(struct kj_rec_hdr) <= in->n && !rc) {
		const struct kj_rec_hdr *h = (const void *)(in->data + off);
		if (h->size < sizeof(*h) || h->size % 8 || h->size > in->n - off)
			break;
		const void *r = h;
		switch (h->type) {
		case KJ_REC_STRING:
			if (pass == 1)
				rc = add_string(in, r);
			break;
		case KJ_REC_GROUP:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_group))
				rc = ing_add_group(in, r);
			break;
		case KJ_REC_LAUNCH:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_launch))
				rc = ing_add_launch(in, r);
			break;
		case KJ_REC_GRAPHNODE:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_graphnode)) {
				const struct kj_rec_graphnode *g = r;
				if (g->original_node_id)
					rc = kj_map_put(in->clones, g->node_id, g->original_node_id);
				else if ((rc = kj_map_put(in->nodes, g->node_id, g->correlation)) == 0)
					rc = kj_map_put(in->node_corrs, g->correlation, 1);
			}
			/* clones kept in the run: replay ties a graph launch's records to the recorded nodes */
			if (pass == 2 && h->size >= sizeof(struct kj_rec_graphnode) &&
			    ((const struct kj_rec_graphnode *)r)->original_node_id)
				rc = ing_put_clone(in, r);
			break;
		case KJ_REC_PROCESS: /* written by walk_process() */
			break;
		case KJ_REC_DEVICE:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_device))
				rc = ing_put_device(in, r);
			break;
		case KJ_REC_KERNEL:
			if (pass == 1 && h->size >= KJ_REC_KERNEL_MIN_SIZE) {
				const struct kj_rec_kernel *k = r;
				note_launch_stream(in, k);
				ing_orphan_note(in, k->graph_node_id, k->correlation);
			}
			if (pass == 3 && h->size >= KJ_REC_KERNEL_MIN_SIZE) {
				const struct kj_rec_kernel *k = r;
				rc = ing_orphan_collect(in, off, k->start_ns, k->end_ns, k->graph_node_id, k->graph_id,
							k->correlation);
			}
			if (pass == 2 && h->size >= KJ_REC_KERNEL_MIN_SIZE) {
				const struct kj_rec_kernel *k = r;
				struct kj_rec_kernel tied; /* a graph kernel given its launch's correlation */
				uint32_t c = ing_orphan_correlation(in, off, k->correlation);
				if (c != k->correlation) {
					memset(&tied, 0, sizeof(tied));
					memcpy(&tied, k, h->size < sizeof(tied) ? h->size : sizeof(tied));
					tied.correlation = c;
					k = &tied;
				}
				rc = ing_put_kernel(in, k, h->size >= sizeof(struct kj_rec_kernel));
			}
			break;
		case KJ_REC_MEMCPY:
		case KJ_REC_MEMSET:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_memcpy)) {
				const struct kj_rec_memcpy *m = r;
				if (h->type == KJ_REC_MEMSET)
					rc = ing_note_graph_memset_run(in, m);
				ing_orphan_note(in, m->graph_node_id, m->correlation);
			}
			if (pass == 3 && h->size >= sizeof(struct kj_rec_memcpy)) {
				const struct kj_rec_memcpy *m = r;
				rc = ing_orphan_collect(in, off, m->start_ns, m->end_ns, m->graph_node_id, 0, m->correlation);
			}
			if (pass == 2 && h->size >= sizeof(struct kj_rec_memcpy)) {
				const struct kj_rec_memcpy *m = r;
				struct kj_rec_memcpy tied;
				uint32_t c = ing_orphan_correlation(in, off, m->correlation);
				if (c != m->correlation) {
					tied = *m;
					tied.correlation = c;
					m = &tied;
				}
				rc = ing_put_copy(in, m);
			}
			break;
		case KJ_REC_MEMORY:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_memory))
				rc = ing_add_range(in, r);
			if (pass == 2 && h->size >= sizeof(struct kj_rec_memory))
				rc = ing_put_memory(in, r);
			break;
		case KJ_REC_MARKER:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_marker))
				rc = add_marker(in, r);
			break;
		case KJ_REC_API:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_api))
				rc = ing_put_api(in, r);
			break;
		case KJ_REC_MODULE:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_module))
				rc = ing_put_module(in, r);
			break;
		case KJ_REC_MEMSET_DST:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_memset_dst))
				rc = add_memset_dst(in, r);
			break;
		case KJ_REC_COPY_ARGS:
			if (pass == 1 && ing_payload_fits(h, sizeof(struct kj_rec_copy_args),
							  ((const struct kj_rec_copy_args *)r)->data_bytes))
				rc = add_copy_args(in, r);
			break;
		case KJ_REC_GRAPH_MEMSET:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_graph_memset))
				rc = add_graph_memset(in, r);
			break;
		case KJ_REC_ISSUE:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_issue))
				rc = add_issue(in, r);
			if (pass == 2 && h->size >= sizeof(struct kj_rec_issue))
				rc = ing_put_issue(in, r);
			break;
		case KJ_REC_GRAPH_NODE:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_graph_node))
				rc = ing_put_graph_node(in, r);
			break;
		case KJ_REC_SEQOP:
			if (pass == 1 && h->size >= sizeof(struct kj_rec_seqop))
				rc = add_seqop(in, r);
			break;
		case KJ_REC_COND_HANDLE:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_cond_handle)) {
				const struct kj_rec_cond_handle *c = r;
				sqlite3_stmt *st = in->st[S_CHANDLE];
				sqlite3_bind_int64(st, 1, in->pid);
				sqlite3_bind_int64(st, 2, (int64_t)c->handle);
				sqlite3_bind_int64(st, 3, c->graph_id);
				sqlite3_bind_int64(st, 4, c->default_value);
				rc = ing_step_done(in, st);
			}
			break;
		case KJ_REC_SNAPSHOT:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_snapshot))
				rc = ing_put_snapshot(in, r);
			break;
		case KJ_REC_CLOCK:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_clock)) {
				const struct kj_rec_clock *c = r;
				sqlite3_stmt *st = in->st[S_CLOCK];
				sqlite3_bind_int64(st, 1, in->pid);
				sqlite3_bind_int64(st, 2, c->trace_ns);
				sqlite3_bind_int64(st, 3, c->monotonic_ns);
				sqlite3_bind_int64(st, 4, c->realtime_ns);
				rc = ing_step_done(in, st);
			}
			break;
		case KJ_REC_PROBLEM:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_text))
				rc = ing_put_text(in, r, "warning");
			break;
		case KJ_REC_DROPPED:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_dropped)) {
				const struct kj_rec_dropped *d = r;
				char what[128];
				snprintf(what, sizeof(what), "CUPTI dropped %llu activity records",
					 (unsigned long long)d->count);
				in->stats->dropped_records += (int64_t)d->count;
				rc = kj_db_problem(in->db, in->pid, -1, "error", what);
			}
			break;
		case KJ_REC_END:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_text)) {
				const struct kj_rec_text *t = r;
				char sql[160];
				in->saw_end = 1;
				snprintf(sql, sizeof(sql),
					 "UPDATE process SET ended_cleanly = 1, end_ns = %lld WHERE pid = %lld",
					 (long long)t->t_ns, (long long)in->pid);
				rc = kj_db_exec(in->db, sql, "process end");
			}
			break;
		case KJ_REC_WINDOW:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_window))
				rc = ing_put_window(in, r);
			break;
		case KJ_REC_ITER_MARK:
			if (pass == 2 && h->size >= sizeof(struct kj_rec_iter_mark))
				rc = ing_put_iter_mark(in, r);
			break;
		default:
			break; /* unknown record types of newer injection libraries are skipped */
		}
		if (rc == KJ_EINVAL)
			kj_errorf("%s: the record at byte %zu (type %u, %u bytes) does not hold what its"
				  " header says", in->path, off, h->type, h->size);
		off += h->size;
	}
	*stop = off;
	return rc;
}

/* The process record, read ahead of pass 2 so every row can carry the pid. */
static int walk_process(struct ingest *in)
{
	size_t off = sizeof(struct kj_rec_file);
	while (off + sizeof(struct kj_rec_hdr) <= in->n) {
		const struct kj_rec_hdr *h = (const void *)(in->data + off);
		if (h->size < sizeof(*h) || h->size % 8 || h->size > in->n - off)
			break;
		if (h->type == KJ_REC_PROCESS && h->size >= sizeof(struct kj_rec_process))
			return ing_put_process(in, (const void *)h);
		off += h->size;
	}
	return 0;
}


static void ingest_free(struct ingest *in)
{
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(in->st[i]);
	for (size_t i = 0; i < in->nstrings; i++)
		free(in->strings[i]);
	free(in->strings);
	free(in->name_ids);
	free(in->launches);
	for (size_t i = 0; i < in->ngroups; i++)
		free(in->groups[i].param_words);
	free(in->groups);
	free(in->ranges);
	kj_map_free(in->group_index);
	free(in->markers);
	free(in->seqops);
	free(in->msets);
	free(in->gmsets);
	free(in->gmset_runs);
	if (in->gmset_index)
		kj_map_free(in->gmset_index);
	if (in->gmset_run_index)
		kj_map_free(in->gmset_run_index);
	if (in->gmset_by_order)
		kj_map_free(in->gmset_by_order);
	free(in->issues);
	kj_map_free(in->issue_index);
	kj_map_free(in->corr);
	kj_map_free(in->nodes);
	kj_map_free(in->clones);
	kj_map_free(in->orphans);
	free(in->gitems);
	kj_map_free(in->node_corrs);
	kj_map_free(in->node_shapes);
	kj_map_free(in->graph_rows);
	free(in->graph_row_list);
	kj_map_free(in->uniques);
	kj_map_free(in->devices);
	kj_map_free(in->allocs);
	kj_map_free(in->mset_index);
	if (in->copy_index)
		kj_map_free(in->copy_index);
}

int kj_ingest_file(sqlite3 *db, const char *path, const struct kj_ingest_opts *opts,
		   struct kj_ingest_stats *stats)
{
	struct ingest in;
	struct stat sb;
	struct kj_ingest_stats dummy;
	const struct kj_rec_file *f;
	size_t stop = 0;
	int fd, rc = 0;

	memset(&in, 0, sizeof(in));
	memset(&dummy, 0, sizeof(dummy));
	in.db = db;
	in.path = path;
	in.pid = -1;
	in.opts = opts;
	in.stats = stats ? stats : &dummy;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		kj_errorf("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return KJ_EIO;
	}
	in.n = (size_t)sb.st_size;
	if (in.n < sizeof(struct kj_rec_file)) {
		close(fd);
		kj_warnf("%s: empty trace file (the process ended before CUDA started)", path);
		return 0;
	}
	in.data = mmap(NULL, in.n, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (in.data == MAP_FAILED) {
		kj_errorf("%s: mmap: %s", path, strerror(errno));
		return KJ_EIO;
	}
	f = (const void *)in.data;
	if (f->h.type != KJ_REC_FILE || f->magic != KJ_SPOOL_MAGIC) {
		kj_errorf("%s: not a kjoule trace spool file", path);
		rc = KJ_EINVAL;
		goto out;
	}
	if (f->version > KJ_SPOOL_VERSION) {
		kj_errorf("%s: spool version %u is newer than this kjoule (%u)", path, f->version,
			  KJ_SPOOL_VERSION);
		rc = KJ_EINVAL;
		goto out;
	}
	in.spool_version = f->version;
	in.corr = kj_map_new();
	in.nodes = kj_map_new();
	in.clones = kj_map_new();
	in.uniques = kj_map_new();
	in.devices = kj_map_new();
	in.allocs = kj_map_new();
	in.group_index = kj_map_new();
	in.mset_index = kj_map_new();
	in.issue_index = kj_map_new();
	in.node_corrs = kj_map_new();
	in.graph_rows = kj_map_new();
	in.orphans = kj_map_new();
	if (!in.orphans || !in.graph_rows || !in.issue_index || !in.node_corrs || !in.corr || !in.nodes || !in.clones || !in.uniques || !in.devices || !in.allocs ||
	    !in.group_index || !in.mset_index) {
		rc = KJ_ENOMEM;
		goto out;
	}
	if ((rc = ing_prepare(&in)) != 0)
		goto out;
	if ((rc = walk(&in, 1, &stop)) != 0 || (rc = ing_classify(&in)) != 0)
		goto out;
	/* the process row first: unique kernels and parameters carry its pid */
	if (in.norphans && (rc = walk(&in, 3, &stop)) != 0)
		goto out;
	if ((rc = walk_process(&in)) != 0 || (rc = ing_orphans_resolve(&in)) != 0 ||
	    (rc = ing_put_uniques(&in)) != 0 ||
	    (rc = walk(&in, 2, &stop)) != 0 || (rc = ing_put_ranges(&in)) != 0 ||
	    (rc = ing_capture_ranges(&in)) != 0 ||
	    (rc = ing_put_capture_ranges(&in)) != 0 ||
	    (rc = ing_put_iteration(&in)) != 0 || (rc = ing_drop_own_copies(&in)) != 0)
		goto out;
	if ((rc = ing_finish_rows(&in)) != 0 || (rc = ing_put_nccl(&in)) != 0)
		goto out;
	if (stop != in.n) {
		char what[256];
		snprintf(what, sizeof(what),
			 "trace of process %lld cut short after %zu of %zu bytes: the process was killed "
			 "or crashed; records up to then are kept", (long long)in.pid, stop, in.n);
		kj_db_problem(db, in.pid, -1, "warning", what);
		in.stats->truncated_files++;
	}
	if (!in.saw_end)
		rc = ing_note_death(&in);
out:
	ingest_free(&in);
	munmap((void *)in.data, in.n);
	return rc;
}

/* p<pid>.spool files, in pid order: processes are ingested parents first, the same way each time */
static int spool_name(const struct dirent *e)
{
	size_t len = strlen(e->d_name);
	return e->d_name[0] == 'p' && len >= 7 && !strcmp(e->d_name + len - 6, ".spool");
}

static int by_pid(const struct dirent **a, const struct dirent **b)
{
	long pa = atol((*a)->d_name + 1), pb = atol((*b)->d_name + 1);
	return pa < pb ? -1 : pa > pb;
}

int kj_ingest_dir(sqlite3 *db, const char *dir, const struct kj_ingest_opts *opts,
		  struct kj_ingest_stats *stats)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, spool_name, by_pid), first = 0;
	if (n < 0) {
		kj_errorf("%s: %s", dir, strerror(errno));
		return KJ_EIO;
	}
	/* the range the run was told is every analysis' iteration (kj_iterations.h) */
	if (opts && opts->iteration_range && kj_db_meta_set(db, "iteration_range", opts->iteration_range))
		first = KJ_EDB;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		int rc = kj_ingest_file(db, path, opts, stats);
		if (rc && !first)
			first = rc;
		free(names[i]);
	}
	free(names);
	if (!first)
		first = kj_ingest_clock_check(db);
	return first;
}

