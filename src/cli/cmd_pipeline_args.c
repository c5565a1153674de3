/* kjoule pipeline: the options (every number parsed strictly and range-checked), all parsed
 * before anything runs (the input files are then checked by kj_pipeline_inputs_read()). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_pipeline_args.h"
#include "kj_cli.h"
#include "kj_error.h"
#include "kj_num.h"

void kj_cli_pipeline_usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule pipeline FILE.yml... [--only NAME] [--batch N] [--precision fp16|bf16|fp32]\n"
		"                       [--layout nchw|nhwc] [--conv-algo heuristic|fastest]\n"
		"                       [--bn-kernel vector|plane]\n"
		"                       [--set NAME=VALUE] [--out DIR] [--list] [--unroll U] [--iters I]\n"
		"                       [--energy-seconds S] [--no-energy] [--idle-w W | --idle-db RUN.kjdb]\n"
		"                       [--peak-tflops T --peak-gbs B] [--device D] [--timeout S]\n"
		"       kjoule pipeline --from RUN.kjdb [--layers DEPTH | --region NAME] [--out DIR] ...\n"
		"Each phase (layer) of each pipeline runs alone: its work unrolled U times (default 100) in a\n"
		"CUDA graph, replayed for at least I calls (default 1000, rounded to U) and for the energy\n"
		"window (--energy-seconds, default 1): latency, power, energy per call (total and above idle).\n"
		"  --list            print the pipelines and phases with FLOP and byte counts; run nothing\n"
		"  --only NAME       only this pipeline\n"
		"  --batch N         the parameter 'batch' of every pipeline; --set NAME=VALUE another one the\n"
		"                    pipelines declare in their params (tp)\n"
		"  --layout nchw|nhwc  conv, norm, pool and act tensors (default: the file's, else nchw)\n"
		"  --conv-algo heuristic|fastest  heuristic (default): cuDNN's first ranked algorithm;\n"
		"                    fastest: every one timed, the quickest kept (as cudnn.benchmark)\n"
		"  --bn-kernel vector|plane  NCHW batch norm: vector (default) 16-byte loads over the tensor;\n"
		"                    plane: a block per channel plane, one element a load (PyTorch's eval kernel)\n"
		"  --out DIR         summary.csv, NAME.phases.csv, NAME.svg, NAME.log (default pipeline-out)\n"
		"  --idle-w W        idle power for the dynamic and pipeline-parallel figures (from\n"
		"                    `kjoule power --idle`); --idle-db: a database holding idle_power; neither:\n"
		"                    `kjoule power --idle --duration 3` runs first\n"
		"  --peak-tflops/--peak-gbs  ceilings for the achieved fractions (default: measured now)\n"
		"  --from RUN        phases = NVTX ranges of the run's kept iteration at --layers DEPTH below\n"
		"                    it (default 1), or the ranges named --region NAME; each replayed as one\n"
		"                    graph by kjoule-replay-worker. Graph-launched iterations: the ranges\n"
		"                    open when the graph was captured, DEPTH below the capture root\n"
		"  --timeout S       per-phase limit (default 120 s); an overrun kills the worker, the phase fails\n"
		"Bad input (an option's value, a file, a pipeline) is refused before anything runs: exit 2 for\n"
		"the command line, 1 for a file, nothing written.\n");
}

/* The options that take a number: where it goes and its range. */
enum num_kind { N_INT, N_I64, N_F64, N_F64_ABOVE };
struct num_opt {
	const char *name;
	enum num_kind kind;
	size_t off;
	double lo, hi; /* integers: exact up to 2^53, far beyond any range here */
};
#define P(m) offsetof(struct kj_pipeline_opts, m)
static const struct num_opt num_opts[] = {
	{"--batch", N_I64, P(ov.batch), 1, 2147483647.0},
	{"--layers", N_INT, P(layers), 0, 64},
	{"--unroll", N_INT, P(unroll), 1, 1000000},
	{"--iters", N_I64, P(iters), 1, 1e12},
	{"--runs", N_INT, P(runs), 1, 1000000},
	{"--device", N_INT, P(device), 0, 1023},
	{"--timeout", N_INT, P(timeout_s), 1, 86400},
	{"--energy-seconds", N_F64_ABOVE, P(energy_s), 0, 3600},
	{"--idle-w", N_F64, P(idle_w), 0, 100000},
	{"--peak-tflops", N_F64_ABOVE, P(peak_tflops), 0, 1e6},
	{"--peak-gbs", N_F64_ABOVE, P(peak_gbs), 0, 1e8},
};
/* The options that take a word or a path. */
static const char *const word_opts[] = {"--only", "--precision", "--layout", "--conv-algo", "--bn-kernel",
					"--out", "--from", "--region", "--idle-db", "--set", NULL};

static int num_opt_set(const struct num_opt *n, const char *v, struct kj_pipeline_opts *o)
{
	char *dst = (char *)o + n->off;
	switch (n->kind) {
	case N_INT:
		return kj_cli_num_int("pipeline", n->name, v, (int)n->lo, (int)n->hi, (int *)(void *)dst);
	case N_I64:
		return kj_cli_num_i64("pipeline", n->name, v, (int64_t)n->lo, (int64_t)n->hi, (int64_t *)(void *)dst);
	case N_F64:
	case N_F64_ABOVE:
		return kj_cli_num_f64("pipeline", n->name, v, n->lo, n->hi, n->kind == N_F64_ABOVE,
				      (double *)(void *)dst);
	}
	return -1;
}

