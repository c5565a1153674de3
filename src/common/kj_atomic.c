/* Files written whole or not at all: a temporary file beside the target, renamed over it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_atomic.h"
#include "kj_error.h"

int kj_write_atomic(const char *path, int (*write)(FILE *f, void *ctx), void *ctx)
{
	size_t len = strlen(path) + 16;
	char *tmp = malloc(len);
	int fd, rc;
	FILE *f;
	if (!tmp)
		return KJ_ENOMEM;
	snprintf(tmp, len, "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		kj_errorf("%s: cannot create a file beside it: %s", path, strerror(errno));
		free(tmp);
		return KJ_EIO;
	}
	fchmod(fd, 0644);
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		rc = KJ_EIO;
		goto fail;
	}
	rc = write(f, ctx);
	if (!rc && (fflush(f) != 0 || fsync(fileno(f)) != 0)) {
		kj_errorf("%s: write failed: %s", path, strerror(errno));
		rc = KJ_EIO;
	}
	if (fclose(f) != 0 && !rc) {
		kj_errorf("%s: write failed: %s", path, strerror(errno));
		rc = KJ_EIO;
	}
	if (rc)
		goto fail;
	if (rename(tmp, path) != 0) {
		kj_errorf("%s: %s", path, strerror(errno));
		rc = KJ_EIO;
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	unlink(tmp);
	free(tmp);
	return rc;
}
