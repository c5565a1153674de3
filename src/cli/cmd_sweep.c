/* kjoule sweep: time (and energy) of one operator over the shape grid of a seed-style config. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_gpu.h"
#include "kj_sweep.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule sweep CONFIG.yml [--precision fp16|bf16|fp32] [--parts P --part I]\n"
		"                    [--device N] [--gpus all|N] [--out DIR] [--energy] [--dry-run]\n"
		"                    [--gpu-name NAME]\n"
		"Measures the operator the config names (kernel_name) forward and backward at every shape\n"
		"of its grid and appends one row per shape to\n"
		"  DIR/sampling_data/{GPU}_{op}_{precision}_{parts}_{part}.csv   (progress: DIR/sampling_log/)\n"
		"  --precision P   fp16 (default), bf16 or fp32\n"
		"  --parts P --part I   only the shapes at positions I-1, I-1+P, ... (1 <= I <= P)\n"
		"  --device N      first GPU to use (default 0)\n"
		"  --gpus all|N    one worker per GPU: all local GPUs (NVML, else CUDA_VISIBLE_DEVICES), or N\n"
		"  --out DIR       where sampling_data/ and sampling_log/ go (default .)\n"
		"  --energy        also F_energy(uJ), B_energy(uJ) and their uncertainties\n"
		"  --dry-run       list the shapes (CSV on stdout) and start no worker\n"
		"  --gpu-name NAME the GPU name in file names (default: NVML's name of the device)\n"
		"A sweep restarted with the same arguments skips the shapes already in its CSV.\n"
		"Environment: KJ_SWEEP_WORKER names the worker (default: kjoule-sweep-worker beside kjoule).\n");
}

/* The worker's path: $KJ_SWEEP_WORKER, else beside this binary (or its build-tree place). */
static int find_worker(char *buf, size_t len)
{
	const char *env = getenv("KJ_SWEEP_WORKER");
	char self[PATH_MAX];
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return access(buf, X_OK) == 0 ? 0 : KJ_ENOTFOUND;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return KJ_ENOTFOUND;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	const char *rel[] = {"kjoule-sweep-worker", "src/sweep/worker/kjoule-sweep-worker",
			     "../libexec/kjoule/kjoule-sweep-worker"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(buf, len, "%.3000s/%s", self, rel[i]);
		if (access(buf, X_OK) == 0)
			return 0;
	}
	snprintf(buf, len, "%.3000s/kjoule-sweep-worker", self);
	return KJ_ENOTFOUND;
}

/* Local GPUs: NVML's count, else the entries of CUDA_VISIBLE_DEVICES; 0 when neither says. */
static int count_gpus(void)
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

static int parse_int(const char *s, int *out)
{
	char *end;
	long x = strtol(s, &end, 10);
	if (!*s || *end || x < INT_MIN || x > INT_MAX)
		return -1;
	*out = (int)x;
	return 0;
}

