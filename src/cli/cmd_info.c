/* kjoule info: what a run database holds: the command and how it ended, processes, devices,
 * row counts of every table, what was captured and what was not, and recorded problems.
 * The facts are gathered once into a JSON object; --json prints it, the text form renders it. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_run_info.h"
#include "kj_shared_out.h"
#include "kj_capture_out.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: kjoule info RUN.kjdb [--json]\n"
		   "\n"
		   "What a run database holds: the traced command, start time, duration, exit status\n"
		   "and whether the run ended abnormally; processes; devices; the row count of every\n"
		   "table; the iteration range and its candidates; graph launches and the kinds of\n"
		   "their graphs' nodes; whether the recorded launch parameters fit the captured\n"
		   "functions that ran; what was captured and what was not; recorded problems.\n"
		   "\n"
		   "  --json   one JSON object instead of text\n");
}

/* The run's facts (kj_run_info_json) with its GPU-sharing watch (kj_shared_json) in place. */
json_t *kj_cli_info_json(sqlite3 *db, const char *path)
{
	return kj_run_info_json(db, path, kj_shared_json(db));
}

static const char *sv(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int64_t iv(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The text form of kj_cli_info_json's object, section by section. */
static void print_text(json_t *o)
{
	json_t *v, *counts = json_object_get(o, "counts");
	size_t i;
	const char *s;

	s = sv(o, "kjoule_version"); /* before 0.9.0 only `kjoule run` recorded it */
	printf("run:        %s (schema %" PRId64 ", written by kjoule %s)\n", sv(o, "file"), iv(o, "schema_version"),
	       s ? s : iv(o, "schema_version") < 2 ? "before 0.9.0" : "of unrecorded version");
	printf("command:    %s\n", sv(o, "command") ? sv(o, "command") : "(not recorded)");
	printf("started:    %s\n", sv(o, "start_time") ? sv(o, "start_time") : "(not recorded)");
	v = json_object_get(o, "duration_s");
	if (json_is_real(v))
		printf("duration:   %.3f s\n", json_real_value(v));
	else
		printf("duration:   unknown (start or end not recorded)\n");
	s = sv(o, "end_status");
	if (s && iv(o, "exit_code") >= 0)
		printf("ended:      %s, exit code %" PRId64 "\n", s, iv(o, "exit_code"));
	else if (s)
		printf("ended:      %s\n", s);
	else
		printf("ended:      unknown\n");
	if (json_is_true(json_object_get(o, "abnormal")))
		printf("            ABNORMAL END: %s\n", sv(o, "end_note") ? sv(o, "end_note") : "");
	printf("\nprocesses:  %zu\n", json_array_size(json_object_get(o, "processes")));
	json_array_foreach(json_object_get(o, "processes"), i, v)
	{
		printf("  pid %-8" PRId64 " ppid %-8" PRId64 " %s", iv(v, "pid"), iv(v, "ppid"),
		       sv(v, "exe") ? sv(v, "exe") : "?");
		if (iv(v, "start_ns") >= 0 && iv(v, "end_ns") >= iv(v, "start_ns"))
			printf("  %.3f s", (double)(iv(v, "end_ns") - iv(v, "start_ns")) / 1e9);
		if (iv(v, "ended_cleanly") == 0)
			printf("  (did not end cleanly)");
		if (sv(v, "cupti_status") && strcmp(sv(v, "cupti_status"), "ok"))
			printf("  CUPTI: %s", sv(v, "cupti_status"));
		printf("\n");
	}
	if (sv(json_object_get(o, "shared_gpu"), "summary"))
		printf("gpu shared: %s\n", sv(json_object_get(o, "shared_gpu"), "summary"));
	if ((v = json_object_get(o, "ranks"))) {
		json_t *d;
		printf("ranks:      %" PRId64 " processes with GPU work (%s)%s\n", iv(v, "ranks"), sv(v, "gpu_types"),
		       json_is_true(json_object_get(v, "mixed_gpu_types"))
			       ? "\n            warning: the ranks run on different GPU types" : "");
		json_array_foreach(json_object_get(v, "died"), i, d)
			printf("            rank %" PRId64 " (GPU %" PRId64 ", pid %" PRId64 ") died: %s\n",
			       iv(d, "rank"), iv(d, "device_id"), iv(d, "pid"), sv(d, "why"));
	}
	printf("devices:    %zu\n", json_array_size(json_object_get(o, "devices")));
	json_array_foreach(json_object_get(o, "devices"), i, v)
	{
		printf("  %" PRId64 ": %s  %s", iv(v, "id"), sv(v, "name") ? sv(v, "name") : "?",
		       sv(v, "uuid") ? sv(v, "uuid") : "?");
		if (iv(v, "sm_count") >= 0)
			printf("  %" PRId64 " SMs", iv(v, "sm_count"));
		if (iv(v, "power_limit_mw") >= 0)
			printf("  power limit %.0f W", (double)iv(v, "power_limit_mw") / 1000.0);
		if (iv(v, "memory_bytes") >= 0)
			printf("  %.1f GiB", (double)iv(v, "memory_bytes") / (1024.0 * 1024 * 1024));
		if (sv(v, "driver_version"))
			printf("  driver %s", sv(v, "driver_version"));
		printf("\n");
	}
	printf("\ncounts:\n");
	for (size_t k = 0; kj_run_info_count_key(k); k++) {
		const char *key = kj_run_info_count_key(k);
		int64_t n = iv(counts, key);
		if (n < 0)
			printf("  %-16s (table absent)\n", key);
		else if (!strcmp(key, "modules"))
			printf("  %-16s %" PRId64 " (%" PRId64 " bytes)\n", "modules", n,
			       iv(counts, "module_bytes"));
		else
			printf("  %-16s %" PRId64 "\n", key, n);
	}
	if (iv(o, "gpu_first_start_ns") >= 0 && iv(o, "gpu_last_end_ns") >= iv(o, "gpu_first_start_ns"))
		printf("  %-16s %.3f ms (first GPU activity to last)\n", "gpu_span",
		       (double)(iv(o, "gpu_last_end_ns") - iv(o, "gpu_first_start_ns")) / 1e6);
	{
		json_t *it = json_object_get(o, "iteration"), *c;
		size_t k;
		if (sv(it, "range"))
			printf("  %-16s '%s' (%s)\n", "iteration", sv(it, "range"), sv(it, "chosen_by"));
		else
			printf("  %-16s none: the whole run is one (%s)\n", "iteration",
			       sv(it, "chosen_by") ? sv(it, "chosen_by") : "?");
		json_array_foreach(json_object_get(it, "candidates"), k, c)
		{
			if (k == 8) {
				printf("  %-16s ... %zu more (info --json lists them all)\n", "",
				       json_array_size(json_object_get(it, "candidates")) - 8);
				break;
			}
			printf("  %-16s %-40.40s %6" PRId64 " instances %10.3f ms GPU%s\n", k ? "" : "candidates",
			       sv(c, "name"), iv(c, "instances"), json_real_value(json_object_get(c, "gpu_ms")),
			       json_is_true(json_object_get(c, "framework")) ? "  (framework's own: only when named)" : "");
		}
	}
	if (iv(o, "graph_launches") > 0)
		printf("  %-16s %" PRId64 " (GPU work attributed to the call that launched it)\n",
		       "graph_launches", iv(o, "graph_launches"));
	json_t *nk = json_object_get(o, "graph_node_kinds");
	if (json_object_size(nk) > 0) {
		const char *kind;
		json_t *v;
		int first = 1;
		printf("  %-16s", "graph_node_kinds");
		json_object_foreach(nk, kind, v) {
			printf("%s %s %" PRId64, first ? "" : ",", kind, (int64_t)json_integer_value(v));
			first = 0;
		}
		printf("%s\n", json_object_get(nk, "conditional") || json_object_get(nk, "host")
				       ? " (conditional and host nodes: the launches are replayed as a chain)" : "");
	}
	json_t *pcj = json_object_get(o, "parameters_checked");
	if (pcj)
		printf("  %-16s %" PRId64 " consistent with the captured cubins, %" PRId64 " recorded with another"
		       " function's, %" PRId64 " not checkable\n", "parameters", iv(pcj, "consistent"),
		       iv(pcj, "mismatched"), iv(pcj, "not_checkable"));
	json_t *lm = json_object_get(o, "launch_modules");
	if (lm)
		printf("  %-16s %" PRId64 " of %" PRId64 " captured CUfunction launches name the module they came from"
		       " (%" PRId64 " through CUkernel handles: one name, one function)\n", "launch_modules",
		       iv(lm, "with_module"), iv(lm, "function_launches"), iv(lm, "kernel_handle_launches"));
	if (sv(o, "kept_iteration"))
		printf("  %-16s %s%s%s (every launch's parameters, in order, for replay --sequence)\n",
		       "kept_iteration", sv(o, "kept_iteration"), sv(o, "kept_iteration_pid") ? " of pid " : "",
		       sv(o, "kept_iteration_pid") ? sv(o, "kept_iteration_pid") : "");
	printf("\nnot captured:\n");
	if (json_array_size(json_object_get(o, "not_captured")) == 0)
		printf("  (everything kjoule records is present)\n");
	json_array_foreach(json_object_get(o, "not_captured"), i, v) printf("  - %s\n", json_string_value(v));
	printf("\nproblems:   %zu\n", json_array_size(json_object_get(o, "problems")));
	json_array_foreach(json_object_get(o, "problems"), i, v)
	{
		printf("  [%s]", sv(v, "severity") ? sv(v, "severity") : "?");
		if (iv(v, "pid") >= 0)
			printf(" pid %" PRId64, iv(v, "pid"));
		printf(" %s\n", sv(v, "what") ? sv(v, "what") : "");
	}
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, as_json = 0, rc = 1;
	sqlite3 *db = NULL;
	json_t *o = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			as_json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			kj_errorf("info: unknown option '%s'", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		kj_errorf("info: %s", argc - optind < 1 ? "no run database given" : "one run database only");
		usage(stderr);
		return 2;
	}
	if (kj_db_open(argv[optind], 0, &db))
		return 1;
	o = kj_cli_info_json(db, argv[optind]);
	if (!o) {
		kj_errorf("%s", kj_strerror(KJ_ENOMEM));
		goto out;
	}
	struct kj_capture_stats cs;
	if (kj_capture_stats_of(db, argv[optind], -1, &cs) == 0) {
		json_t *cj = kj_capture_json(&cs); /* trace size, and a --capture run's iterations */
		if (cj)
			json_object_update(o, cj);
		json_decref(cj);
	}
	if (as_json) {
		if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)))
			goto out;
		putchar('\n');
	} else {
		print_text(o);
		kj_capture_print(&cs, stdout);
	}
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	json_decref(o);
	kj_db_close(db);
	return rc;
}
