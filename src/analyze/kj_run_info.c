/* What a run database holds, gathered into one JSON object for `kjoule info` and the HTML
 * report: the command and how it ended, processes, devices, row counts, the iteration and its
 * candidates, graphs, what was captured and what was not, recorded problems. */
#include "kj_run_info.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_db.h"
#include "kj_iterations.h"
#include "kj_param_check.h"
#include "kj_ranks.h"
#include "kj_store_a2_info.h"

/* Tables reported under "counts", with the key used in the report. */
static const struct {
	const char *key, *table;
} count_tables[] = {
	{"kernels", "kernel"},
	{"unique_kernels", "unique_kernel"},
	{"kernel_names", "kernel_name"},
	{"memcpys", "memcpy"},
	{"memsets", "memset"},
	{"api_calls", "api_call"},
	{"allocations", "allocation"},
	{"nvtx_ranges", "nvtx_range"},
	{"modules", "module"},
	{"module_loads", "module_load"},
	{"launch_params", "launch_params"},
	{"sequence_ops", "sequence_op"},
	{"host_calls", "host_call"},
	{"graph_nodes", "graph_node"},
	{"snapshots", "snapshot"},
	{"power_samples", "power_sample"},
	{"idle_power", "idle_power"},
	{"meter_samples", "meter_sample"},
	{"replay_kernel", "replay_kernel"},
	{"replay_energy", "replay_energy"},
	{"replay_energy_cold", "replay_energy_cold"},
	{"replay_sequence", "replay_sequence"},
	{"problems", "problem"},
};

const char *kj_run_info_count_key(size_t i)
{
	return i < sizeof(count_tables) / sizeof(count_tables[0]) ? count_tables[i].key : NULL;
}


static int add_node_kind(void *ud, const char *type, int64_t count)
{
	json_object_set_new(ud, type, json_integer(count));
	return 0;
}

/* How many graph nodes of each kind the program's graphs held ({} without graphs, or in runs
 * recorded before graphs were read). */
static json_t *node_kinds_json(sqlite3 *db)
{
	json_t *o = json_object();
	if (o)
		kj_store_a2_graph_node_kinds_each(db, add_node_kind, o);
	return o;
}

/* The iteration the analyses use and every candidate range, so the choice is visible. */
static json_t *iteration_json(sqlite3 *db)
{
	struct kj_iter_candidate *c = NULL;
	size_t n = 0;
	char name[256];
	const char *why = NULL;
	json_t *o = json_object(), *a = json_array();
	if (kj_iter_default_range(db, -1, name, sizeof(name), &why) == 0) {
		json_object_set_new(o, "range", name[0] ? json_string(name) : json_null());
		json_object_set_new(o, "chosen_by", json_string(why));
	}
	if (kj_iter_candidates(db, -1, &c, &n) == 0)
		for (size_t i = 0; i < n; i++) {
			json_t *r = json_object();
			json_object_set_new(r, "name", json_string(c[i].name));
			json_object_set_new(r, "domain", c[i].domain[0] ? json_string(c[i].domain) : json_null());
			json_object_set_new(r, "instances", json_integer(c[i].instances));
			json_object_set_new(r, "gpu_ms", json_real((double)c[i].gpu_ns / 1e6));
			json_object_set_new(r, "framework", json_boolean(c[i].internal));
			json_array_append_new(a, r);
		}
	free(c);
	json_object_set_new(o, "candidates", a);
	return o;
}

static json_t *meta_json(sqlite3 *db, const char *key)
{
	char buf[8192];
	if (kj_db_meta_get(db, key, buf, sizeof(buf)))
		return json_null();
	return json_string(buf);
}

static int parse_i64(const char *s, int64_t *v)
{
	char *end;
	if (!s || !*s)
		return 0;
	long long x = strtoll(s, &end, 10);
	if (*end)
		return 0;
	*v = x;
	return 1;
}

static json_t *col_json(const struct kj_store_a2_cell *c)
{
	switch (c->type) {
	case KJ_CELL_INT:
		return json_integer(c->i);
	case KJ_CELL_REAL:
		return json_real(c->real);
	case KJ_CELL_NULL:
		return json_null();
	default:
		return json_string(c->text);
	}
}

static int add_row(void *ud, const struct kj_store_a2_cell *cells, int n)
{
	json_t *o = json_object();
	for (int i = 0; i < n; i++)
		json_object_set_new(o, cells[i].name, col_json(&cells[i]));
	json_array_append_new(ud, o);
	return 0;
}

/* The rows of one table as an array of objects keyed by column name. */
static json_t *rows_json(sqlite3 *db, enum kj_store_a2_rows which)
{
	json_t *arr = json_array();
	kj_store_a2_info_rows_each(db, which, add_row, arr);
	return arr;
}