int cmd_sweep(int argc, char **argv)
{
	struct kj_sweep_opts o = {.precision = KJ_FP16, .parts = 1, .part = 1, .gpus = 1, .out_dir = "."};
	const char *config = NULL, *gpus = NULL;
	int dry = 0, have_part = 0, have_parts = 0;
	char err[2048], worker[4096];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--precision") && next) {
			if ((o.precision = kj_precision_parse(next)) < 0) {
				kj_errorf("sweep: unknown precision '%s' (fp16, bf16 or fp32)", next);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--parts") && next) {
			bad = parse_int(argv[++i], &o.parts);
			have_parts = 1;
		} else if (!strcmp(a, "--part") && next) {
			bad = parse_int(argv[++i], &o.part);
			have_part = 1;
		} else if (!strcmp(a, "--device") && next) {
			bad = parse_int(argv[++i], &o.device) || o.device < 0;
		} else if (!strcmp(a, "--gpus") && next) {
			gpus = argv[++i];
		} else if ((!strcmp(a, "--out") || !strcmp(a, "-o")) && next) {
			o.out_dir = argv[++i];
		} else if (!strcmp(a, "--gpu-name") && next) {
			o.gpu_name = argv[++i];
		} else if (!strcmp(a, "--energy")) {
			o.energy = 1;
		} else if (!strcmp(a, "--dry-run")) {
			dry = 1;
		} else if (a[0] == '-' || config) {
			kj_errorf("sweep: unexpected argument '%s'", a);
			usage(stderr);
			return 2;
		} else {
			config = a;
		}
		if (bad) {
			kj_errorf("sweep: bad value '%s' for %s", argv[i], a);
			return 2;
		}
	}
	if (!config) {
		usage(stderr);
		return 2;
	}
	if (have_part != have_parts || o.parts < 1 || o.part < 1 || o.part > o.parts) {
		kj_errorf("sweep: --parts P --part I go together, with 1 <= I <= P (got --parts %d --part %d)",
			  o.parts, o.part);
		return 2;
	}
	struct kj_sweep_config cfg;
	if (kj_sweep_config_load(config, &cfg, err, sizeof(err))) {
		kj_errorf("%s", err);
		return 1;
	}
	if (dry) {
		int64_t *shapes, n, invalid;
		char s[256];
		if (cfg.run != KJ_RUN_GET_ALL) {
			kj_sweep_shape_format(cfg.shapes, cfg.ncols, s, sizeof(s));
			printf("%s\n", s);
			fprintf(stderr, "kjoule sweep: run %s: the one shape %s\n", kj_sweep_run_name(cfg.run), s);
			return 0;
		}
		if (kj_sweep_shapes(&cfg, o.parts, o.part, &shapes, &n, &invalid)) {
			kj_errorf("sweep: out of memory");
			return 1;
		}
		for (int j = 0; j < cfg.ncols; j++)
			printf("%s%s", j ? "," : "", cfg.op->columns[j]);
		printf("\n");
		for (int64_t i = 0; i < n; i++) {
			kj_sweep_shape_format(shapes + i * cfg.ncols, cfg.ncols, s, sizeof(s));
			printf("%s\n", s);
		}
		fprintf(stderr, "kjoule sweep: %s part %d/%d: %lld shapes of a %lld-point grid "
			"(%lld dropped as not Megatron-divisible)\n", cfg.op->name, o.part, o.parts,
			(long long)n, (long long)kj_sweep_grid_size(&cfg), (long long)invalid);
		free(shapes);
		return 0;
	}
	if (gpus) {
		if (!strcmp(gpus, "all")) {
			o.gpus = count_gpus() - o.device;
			if (o.gpus < 1) {
				kj_errorf("sweep: --gpus all found no GPU (NVML absent and CUDA_VISIBLE_DEVICES unset)");
				return 1;
			}
		} else if (parse_int(gpus, &o.gpus) || o.gpus < 1) {
			kj_errorf("sweep: bad value '%s' for --gpus (all or a count)", gpus);
			return 2;
		}
	}
	if (cfg.run == KJ_RUN_GET_PROFILER) {
		char s[256];
		kj_sweep_shape_format(cfg.shapes, cfg.ncols, s, sizeof(s));
		printf("run get_profiler: trace the one shape with kjoule run:\n"
		       "  echo '%s %s %s %d 0' | kjoule run -o %s_%s.kjdb -- kjoule-sweep-worker\n",
		       cfg.op->name, kj_precision_name(o.precision), s, o.energy, cfg.op->name,
		       kj_precision_name(o.precision));
		return 0;
	}
	if (find_worker(worker, sizeof(worker))) {
		kj_errorf("sweep worker not found (%s); build kjoule with CUDA or set KJ_SWEEP_WORKER", worker);
		return 1;
	}
	o.worker = worker;
	return kj_sweep_run(&cfg, &o) ? 1 : 0;
}
