/* Conditional handles of a run and the kernels that set them (kj_replay_cond.h). */
#include "kj_replay_cond.h"
#include "kj_store_r_plan.h"

#include <stdlib.h>
#include <string.h>

struct kj_cond_handles {
	struct kj_store_r_lookup *ran_in; /* does a unique kernel have a kernel row in an exec */
	struct kj_store_r_cond_handle *v;
	size_t n;
};

void kj_cond_handles_free(struct kj_cond_handles *h)
{
	if (!h)
		return;
	kj_store_r_lookup_close(h->ran_in);
	free(h->v);
	free(h);
}

struct kj_cond_handles *kj_cond_handles_load(sqlite3 *db)
{
	struct kj_cond_handles *h = calloc(1, sizeof(*h));
	if (!h || kj_store_r_cond_handles(db, &h->v, &h->n) || !h->n || !(h->ran_in = kj_store_r_ran_in_open(db))) {
		kj_cond_handles_free(h);
		return NULL;
	}
	return h;
}

/* 1 when unique kernel uid of process pid ran in exec. */
static int ran_in(const struct kj_cond_handles *h, int64_t uid, int64_t pid, int64_t exec)
{
	return kj_store_r_ran_in(h->ran_in, uid, pid, exec);
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
