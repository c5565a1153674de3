/* Replay plan: what to replay and why not, and in which order (rank, budget). See kj_replay.h. */
#include "kj_replay.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_schema.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"
#include "kj_param_check.h"
#include "kj_iterations.h"
#include "kj_replay_cond.h"
#include "kj_kernel_waits.h"

static const char *required_tables[] = {"unique_kernel", "kernel_name", "launch_params", "module",
					"module_function", "allocation", "replay_kernel",
					"replay_energy", "kernel"};

static char *dup_col(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? strdup((const char *)t) : NULL;
}

static int matches(const char *pattern, const char *a, const char *b)
{
	if (!pattern || !*pattern)
		return 1;
	const char *names[2] = {a, b};
	for (int i = 0; i < 2; i++)
		if (names[i] && (!fnmatch(pattern, names[i], 0) || strstr(names[i], pattern)))
			return 1;
	return 0;
}

int kj_replay_plan_load(sqlite3 *db, const char *pattern, struct kj_replay_plan *plan)
{
	sqlite3_stmt *st = NULL;
	const char *run = plan->run_path[0] ? plan->run_path : "run database";
	int rc = 0;

	plan->items = NULL;
	plan->n = 0;
	plan->captured_cc_major = plan->captured_cc_minor = -1;
	plan->captured_gpu[0] = '\0';
	for (size_t i = 0; i < sizeof(required_tables) / sizeof(required_tables[0]); i++) {
		char sql[160];
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='%s'",
			 required_tables[i]);
		if (kj_db_one_i64(db, sql, 0, 0) != 1) {
			kj_errorf("%s: unknown schema: table '%s' is missing, so this kjoule cannot replay it "
				  "(re-trace with this kjoule's `kjoule run`)", run, required_tables[i]);
			return KJ_ESCHEMA;
		}
	}
	plan->have_params = kj_db_one_i64(db, "SELECT count(*) FROM launch_params", 0, 0) > 0;
	if (!plan->have_params) {
		kj_errorf("%s: no kernel parameters were captured (traced with --no-params?); re-run "
			  "`kjoule run` without --no-params to replay its kernels", run);
		return KJ_ENOTFOUND;
	}
	if (kj_db_prepare(db, "SELECT name, cc_major, cc_minor FROM device ORDER BY id LIMIT 1", &st))
		return KJ_EDB;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		snprintf(plan->captured_gpu, sizeof(plan->captured_gpu), "%s", t ? (const char *)t : "");
		if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
			plan->captured_cc_major = sqlite3_column_int(st, 1);
			plan->captured_cc_minor = sqlite3_column_int(st, 2);
		}
	}
	sqlite3_finalize(st);
	plan->traced_busy_ns = kj_db_one_i64(db, "SELECT sum(end_ns - start_ns) FROM kernel", 0, 0);
	plan->total_launches = kj_db_one_i64(db, "SELECT count(*) FROM kernel", 0, 0);
	int have_kernel_rows = plan->total_launches > 0;
	if (!have_kernel_rows)
		plan->total_launches = kj_db_one_i64(db, "SELECT sum(launches) FROM unique_kernel", 0, 0);

	if (kj_db_prepare(db,
			  "SELECT u.id, n.mangled, n.demangled, u.launches,"
			  " (SELECT count(*) FROM kernel k WHERE k.unique_id = u.id),"
			  " (SELECT sum(k.end_ns - k.start_ns) FROM kernel k WHERE k.unique_id = u.id),"
			  " (SELECT count(*) FROM launch_params p WHERE p.unique_id = u.id),"
			  " (SELECT count(*) FROM module_function f WHERE f.mangled = n.mangled),"
			  " (SELECT count(*) FROM module_function f JOIN module m ON m.hash = f.hash"
			  "   WHERE f.mangled = n.mangled AND m.data IS NOT NULL),"
			  " (SELECT group_concat(f.hash, ', ') FROM module_function f WHERE f.mangled = n.mangled)"
			  " FROM unique_kernel u LEFT JOIN kernel_name n ON n.id = u.name_id ORDER BY u.id",
			  &st))
		return KJ_EDB;
	size_t cap = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *mangled = (const char *)sqlite3_column_text(st, 1);
		const char *demangled = (const char *)sqlite3_column_text(st, 2);
		if (!matches(pattern, mangled, demangled))
			continue;
		if (plan->n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct kj_replay_item *ni = realloc(plan->items, nc * sizeof(*ni));
			if (!ni) {
				sqlite3_finalize(st);
				return KJ_ENOMEM;
			}
			plan->items = ni;
			cap = nc;
		}
		struct kj_replay_item *it = &plan->items[plan->n++];
		memset(it, 0, sizeof(*it));
		it->unique_id = sqlite3_column_int64(st, 0);
		it->res.unique_id = it->unique_id;
		it->mangled = dup_col(st, 1);
		it->demangled = dup_col(st, 2);
		int64_t traced = sqlite3_column_int64(st, 4);
		/* launches as traced (kernel rows) when the run has them, else the tracer's count */
		it->launches = have_kernel_rows ? traced : sqlite3_column_int64(st, 3);
		it->traced_ns = sqlite3_column_int64(st, 5);
		const char *hashes = (const char *)sqlite3_column_text(st, 9);
		if (!mangled)
			snprintf(it->skip, sizeof(it->skip),
				 "kernel name unknown (unique_kernel %" PRId64 " has no kernel_name row)",
				 it->unique_id);
		else if (sqlite3_column_int64(st, 6) == 0)
			snprintf(it->skip, sizeof(it->skip),
				 "no parameters captured for this kernel (no launch_params row)");
		else if (sqlite3_column_int64(st, 7) == 0)
			snprintf(it->skip, sizeof(it->skip),
				 "unknown function: no captured module defines %.200s", mangled);
		else if (sqlite3_column_int64(st, 8) == 0)
			snprintf(it->skip, sizeof(it->skip),
				 "module data stripped from this copy (module %.120s has no data); replay "
				 "the original run database", hashes ? hashes : "?");
		if (it->skip[0])
			kj_replay_result_set(&it->res, "skipped", "%s", it->skip);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		kj_errorf("%s: reading unique kernels: %s", run, sqlite3_errmsg(db));
		return KJ_EDB;
	}
	/* parameters the trace recorded of another function (kj_param_check): no replay can be right */
	struct kj_map *bad = kj_map_new();
	struct kj_param_check pc;
	if (bad && plan->have_params && kj_param_check(db, &pc, bad) == 0 && pc.mismatched)
		for (size_t i = 0; i < plan->n; i++) {
			struct kj_replay_item *it = &plan->items[i];
			uint64_t want;
			if (it->skip[0] || !kj_map_get(bad, (uint64_t)it->unique_id, &want))
				continue;
			snprintf(it->skip, sizeof(it->skip),
				 "the trace recorded another function's parameters: the captured function with this"
				 " kernel's traced registers takes %llu bytes, not the block recorded (an older tracer"
				 " kept a freed function handle's facts); trace again", (unsigned long long)want);
			kj_replay_result_set(&it->res, "skipped", "%s", it->skip);
		}
	kj_map_free(bad);
	if (!plan->n) {
		if (pattern && *pattern)
			kj_errorf("%s: no unique kernel matches '%s'", run, pattern);
		else
			kj_errorf("%s: the run has no unique kernels (run `kjoule kernels` on it first?)", run);
		return KJ_ENOTFOUND;
	}
	return 0;
}

