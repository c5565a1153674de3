/* kjoule ingest: build a run database from trace spool files kept by a `kjoule run` that could
 * not finish its database (the directory it names on failure), or copied from another machine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_ingest.h"
#include "kj_iterations.h"
#include "kj_store_w_run.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: kjoule ingest SPOOL_DIR -o RUN.kjdb [--params K] [--params-iteration N|auto|none]\n"
		   "                     [--iteration-range NAME] [--force]\n"
		   "Builds a run database from the p<pid>.spool files of a trace directory (kept by a\n"
		   "kjoule run that could not write its database). No power samples: they live in the\n"
		   "kjoule run process only.\n");
}

int cmd_ingest(int argc, char **argv)
{
	const char *dir = NULL, *out = NULL;
	struct kj_ingest_opts io = {1, KJ_ITERATION_AUTO, NULL, kj_iter_default_range};
	struct kj_ingest_stats st;
	int force = 0;
	char tmp[4096];
	sqlite3 *db = NULL;
	struct stat sb;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") && next) {
			out = argv[++i];
		} else if (!strcmp(a, "--params") && next) {
			io.params_k = atoi(argv[++i]);
		} else if (!strcmp(a, "--params-iteration") && next) {
			if (kj_cli_parse_iteration("ingest", argv[++i], &io.params_iteration))
				return 2;
		} else if (!strcmp(a, "--iteration-range") && next) {
			io.iteration_range = argv[++i];
		} else if (!strcmp(a, "--force")) {
			force = 1;
		} else if (a[0] != '-' && !dir) {
			dir = a;
		} else {
			kj_errorf("ingest: unknown or incomplete option '%s'", a);
			usage(stderr);
			return 2;
		}
	}
	if (!dir || !out || io.params_k < 0) {
		usage(stderr);
		return 2;
	}
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		kj_errorf("ingest: %s: not a directory", dir);
		return 1;
	}
	if (lstat(out, &sb) == 0 && (!force || !S_ISREG(sb.st_mode))) {
		kj_errorf("ingest: %s exists%s", out, force ? " and is not a regular file" : "; add --force");
		return 1;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.ingest-%ld.tmp", out, (long)getpid()) >= (int)sizeof(tmp))
		return 1;
	unlink(tmp);
	if (kj_db_create(tmp, &db) != 0)
		return 1;
	memset(&st, 0, sizeof(st));
	int rc = kj_write_begin_bulk(db);
	if (!rc)
		rc = kj_ingest_dir(db, dir, &io, &st);
	if (!rc) {
		struct kj_capture_summary cap; /* trace files of a --capture run: its window and marks */
		rc = kj_ingest_capture_finish(db, NULL, &cap);
	}
	if (!rc) {
		kj_db_meta_set(db, "ingested_from", dir);
		kj_db_meta_set(db, "clock", "CLOCK_MONOTONIC");
		rc = kj_write_commit(db);
	}
	kj_db_close(db);
	if (rc || rename(tmp, out) != 0) {
		if (!rc)
			kj_errorf("ingest: cannot rename %s to %s: %s", tmp, out, strerror(errno));
		unlink(tmp);
		return 1;
	}
	fprintf(stderr, "kjoule: wrote %s: %lld processes, %lld kernels (%lld unique), %lld truncated files\n",
		out, (long long)st.processes, (long long)st.kernels, (long long)st.unique_kernels,
		(long long)st.truncated_files);
	return 0;
}
