/* The spool fuzzer's seed corpus: the whole synthetic process the ingest tests use
 * (tests/unit/process_spool_fixture.h), once in each form a launch's parameters take, and a copy
 * cut short inside a record; and a --capture run's process (tests/unit/capture_spool_fixture.h)
 * whose window closes, stays open at exit, or is cut by a kill. usage: make_seeds DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kj_db.h"
#include "kj_ingest.h"
#include "kj_spool.h"

#include "capture_spool_fixture.h"
#include "process_spool_fixture.h"

static void write_seed(const char *out, const char *name, const struct buf *b, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", out, name);
	FILE *fp = fopen(path, "wb");
	if (!fp || fwrite(b->p, 1, n, fp) != n || fclose(fp)) {
		fprintf(stderr, "make_seeds: %s: cannot write\n", path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	for (launch_form = 0; launch_form <= 2; launch_form++) {
		char name[64];
		struct buf b = make_spool();
		snprintf(name, sizeof(name), "process_form%d.spool", launch_form);
		write_seed(argv[1], name, &b, b.n);
		if (launch_form == 1) /* the process killed inside its last record */
			write_seed(argv[1], "process_cut.spool", &b, b.n - 5);
		free(b.p);
	}
	const int closes[] = {KJ_WINDOW_CLOSE, KJ_WINDOW_AT_EXIT, 0};
	for (int i = 0; i < 3; i++) {
		char name[64];
		struct buf b = capture_spool(600 + i, closes[i]);
		snprintf(name, sizeof(name), "capture_%d.spool", i);
		write_seed(argv[1], name, &b, b.n);
		free(b.p);
	}
	return 0;
}
