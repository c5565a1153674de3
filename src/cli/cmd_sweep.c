/* kjoule sweep: time (and energy) of one operator over the shape grid of a seed-style config. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_sweep.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule sweep CONFIG.yml [--precision fp16|bf16|fp32] [--parts P --part I]\n"
		"                    [--device N] [--gpus all|N] [--out DIR] [--energy] [--dry-run]\n"
		"                    [--gpu-name NAME] [--timeout S]\n"
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
		"  --timeout S     a shape unanswered after S seconds kills its worker (default 600; 0: none)\n"
		"A sweep restarted with the same arguments skips the shapes already in its CSV.\n"
		"Collectives (all_reduce, all_gather, reduce_scatter, broadcast, send_recv): --gpus N is the\n"
		"communicator's size; one kjoule-nccl-worker a GPU; the grid's points of gpus = N.\n"
		"Environment: KJ_SWEEP_WORKER names the worker (default: kjoule-sweep-worker beside kjoule),\n"
		"KJ_NCCL_WORKER the collectives' (default: kjoule-nccl-worker beside kjoule).\n");
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

/* run get_profiler: `kjoule run` traces the worker measuring the one shape; the request goes in
 * on its stdin from OUT/sampling_profile/{base}.req, the run database beside it. */
static int profile(const struct kj_sweep_config *cfg, const struct kj_sweep_opts *o)
{
	char dir[4096], req[5200], db[5200], base[1024], line[512], self[4096];
	kj_sweep_file_base(cfg, o, base, sizeof(base));
	snprintf(dir, sizeof(dir), "%.4000s/sampling_profile", o->out_dir);
	if (mkdir(o->out_dir, 0777) && errno != EEXIST)
		return 1;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		kj_errorf("sweep: %s: %s", dir, strerror(errno));
		return 1;
	}
	snprintf(req, sizeof(req), "%s/%s.req", dir, base);
	snprintf(db, sizeof(db), "%s/%s.kjdb", dir, base);
	kj_sweep_request(cfg, o->precision, cfg->shapes, o->energy, 0, line, sizeof(line));
	FILE *f = fopen(req, "w");
	if (!f || fputs(line, f) < 0 || fclose(f)) {
		kj_errorf("sweep: %s: %s", req, strerror(errno));
		return 1;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	fprintf(stderr, "kjoule sweep: tracing '%.*s' with kjoule run into %s\n",
		(int)strcspn(line, "\n"), line, db);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(req, O_RDONLY);
		if (fd < 0 || dup2(fd, 0) < 0)
			_exit(127);
		execl(self, self, "run", "--force", "-o", db, "--", o->worker, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int cmd_sweep(int argc, char **argv)
{
	struct kj_sweep_opts o = {.precision = KJ_FP16, .parts = 1, .part = 1, .gpus = 1, .out_dir = ".",
				  .timeout_s = 600};
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
		} else if (!strcmp(a, "--timeout") && next) {
			bad = parse_int(argv[++i], &o.timeout_s) || o.timeout_s < 0;
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
		if (kj_sweep_list_shapes(stdout, &cfg, o.parts, o.part)) {
			kj_errorf("sweep: out of memory");
			return 1;
		}
		return 0;
	}
	if (gpus) {
		if (!strcmp(gpus, "all")) {
			o.gpus = kj_sweep_local_gpus() - o.device;
			if (o.gpus < 1) {
				kj_errorf("sweep: --gpus all found no GPU (NVML absent and CUDA_VISIBLE_DEVICES unset)");
				return 1;
			}
		} else if (parse_int(gpus, &o.gpus) || o.gpus < 1) {
			kj_errorf("sweep: bad value '%s' for --gpus (all or a count)", gpus);
			return 2;
		}
	}
	if (cfg.op->collective && kj_sweep_collective_check(&cfg, gpus != NULL, o.gpus))
		return 2;
	/* more GPUs than the machine has: said before any worker starts (unknown count: not checked) */
	int have = kj_sweep_local_gpus();
	if (have > 0 && o.device + o.gpus > have) {
		kj_errorf("sweep: --gpus %d from --device %d needs GPUs %d..%d, but this machine has %d "
			  "(NVML's count, or the entries of CUDA_VISIBLE_DEVICES)", o.gpus, o.device,
			  o.device, o.device + o.gpus - 1, have);
		return 2;
	}
	static const char *const rel[] = {"kjoule-sweep-worker", "src/sweep/worker/kjoule-sweep-worker",
					  "../libexec/kjoule/kjoule-sweep-worker", NULL};
	static const char *const rel_nccl[] = {"kjoule-nccl-worker", "src/sweep/worker_nccl/kjoule-nccl-worker",
					       "../libexec/kjoule/kjoule-nccl-worker", NULL};
	if (cfg.op->collective
		    ? kj_cli_find_beside("KJ_NCCL_WORKER", rel_nccl, X_OK, worker, sizeof(worker))
		    : kj_cli_find_beside("KJ_SWEEP_WORKER", rel, X_OK, worker, sizeof(worker))) {
		if (cfg.op->collective)
			kj_errorf("NCCL worker not found (%s); build kjoule with CUDA where NCCL (nccl.h, "
				  "libnccl) is installed, or set KJ_NCCL_WORKER", worker);
		else
			kj_errorf("sweep worker not found (%s); build kjoule with CUDA or set KJ_SWEEP_WORKER", worker);
		return 1;
	}
	o.worker = worker;
	if (cfg.run == KJ_RUN_GET_PROFILER)
		return profile(&cfg, &o);
	return kj_sweep_run(&cfg, &o) ? 1 : 0;
}