void kj_replay_plan_free(struct kj_replay_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++) {
		free(plan->items[i].mangled);
		free(plan->items[i].demangled);
	}
	free(plan->items);
	plan->items = NULL;
	plan->n = 0;
}

struct inst {
	int64_t s, e;
};

static int inst_cmp(const void *a, const void *b)
{
	const struct inst *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

/* 1 when t lies in one of the sorted instances (overlaps: the few before are looked at too) */
static int in_instances(const struct inst *v, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].s <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0 && lo - i < 8; i--)
		if (t <= v[i - 1].e)
			return 1;
	return 0;
}

static int rank_cmp(const void *a, const void *b)
{
	const struct kj_replay_item *x = a, *y = b;
	if ((x->iter_ns > 0) != (y->iter_ns > 0))
		return x->iter_ns > 0 ? -1 : 1;
	if (x->iter_ns != y->iter_ns)
		return x->iter_ns > y->iter_ns ? -1 : 1;
	if (x->traced_ns != y->traced_ns)
		return x->traced_ns > y->traced_ns ? -1 : 1;
	return x->unique_id < y->unique_id ? -1 : x->unique_id > y->unique_id;
}

/* The parameter of unique kernel uid's first captured launch (st: its launch_params row's pid,
 * params and layout, bound by unique_id) that holds a conditional handle of a graph it ran in
 * (kj_replay_cond.h), or -1. */
