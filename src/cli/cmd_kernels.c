/* kjoule kernels: the unique kernels of a run (and its copies), with counts, durations, tiers and
 * share of GPU busy time, as an aligned table, CSV or JSON lines. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_kernel_class.h"
#include "kj_kernels_out.h"
#include "kj_kernels_view.h"
#include "kj_num.h"
#include "kj_ranks.h"

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSONL };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule kernels RUN.kjdb [--format table|csv|jsonl] [--top N]\n"
		"                       [--sort total|count|mean] [--tier T] [--wide]\n"
		"                       [--rank N | --pid P]\n"
		"\n"
		"Unique kernels of a run (launches of the same function, geometry and non-pointer\n"
		"parameters), plus memcpy/memset grouped by kind and size (tier 'copy'): launch count,\n"
		"total/mean/min/max duration in microseconds, share of GPU busy time, tier.\n"
		"\n"
		"  --format F   table (default), csv (with a header) or jsonl (one object per line)\n"
		"  --top N      only the first N rows after sorting and filtering\n"
		"  --sort K     total (default), count or mean; descending\n"
		"  --tier T     only rows of tier T: copy gemm attention norm elementwise reduction\n"
		"               communication other\n"
		"  --wide       table: do not shorten names\n"
		"  --rank N     only rank N's work in a run of several GPU processes (ranks numbered\n"
		"               as compare numbers them: by GPU, then pid)\n"
		"  --pid P      only process P's work\n");
}

/* Columns of the terminal on stdout, else $COLUMNS, else 160. */
static int term_width(void)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (c && atoi(c) > 0)
		return atoi(c);
	return 160;
}

int cmd_kernels(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'}, {"top", required_argument, NULL, 'n'},
		{"sort", required_argument, NULL, 's'},   {"tier", required_argument, NULL, 't'},
		{"wide", no_argument, NULL, 'w'},         {"help", no_argument, NULL, 'h'},
		{"rank", required_argument, NULL, 'r'},   {"pid", required_argument, NULL, 'p'},
		{NULL, 0, NULL, 0},
	};
	enum fmt fmt = FMT_TABLE;
	enum kj_kernel_sort sort = KJ_SORT_TOTAL;
	const char *tier = NULL, *path;
	long top = -1;
	int wide = 0, c, rc = 1;
	int64_t rank = -1, pid = -1;
	char why[160];
	sqlite3 *db = NULL;
	struct kj_kernel_report *r = NULL;
	struct kj_kernel_stat **rows = NULL;
	struct kj_kernels_extras x = {0};
	size_t n = 0;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:n:s:t:whr:p:", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "table"))
				fmt = FMT_TABLE;
			else if (!strcmp(optarg, "csv"))
				fmt = FMT_CSV;
			else if (!strcmp(optarg, "jsonl"))
				fmt = FMT_JSONL;
			else {
				kj_errorf("kernels: --format: '%s' is not table, csv or jsonl", optarg);
				goto usage;
			}
			break;
		case 'n':
			top = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || top < 1) {
				kj_errorf("kernels: --top: '%s' is not a positive number", optarg);
				goto usage;
			}
			break;
		case 's':
			if (!strcmp(optarg, "total"))
				sort = KJ_SORT_TOTAL;
			else if (!strcmp(optarg, "count"))
				sort = KJ_SORT_COUNT;
			else if (!strcmp(optarg, "mean"))
				sort = KJ_SORT_MEAN;
			else {
				kj_errorf("kernels: --sort: '%s' is not total, count or mean", optarg);
				goto usage;
			}
			break;
		case 't':
			if (!(tier = kj_tier_canonical(optarg))) {
				kj_errorf("kernels: --tier: '%s' is not a tier", optarg);
				goto usage;
			}
			break;
		case 'w':
			wide = 1;
			break;
		case 'r':
		case 'p':
			if (kj_num_i64(optarg, 0, INT64_MAX, c == 'r' ? &rank : &pid, why, sizeof(why))) {
				kj_errorf("kernels: %s: %s", c == 'r' ? "--rank" : "--pid", why);
				goto usage;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			kj_errorf("kernels: option '%s' needs a value", argv[optind - 1]);
			goto usage;
		default:
			kj_errorf("kernels: unknown option '%s'", argv[optind - 1]);
			goto usage;
		}
	}
	if (argc - optind != 1) {
		kj_errorf("kernels: %s", argc - optind < 1 ? "no run database given" : "one run database only");
		goto usage;
	}
	path = argv[optind];
	if (rank >= 0 && pid >= 0) {
		kj_errorf("kernels: --rank and --pid both given: choose one");
		goto usage;
	}
	if (kj_db_open(path, 0, &db))
		goto out;
	if (rank >= 0) { /* the rank's process, as compare numbers the ranks */
		struct kj_job job;
		if ((c = kj_ranks_list(db, &job))) {
			kj_errorf("%s: %s", path, kj_strerror(c));
			goto out;
		}
		if ((size_t)rank >= job.n) {
			kj_errorf("kernels: --rank %lld: %s holds %zu rank(s) (processes with GPU work)%s",
				  (long long)rank, path, job.n, job.n ? ", numbered from 0" : "");
			kj_job_free(&job);
			goto out;
		}
		pid = job.r[rank].pid;
		kj_job_free(&job);
	}
	if ((c = kj_kernels_analyze_pid(db, pid, &r))) {
		kj_errorf("%s: %s", path, kj_strerror(c));
		goto out;
	}
	kj_kernel_report_sort(r, sort);
	if (kj_kernels_select(r, tier, top, &rows, &n)) {
		kj_errorf("%s", kj_strerror(KJ_ENOMEM));
		goto out;
	}
	if (r->n == 0 && pid >= 0)
		kj_warnf("%s: process %lld ran no kernels, memcpys or memsets", path, (long long)pid);
	else if (r->n == 0)
		kj_warnf("%s: the run holds no kernels, memcpys or memsets", path);
	/* each kernel's replay clock state and energy per launch, for every format */
	if ((c = kj_kernels_extras_read(db, &x))) {
		kj_errorf("%s: %s", path, kj_strerror(c));
		goto out;
	}
	switch (fmt) {
	case FMT_TABLE: {
		const int fixed = 14 + 9 + 13 + 11 * 3 + 8 + 14 * 2 + (x.n_energies ? 11 * 2 : 0);
		int w = term_width() - fixed;
		kj_kernels_print_table(stdout, r, rows, n, wide ? 0 : (size_t)(w < 30 ? 30 : w), &x);
		break;
	}
	case FMT_CSV:
		kj_kernels_print_csv(stdout, rows, n, &x);
		break;
	case FMT_JSONL:
		if (kj_kernels_print_jsonl(stdout, rows, n, &x)) {
			kj_errorf("%s", kj_strerror(KJ_ENOMEM));
			goto out;
		}
		break;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		kj_errorf("kernels: writing output failed");
		goto out;
	}
	rc = 0;
out:
	free(rows);
	kj_kernels_extras_free(&x);
	kj_kernel_report_free(r);
	kj_db_close(db);
	return rc;
usage:
	usage(stderr);
	return 2;
}
