/* kjoule compare: end-to-end time and energy per iteration against the sum of the kernels. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_capture_out.h"
#include "kj_compare_out.h"
#include "kj_db.h"
#include "kj_error.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule compare RUN.kjdb [--region NAME] [--skip N] [--whole-skip N] [--top N]"
		" [--json] [-o DIR] [--quiet]\n"
		"  per iteration (instances of an NVTX range; default: the range named at run, else\n"
		"  the top-level user range holding the most GPU work, else the whole run): wall, GPU span/busy/idle, Σ kernels, Σ replays,\n"
		"  sequence replays, measured and predicted energy, tiers, top kernels, NVTX ranges.\n"
		"  --region NAME  NVTX range that delimits one iteration\n"
		"  --skip N       warm-up instances to leave out (default 1 when more than 3)\n"
		"  --whole-skip N a --capture run's whole-run set: its first N instances left out\n"
		"                 (default: --skip's N where given, else the warm-up rule of\n"
		"                 docs/tracing.md)\n"
		"  --top N        kernels to list (default 10)\n"
		"  --json         print one JSON object instead of the text report\n"
		"  -o DIR         also write full_model_timing.json, comparison_report.json,\n"
		"                 energy_report.json, tiers.csv, top_kernels.csv, regions.csv,\n"
		"                 iterations.csv into DIR\n"
		"  docs/analysis-compare.md defines every figure.\n");
}

int cmd_compare(int argc, char **argv)
{
	static const struct option opts[] = {
		{"region", required_argument, NULL, 'r'}, {"skip", required_argument, NULL, 's'},
		{"top", required_argument, NULL, 't'},    {"json", no_argument, NULL, 'j'},
		{"output", required_argument, NULL, 'o'}, {"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},         {"whole-skip", required_argument, NULL, 'w'},
		{NULL, 0, NULL, 0}};
	struct kj_compare_opts o = {.region = NULL, .skip = -1, .top = 10, .quiet = 0};
	const char *outdir = NULL;
	int json = 0, c, whole_skip = -1;
	sqlite3 *db = NULL;
	struct kj_compare *cmp = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "r:s:t:jo:qhw:", opts, NULL)) != -1) {
		switch (c) {
		case 'r': o.region = optarg; break;
		case 's':
			if (kj_cli_parse_count("compare", "--skip", optarg, &o.skip))
				return 2;
			break;
		case 'w':
			if (kj_cli_parse_count("compare", "--whole-skip", optarg, &whole_skip))
				return 2;
			break;
		case 't':
			if (kj_cli_parse_count("compare", "--top", optarg, &o.top))
				return 2;
			break;
		case 'j': json = 1; break;
		case 'o': outdir = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (kj_db_open(argv[optind], 0, &db))
		return 1;
	if (kj_compare_compute(db, &o, &cmp)) {
		kj_db_close(db);
		return 1;
	}
	struct kj_capture_stats cs; /* a --capture run: the whole run's iterations beside the captured */
	if (kj_capture_stats_of(db, argv[optind], kj_capture_whole_skip(whole_skip, o.skip), &cs) != 0)
		cs.active = 0;
	if (json) {
		json_t *j = kj_compare_json(cmp);
		json_t *cj = cs.active ? kj_capture_json(&cs) : NULL;
		if (cj)
			json_object_set(j, "capture", json_object_get(cj, "capture"));
		json_decref(cj);
		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		fputc('\n', stdout);
		json_decref(j);
	} else {
		printf("kjoule compare: %s\n", argv[optind]);
		kj_compare_print(cmp, stdout);
		if (cs.active) {
			printf("\n");
			kj_capture_print(&cs, stdout);
		}
	}
	int rc = 0;
	if (outdir) {
		if (kj_compare_write_dir(cmp, outdir))
			rc = 1;
		else if (!json)
			printf("\nwrote %s/{full_model_timing,comparison_report,energy_report}.json and"
			       " tiers/top_kernels/regions/iterations.csv\n",
			       outdir);
	}
	kj_compare_free(cmp);
	kj_db_close(db);
	return rc;
}
