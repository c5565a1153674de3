/* libFuzzer target for the spool reader (src/store/kj_ingest*.c): arbitrary bytes as one process's
 * spool file, ingested as `kjoule run` ingests a run's folder (every analysis of the ingest, the
 * clock check, a --capture run's summary), inside a transaction rolled back after each input, so
 * each input meets the same empty database. Build and run: see fuzz/spool/README.md. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_ingest.h"

static sqlite3 *db;
static char spool_dir[256], spool_path[300];
static int quiet_fd = -1; /* the ingest names each bad record on stderr: quiet unless KJ_FUZZ_STDERR */

static void setup(void)
{
	char tmpl[] = "/tmp/kjfuzz.XXXXXX", dbpath[300];
	if (!mkdtemp(tmpl))
		abort();
	snprintf(spool_dir, sizeof(spool_dir), "%s/spool", tmpl);
	snprintf(spool_path, sizeof(spool_path), "%s/p4242.spool", spool_dir);
	snprintf(dbpath, sizeof(dbpath), "%s/run.kjdb", tmpl);
	if (mkdir(spool_dir, 0700) || kj_db_create(dbpath, &db))
		abort();
	if (!getenv("KJ_FUZZ_STDERR"))
		quiet_fd = open("/dev/null", O_WRONLY);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kj_ingest_opts opts = {.params_k = 1, .params_iteration = KJ_ITERATION_AUTO};
	struct kj_ingest_stats st;
	struct kj_capture_summary cap;
	int saved = -1;
	FILE *fp;
	if (!db)
		setup();
	fp = fopen(spool_path, "wb");
	if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp))
		abort();
	if (quiet_fd >= 0) {
		fflush(stderr);
		saved = dup(2);
		dup2(quiet_fd, 2);
	}
	memset(&st, 0, sizeof(st));
	if (kj_db_exec(db, "BEGIN", "begin"))
		abort();
	kj_ingest_dir(db, spool_dir, &opts, &st);
	kj_ingest_capture_finish(db, NULL, &cap);
	if (kj_db_exec(db, "ROLLBACK", "rollback"))
		abort();
	if (saved >= 0) {
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
	}
	return 0;
}
