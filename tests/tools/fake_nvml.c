/* A stand-in for libnvidia-ml.so.1 (loaded by kjoule through KJ_NVML_LIB, tests only): one GPU
 * drawing 100 W, and a process list steered by the environment, so `kjoule run`'s watch for other
 * processes is tested end to end without a GPU.
 *   KJ_FAKE_NVML_PROCS=deny   the process list is refused (NVML_ERROR_NO_PERMISSION)
 *   KJ_FAKE_NVML_PIDS=a,b,children   list pids a and b, and "children": the caller's children */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
	unsigned gpuInstanceId, computeInstanceId;
} fake_proc;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int rc) { return rc == 4 ? "Insufficient Permissions" : "fake NVML error"; }
int nvmlDeviceGetCount_v2(unsigned *n) { *n = 1; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { *d = (void *)(size_t)(i + 1); return 0; }
int nvmlDeviceGetUUID(void *d, char *out, unsigned len) { (void)d; snprintf(out, len, "GPU-fake-nvml"); return 0; }
int nvmlDeviceGetName(void *d, char *out, unsigned len) { (void)d; snprintf(out, len, "Fake GPU"); return 0; }
int nvmlDeviceGetPowerUsage(void *d, unsigned *mw) { (void)d; *mw = 100000; return 0; }
int nvmlDeviceGetClockInfo(void *d, int t, unsigned *mhz) { (void)d; (void)t; *mhz = 1000; return 0; }

static void add(fake_proc *out, unsigned *n, unsigned max, unsigned pid)
{
	if (*n < max) {
		out[*n].pid = pid;
		out[*n].usedGpuMemory = 1 << 20;
		out[*n].gpuInstanceId = out[*n].computeInstanceId = 0xffffffffu;
	}
	(*n)++;
}

static void add_children(fake_proc *out, unsigned *n, unsigned max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[300], buf[512];
	while (d && (e = readdir(d)) != NULL) {
		FILE *f;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			char *rp = strrchr(buf, ')'); /* "pid (comm) state ppid" */
			int ppid = 0;
			if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == (int)getpid())
				add(out, n, max, (unsigned)atoi(e->d_name));
		}
		fclose(f);
	}
	if (d)
		closedir(d);
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *count, fake_proc *out)
{
	const char *mode = getenv("KJ_FAKE_NVML_PROCS"), *pids = getenv("KJ_FAKE_NVML_PIDS");
	unsigned max = *count, n = 0;
	char copy[1024];
	(void)d;
	if (mode && !strcmp(mode, "deny"))
		return 4;
	snprintf(copy, sizeof(copy), "%s", pids ? pids : "");
	for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
		if (!strcmp(tok, "children"))
			add_children(out, &n, max);
		else
			add(out, &n, max, (unsigned)atoi(tok));
	}
	*count = n;
	return n > max ? 7 : 0;
}
