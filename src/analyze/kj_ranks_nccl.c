/* A rank's NCCL bytes and bus bandwidth from its recorded NCCL calls (kj_ranks_nccl.h). */
#include "kj_ranks_nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_store_a2_ranks.h"

const char *kj_nccl_calls_absent_why(sqlite3 *db)
{
	static const char unseen[] = "no NCCL calls recorded (NCCL linked statically, or loaded so that kjoule"
				     " could not see its calls)";
	char v[32] = "";
	if (kj_db_meta_get(db, "nccl_calls", v, sizeof(v)) != 0 || !v[0])
		return kj_db_caps(db)->nccl_call ? unseen : "a run from a kjoule before NCCL calls were recorded";
	if (!strcmp(v, "off"))
		return "traced with --no-nccl-calls";
	if (!strcmp(v, "missing"))
		return "libkjoule_nccl.so was not found when the run was traced";
	return unseen;
}

int kj_nccl_call_bytes(const char *op, int64_t bytes, int64_t nranks, double *alg, double *bus)
{
	double n = (double)nranks;
	if (bytes < 0)
		return -1;
	if (!strcmp(op, "all_reduce")) {
		if (nranks < 1)
			return -1;
		*alg = (double)bytes;
		*bus = *alg * 2 * (n - 1) / n;
	} else if (!strcmp(op, "all_gather") || !strcmp(op, "reduce_scatter")) {
		if (nranks < 1)
			return -1;
		*alg = (double)bytes * n;
		*bus = *alg * (n - 1) / n;
	} else if (!strcmp(op, "broadcast") || !strcmp(op, "reduce") || !strcmp(op, "send") || !strcmp(op, "recv")) {
		*alg = *bus = (double)bytes;
	} else {
		return -1;
	}
	return 0;
}

/* Ops counted over the kept calls, in the order first seen. */
#define NCCL_OPS_MAX 8

/* The matching under way: calls arrive by time; each takes the first kernel launched at or after it. */
struct match_ctx {
	const struct kj_nccl_kernel *k;
	size_t n, next;          /* next: the first kernel not launched before the current call */
	unsigned char *used;     /* per kernel: some call matched it */
	int64_t calls, unmatched, unknown;
	double alg, bus, matched_ns;
	char ops[NCCL_OPS_MAX][16];
	int64_t op_n[NCCL_OPS_MAX];
	int nops;
};

static void count_op(struct match_ctx *m, const char *op)
{
	for (int i = 0; i < m->nops; i++)
		if (!strcmp(m->ops[i], op)) {
			m->op_n[i]++;
			return;
		}
	if (m->nops < NCCL_OPS_MAX) {
		snprintf(m->ops[m->nops], sizeof(m->ops[0]), "%s", op);
		m->op_n[m->nops++] = 1;
	}
}

static int match_call(void *ud, const struct kj_store_a2_nccl_call *c)
{
	struct match_ctx *m = ud;
	double alg = 0, bus = 0;
	m->calls++;
	while (m->next < m->n && m->k[m->next].launch_ns < c->t_ns)
		m->next++;
	if (m->next == m->n) {
		m->unmatched++;
		return 0;
	}
	const struct kj_nccl_kernel *k = &m->k[m->next];
	if (!k->kept)
		return 0;
	if (!m->used[m->next]) {
		m->used[m->next] = 1;
		m->matched_ns += (double)k->dur_ns;
	}
	count_op(m, c->op[0] ? c->op : "?");
	if (kj_nccl_call_bytes(c->op, c->bytes, c->nranks, &alg, &bus)) {
		m->unknown++;
		return 0;
	}
	m->alg += alg;
	m->bus += bus;
	return 0;
}

/* "all_reduce ×2, all_gather ×0.5" per iteration into out. */
static void ops_text(const struct match_ctx *m, double kept, char *out, size_t len)
{
	size_t l = 0;
	out[0] = 0;
	for (int i = 0; i < m->nops && l < len; i++) {
		double per = (double)m->op_n[i] / kept;
		int whole = per == (double)(int64_t)per;
		l += (size_t)snprintf(out + l, len - l, whole ? "%s%s \u00d7%.0f" : "%s%s \u00d7%.2f", i ? ", " : "",
				      m->ops[i], per);
	}
}

int kj_rank_nccl_bytes(sqlite3 *db, struct kj_rank *r, const struct kj_nccl_kernel *k, size_t n,
		       const char *absent_why)
{
	struct match_ctx m = {.k = k, .n = n};
	double kept = (double)(r->n_kept > 0 ? r->n_kept : 1);
	int rc;
	m.used = calloc(n ? n : 1, 1);
	if (!m.used)
		return KJ_ENOMEM;
	rc = kj_store_a2_nccl_calls_each(db, r->pid, match_call, &m);
	if (rc) {
		free(m.used);
		return rc;
	}
	r->nccl_calls = m.calls;
	r->nccl_calls_unmatched = m.unmatched;
	r->nccl_calls_unknown = m.unknown;
	for (size_t i = 0; i < n; i++)
		r->nccl_kernels_without_call += k[i].kept && !m.used[i];
	free(m.used);
	ops_text(&m, kept, r->nccl_ops, sizeof(r->nccl_ops));
	r->nccl_bytes_why = NULL;
	if (!m.calls)
		r->nccl_bytes_why = absent_why;
	else if (m.matched_ns <= 0 && m.alg <= 0 && !m.unknown)
		r->nccl_bytes_why = "no recorded NCCL call matched an NCCL kernel of the measured iterations";
	else if (m.unknown)
		r->nccl_bytes_why = "some NCCL calls of the measured iterations are of unknown size (a datatype or"
				    " communicator size kjoule does not know)";
	if (r->nccl_bytes_why) {
		r->nccl_bw_why = r->nccl_bytes_why;
		return 0;
	}
	r->nccl_bytes_ok = 1;
	r->nccl_bytes = m.alg / kept;
	r->nccl_bus_bytes = m.bus / kept;
	r->nccl_matched_ns = m.matched_ns / kept;
	if (m.matched_ns > 0) {
		r->nccl_bw_ok = 1;
		r->nccl_bus_gbps = m.bus / m.matched_ns; /* bytes per ns = GB/s */
	} else {
		r->nccl_bw_why = "the matched NCCL kernels took no time";
	}
	return 0;
}
