/* Internals of the spool ingest shared by its files: the ingest state, the prepared statements,
 * and what each file offers the others (kj_ingest.h has the public side). */
#ifndef KJ_INGEST_INTERNAL_H
#define KJ_INGEST_INTERNAL_H

#include "kj_ingest.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_map.h"
#include "kj_spool.h"

enum stmt_id {
	S_KERNEL, S_MEMCPY, S_MEMSET, S_API, S_ALLOC, S_FREE, S_NVTX, S_NAME_FIND, S_NAME_ADD,
	S_UNIQUE_FIND, S_UNIQUE_ADD, S_PARAMS, S_MODULE_FIND, S_MODULE_ADD, S_MODFN, S_MODLOAD,
	S_DEVICE_FIND, S_DEVICE_ADD, S_DEVICE_FILL, S_PROCDEV, S_CLOCK, S_SNAPSHOT, S_HOSTCALL, S_GNODE, S_GEDGE, S_GCLONE, S_COPYDATA, S_CHANDLE, S_COUNT
};

struct launch_info {
	uint64_t key;        /* unique key, set by classify() */
	int64_t launch_ns;
	int64_t unique_id;
	const struct kj_word_diff *diffs; /* ndiff words replaced in the group's block, or */
	const unsigned char *block;       /* the launch's whole block (NULL: diffs say it) */
	uint32_t group;      /* index into ingest.groups */
	uint32_t tid, stream, correlation, ndiff;
};

struct group_info {
	const struct kj_rec_group *rec;
	const uint32_t *layout;
	const unsigned char *ref;
	uint32_t *param_words; /* word indices that tell work apart */
	uint32_t nparam_words;
	uint32_t launches_kept; /* parameter blocks written so far (first-K capture) */
	uint64_t launches;      /* launches of the group (counted when classifying) */
};

struct range {
	uint64_t base, end;
};

struct marker {
	int64_t t_ns;
	uint32_t id, flags, name_id, domain_id, tid;
};

struct ingest {
	sqlite3 *db;
	const char *path;
	const unsigned char *data;
	size_t n;
	int64_t pid;
	sqlite3_stmt *st[S_COUNT];
	char **strings;
	size_t nstrings;
	int64_t *name_ids;      /* string id -> kernel_name.id (0: not yet) */
	struct launch_info *launches;
	size_t nlaunches, cap_launches;
	struct group_info *groups;
	size_t ngroups, cap_groups;
	struct kj_map *group_index; /* group id -> index into groups */
	struct range *ranges;   /* device allocations ever made, sorted by base */
	size_t nranges, cap_ranges;
	const struct kj_ingest_opts *opts;
	struct kj_map *corr;    /* correlation -> index into launches */
	struct kj_map *nodes;   /* graph node id -> correlation of the launch that made it */
	struct kj_map *clones;  /* cloned node id -> original node id */
	struct kj_map *node_corrs; /* correlation of a launch that made a graph node -> 1 */
	struct kj_map *node_shapes; /* (name, geometry) of node-made launches -> launch index + 1 */
	struct kj_map *graph_rows;  /* kernel row id of a graph kernel -> its launch index + 1 */
	int64_t (*graph_row_list)[2]; /* the same pairs (row id, launch index), in insertion order */
	size_t ngraph_rows, cap_graph_rows;
	struct kj_map *uniques; /* key -> unique_kernel.id */
	struct kj_map *devices; /* ordinal -> device.id */
	struct kj_map *allocs;  /* address -> open allocation row */
	struct marker *markers;
	size_t nmarkers, cap_markers;
	struct kj_rec_seqop *seqops; /* event records and waits, in file order */
	size_t nseqops, cap_seqops;
	struct kj_rec_memset_dst *msets; /* memset destinations, bound to memset rows as they go in */
	size_t nmsets, cap_msets;
	struct kj_map *mset_index;       /* correlation -> index into msets */
	struct kj_rec_graph_memset *gmsets; /* graph memset nodes as instantiated */
	size_t ngmsets, cap_gmsets;
	struct kj_map *gmset_index;      /* memset node id -> index into gmsets */
	struct kj_rec_memcpy *gmset_runs; /* one graph memset run per node id, for the order fallback */
	size_t ngmset_runs, cap_gmset_runs;
	struct kj_map *gmset_run_index;  /* run node id -> 1 (seen) */
	struct kj_map *gmset_by_order;   /* run node id -> index into gmsets + 1 (order fallback) */
	struct kj_rec_issue *issues;     /* host calls that issued GPU work (graph launches, copies) */
	size_t nissues, cap_issues;
	struct kj_map *issue_index;      /* correlation -> index into issues */
	struct kj_map *copy_index;       /* correlation -> offset of its KJ_REC_COPY_ARGS in data + 1 */
	int64_t nsnapshots;              /* snapshot rows of this file */
	struct gitem *gitems;            /* graph records (kj_ingest_orphans.c), read when some lack a correlation */
	size_t ngitems, cap_gitems, norphans;
	struct kj_map *orphans;          /* record offset -> correlation given to it */
	int saw_end, truncated;
	uint32_t spool_version;          /* the file's KJ_SPOOL_VERSION */
	struct kj_ingest_stats *stats;
};

