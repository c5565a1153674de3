/* Internal to `kjoule pipeline --from`: the kept iteration's operations and the group (phase) each
 * belongs to, shared by the eager rule (kj_pipeline_from.c: NVTX ranges around the launch time)
 * and the graph rule (kj_pipeline_from_graph.c: NVTX ranges open when the graph was captured). */
#ifndef KJ_PIPELINE_FROM_H
#define KJ_PIPELINE_FROM_H
#include <stddef.h>
#include <stdint.h>

#include "kj_db.h"

enum {
	KJ_FROM_OUT = -1, /* outside every range named by --region: left out */
	KJ_FROM_GAP = -2, /* in no range: a gap phase named after its neighbours' groups */
	KJ_FROM_PENDING = -3, /* not assigned yet (internal to a rule) */
	/* -10 - r: an eager gap before the r-th eager range (named when assigned) */
};

struct kj_from_op {
	int64_t ordinal;
	int64_t t_ns;     /* host time: a kernel's launch (a graph kernel's: its graph launch); other
			   * operations take their neighbour's */
	int64_t corr;     /* sequence_op.correlation_id */
	int64_t capture;  /* a graph kernel's kernel.capture_range_id; -1: none */
	int kernel;       /* op = 'kernel' */
	int graph;        /* a kernel that ran inside a graph launch (sequence_op.kernel_id set) */
	int in_graph;     /* graph, or a copy/memset/event of a graph launch (shares its correlation) */
	int64_t key;      /* the group: an nvtx_range id (> 0) or one of the values above */
	char name[96];    /* the group's (phase's) name */
};

/* What the graph rule found, for the caller's messages and the pipeline's description. */
struct kj_from_graph {
	size_t graph_ops;   /* graph kernels in the iteration */
	size_t captured;    /* of them, with a capture range */
	size_t assigned;    /* of them, given a range (depth or name) */
	int64_t root_depth; /* depth of the capture root; -1: none (the capture itself) */
	int64_t deepest;    /* deepest capture range below the root (levels) */
	char root[96];      /* the capture root's name ("" when none) */
};

/** Group the iteration's graph kernels (and their graph launch's copies and memsets) by the NVTX
 * ranges open at capture: --layers DEPTH (region NULL): the ancestor of each kernel's capture
 * range at depth (capture root's depth + DEPTH); --region NAME: its outermost ancestor so named.
 * Kernels without one get KJ_FROM_GAP (KJ_FROM_OUT with region). kept: the iteration range's
 * name (a capture root candidate). Eager ops are not touched. Returns 0 or KJ_E*, with err set
 * (naming the run and the field) on bad data; no capture range at all is not an error here
 * (g->captured == 0). */
int kj_from_graph_assign(sqlite3 *db, const char *run, int64_t iteration, const char *kept, int depth,
			 const char *region, struct kj_from_op *ops, size_t nops, struct kj_from_graph *g,
			 char *err, size_t errlen);

#endif
