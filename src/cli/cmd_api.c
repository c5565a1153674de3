/* kjoule api: the CUDA API-call story of a run (stages, synchronisation, idle periods). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_apistory_out.h"
#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule api RUN.kjdb [--json] [--format text|json|jsonl] [--region NAME]\n"
		"                  [--skip N] [--gaps N]\n"
		"  CUDA calls during model loading, kernels per iteration, bytes each way, time per\n"
		"  stage (initialisation, weight loading, warm-up, steady, per token), time blocked\n"
		"  in synchronisation, the longest GPU idle periods with the CPU's API calls\n"
		"  meanwhile, allocations, counts and time per API. Runs traced without --api get\n"
		"  what kernels, copies and allocations tell.\n"
		"  jsonl: every event, one JSON object per line {type, name, ts, duration_us, size,\n"
		"  stream} (ts in us after the run's first event).\n");
}

int cmd_api(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},         {"format", required_argument, NULL, 'f'},
		{"region", required_argument, NULL, 'r'}, {"skip", required_argument, NULL, 's'},
		{"gaps", required_argument, NULL, 'g'},   {"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	struct kj_api_opts o = {.region = NULL, .skip = -1, .gaps = 10};
	int fmt = 0, c; /* 0 text, 1 json, 2 jsonl */
	char *end;
	sqlite3 *db = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jf:r:s:g:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': fmt = 1; break;
		case 'f':
			if (!strcmp(optarg, "text"))
				fmt = 0;
			else if (!strcmp(optarg, "json"))
				fmt = 1;
			else if (!strcmp(optarg, "jsonl"))
				fmt = 2;
			else {
				fprintf(stderr, "kjoule api: unknown format '%s' (text, json, jsonl)\n",
					optarg);
				return 2;
			}
			break;
		case 'r': o.region = optarg; break;
		case 's':
			o.skip = (int)strtol(optarg, &end, 10);
			if (*end || o.skip < 0) {
				fprintf(stderr, "kjoule api: --skip wants a non-negative integer\n");
				return 2;
			}
			break;
		case 'g':
			o.gaps = (int)strtol(optarg, &end, 10);
			if (*end || o.gaps <= 0 || o.gaps > 100000) {
				fprintf(stderr, "kjoule api: --gaps wants a positive integer\n");
				return 2;
			}
			break;
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
	int rc;
	if (fmt == 2) {
		rc = kj_api_jsonl(db, stdout);
	} else {
		json_t *j = NULL;
		rc = kj_api_story(db, &o, &j);
		if (!rc && fmt == 1) {
			json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
			fputc('\n', stdout);
		} else if (!rc) {
			printf("kjoule api: %s\n", argv[optind]);
			kj_api_print(j, stdout);
		}
		json_decref(j);
	}
	kj_db_close(db);
	return rc ? 1 : 0;
}
