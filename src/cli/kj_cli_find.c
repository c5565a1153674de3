/* Finding the programs and the library kjoule starts: a variable names it, else it lies beside
 * the kjoule binary (in the build tree or where it is installed). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_error.h"

int kj_cli_find_beside(const char *env, const char *const *rel, int mode, char *buf, size_t len)
{
	const char *e = env ? getenv(env) : NULL;
	char self[PATH_MAX];
	ssize_t n;
	int w;
	if (e && *e) {
		w = snprintf(buf, len, "%s", e);
		return w > 0 && (size_t)w < len && access(buf, mode) == 0 ? 0 : KJ_ENOTFOUND;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return KJ_ENOTFOUND;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	for (size_t i = 0; rel[i]; i++) {
		w = snprintf(buf, len, "%s/%s", self, rel[i]);
		if (w > 0 && (size_t)w < len && access(buf, mode) == 0)
			return 0;
	}
	if (rel[0] && snprintf(buf, len, "%s/%s", self, rel[0]) < 0)
		buf[0] = '\0';
	return KJ_ENOTFOUND;
}
