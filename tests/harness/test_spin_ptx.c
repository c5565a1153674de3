/* The GPU harness's idle spacer (src/gpu/kj_gpu_spin_ptx.c) is PTX that ptxas assembles for the
 * GPUs kjoule builds for (sm_80, sm_90), with the entry and parameter the driver-API launcher
 * names. No GPU needed: ptxas runs on the host. usage: test_spin_ptx PTXAS WORKDIR; exit 77
 * (skipped) when PTXAS is empty or not executable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_gpu_spin_ptx.h"

int main(int argc, char **argv)
{
	if (argc < 3 || !argv[1][0] || access(argv[1], X_OK)) {
		fprintf(stderr, "test_spin_ptx: no ptxas (%s): skipped\n", argc > 1 ? argv[1] : "none given");
		return 77;
	}
	const char *ptx = kj_gpu_spin_ptx();
	int fails = 0;
	char entry[128];
	snprintf(entry, sizeof(entry), ".entry %s(", kj_gpu_spin_entry());
	if (!strstr(ptx, entry)) {
		fprintf(stderr, "FAIL: the PTX has no \"%s\"\n", entry);
		fails++;
	}
	if (!strstr(ptx, "%globaltimer") || !strstr(ptx, "nanosleep")) {
		fprintf(stderr, "FAIL: the spacer does not wait on the global timer with nanosleep\n");
		fails++;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/kj_gpu_spin.ptx", argv[2]);
	FILE *f = fopen(path, "w");
	if (!f || fputs(ptx, f) < 0 || fclose(f)) {
		fprintf(stderr, "FAIL: cannot write %s\n", path);
		return 1;
	}
	static const char *archs[] = {"sm_80", "sm_90"};
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
		char cmd[9000];
		snprintf(cmd, sizeof(cmd), "'%s' -arch=%s '%s' -o '%s.%s.cubin'", argv[1], archs[i], path, path, archs[i]);
		int rc = system(cmd);
		if (rc) {
			fprintf(stderr, "FAIL: ptxas -arch=%s refused the spacer's PTX (status %d)\n", archs[i], rc);
			fails++;
		} else {
			printf("ok: ptxas -arch=%s assembles the spacer\n", archs[i]);
		}
	}
	return fails ? 1 : 0;
}
