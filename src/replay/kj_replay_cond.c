/* Conditional handles of a run and the kernels that set them (kj_replay_cond.h). */
#include "kj_replay_cond.h"
#include "kj_grow.h"

#include <stdlib.h>
#include <string.h>

struct handle {
	int64_t pid, exec;
	uint64_t value;
};

struct kj_cond_handles {
	sqlite3_stmt *ran_in; /* does a unique kernel have a kernel row in an exec */
	struct handle *v;
	size_t n;
};

void kj_cond_handles_free(struct kj_cond_handles *h)
{
	if (!h)
		return;
	sqlite3_finalize(h->ran_in);
	free(h->v);
	free(h);
}

struct kj_cond_handles *kj_cond_handles_load(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	struct kj_cond_handles *h = calloc(1, sizeof(*h));
	if (!h || sqlite3_prepare_v2(db, "SELECT c.pid, c.handle, h.graph_exec_id FROM graph_conditional_handle c"
					 " JOIN host_call h ON h.pid = c.pid AND h.graph_id = c.graph_id"
					 " AND h.op = 'graph_instantiate' AND h.graph_exec_id IS NOT NULL",
				     -1, &st, NULL) != SQLITE_OK)
		goto none;
	size_t cap = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct handle *n = kj_grow(h->v, &cap, h->n, sizeof(*n), 16);
		if (!n)
			break;
		h->v = n;
		h->v[h->n++] = (struct handle){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2),
					       (uint64_t)sqlite3_column_int64(st, 1)};
	}
	sqlite3_finalize(st);
	st = NULL;
	if (!h->n || sqlite3_prepare_v2(db, "SELECT 1 FROM kernel WHERE unique_id = ?1 AND graph_id = ?2"
					    " AND pid = ?3 LIMIT 1", -1, &h->ran_in, NULL) != SQLITE_OK)
		goto none;
	return h;
none:
	sqlite3_finalize(st);
	kj_cond_handles_free(h);
	return NULL;
}

/* 1 when unique kernel uid of process pid ran in exec. */
static int ran_in(const struct kj_cond_handles *h, int64_t uid, int64_t pid, int64_t exec)
{
	sqlite3_reset(h->ran_in);
	sqlite3_bind_int64(h->ran_in, 1, uid);
	sqlite3_bind_int64(h->ran_in, 2, exec);
	sqlite3_bind_int64(h->ran_in, 3, pid);
	return sqlite3_step(h->ran_in) == SQLITE_ROW;
}

int kj_cond_setter_param(const struct kj_cond_handles *h, int64_t pid, int64_t unique_id,
			 const struct kj_replay_param *layout, size_t n, const unsigned char *params,
			 size_t len)
{
	for (size_t p = 0; h && params && p < n; p++) {
		if (layout[p].size != 8 || (size_t)layout[p].offset + 8 > len)
			continue;
		uint64_t v;
		memcpy(&v, params + layout[p].offset, 8);
		for (size_t i = 0; i < h->n; i++)
			if (h->v[i].value == v && (pid < 0 || h->v[i].pid == pid) &&
			    ran_in(h, unique_id, h->v[i].pid, h->v[i].exec))
				return (int)p;
	}
	return -1;
}
