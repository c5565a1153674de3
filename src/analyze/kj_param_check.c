#include "kj_param_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"
#include "kj_store_a_run.h"

struct fn_fact {
	uint64_t name_hash;
	int regs;
	uint32_t param_bytes;
};

struct facts {
	struct fn_fact *v;
	size_t n, cap;
	int oom;
};

static void add_fact(const struct kj_cubin_fn *f, void *ud)
{
	struct facts *F = ud;
	struct fn_fact *v = kj_grow(F->v, &F->cap, F->n, sizeof(*v), 1024);
	if (!v) {
		F->oom = 1;
		return;
	}
	F->v = v;
	F->v[F->n++] = (struct fn_fact){kj_hash_str(f->name), f->regs, f->param_bytes};
}

/* One captured cubin's functions (its zstd image decompressed); stops when out of memory. */
static int add_image(void *ud, const char *codec, const void *data, size_t len, size_t bytes)
{
	struct facts *F = ud;
	const char *why = NULL;
	size_t n = 0;
	unsigned char *img = kj_cubin_image(codec, data, len, bytes, &n, &why);
	if (img)
		kj_cubin_function_facts(img, n, add_fact, F);
	else if (!strcmp(why, "out of memory"))
		F->oom = 1; /* an image that does not decompress is one not checked */
	free(img);
	return F->oom;
}

/* Every captured cubin's functions (zstd images decompressed one at a time). */
static int load_facts(sqlite3 *db, struct facts *F)
{
	if (kj_store_a_cubins_each(db, add_image, F) == KJ_EDB)
		return KJ_EDB;
	return F->oom ? KJ_ENOMEM : 0;
}

/* kj_param_check's state while it checks each unique kernel. */
struct check {
	const struct facts *F;
	struct kj_param_check *out;
	struct kj_map *mismatched;
};

/* Checks one unique kernel's parameter block against the functions of the same name. */
static int check_kernel(void *ud, const struct kj_store_a_kernel_params *k)
{
	struct check *C = ud;
	const struct facts *F = C->F;
	struct kj_param_check *out = C->out;
	const char *name = k->mangled;
	int regs = k->registers;
	int64_t blen = k->params_bytes;
	int same_regs = 0, same_size = 0;
	uint32_t other = 0, least = UINT32_MAX;
	if (name && regs >= 0 && blen > 0) {
		uint64_t h = kj_hash_str(name);
		for (size_t i = 0; i < F->n; i++)
			if (F->v[i].name_hash == h && kj_cubin_regs_match(regs, F->v[i].regs)) {
				same_regs = 1;
				if ((int64_t)F->v[i].param_bytes == blen)
					same_size = 1;
				else
					other = F->v[i].param_bytes;
				if (F->v[i].param_bytes < least)
					least = F->v[i].param_bytes;
			}
	}
	if (!same_regs) {
		out->uncheckable++;
	} else if (same_size) {
		out->consistent++;
	} else {
		/* only a block too short for every such function is certainly another's (a size
		 * field this reader misread could only make a function look smaller) */
		if (C->mismatched && blen < (int64_t)least && kj_map_put(C->mismatched, (uint64_t)k->unique_id, least))
			return KJ_ENOMEM;
		if (!out->mismatched++)
			snprintf(out->example, sizeof(out->example),
				 "%.100s: %d registers, %lld-byte parameters recorded, its function with %d"
				 " registers takes %u", name, regs, (long long)blen, regs, other);
	}
	return 0;
}

int kj_param_check(sqlite3 *db, struct kj_param_check *out, struct kj_map *mismatched)
{
	struct facts F = {0};
	struct check C = {&F, out, mismatched};
	int rc;
	memset(out, 0, sizeof(*out));
	if (!kj_db_caps(db)->module_data || !kj_db_caps(db)->launch_params_params)
		return 0; /* a run without captured modules or parameters: nothing to check */
	if ((rc = load_facts(db, &F)))
		goto out;
	rc = kj_store_a_kernel_params_each(db, check_kernel, &C);
out:
	free(F.v);
	return rc;
}