static int setter_param(sqlite3_stmt *st, const struct kj_cond_handles *h, int64_t uid)
{
	struct kj_replay_param *layout = NULL;
	size_t n = 0;
	int param = -1;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, uid);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    kj_replay_layout_parse((const char *)sqlite3_column_text(st, 2), (size_t)sqlite3_column_bytes(st, 1),
				   &layout, &n, NULL, 0) == 0)
		param = kj_cond_setter_param(h, sqlite3_column_int64(st, 0), uid, layout, n,
					     sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1));
	free(layout);
	return param;
}

size_t kj_replay_budget_chunk(size_t chunk, double budget_s, double elapsed_s, size_t done)
{
	if (budget_s <= 0 || done == 0 || elapsed_s <= 0)
		return chunk;
	double fit = (budget_s - elapsed_s) / (elapsed_s / (double)done);
	if (fit < 1)
		return 1;
	return fit < (double)chunk ? (size_t)fit : chunk;
}

int kj_replay_plan_rank(sqlite3 *db, struct kj_replay_plan *plan, int energy, int all)
{
	struct inst *v = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	int rc = kj_iter_default_range(db, -1, plan->iteration_range, sizeof(plan->iteration_range), NULL);
	if (rc)
		return rc;
	if (plan->iteration_range[0]) {
		if (kj_db_prepare(db, "SELECT start_ns, end_ns FROM nvtx_range WHERE name = ? AND"
				      " start_ns IS NOT NULL AND end_ns IS NOT NULL", &st))
			return KJ_EDB;
		sqlite3_bind_text(st, 1, plan->iteration_range, -1, SQLITE_STATIC);
		while (sqlite3_step(st) == SQLITE_ROW) {
			struct inst *nv = kj_grow(v, &cap, n, sizeof(*nv), 64);
			if (!nv) {
				sqlite3_finalize(st);
				free(v);
				return KJ_ENOMEM;
			}
			v = nv;
			v[n++] = (struct inst){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
		}
		sqlite3_finalize(st);
		qsort(v, n, sizeof(*v), inst_cmp);
		/* the measured iterations, as compare counts them (warm-up left out: cuDNN's autotuning
		 * candidates, compilation, first-touch) */
		size_t skip = (size_t)kj_iter_default_skip(n);
		memmove(v, v + skip, (n - skip) * sizeof(*v));
		n -= skip;
	}
	for (size_t j = 0; j < n; j++) {
		plan->iter_wall_ns += v[j].e - v[j].s;
		plan->iter_first_ns = j == 0 || v[j].s < plan->iter_first_ns ? v[j].s : plan->iter_first_ns;
		plan->iter_last_ns = v[j].e > plan->iter_last_ns ? v[j].e : plan->iter_last_ns;
	}
	if (n) {
		/* per unique kernel: its launches issued inside an iteration, and their traced time */
		struct kj_map *at = kj_map_new();
		if (!at) {
			free(v);
			return KJ_ENOMEM;
		}
		for (size_t i = 0; i < plan->n; i++)
			kj_map_put(at, (uint64_t)plan->items[i].unique_id, i);
		if (kj_db_prepare(db, "SELECT unique_id, launch_ns, start_ns, end_ns FROM kernel"
				      " WHERE unique_id IS NOT NULL AND start_ns IS NOT NULL AND end_ns >= start_ns", &st)) {
			kj_map_free(at);
			free(v);
			return KJ_EDB;
		}
		while (sqlite3_step(st) == SQLITE_ROW) {
			uint64_t i;
			int64_t s = sqlite3_column_int64(st, 2), key = s;
			if (!kj_map_get(at, (uint64_t)sqlite3_column_int64(st, 0), &i))
				continue;
			if (sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_int64(st, 1) <= s)
				key = sqlite3_column_int64(st, 1);
			if (!in_instances(v, n, key))
				continue;
			plan->items[i].iter_launches++;
			plan->items[i].iter_ns += sqlite3_column_int64(st, 3) - s;
			plan->iter_ns += sqlite3_column_int64(st, 3) - s;
		}
		sqlite3_finalize(st);
		kj_map_free(at);
	}
	free(v);
	struct kj_cond_handles *handles = kj_cond_handles_load(db);
	sqlite3_stmt *first_lp = NULL; /* each kernel's first captured launch, prepared once */
	if (handles && kj_db_prepare(db, "SELECT pid, params, layout FROM launch_params WHERE unique_id = ?"
					 " ORDER BY id LIMIT 1", &first_lp)) {
		kj_cond_handles_free(handles);
		return KJ_EDB;
	}
	for (size_t i = 0; i < plan->n; i++) {
		struct kj_replay_item *it = &plan->items[i];
		char why[256];
		int param;
		if (!it->skip[0] && kj_kernel_waits_by_name(it->mangled, why, sizeof(why))) {
			snprintf(it->skip, sizeof(it->skip), "not replayable alone: %s (compare keeps its"
				 " in-situ time)", why);
			kj_replay_result_set(&it->res, "skipped", "%s", it->skip);
		}
		if (handles && !it->skip[0] && (param = setter_param(first_lp, handles, it->unique_id)) >= 0) {
			snprintf(it->skip, sizeof(it->skip), "not replayable alone: " KJ_COND_SETTER_WHY
				 " (parameter %d is the node's handle, which means something only inside its"
				 " graph)", param);
			kj_replay_result_set(&it->res, "skipped", "%s", it->skip);
			snprintf(it->res.reason, sizeof(it->res.reason), "%s", KJ_REASON_COND_SETTER);
		}
	}
	sqlite3_finalize(first_lp);
	kj_cond_handles_free(handles);
	qsort(plan->items, plan->n, sizeof(*plan->items), rank_cmp);
	/* energy: every kernel with --all; else, largest share first, the kernels that hold
	 * KJ_REPLAY_ENERGY_SHARE of the iterations' kernel time (without iterations: of the run's);
	 * compare extrapolates the rest from them and says so */
	{
		int64_t total = n ? plan->iter_ns : 0, acc = 0;
		for (size_t i = 0; i < plan->n; i++)
			if (!n)
				total += plan->items[i].traced_ns;
		for (size_t i = 0; i < plan->n; i++) {
			struct kj_replay_item *it = &plan->items[i];
			int64_t t = n ? it->iter_ns : it->traced_ns;
			it->energy = energy && !it->skip[0] &&
				     (all || (t > 0 && (double)acc < KJ_REPLAY_ENERGY_SHARE * (double)total));
			if (it->energy)
				acc += t;
		}
	}
	return 0;
}
