/* kjoule diff: two runs side by side, changes judged against each run's own spread. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_atomic.h"
#include "kj_cli.h"
#include "kj_db.h"
#include "kj_diff_out.h"
#include "kj_error.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule diff A.kjdb B.kjdb [--json] [--html OUT.html] [--region NAME] [--skip N]\n"
		"                   [--sigma S]\n"
		"  B against A: wall, GPU busy, idle, host-only, Σ kernels and measured energy per\n"
		"  iteration, and every unique kernel (matched by name + grid + block, then by name):\n"
		"  launches, time and energy per iteration; kernels only in A or only in B. A change is\n"
		"  flagged when it exceeds S (default 4) standard errors of the runs' iteration spread,\n"
		"  2 %% of A and 0.5 us. Different GPUs or programs are said first.\n"
		"  --json       one JSON object instead of text\n"
		"  --html FILE  also write the diff as one HTML page\n");
}

struct job {
	const json_t *d;
};

static int write_html(FILE *f, void *ctx)
{
	return kj_diff_html(((struct job *)ctx)->d, f);
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},         {"html", required_argument, NULL, 'H'},
		{"region", required_argument, NULL, 'r'}, {"skip", required_argument, NULL, 's'},
		{"sigma", required_argument, NULL, 'S'},  {"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	struct kj_diff_opts o = {.skip = -1};
	const char *html = NULL;
	int json = 0, c, rc = 1;
	char *end = NULL;
	sqlite3 *a = NULL, *b = NULL;
	json_t *d = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jH:r:s:S:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'H': html = optarg; break;
		case 'r': o.region = optarg; break;
		case 's':
			if (kj_cli_parse_count("diff", "--skip", optarg, &o.skip))
				return 2;
			break;
		case 'S':
			o.sigma = strtod(optarg, &end);
			if (!*optarg || *end || !(o.sigma > 0) || o.sigma > 1e6) {
				fprintf(stderr, "kjoule diff: --sigma wants a positive number, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'q': o.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 2) {
		usage(stderr);
		return 2;
	}
	if (kj_db_open(argv[optind], 0, &a) || kj_db_open(argv[optind + 1], 0, &b))
		goto out;
	if (kj_diff_compute(a, argv[optind], b, argv[optind + 1], &o, &d))
		goto out;
	if (json) {
		json_dumpf(d, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		fputc('\n', stdout);
	} else {
		kj_diff_print(d, stdout);
	}
	rc = 0;
	if (html) {
		struct job j = {d};
		if (kj_write_atomic(html, write_html, &j))
			rc = 1;
		else if (!json)
			printf("wrote %s\n", html);
	}
out:
	json_decref(d);
	kj_db_close(a);
	kj_db_close(b);
	return rc;
}
