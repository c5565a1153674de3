#include "kj_param_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cubin.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"

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

/* Every captured cubin's functions (zstd images decompressed one at a time). */
static int load_facts(sqlite3 *db, struct facts *F)
{
	sqlite3_stmt *st = NULL;
	if (kj_db_prepare(db, "SELECT codec, bytes, data FROM module WHERE data IS NOT NULL AND format = 'cubin'", &st))
		return KJ_EDB;
	while (sqlite3_step(st) == SQLITE_ROW && !F->oom) {
		const char *codec = (const char *)sqlite3_column_text(st, 0);
		const void *data = sqlite3_column_blob(st, 2);
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		const char *why = NULL;
		size_t n = 0;
		unsigned char *img = kj_cubin_image(codec, data, len, (size_t)sqlite3_column_int64(st, 1), &n, &why);
		if (img)
			kj_cubin_function_facts(img, n, add_fact, F);
		else if (!strcmp(why, "out of memory"))
			F->oom = 1; /* an image that does not decompress is one not checked */
		free(img);
	}
	sqlite3_finalize(st);
	return F->oom ? KJ_ENOMEM : 0;
}

int kj_param_check(sqlite3 *db, struct kj_param_check *out, struct kj_map *mismatched)
{
	struct facts F = {0};
	sqlite3_stmt *st = NULL;
	int rc;
	memset(out, 0, sizeof(*out));
	if (!kj_db_caps(db)->module_data || !kj_db_caps(db)->launch_params_params)
		return 0; /* a run without captured modules or parameters: nothing to check */
	if ((rc = load_facts(db, &F)))
		goto out;
	if (kj_db_prepare(db, "SELECT n.mangled, u.registers, (SELECT length(p.params) FROM launch_params p"
			      " WHERE p.unique_id = u.id LIMIT 1), u.id FROM unique_kernel u JOIN kernel_name n"
			      " ON n.id = u.name_id", &st)) {
		rc = KJ_EDB;
		goto out;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int regs = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 1);
		int64_t blen = sqlite3_column_type(st, 2) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 2);
		int same_regs = 0, same_size = 0;
		uint32_t other = 0, least = UINT32_MAX;
		if (name && regs >= 0 && blen > 0) {
			uint64_t h = kj_hash_str(name);
			for (size_t i = 0; i < F.n; i++)
				if (F.v[i].name_hash == h && kj_cubin_regs_match(regs, F.v[i].regs)) {
					same_regs = 1;
					if ((int64_t)F.v[i].param_bytes == blen)
						same_size = 1;
					else
						other = F.v[i].param_bytes;
					if (F.v[i].param_bytes < least)
						least = F.v[i].param_bytes;
				}
		}
		if (!same_regs) {
			out->uncheckable++;
		} else if (same_size) {
			out->consistent++;
		} else {
			/* only a block too short for every such function is certainly another's (a size
			 * field this reader misread could only make a function look smaller) */
			if (mismatched && blen < (int64_t)least &&
			    kj_map_put(mismatched, (uint64_t)sqlite3_column_int64(st, 3), least)) {
				rc = KJ_ENOMEM;
				break;
			}
			if (!out->mismatched++)
				snprintf(out->example, sizeof(out->example),
					 "%.100s: %d registers, %lld-byte parameters recorded, its function with %d"
					 " registers takes %u", name, regs, (long long)blen, regs, other);
		}
	}
	sqlite3_finalize(st);
out:
	free(F.v);
	return rc;
}
