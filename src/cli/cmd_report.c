/* kjoule report: one self-contained HTML page of a run (docs/report.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kj_atomic.h"
#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_html.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule report RUN.kjdb [-o REPORT.html] [--region NAME] [--skip N] [--whole-skip N]\n"
		"                     [--rows N]\n"
		"  one HTML page (inline SVG, no network, printable): run facts and what was not\n"
		"  captured, the per-iteration split of the wall (GPU busy / idle / host only) with\n"
		"  the replay figures, energy measured against predicted by tier + idle, the power\n"
		"  trace, top kernels by time and energy, replayed-vs-traced scatter, a sortable\n"
		"  kernel table, the kept iteration's gantt, NVTX regions and the API story.\n"
		"  -o FILE        output (default: RUN with .kjdb replaced by .html)\n"
		"  --region NAME  NVTX range that delimits one iteration (default as compare)\n"
		"  --skip N       warm-up instances to leave out (default as compare)\n"
		"  --whole-skip N a --capture run's whole-run set: its first N instances left out\n"
		"                 (default: --skip's N where given, else as compare)\n"
		"  --rows N       kernel-table rows (default 300; the rest are summarised)\n"
		"  --quiet        no warnings on stderr\n");
}

struct job {
	sqlite3 *db;
	struct kj_html_opts o;
};

static int write_page(FILE *f, void *ctx)
{
	struct job *j = ctx;
	return kj_html_report_write(j->db, &j->o, f);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'}, {"region", required_argument, NULL, 'r'},
		{"skip", required_argument, NULL, 's'},   {"rows", required_argument, NULL, 'n'},
		{"quiet", no_argument, NULL, 'q'},        {"help", no_argument, NULL, 'h'},
		{"whole-skip", required_argument, NULL, 'w'}, {NULL, 0, NULL, 0}};
	struct job j = {.o = {.skip = -1, .whole_skip = -1}};
	const char *out = NULL;
	char defout[1024];
	int c, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:r:s:n:qhw:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'r': j.o.region = optarg; break;
		case 's':
			if (kj_cli_parse_count("report", "--skip", optarg, &j.o.skip))
				return 2;
			break;
		case 'w':
			if (kj_cli_parse_count("report", "--whole-skip", optarg, &j.o.whole_skip))
				return 2;
			break;
		case 'n':
			if (kj_cli_parse_count("report", "--rows", optarg, &j.o.max_table_rows))
				return 2;
			break;
		case 'q': j.o.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	const char *run = argv[optind];
	if (!out) {
		size_t n = strlen(run);
		if (n > 5 && !strcmp(run + n - 5, ".kjdb"))
			n -= 5;
		snprintf(defout, sizeof(defout), "%.*s.html", (int)n, run);
		out = defout;
	}
	if (kj_db_open(run, 0, &j.db))
		return 1;
	json_t *info = kj_cli_info_json(j.db, run);
	j.o.run_path = run;
	j.o.info = info;
	if (!kj_write_atomic(out, write_page, &j)) {
		struct stat sb;
		printf("kjoule report: wrote %s (%.0f KiB)\n", out,
		       stat(out, &sb) == 0 ? (double)sb.st_size / 1024 : 0.0);
		rc = 0;
	} else {
		fprintf(stderr, "kjoule report: %s: no report written\n", run);
	}
	json_decref(info);
	kj_db_close(j.db);
	return rc;
}