static void take_scalar(void *ud, const struct kj_store_a2_cell *c)
{
	*(json_t **)ud = col_json(c);
}

static json_t *scalar_json(sqlite3 *db, enum kj_store_a2_scalar which)
{
	json_t *v = NULL;
	kj_store_a2_info_scalar(db, which, take_scalar, &v);
	return v ? v : json_null();
}

/* The kept iteration's host-to-device copies and how many carry the bytes the program copied
 * (JSON kept_iteration_htod_copies); those without are named under not captured: a whole-iteration
 * replay copies stand-in bytes for them. */
static void kept_iteration_copies(sqlite3 *db, json_t *o, json_t *missing)
{
	int with_table = kj_db_caps(db)->copy_data;
	int64_t n64, kept64;
	if (kj_store_a2_kept_htod_copies(db, &n64, &kept64))
		return;
	long long n = n64, kept = kept64;
	if (!n)
		return;
	json_object_set_new(o, "kept_iteration_htod_copies",
			    json_pack("{s:I,s:I}", "copies", (json_int_t)n, "with_bytes", (json_int_t)kept));
	if (kept < n) {
		char what[320];
		snprintf(what, sizeof(what),
			 "%lld of the kept iteration's %lld host-to-device copies kept no bytes (%s): a "
			 "whole-iteration replay copies stand-in bytes for them", n - kept, n,
			 with_table ? "larger than `kjoule run --copy-data` KiB, or past its 256 MiB"
				    : "the run has no copy_data table");
		json_array_append_new(missing, json_string(what));
	}
}

/* The traced command as one readable line: a JSON array of arguments is joined with spaces. */
static char *command_text(const char *raw)
{
	json_t *a = json_loads(raw, 0, NULL);
	size_t len = 1, i;
	json_t *v;
	char *out;
	if (!json_is_array(a)) {
		json_decref(a);
		return strdup(raw);
	}
	json_array_foreach(a, i, v) len += (json_is_string(v) ? strlen(json_string_value(v)) : 4) + 3;
	out = calloc(1, len);
	if (out)
		json_array_foreach(a, i, v)
		{
			const char *s = json_is_string(v) ? json_string_value(v) : "?";
			int q = strchr(s, ' ') != NULL || *s == '\0';
			if (i)
				strcat(out, " ");
			if (q)
				strcat(out, "'");
			strcat(out, s);
			if (q)
				strcat(out, "'");
		}
	json_decref(a);
	return out;
}

/* start_realtime: ns or s since the epoch as digits are shown as UTC ISO-8601; else as is. */
static json_t *realtime_json(const char *raw)
{
	int64_t v;
	char buf[64];
	struct tm tm;
	time_t t;
	if (!parse_i64(raw, &v))
		return json_string(raw);
	t = (time_t)(v > 100000000000000LL ? v / 1000000000LL : v);
	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return json_string(raw);
	return json_string(buf);
}

/* An integer of the run's capture options (meta "capture": params_k, api, snapshot_mb, ...),
 * -1 when the run does not say. */
static int capture_option(sqlite3 *db, const char *key)
{
	char buf[512];
	json_t *j;
	int v = -1;
	if (kj_db_meta_get(db, "capture", buf, sizeof(buf)) != 0)
		return -1;
	j = json_loads(buf, 0, NULL);
	if (j && json_is_integer(json_object_get(j, key)))
		v = (int)json_integer_value(json_object_get(j, key));
	json_decref(j);
	return v;
}

