/* Replay plan (what to replay and why not), result storage and the report. See kj_replay.h. */
#include "kj_replay.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
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

static void bind_timing(sqlite3_stmt *st, const struct kj_replay_timing *t)
{
	if (t && t->runs > 0) {
		sqlite3_bind_int(st, 3, t->runs);
		sqlite3_bind_int64(st, 4, t->min_ns);
		sqlite3_bind_int64(st, 5, t->median_ns);
		sqlite3_bind_double(st, 6, t->mean_ns);
		sqlite3_bind_int64(st, 7, t->max_ns);
		sqlite3_bind_double(st, 8, t->stdev_ns);
	} else {
		for (int i = 3; i <= 8; i++)
			sqlite3_bind_null(st, i);
	}
}

int kj_replay_plan_store(sqlite3 *db, struct kj_replay_plan *plan)
{
	return kj_replay_plan_store_some(db, plan, NULL);
}

int kj_replay_plan_store_some(sqlite3 *db, struct kj_replay_plan *plan, const unsigned char *want_item)
{
	sqlite3_stmt *k = NULL, *e = NULL, *v = NULL, *ec = NULL, *ecd = NULL;
	char when[32];
	int rc = KJ_EDB;

	kj_replay_now(when);
	/* runs replayed before the clock state was stored: the columns are added, older rows say nothing */
	if (kj_replay_ensure_clock_columns(db, "replay_energy"))
		return KJ_EDB;
	if (kj_db_exec(db, "BEGIN IMMEDIATE", "begin replay results"))
		return KJ_EDB;
	if (kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_kernel(unique_id, cache, runs, min_ns, median_ns,"
			  " mean_ns, max_ns, stdev_ns, status, error, replayed_at)"
			  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", &k) ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_energy(unique_id, unroll, launches, seconds,"
			  " energy_mj_per_launch, energy_unc_mj, power_mw, idle_mw, dynamic_mj_per_launch,"
			  " method, replayed_at, sm_clock_mean_mhz, sm_clock_min_mhz, sm_clock_max_mhz,"
			  " throttle_reasons) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
			  &e) ||
	    kj_db_exec(db, KJ_REPLAY_VERIFY_TABLE, "create replay_verify") ||
	    kj_db_exec(db, KJ_REPLAY_ENERGY_COLD_TABLE, "create replay_energy_cold") ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_energy_cold(unique_id, launches, seconds,"
			  " energy_mj_per_launch, energy_unc_mj, ns_per_launch, flush_mj, flush_unc_mj,"
			  " replayed_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", &ec) ||
	    kj_db_prepare(db, "DELETE FROM replay_energy_cold WHERE unique_id = ?1", &ecd) ||
	    kj_db_prepare(db,
			  "INSERT OR REPLACE INTO replay_verify(unique_id, result, buffers, bytes,"
			  " differing_bytes, replayed_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6)", &v))
		goto out;
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_result *r = &plan->items[i].res;
		const struct kj_replay_timing *t[2] = {&r->warm, &r->cold};
		if (want_item && !want_item[i])
			continue;
		const char *cache[2] = {"warm", "cold"};
		int want[2] = {plan->cache_warm, plan->cache_cold};
		for (int c = 0; c < 2; c++) {
			if (!want[c] && t[c]->runs <= 0)
				continue;
			sqlite3_reset(k);
			sqlite3_bind_int64(k, 1, r->unique_id);
			sqlite3_bind_text(k, 2, cache[c], -1, SQLITE_STATIC);
			bind_timing(k, t[c]);
			sqlite3_bind_text(k, 9, r->status[0] ? r->status : "failed", -1, SQLITE_TRANSIENT);
			if (r->error[0])
				sqlite3_bind_text(k, 10, r->error, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(k, 10);
			sqlite3_bind_text(k, 11, when, -1, SQLITE_STATIC);
			if (sqlite3_step(k) != SQLITE_DONE) {
				kj_errorf("database: storing replay_kernel: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
		if (r->verify[0]) {
			sqlite3_reset(v);
			sqlite3_bind_int64(v, 1, r->unique_id);
			sqlite3_bind_text(v, 2, r->verify, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(v, 3, r->verify_buffers);
			sqlite3_bind_int64(v, 4, r->verify_bytes);
			sqlite3_bind_int64(v, 5, r->verify_diff_bytes);
			sqlite3_bind_text(v, 6, when, -1, SQLITE_STATIC);
			if (sqlite3_step(v) != SQLITE_DONE) {
				kj_errorf("database: storing replay_verify: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
		if (r->has_energy) {
			sqlite3_reset(e);
			sqlite3_bind_int64(e, 1, r->unique_id);
			sqlite3_bind_int(e, 2, r->unroll);
			sqlite3_bind_int64(e, 3, r->energy_launches);
			sqlite3_bind_double(e, 4, r->seconds);
			sqlite3_bind_double(e, 5, r->energy_mj_per_launch);
			sqlite3_bind_double(e, 6, r->energy_unc_mj);
			sqlite3_bind_double(e, 7, r->power_mw);
			if (r->idle_mw >= 0 && !isnan(r->idle_mw))
				sqlite3_bind_double(e, 8, r->idle_mw);
			else
				sqlite3_bind_null(e, 8);
			if (!isnan(r->dynamic_mj_per_launch))
				sqlite3_bind_double(e, 9, r->dynamic_mj_per_launch);
			else
				sqlite3_bind_null(e, 9);
			sqlite3_bind_text(e, 10, r->method, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(e, 11, when, -1, SQLITE_STATIC);
			kj_replay_bind_clocks(e, 12, r->sm_clock_mean_mhz, r->sm_clock_min_mhz, r->sm_clock_max_mhz,
					      r->throttle_reasons);
			if (sqlite3_step(e) != SQLITE_DONE) {
				kj_errorf("database: storing replay_energy: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
		if (r->has_energy_cold) {
			sqlite3_reset(ec);
			sqlite3_bind_int64(ec, 1, r->unique_id);
			sqlite3_bind_int64(ec, 2, r->energy_cold_launches);
			sqlite3_bind_double(ec, 3, r->energy_cold_seconds);
			sqlite3_bind_double(ec, 4, r->energy_cold_mj_per_launch);
			sqlite3_bind_double(ec, 5, r->energy_cold_unc_mj);
			sqlite3_bind_double(ec, 6, r->energy_cold_ns_per_launch);
			sqlite3_bind_double(ec, 7, r->flush_mj);
			sqlite3_bind_double(ec, 8, r->flush_unc_mj);
			sqlite3_bind_text(ec, 9, when, -1, SQLITE_STATIC);
			if (sqlite3_step(ec) != SQLITE_DONE) {
				kj_errorf("database: storing replay_energy_cold: %s", sqlite3_errmsg(db));
				goto out;
			}
		} else if (r->has_energy) { /* an earlier replay's cold figure no longer stands beside it */
			sqlite3_reset(ecd);
			sqlite3_bind_int64(ecd, 1, r->unique_id);
			if (sqlite3_step(ecd) != SQLITE_DONE) {
				kj_errorf("database: storing replay_energy_cold: %s", sqlite3_errmsg(db));
				goto out;
			}
		}
	}
	rc = 0;
out:
	sqlite3_finalize(k);
	sqlite3_finalize(e);
	sqlite3_finalize(v);
	sqlite3_finalize(ec);
	sqlite3_finalize(ecd);
	if (rc) {
		kj_db_exec(db, "ROLLBACK", "rollback replay results");
		return rc;
	}
	if (kj_db_exec(db, "COMMIT", "commit replay results"))
		return KJ_EDB;
	for (size_t i = 0; i < plan->n; i++)
		if (!want_item || want_item[i])
			plan->items[i].stored = 1;
	return 0;
}

static int replayed(const struct kj_replay_item *it)
{
	return !strcmp(it->res.status, "ok") || !strcmp(it->res.status, "relocated");
}

static const struct kj_replay_timing *main_timing(const struct kj_replay_item *it)
{
	if (it->res.warm.runs > 0)
		return &it->res.warm;
	if (it->res.cold.runs > 0)
		return &it->res.cold;
	return NULL;
}

static double contribution_ns(const struct kj_replay_item *it)
{
	const struct kj_replay_timing *t = main_timing(it);
	return t ? (double)it->launches * (double)t->median_ns : -1.0;
}

static int by_contribution(const void *a, const void *b)
{
	double x = contribution_ns(*(const struct kj_replay_item *const *)a);
	double y = contribution_ns(*(const struct kj_replay_item *const *)b);
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Items sorted by contribution (malloc'ed array of pointers), NULL on allocation failure. */
static const struct kj_replay_item **sorted_items(const struct kj_replay_plan *plan)
{
	const struct kj_replay_item **v = malloc((plan->n ? plan->n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < plan->n; i++)
		v[i] = &plan->items[i];
	qsort(v, plan->n, sizeof(*v), by_contribution);
	return v;
}

struct coverage {
	int64_t launches, l_exact, l_reloc, l_not;
	size_t kernels, k_exact, k_reloc, k_not;
	double warm_sum_ns, cold_sum_ns;
	int any_warm, any_cold;
};

static void coverage_of(const struct kj_replay_plan *plan, struct coverage *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_item *it = &plan->items[i];
		c->launches += it->launches;
		c->kernels++;
		if (!strcmp(it->res.status, "ok")) {
			c->l_exact += it->launches;
			c->k_exact++;
		} else if (!strcmp(it->res.status, "relocated")) {
			c->l_reloc += it->launches;
			c->k_reloc++;
		} else {
			c->l_not += it->launches;
			c->k_not++;
		}
		if (replayed(it) && it->res.warm.runs > 0) {
			c->warm_sum_ns += (double)it->launches * (double)it->res.warm.median_ns;
			c->any_warm = 1;
		}
		if (replayed(it) && it->res.cold.runs > 0) {
			c->cold_sum_ns += (double)it->launches * (double)it->res.cold.median_ns;
			c->any_cold = 1;
		}
	}
}

static double pct(int64_t a, int64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

void kj_replay_report_print(FILE *f, const struct kj_replay_plan *plan)
{
	const struct kj_replay_item **v = sorted_items(plan);
	struct coverage c;
	double total = 0;
	if (!v)
		return;
	coverage_of(plan, &c);
	total = c.any_warm ? c.warm_sum_ns : c.cold_sum_ns;
	fprintf(f, "%-9s %9s %11s %11s %10s %6s %11s %11s %-9s %s\n", "unique", "launches", "warm_med_us",
		"cold_med_us", "total_ms", "share", "mJ/launch", "cold_mJ", "status", "kernel");
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_item *it = v[i];
		const char *name = it->demangled ? it->demangled : it->mangled ? it->mangled : "?";
		double contrib = contribution_ns(it);
		char warm[24] = "-", cold[24] = "-", tot[24] = "-", share[16] = "-", mj[24] = "-", cmj[24] = "-";
		if (it->res.warm.runs > 0)
			snprintf(warm, sizeof(warm), "%.2f", (double)it->res.warm.median_ns / 1e3);
		if (it->res.cold.runs > 0)
			snprintf(cold, sizeof(cold), "%.2f", (double)it->res.cold.median_ns / 1e3);
		if (contrib >= 0) {
			snprintf(tot, sizeof(tot), "%.3f", contrib / 1e6);
			if (total > 0)
				snprintf(share, sizeof(share), "%.1f%%", 100.0 * contrib / total);
		}
		if (it->res.has_energy)
			snprintf(mj, sizeof(mj), "%.4g", it->res.energy_mj_per_launch);
		if (it->res.has_energy_cold)
			snprintf(cmj, sizeof(cmj), "%.4g", it->res.energy_cold_mj_per_launch);
		fprintf(f, "%-9" PRId64 " %9" PRId64 " %11s %11s %10s %6s %11s %11s %-9s %.70s\n",
			it->unique_id, it->launches, warm, cold, tot, share, mj, cmj,
			it->res.status[0] ? it->res.status : "failed", name);
	}
	fprintf(f, "\ncoverage: launches %" PRId64 "/%" PRId64 " replayed (%.1f%%: exact %" PRId64
		   ", relocated %" PRId64 "); unique kernels %zu/%zu (exact %zu, relocated %zu)\n",
		c.l_exact + c.l_reloc, c.launches, pct(c.l_exact + c.l_reloc, c.launches), c.l_exact,
		c.l_reloc, c.k_exact + c.k_reloc, c.kernels, c.k_exact, c.k_reloc);
	if (c.launches != plan->total_launches && plan->total_launches > 0)
		fprintf(f, "          (selection: %" PRId64 " of the run's %" PRId64 " launches)\n",
			c.launches, plan->total_launches);
	if (c.k_reloc) {
		fprintf(f, "relocated (pointers rewritten; original addresses unavailable):\n");
		for (size_t i = 0; i < plan->n; i++)
			if (!strcmp(plan->items[i].res.status, "relocated") &&
			    strncmp(plan->items[i].res.error, "data:", 5))
				fprintf(f, "  %" PRId64 " %.60s: %s\n", plan->items[i].unique_id,
					plan->items[i].mangled ? plan->items[i].mangled : "?",
					plan->items[i].res.error);
	}
	size_t fallback = 0;
	for (size_t i = 0; i < plan->n; i++)
		if (replayed(&plan->items[i]) && !strncmp(plan->items[i].res.error, "data:", 5)) {
			if (!fallback++)
				fprintf(f, "replayed on fallback data (random data faulted or hung):\n");
			fprintf(f, "  %" PRId64 " %.60s: %.160s\n", plan->items[i].unique_id,
				plan->items[i].mangled ? plan->items[i].mangled : "?", plan->items[i].res.error);
		}
	if (c.k_not) {
		fprintf(f, "not replayed: %zu kernels, %" PRId64 " launches\n", c.k_not, c.l_not);
		for (size_t i = 0; i < plan->n; i++)
			if (!replayed(&plan->items[i]))
				fprintf(f, "  %" PRId64 " %.60s: %s: %s\n", plan->items[i].unique_id,
					plan->items[i].mangled ? plan->items[i].mangled : "?",
					plan->items[i].res.status[0] ? plan->items[i].res.status : "failed",
					plan->items[i].res.error[0] ? plan->items[i].res.error : "no result");
	}
	size_t nver = 0, vcount[4] = {0};
	static const char *const vname[4] = {"identical", "differs", "partial", "no-snapshot"};
	for (size_t i = 0; i < plan->n; i++)
		for (int j = 0; j < 4 && plan->items[i].res.verify[0]; j++)
			if (!strcmp(plan->items[i].res.verify, vname[j]))
				vcount[j]++, nver++;
	if (nver) {
		fprintf(f, "verify (outputs vs the run's after-launch snapshot): identical %zu, differs %zu, "
			   "partial %zu, no snapshot %zu\n", vcount[0], vcount[1], vcount[2], vcount[3]);
		for (size_t i = 0; i < plan->n; i++)
			if (!strcmp(plan->items[i].res.verify, "differs"))
				fprintf(f, "  %" PRId64 " %.60s: %" PRId64 " of %" PRId64 " bytes differ in %" PRId64
					   " buffers\n", plan->items[i].unique_id,
					plan->items[i].mangled ? plan->items[i].mangled : "?",
					plan->items[i].res.verify_diff_bytes, plan->items[i].res.verify_bytes,
					plan->items[i].res.verify_buffers);
	}
	if (plan->traced_busy_ns > 0) {
		fprintf(f, "traced GPU busy (sum of kernel durations): %.3f ms", plan->traced_busy_ns / 1e6);
		if (c.any_warm)
			fprintf(f, "; replay sum(count x warm median): %.3f ms (%+.1f%%)", c.warm_sum_ns / 1e6,
				100.0 * (c.warm_sum_ns - (double)plan->traced_busy_ns) / (double)plan->traced_busy_ns);
		if (c.any_cold)
			fprintf(f, "; cold: %.3f ms (%+.1f%%)", c.cold_sum_ns / 1e6,
				100.0 * (c.cold_sum_ns - (double)plan->traced_busy_ns) / (double)plan->traced_busy_ns);
		fputc('\n', f);
	} else if (c.any_warm || c.any_cold) {
		fprintf(f, "replay sum(count x median): warm %.3f ms, cold %.3f ms\n", c.warm_sum_ns / 1e6,
			c.cold_sum_ns / 1e6);
	}
	free(v);
}

static json_t *timing_json(const struct kj_replay_timing *t)
{
	if (t->runs <= 0)
		return json_null();
	return json_pack("{s:i, s:I, s:I, s:f, s:I, s:f}", "runs", t->runs, "min_ns",
			 (json_int_t)t->min_ns, "median_ns", (json_int_t)t->median_ns, "mean_ns",
			 t->mean_ns, "max_ns", (json_int_t)t->max_ns, "stdev_ns", t->stdev_ns);
}

static json_t *num_or_null(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

char *kj_replay_report_json(const struct kj_replay_plan *plan)
{
	const struct kj_replay_item **v = sorted_items(plan);
	struct coverage c;
	char *text = NULL;
	if (!v)
		return NULL;
	coverage_of(plan, &c);
	json_t *root = json_object(), *arr = json_array();
	if (!root || !arr)
		goto out;
	for (size_t i = 0; i < plan->n; i++) {
		const struct kj_replay_item *it = v[i];
		const struct kj_replay_result *r = &it->res;
		double contrib = contribution_ns(it);
		json_t *k = json_object();
		json_object_set_new(k, "unique_id", json_integer(it->unique_id));
		json_object_set_new(k, "mangled", it->mangled ? json_string(it->mangled) : json_null());
		json_object_set_new(k, "name", json_string(it->demangled ? it->demangled
							       : it->mangled ? it->mangled : "?"));
		json_object_set_new(k, "launches", json_integer(it->launches));
		json_object_set_new(k, "status", json_string(r->status[0] ? r->status : "failed"));
		json_object_set_new(k, "error", r->error[0] ? json_string(r->error) : json_null());
		json_object_set_new(k, "timer", r->timer[0] ? json_string(r->timer) : json_null());
		json_object_set_new(k, "warm", timing_json(&r->warm));
		json_object_set_new(k, "cold", timing_json(&r->cold));
		json_object_set_new(k, "total_ns", contrib >= 0 ? json_real(contrib) : json_null());
		json_object_set_new(k, "traced_ns", json_integer(it->traced_ns));
		if (r->has_energy)
			json_object_set_new(k, "energy",
					    json_pack("{s:i, s:I, s:o, s:o, s:o, s:o, s:o, s:s}", "unroll", r->unroll,
						      "launches", (json_int_t)r->energy_launches, "seconds",
						      num_or_null(r->seconds), "energy_mj_per_launch",
						      num_or_null(r->energy_mj_per_launch), "energy_unc_mj",
						      num_or_null(r->energy_unc_mj), "power_mw", num_or_null(r->power_mw),
						      "dynamic_mj_per_launch", num_or_null(r->dynamic_mj_per_launch),
						      "method", r->method));
		else
			json_object_set_new(k, "energy", json_null());
		if (r->has_energy_cold)
			json_object_set_new(k, "energy_cold",
					    json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "launches",
						      (json_int_t)r->energy_cold_launches, "seconds",
						      num_or_null(r->energy_cold_seconds), "energy_mj_per_launch",
						      num_or_null(r->energy_cold_mj_per_launch), "energy_unc_mj",
						      num_or_null(r->energy_cold_unc_mj), "ns_per_launch",
						      num_or_null(r->energy_cold_ns_per_launch), "flush_mj",
						      num_or_null(r->flush_mj), "flush_unc_mj", num_or_null(r->flush_unc_mj)));
		else
			json_object_set_new(k, "energy_cold", json_null());
		if (r->verify[0])
			json_object_set_new(k, "verify",
					    json_pack("{s:s, s:I, s:I, s:I}", "result", r->verify, "buffers",
						      (json_int_t)r->verify_buffers, "bytes", (json_int_t)r->verify_bytes,
						      "differing_bytes", (json_int_t)r->verify_diff_bytes));
		json_array_append_new(arr, k);
	}
	json_object_set_new(root, "kernels", arr);
	json_object_set_new(root, "coverage",
			    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "launches",
				      (json_int_t)c.launches, "launches_exact", (json_int_t)c.l_exact,
				      "launches_relocated", (json_int_t)c.l_reloc, "launches_not_replayed",
				      (json_int_t)c.l_not, "unique_kernels", (json_int_t)c.kernels,
				      "unique_exact", (json_int_t)c.k_exact, "unique_relocated",
				      (json_int_t)c.k_reloc, "unique_not_replayed", (json_int_t)c.k_not,
				      "run_launches", (json_int_t)plan->total_launches));
	json_object_set_new(root, "traced_busy_ns", json_integer(plan->traced_busy_ns));
	json_object_set_new(root, "replay_warm_sum_ns", c.any_warm ? json_real(c.warm_sum_ns) : json_null());
	json_object_set_new(root, "replay_cold_sum_ns", c.any_cold ? json_real(c.cold_sum_ns) : json_null());
	json_object_set_new(root, "captured_gpu", json_string(plan->captured_gpu));
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
out:
	json_decref(root);
	free(v);
	return text;
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