struct unique_desc {
	uint64_t key;
	int by_params;
	uint32_t name_sid;
	uint32_t grid[3], block[3], cluster[3];
	int64_t shmem_dynamic, shmem_static, registers;
	int have_static;
	const uint32_t *layout;
	uint32_t nparams, param_bytes;
};

/* kj_ingest_db.c */
/** Prepares every statement of in->st on in->db; 0, or KJ_EDB (the ones made are finalized with
 *  the ingest's state). */
int ing_prepare(struct ingest *in);
/** Once a file's rows are in: unique_kernel.launches and the per-kernel facts a first capture
 *  could not know, and a warning problem row when a unique kernel of this process holds kernels
 *  of different register counts. 0, or KJ_EDB. */
int ing_finish_rows(struct ingest *in);
void ing_bind_opt_i64(sqlite3_stmt *st, int col, int have, int64_t v);
/** Binds a launch's geometry to nine columns from `col`: grid x y z, block x y z, cluster x y z. */
void ing_bind_dims(sqlite3_stmt *st, int col, const uint32_t grid[3], const uint32_t block[3],
		   const uint32_t cluster[3]);
int64_t ing_device_id(struct ingest *in, uint32_t ordinal);
int64_t ing_name_id(struct ingest *in, uint32_t sid);
int ing_step_done(struct ingest *in, sqlite3_stmt *st);
/** 1 when a record of h->size bytes holds its head (`head` bytes) and the `payload` bytes its head
 *  says follow it; computed without overflow, so a damaged 64-bit size cannot pass. */
static inline int ing_payload_fits(const struct kj_rec_hdr *h, size_t head, uint64_t payload)
{
	return h->size >= head && payload <= h->size - head;
}
const char *ing_str(const struct ingest *in, uint32_t id);
/* kj_ingest.c */
/** The host call that issued the work of this correlation (a graph launch, a copy), or NULL. */
const struct kj_rec_issue *ing_issue(const struct ingest *in, uint32_t correlation);
/** The KJ_REC_COPY_ARGS of a copy call (its data follows it), or NULL. */
const struct kj_rec_copy_args *ing_copy_args(const struct ingest *in, uint32_t correlation);
/* kj_ingest_ranges.c */
int ing_put_iteration(struct ingest *in);
int ing_put_ranges(struct ingest *in);
int ing_put_capture_ranges(struct ingest *in);
/* kj_ingest_rows.c */
int ing_drop_own_copies(struct ingest *in);
int ing_put_api(struct ingest *in, const struct kj_rec_api *a);
int ing_put_copy(struct ingest *in, const struct kj_rec_memcpy *m);
int ing_put_device(struct ingest *in, const struct kj_rec_device *d);
/* full: the record holds shmem_executed and carveout (older spools' records end before them) */
int ing_put_kernel(struct ingest *in, const struct kj_rec_kernel *k, int full);
int ing_put_memory(struct ingest *in, const struct kj_rec_memory *m);
int ing_put_module(struct ingest *in, const struct kj_rec_module *m);
int ing_put_process(struct ingest *in, const struct kj_rec_process *p);
int ing_put_snapshot(struct ingest *in, const struct kj_rec_snapshot *r);
int ing_put_text(struct ingest *in, const struct kj_rec_text *t, const char *severity);
int64_t ing_unique_id(struct ingest *in, const struct unique_desc *d);
/* kj_ingest_graph_rows.c */
int ing_put_issue(struct ingest *in, const struct kj_rec_issue *r);
int ing_put_graph_node(struct ingest *in, const struct kj_rec_graph_node *r);
/** A clone record (exec or parent-graph node -> the node it was cloned from) as a graph_node_clone row. */
int ing_put_clone(struct ingest *in, const struct kj_rec_graphnode *g);
/** The launch that describes a graph node (its stream-capture launch, or the node's own
 *  parameters read at instantiation), following clones; NULL when unknown. */
