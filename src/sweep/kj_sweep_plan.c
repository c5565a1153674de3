/* kjoule sweep's checks before any worker starts and its --dry-run listing (kj_sweep.h). */
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_gpu.h"
#include "kj_sweep.h"

/* Local GPUs: the entries of CUDA_VISIBLE_DEVICES when set, else NVML's count; 0 when neither says. */
int kj_sweep_local_gpus(void)
{
	struct kj_gpu_backend be = {0};
	char why[256];
	int n = 0;
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	if (vis && *vis) {
		n = 1;
		for (const char *s = vis; *s; s++)
			n += *s == ',';
		return n;
	}
	if (kj_gpu_nvml_open(&be, why, sizeof(why)) == 0) {
		if (be.count(be.ctx, &n))
			n = 0;
		kj_gpu_backend_close(&be);
	}
	return n;
}

/* A collective's sweep runs one communicator of --gpus N ranks over the grid's points of gpus = N:
 * N must be given, be 2..KJ_SWEEP_MAX_RANKS and lie on the config's gpus axis. 0, or KJ_EINVAL said. */
int kj_sweep_collective_check(const struct kj_sweep_config *cfg, int given, int n)
{
	int64_t axis[64];
	char list[256] = "";
	int na = cfg->run == KJ_RUN_GET_ALL ? kj_sweep_axis_values(cfg, 0, axis, 64) : 1, on = 0;
	if (cfg->run != KJ_RUN_GET_ALL)
		axis[0] = cfg->shapes[0];
	if (cfg->run == KJ_RUN_GET_PROFILER) {
		kj_errorf("sweep: %s is a collective (one process a GPU): run get_profiler traces one "
			  "worker and is not available for it; trace the ranks with kjoule run -- torchrun", cfg->op->name);
		return KJ_EINVAL;
	}
	if (!given || n < 2 || n > KJ_SWEEP_MAX_RANKS) {
		kj_errorf("sweep: %s is a collective: give --gpus N, the communicator's size (2 to %d, "
			  "one process a GPU)%s", cfg->op->name, KJ_SWEEP_MAX_RANKS, given ? "" : "; none was given");
		return KJ_EINVAL;
	}
	for (int i = 0; i < na && i < 64; i++) {
		on |= axis[i] == n;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%lld", i ? "," : "",
			 (long long)axis[i]);
	}
	if (!on) {
		kj_errorf("sweep: --gpus %d is not on %s's gpus axis (%s); the sweep measures the grid's "
			  "points of gpus = %d", n, cfg->path, list, n);
		return KJ_EINVAL;
	}
	return 0;
}

int kj_sweep_list_shapes(FILE *out, const struct kj_sweep_config *cfg, int parts, int part)
{
	int64_t *shapes, n, invalid;
	char s[256];
	if (cfg->run != KJ_RUN_GET_ALL) {
		kj_sweep_shape_format(cfg->shapes, cfg->ncols, s, sizeof(s));
		fprintf(out, "%s\n", s);
		fprintf(stderr, "kjoule sweep: run %s: the one shape %s\n", kj_sweep_run_name(cfg->run), s);
		return 0;
	}
	if (kj_sweep_shapes(cfg, parts, part, &shapes, &n, &invalid)) {
		return KJ_ENOMEM;
	}
	for (int j = 0; j < cfg->ncols; j++)
		fprintf(out, "%s%s", j ? "," : "", cfg->op->columns[j]);
	fprintf(out, "\n");
	for (int64_t i = 0; i < n; i++) {
		kj_sweep_shape_format(shapes + i * cfg->ncols, cfg->ncols, s, sizeof(s));
		fprintf(out, "%s\n", s);
	}
	fprintf(stderr, "kjoule sweep: %s part %d/%d: %lld shapes of a %lld-point grid "
		"(%lld dropped as not Megatron-divisible)\n", cfg->op->name, part, parts,
		(long long)n, (long long)kj_sweep_grid_size(cfg), (long long)invalid);
	free(shapes);
	return 0;
}