/* --set NAME=VALUE: a parameter's name and an integer; at most 8. */
static int set_opt(const char *v, struct kj_pipeline_overrides *ov)
{
	const char *eq = strchr(v, '=');
	if (!eq || eq == v || (size_t)(eq - v) >= sizeof(ov->set_name[0])) {
		kj_errorf("pipeline: --set %s: NAME=VALUE (NAME a parameter of the pipelines)", v);
		return -1;
	}
	if (ov->nset == 8) {
		kj_errorf("pipeline: --set %s: at most 8 --set", v);
		return -1;
	}
	char opt[48];
	snprintf(opt, sizeof(opt), "--set %.*s", (int)(eq - v), v);
	int64_t x;
	if (kj_cli_num_i64("pipeline", opt, eq + 1, INT64_MIN, INT64_MAX, &x))
		return -1;
	for (int i = 0; i < ov->nset; i++)
		if (!strncmp(ov->set_name[i], v, (size_t)(eq - v)) && !ov->set_name[i][eq - v]) {
			kj_errorf("pipeline: --set %.*s given twice", (int)(eq - v), v);
			return -1;
		}
	snprintf(ov->set_name[ov->nset], sizeof(ov->set_name[0]), "%.*s", (int)(eq - v), v);
	ov->set_value[ov->nset++] = x;
	return 0;
}

/* A word option (not a number): 0, or -1 after saying what is wrong with its value. */
static int word_opt_set(const char *a, const char *v, struct kj_pipeline_opts *o)
{
	if (!strcmp(a, "--only")) {
		o->only = v;
	} else if (!strcmp(a, "--precision")) {
		if (!kj_pipeline_elem_bytes(v)) {
			kj_errorf("pipeline: --precision %s: fp16, bf16 or fp32", v);
			return -1;
		}
		snprintf(o->precision, sizeof(o->precision), "%s", v);
		o->ov.precision = o->precision;
	} else if (!strcmp(a, "--layout")) {
		if (!kj_pipeline_layout_ok(v)) {
			kj_errorf("pipeline: --layout %s: nchw or nhwc", v);
			return -1;
		}
		o->ov.layout = v;
	} else if (!strcmp(a, "--conv-algo")) {
		if (!kj_pipeline_conv_algo_ok(v)) {
			kj_errorf("pipeline: --conv-algo %s: fastest or heuristic", v);
			return -1;
		}
		o->ov.conv_algo = v;
	} else if (!strcmp(a, "--bn-kernel")) {
		if (!kj_pipeline_bn_kernel_ok(v)) {
			kj_errorf("pipeline: --bn-kernel %s: vector or plane", v);
			return -1;
		}
		o->ov.bn_kernel = v;
	} else if (!strcmp(a, "--set")) {
		return set_opt(v, &o->ov);
	} else if (!strcmp(a, "--out")) {
		o->out = v;
	} else if (!strcmp(a, "--from")) {
		o->from = v;
	} else if (!strcmp(a, "--region")) {
		o->region = v;
	} else if (!strcmp(a, "--idle-db")) {
		o->idle_db = v;
	}
	return 0;
}

int kj_cli_pipeline_args(int argc, char **argv, struct kj_pipeline_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->out = "pipeline-out";
	o->unroll = 100;
	o->iters = 1000;
	o->energy_s = 1.0;
	o->idle_w = -1;
	o->timeout_s = 120;
	o->layers = 1;
	o->runs = 50;
	o->files = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*o->files));
	if (!o->files)
		return -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const struct num_opt *n = NULL;
		int word = 0;
		for (size_t k = 0; k < sizeof(num_opts) / sizeof(num_opts[0]); k++)
			if (!strcmp(a, num_opts[k].name))
				n = &num_opts[k];
		for (int k = 0; word_opts[k]; k++)
			word |= !strcmp(a, word_opts[k]);
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			kj_cli_pipeline_usage(stdout);
			return 1;
		}
		if ((n || word) && !v) {
			kj_errorf("pipeline: %s needs a value", a);
			return -1;
		}
		if (n) {
			if (num_opt_set(n, v, o))
				return -1;
			o->layers_given |= !strcmp(a, "--layers");
			i++;
		} else if (word) {
			if (word_opt_set(a, v, o))
				return -1;
			i++;
		} else if (!strcmp(a, "--list")) {
			o->list = 1;
		} else if (!strcmp(a, "--no-energy")) {
			o->no_energy = 1;
		} else if (a[0] == '-' && a[1]) {
			kj_errorf("pipeline: unknown option %s", a);
			return -1;
		} else {
			o->files[o->nfiles++] = a;
		}
	}
	if (!o->nfiles && !o->from) {
		kj_errorf("pipeline: give a pipeline file (configs/pipelines/*.yml) or --from RUN.kjdb");
		return -1;
	}
	if (o->nfiles && o->from) {
		kj_errorf("pipeline: --from %s takes no pipeline file (%s given beside it): one or the other",
			  o->from, o->files[0]);
		return -1;
	}
	if (o->from && (o->ov.batch || o->ov.nset)) {
		kj_errorf("pipeline: %s is for pipeline files, not --from (the run's shapes are fixed)",
			  o->ov.batch ? "--batch" : "--set");
		return -1;
	}
	if (!o->from && (o->layers_given || o->region)) {
		kj_errorf("pipeline: %s goes with --from RUN.kjdb", o->region ? "--region" : "--layers");
		return -1;
	}
	return 0;
}

void kj_cli_pipeline_free(struct kj_pipeline_opts *o)
{
	free(o->files);
	o->files = NULL;
}