const struct launch_info *ing_node_launch(const struct ingest *in, uint64_t node_id);
/** A graph kernel whose node the clone records do not lead back to: the node-made launch of the
 *  same function, grid, block and shared memory, or NULL. */
const struct launch_info *ing_launch_by_shape(struct ingest *in, const struct kj_rec_kernel *k);
/** Pass 1: a graph memset run, remembered once per node id for the order fallback of
 *  ing_graph_memset_of (memset nodes inside child graphs have no clone record back to their node). */
int ing_note_graph_memset_run(struct ingest *in, const struct kj_rec_memcpy *m);
/** The memset node a graph memset ran from (following clones, else the order fallback); NULL
 *  when unknown or 2D. */
const struct kj_rec_graph_memset *ing_graph_memset_of(struct ingest *in, uint64_t node);
/* kj_ingest_unique.c */
int ing_add_group(struct ingest *in, const struct kj_rec_group *g);
int ing_add_launch(struct ingest *in, const struct kj_rec_launch *l);
int ing_add_range(struct ingest *in, const struct kj_rec_memory *m);
int ing_classify(struct ingest *in);
char *ing_layout_text(const uint32_t *layout, uint32_t n);
int ing_put_launch_params(struct ingest *in, const struct launch_info *l, int64_t ordinal, int iteration);
int ing_put_uniques(struct ingest *in);
/* kj_ingest_capture.c: --capture runs */
/** A window opened (row of capture_window) or closed (its end, last instance and status). */
int ing_put_window(struct ingest *in, const struct kj_rec_window *r);
/** One instance of the capture range as an iteration_mark row. */
int ing_put_iter_mark(struct ingest *in, const struct kj_rec_iter_mark *r);
/** After the markers are paired: every captured instance is an nvtx_range row. */
int ing_capture_ranges(struct ingest *in);
/* kj_ingest_orphans.c: graph records CUPTI gives no correlation (conditional nodes' bodies) */
/** Pass 1: count a graph record (node != 0) that has no correlation. */
void ing_orphan_note(struct ingest *in, uint64_t node, uint32_t corr);
/** Pass 3 (only when pass 1 counted some): note every graph record (node != 0) at offset. */
int ing_orphan_collect(struct ingest *in, uint64_t offset, int64_t start, int64_t end, uint64_t node,
		       uint32_t graph_id, uint32_t corr);
/** Between the passes: give each uncorrelated graph record the correlation of the graph launch
 *  that ran it; a problem row (info) says how many and how. */
int ing_orphans_resolve(struct ingest *in);

/* ---- how a process ended (kj_ingest_end.c) ---- */
/** A process that did not close its trace: one problem row whose text starts "ended ": the signal
 *  its record beside the spool names (and who sent it), or that none was left (SIGKILL, or an
 *  exit kjoule could not see). A record that is not one is warned about, naming file and line.
 *  @return 0 or KJ_EDB. */
int ing_note_death(struct ingest *in);
/* ---- NCCL's calls (kj_ingest_nccl.c) ---- */
/** The p<pid>.nccl file beside the spool, when there is one, into nccl_call rows of the process.
 *  A line that is not a call is a warning problem row naming the file and line; the rest are kept.
 *  @return 0 or KJ_EDB. */
int ing_put_nccl(struct ingest *in);
/** Pass 2: the correlation of the record at offset (corr itself unless it was resolved). */
uint32_t ing_orphan_correlation(const struct ingest *in, uint64_t offset, uint32_t corr);

#endif
