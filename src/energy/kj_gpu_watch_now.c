/* One look, now, at the processes on this machine's GPUs, for commands that run no sampler of their
 * own (`kjoule replay --energy`): the same NVML process list as kjoule run's watch. */
#include <stdio.h>
#include <unistd.h>

#include "kj_gpu.h"
#include "kj_gpu_watch.h"

int kj_gpu_watch_others_now(int64_t *pids, int *gpus, int max, int *n, char *why, size_t why_len)
{
	struct kj_gpu_backend be;
	struct kj_gpu_proc p[128];
	int ngpu = 0, rc;
	*n = 0;
	why[0] = 0;
	rc = kj_gpu_nvml_open(&be, why, why_len);
	if (rc)
		return KJ_WATCH_OFF;
	if (!be.processes) {
		snprintf(why, why_len, "other processes cannot be seen here: this NVML has no process list");
		kj_gpu_backend_close(&be);
		return KJ_WATCH_BLIND;
	}
	be.count(be.ctx, &ngpu);
	for (int d = 0; d < ngpu; d++) {
		int k = 0;
		rc = be.processes(be.ctx, d, p, (int)(sizeof(p) / sizeof(p[0])), &k);
		if (rc) {
			snprintf(why, why_len, "other processes cannot be seen here: the driver did not list "
				 "the processes on GPU %d (%s, NVML error %d)", d, be.strerror(be.ctx, rc), rc);
			kj_gpu_backend_close(&be);
			return KJ_WATCH_BLIND;
		}
		for (int i = 0; i < k; i++) {
			int dup = 0;
			if (p[i].pid == (int64_t)getpid())
				continue;
			for (int j = 0; j < *n; j++)
				dup |= pids[j] == p[i].pid;
			if (!dup && *n < max) {
				if (gpus)
					gpus[*n] = d;
				pids[(*n)++] = p[i].pid;
			}
		}
	}
	kj_gpu_backend_close(&be);
	return KJ_WATCH_OK;
}