json_t *kj_run_info_json(sqlite3 *db, const char *path, json_t *shared_gpu)
{
	json_t *o = json_object(), *counts = json_object(), *missing = json_array();
	char buf[8192], buf2[64];
	int64_t start_ns = 0, end_ns = 0, n;
	int have_start, have_end;

	json_object_set_new(o, "file", json_string(path));
	n = kj_db_schema_version(db);
	json_object_set_new(o, "schema_version", n >= 0 ? json_integer(n) : json_null());
	json_object_set_new(o, "kjoule_version", meta_json(db, "kjoule_version"));
	if (!kj_db_meta_get(db, "command", buf, sizeof(buf))) {
		char *c = command_text(buf);
		json_object_set_new(o, "command", c ? json_string(c) : json_null());
		free(c);
	} else {
		json_object_set_new(o, "command", json_null());
	}
	if (!kj_db_meta_get(db, "start_realtime", buf, sizeof(buf)))
		json_object_set_new(o, "start_time", realtime_json(buf));
	else
		json_object_set_new(o, "start_time", json_null());
	have_start = !kj_db_meta_get(db, "start_ns", buf, sizeof(buf)) && parse_i64(buf, &start_ns);
	have_end = !kj_db_meta_get(db, "end_ns", buf, sizeof(buf)) && parse_i64(buf, &end_ns);
	json_object_set_new(o, "start_ns", have_start ? json_integer(start_ns) : json_null());
	json_object_set_new(o, "end_ns", have_end ? json_integer(end_ns) : json_null());
	json_object_set_new(o, "duration_s", have_start && have_end && end_ns >= start_ns
						     ? json_real((double)(end_ns - start_ns) / 1e9)
						     : json_null());
	if (!kj_db_meta_get(db, "exit_code", buf2, sizeof(buf2)) && parse_i64(buf2, &n))
		json_object_set_new(o, "exit_code", json_integer(n));
	else
		json_object_set_new(o, "exit_code", json_null());
	if (!kj_db_meta_get(db, "end_status", buf, sizeof(buf)) && buf[0]) {
		json_object_set_new(o, "end_status", json_string(buf));
		json_object_set_new(o, "abnormal", json_boolean(strcmp(buf, "exited") != 0));
		if (!strcmp(buf, "signaled"))
			json_object_set_new(o, "end_note", json_string("the program was killed by a signal"));
		else if (!strcmp(buf, "killed"))
			json_object_set_new(o, "end_note", json_string("the run was killed"));
		else if (strcmp(buf, "exited"))
			json_object_set_new(o, "end_note", json_string("the run did not exit normally"));
	} else {
		json_object_set_new(o, "end_status", json_null());
		json_object_set_new(o, "abnormal", json_true());
		json_object_set_new(o, "end_note",
				    json_string("the end of the run was not recorded: the tracer or the "
						"program stopped before it could write it"));
	}
	json_object_set_new(o, "processes",
			    rows_json(db, KJ_INFO_PROCESSES));
	json_object_set_new(o, "devices",
			    rows_json(db, KJ_INFO_DEVICES));
	for (size_t i = 0; i < sizeof(count_tables) / sizeof(count_tables[0]); i++) {
		n = kj_db_count(db, count_tables[i].table);
		json_object_set_new(counts, count_tables[i].key, n >= 0 ? json_integer(n) : json_null());
	}
	json_object_set_new(counts, "module_bytes",
			    scalar_json(db, KJ_INFO_MODULE_BYTES));
	json_object_set_new(o, "counts", counts);
	json_object_set_new(o, "gpu_first_start_ns", scalar_json(db, KJ_INFO_GPU_FIRST_START));
	json_object_set_new(o, "gpu_last_end_ns", scalar_json(db, KJ_INFO_GPU_LAST_END));
	json_object_set_new(o, "graph_launches",
			    scalar_json(db, KJ_INFO_GRAPH_LAUNCHES));
	json_object_set_new(o, "graph_node_kinds", node_kinds_json(db));
	json_object_set_new(o, "iteration", iteration_json(db));
	json_object_set_new(o, "shared_gpu", shared_gpu);
	json_object_set_new(o, "kept_iteration", meta_json(db, "params_iteration"));
	json_object_set_new(o, "kept_iteration_pid", meta_json(db, "params_iteration_pid"));

#define COUNT(k) json_integer_value(json_object_get(counts, k))
	if (COUNT("kernels") == 0)
		json_array_append_new(missing, json_string("no kernels: the program launched no GPU "
							   "work, or it was not traced (see problems)"));
	if (COUNT("memcpys") == 0 && COUNT("memsets") == 0)
		json_array_append_new(missing, json_string("no memcpy or memset"));
	if (COUNT("api_calls") == 0)
		json_array_append_new(missing, json_string("no API calls: traced without --api"));
	else if (capture_option(db, "api") == 1)
		json_array_append_new(missing, json_string("API query functions (cudaGetDevice, cudaGetLastError, "
							   "cuCtxGetDevice, ...) not recorded: --api=all records them"));
	if (COUNT("allocations") == 0)
		json_array_append_new(missing, json_string("no device memory allocations"));
	if (COUNT("nvtx_ranges") == 0)
		json_array_append_new(missing, json_string("no NVTX ranges"));
	if (COUNT("modules") == 0)
		json_array_append_new(missing, json_string("no modules (cubins not stored: replay cannot "
							   "load kernels from this run)"));
	if (COUNT("launch_params") == 0)
		json_array_append_new(missing, json_string(
			capture_option(db, "params_k") == 0 ? "no launch parameters (traced with --no-params: "
							       "kernels cannot be replayed)"
			: COUNT("kernels") == 0 ? "no launch parameters (no kernels)"
						: "no launch parameters: kernels cannot be replayed"));
	if (COUNT("snapshots") == 0)
		json_array_append_new(missing, json_string(
			capture_option(db, "snapshot_mb") > 0 ? "no buffer snapshots (--snapshot found no device "
								  "buffer within its budget)"
							       : COUNT("graph_nodes") > 0
								 ? "no buffer snapshots (traced without --snapshot-graphs: "
								   "replays of its graph iterations run on random data)"
								 : "no buffer snapshots (traced without --snapshot)"));
	if (COUNT("sequence_ops") == 0 && COUNT("launch_params") > 0)
		json_array_append_new(missing, json_string(
			capture_option(db, "params_iteration") == 0
				? "no whole iteration (traced with --params-iteration none)"
				: "no whole iteration: no top-level NVTX range repeats (or --params-iteration named "
				  "an instance that does not exist); `kjoule replay --sequence` needs one"));
	if (COUNT("power_samples") == 0)
		json_array_append_new(missing, json_string("no power samples"));
	if (COUNT("replay_kernel") == 0 && COUNT("replay_energy") == 0)
		json_array_append_new(missing, json_string("not replayed yet (kjoule replay)"));
	if (json_array_size(json_object_get(o, "devices")) == 0)
		json_array_append_new(missing, json_string("no device facts"));
	struct kj_job job; /* several GPU processes: the ranks, whether their GPU types differ */
	if (kj_ranks_list(db, &job) == 0 && job.n >= 2) {
		json_t *died = json_array(); /* each dead rank: which, and how it ended */
		for (size_t i = 0; i < job.n; i++)
			if (job.r[i].died)
				json_array_append_new(died, json_pack("{s:I, s:I, s:I, s:s}", "rank", (json_int_t)i,
								      "pid", (json_int_t)job.r[i].pid, "device_id",
								      (json_int_t)job.r[i].device_id, "why",
								      job.r[i].died_why));
		json_object_set_new(o, "ranks", json_pack("{s:I, s:s, s:b, s:I, s:o}", "ranks", (json_int_t)job.n,
							  "gpu_types", job.gpus, "mixed_gpu_types", job.mixed_gpus,
							  "ranks_died", (json_int_t)job.n_died, "died", died));
	}
	kj_job_free(&job);
	/* the L1/shared split each kernel ran with: replay asks each function for it */
	json_t *split = scalar_json(db, KJ_INFO_SHMEM_SPLIT);
	int have_split = json_integer_value(split) != 0;
	json_decref(split);
	if (COUNT("kernels") > 0 && !have_split)
		json_array_append_new(missing, json_string("no L1/shared-memory split per kernel (kernel."
							   "shmem_executed not recorded): replays run with the driver's own split, "
							   "which can differ from the program's"));
#undef COUNT
	kept_iteration_copies(db, o, missing);
	/* which module each captured launch's function came from (runs with launch_params.module_id) */
	struct kj_store_a2_launch_modules lm;
	kj_store_a2_launch_modules(db, &lm);
	if (lm.has_module_id) {
		int64_t fn = lm.function_launches, known = lm.with_module, handles = lm.kernel_launches;
		if (fn + handles > 0)
			json_object_set_new(o, "launch_modules", json_pack("{s:I,s:I,s:I}", "function_launches", (json_int_t)fn,
									   "with_module", (json_int_t)known,
									   "kernel_handle_launches", (json_int_t)handles));
	} else if (lm.all_launches > 0) {
		json_array_append_new(missing, json_string("which module each launch's function came from (launch_params "
							   "has no module_id column): kernels of one name from several modules (JIT "
							   "autotuners) replay from the first module whose function fits"));
	}
	struct kj_param_check pc;
	if (kj_param_check(db, &pc, NULL) == 0 && pc.consistent + pc.mismatched > 0) {
		json_object_set_new(o, "parameters_checked", json_pack("{s:I,s:I,s:I}", "consistent", (json_int_t)pc.consistent,
								       "mismatched", (json_int_t)pc.mismatched,
								       "not_checkable", (json_int_t)pc.uncheckable));
		if (pc.mismatched) {
			char what[480];
			snprintf(what, sizeof(what),
				 "%lld unique kernel(s) recorded with another function's parameters (%s): their "
				 "replays are refused or wrong (an older tracer kept a freed function handle's facts); trace again",
				 (long long)pc.mismatched, pc.example);
			json_array_append_new(missing, json_string(what));
		}
	}
	json_object_set_new(o, "not_captured", missing);
	json_object_set_new(o, "problems",
			    rows_json(db, KJ_INFO_PROBLEMS));
	return o;
}
