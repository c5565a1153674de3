/* Replay plan: what to replay and why not, and in which order (rank, budget). See kj_replay.h. */
#include "kj_replay.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kj_schema.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_map.h"
#include "kj_param_check.h"
#include "kj_iterations.h"
#include "kj_replay_cond.h"
#include "kj_kernel_waits.h"
#include "kj_store_r_plan.h"

static const char *required_tables[] = {"unique_kernel", "kernel_name", "launch_params", "module",
					"module_function", "allocation", "replay_kernel",
					"replay_energy", "kernel"};

static char *dup_text(const char *t)
{
	return t ? strdup(t) : NULL;
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

/* The walk over the run's unique kernels: the plan to fill, the pattern, what the run has. */
struct load_ctx {
	struct kj_replay_plan *plan;
	const char *pattern;
	int have_kernel_rows;
	size_t cap;
};

/* One unique kernel into the plan when it matches, with why it cannot be replayed. */
static int load_one(void *ctx, const struct kj_store_r_unique *u)
{
	struct load_ctx *c = ctx;
	struct kj_replay_plan *plan = c->plan;
	const char *mangled = u->mangled;
	if (!matches(c->pattern, mangled, u->demangled))
		return 0;
	if (plan->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 32;
		struct kj_replay_item *ni = realloc(plan->items, nc * sizeof(*ni));
		if (!ni)
			return KJ_ENOMEM;
		plan->items = ni;
		c->cap = nc;
	}
	struct kj_replay_item *it = &plan->items[plan->n++];
	memset(it, 0, sizeof(*it));
	it->unique_id = u->unique_id;
	it->res.unique_id = it->unique_id;
	it->mangled = dup_text(u->mangled);
	it->demangled = dup_text(u->demangled);
	/* launches as traced (kernel rows) when the run has them, else the tracer's count */
	it->launches = c->have_kernel_rows ? u->kernel_rows : u->launches;
	it->traced_ns = u->traced_ns;
	const char *hashes = u->hashes;
	if (!mangled)
		snprintf(it->skip, sizeof(it->skip),
			 "kernel name unknown (unique_kernel %" PRId64 " has no kernel_name row)",
			 it->unique_id);
	else if (u->params_rows == 0)
		snprintf(it->skip, sizeof(it->skip),
			 "no parameters captured for this kernel (no launch_params row)");
	else if (u->functions == 0)
		snprintf(it->skip, sizeof(it->skip),
			 "unknown function: no captured module defines %.200s", mangled);
	else if (u->functions_with_data == 0)
		snprintf(it->skip, sizeof(it->skip),
			 "module data stripped from this copy (module %.120s has no data); replay "
			 "the original run database", hashes ? hashes : "?");
	if (it->skip[0])
		kj_replay_result_set(&it->res, "skipped", "%s", it->skip);
	return 0;
}

int kj_replay_plan_load(sqlite3 *db, const char *pattern, struct kj_replay_plan *plan)
{
	const char *run = plan->run_path[0] ? plan->run_path : "run database";
	struct kj_store_r_device dev;
	int rc = 0;

	plan->items = NULL;
	plan->n = 0;
	plan->captured_cc_major = plan->captured_cc_minor = -1;
	plan->captured_gpu[0] = '\0';
	for (size_t i = 0; i < sizeof(required_tables) / sizeof(required_tables[0]); i++) {
		if (!kj_store_r_has_table(db, required_tables[i])) {
			kj_errorf("%s: unknown schema: table '%s' is missing, so this kjoule cannot replay it "
				  "(re-trace with this kjoule's `kjoule run`)", run, required_tables[i]);
			return KJ_ESCHEMA;
		}
	}
	plan->have_params = kj_store_r_launch_params_count(db) > 0;
	if (!plan->have_params) {
		kj_errorf("%s: no kernel parameters were captured (traced with --no-params?); re-run "
			  "`kjoule run` without --no-params to replay its kernels", run);
		return KJ_ENOTFOUND;
	}
	if ((rc = kj_store_r_first_device(db, &dev)) < 0)
		return KJ_EDB;
	if (rc) {
		snprintf(plan->captured_gpu, sizeof(plan->captured_gpu), "%s", dev.name);
		if (dev.has_cc) {
			plan->captured_cc_major = dev.cc_major;
			plan->captured_cc_minor = dev.cc_minor;
		}
	}
	plan->traced_busy_ns = kj_store_r_kernel_busy_ns(db);
	plan->total_launches = kj_store_r_kernel_count(db);
	int have_kernel_rows = plan->total_launches > 0;
	if (!have_kernel_rows)
		plan->total_launches = kj_store_r_unique_launches(db);

	struct load_ctx lc = {plan, pattern, have_kernel_rows, 0};
	if ((rc = kj_store_r_unique_each(db, run, load_one, &lc)))
		return rc;
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

static int inst_cmp(const void *a, const void *b)
{
	const struct kj_store_r_span *x = a, *y = b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* 1 when t lies in one of the sorted instances (overlaps: the few before are looked at too) */
static int in_instances(const struct kj_store_r_span *v, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].start_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0 && lo - i < 8; i--)
		if (t <= v[i - 1].end_ns)
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

/* The parameter of unique kernel uid's first captured launch (q: kj_store_r_first_params_open)
 * that holds a conditional handle of a graph it ran in (kj_replay_cond.h), or -1. */
static int setter_param(struct kj_store_r_lookup *q, const struct kj_cond_handles *h, int64_t uid)
{
	struct kj_replay_param *layout = NULL;
	struct kj_store_r_params p;
	size_t n = 0;
	int param = -1;
	if (kj_store_r_first_params(q, uid, &p) &&
	    kj_replay_layout_parse(p.layout, p.len, &layout, &n, NULL, 0) == 0)
		param = kj_cond_setter_param(h, p.pid, uid, layout, n, p.params, p.len);
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

/* The walk over the run's kernel launches: each issued inside an iteration counts for its kernel. */
struct rank_ctx {
	struct kj_replay_plan *plan;
	struct kj_map *at; /* unique id -> item index */
	const struct kj_store_r_span *v;
	size_t n;
};

static int rank_one(void *ctx, const struct kj_store_r_launch *l)
{
	struct rank_ctx *c = ctx;
	uint64_t i;
	int64_t s = l->start_ns, key = s;
	if (!kj_map_get(c->at, (uint64_t)l->unique_id, &i))
		return 0;
	if (l->has_launch_ns && l->launch_ns <= s)
		key = l->launch_ns;
	if (!in_instances(c->v, c->n, key))
		return 0;
	c->plan->items[i].iter_launches++;
	c->plan->items[i].iter_ns += l->end_ns - s;
	c->plan->iter_ns += l->end_ns - s;
	return 0;
}

int kj_replay_plan_rank(sqlite3 *db, struct kj_replay_plan *plan, int energy, int all)
{
	struct kj_store_r_span *v = NULL;
	size_t n = 0;
	int rc = kj_iter_default_range(db, -1, plan->iteration_range, sizeof(plan->iteration_range), NULL);
	if (rc)
		return rc;
	if (plan->iteration_range[0]) {
		if ((rc = kj_store_r_nvtx_spans(db, plan->iteration_range, &v, &n)))
			return rc;
		qsort(v, n, sizeof(*v), inst_cmp);
		/* the measured iterations, as compare counts them (warm-up left out: cuDNN's autotuning
		 * candidates, compilation, first-touch) */
		size_t skip = (size_t)kj_iter_default_skip(n);
		memmove(v, v + skip, (n - skip) * sizeof(*v));
		n -= skip;
	}
	for (size_t j = 0; j < n; j++) {
		plan->iter_wall_ns += v[j].end_ns - v[j].start_ns;
		plan->iter_first_ns = j == 0 || v[j].start_ns < plan->iter_first_ns ? v[j].start_ns : plan->iter_first_ns;
		plan->iter_last_ns = v[j].end_ns > plan->iter_last_ns ? v[j].end_ns : plan->iter_last_ns;
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
		struct rank_ctx rk = {plan, at, v, n};
		if (kj_store_r_launches_each(db, rank_one, &rk)) {
			kj_map_free(at);
			free(v);
			return KJ_EDB;
		}
		kj_map_free(at);
	}
	free(v);
	struct kj_cond_handles *handles = kj_cond_handles_load(db);
	struct kj_store_r_lookup *first_lp = NULL; /* each kernel's first captured launch, prepared once */
	if (handles && kj_store_r_first_params_open(db, &first_lp)) {
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
	kj_store_r_lookup_close(first_lp);
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
