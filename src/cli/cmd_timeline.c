/* kjoule timeline: Chrome/Perfetto trace JSON, terminal ASCII or SVG gantt of a run. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_acts.h"
#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_timeline.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule timeline RUN.kjdb --format chrome|ascii|svg [--from T] [--to T]\n"
		"                       [--iteration I] [--region NAME] [--width N] [-o FILE]\n"
		"  chrome  Trace Event Format JSON for Perfetto UI / chrome://tracing: API calls and\n"
		"          NVTX ranges per CPU thread, kernels and copies per GPU stream, launch\n"
		"          flow arrows, power/energy/clock counters (default: the whole run)\n"
		"  ascii   streams as rows, time buckets as columns, letters by tier, '.' idle\n"
		"          (default: the first measured iteration; --width columns, default 100)\n"
		"  svg     gantt of one iteration, bars coloured by tier, idle gaps, axis in us\n"
		"          (--width pixels, default 1400)\n"
		"  T is a time after the run's first event: 1500 (us), 1500us, 1.5ms, 2s, 100ns.\n"
		"  --iteration I picks instance I (0-based, warm-up included) of --region (default:\n"
		"  the iteration range as kjoule compare chooses it).\n");
}

int cmd_timeline(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'}, {"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},     {"iteration", required_argument, NULL, 'i'},
		{"region", required_argument, NULL, 'r'}, {"width", required_argument, NULL, 'w'},
		{"output", required_argument, NULL, 'o'}, {"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	struct kj_timeline_opts o = {.format = -1, .iteration = -1};
	const char *out = NULL;
	sqlite3 *db = NULL;
	int c;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:F:T:i:r:w:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "chrome") || !strcmp(optarg, "perfetto") ||
			    !strcmp(optarg, "json"))
				o.format = KJ_TL_CHROME;
			else if (!strcmp(optarg, "ascii"))
				o.format = KJ_TL_ASCII;
			else if (!strcmp(optarg, "svg"))
				o.format = KJ_TL_SVG;
			else {
				fprintf(stderr, "kjoule timeline: unknown format '%s' (chrome, ascii,"
						" svg)\n", optarg);
				return 2;
			}
			break;
		case 'F':
		case 'T':
			if (kj_parse_time_ns(optarg, c == 'F' ? &o.from_ns : &o.to_ns)) {
				fprintf(stderr, "kjoule timeline: %s: not a time (1500, 1500us, 1.5ms,"
						" 2s)\n", optarg);
				return 2;
			}
			if (c == 'F')
				o.has_from = 1;
			else
				o.has_to = 1;
			break;
		case 'i':
			errno = 0;
			o.iteration = strtol(optarg, &end, 10);
			if (errno || *end || o.iteration < 0) {
				fprintf(stderr, "kjoule timeline: --iteration wants an index >= 0\n");
				return 2;
			}
			break;
		case 'r': o.region = optarg; break;
		case 'w':
			o.width = (int)strtol(optarg, &end, 10);
			if (*end || o.width <= 0) {
				fprintf(stderr, "kjoule timeline: --width wants a positive integer\n");
				return 2;
			}
			break;
		case 'o': out = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || o.format < 0) {
		if (o.format < 0 && optind == argc - 1)
			fprintf(stderr, "kjoule timeline: --format chrome|ascii|svg is required\n");
		usage(stderr);
		return 2;
	}
	if (o.iteration >= 0 && (o.has_from || o.has_to)) {
		fprintf(stderr, "kjoule timeline: --iteration and --from/--to exclude each other\n");
		return 2;
	}
	o.run_path = argv[optind];
	if (kj_db_open(argv[optind], 0, &db))
		return 1;
	FILE *f = stdout;
	if (out && strcmp(out, "-")) {
		f = fopen(out, "w");
		if (!f) {
			kj_errorf("%s: %s", out, strerror(errno));
			kj_db_close(db);
			return 1;
		}
	}
	int rc = kj_timeline_write(db, &o, f);
	if (f != stdout && fclose(f) != 0 && !rc) {
		kj_errorf("%s: write failed: %s", out, strerror(errno));
		rc = KJ_EIO;
	}
	if (rc && f != stdout)
		remove(out);
	kj_db_close(db);
	return rc ? 1 : 0;
}
