/* kjoule fit: regressors of operator time and energy from sweep CSVs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_predict.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule fit DATA_DIR [--gpu NAME] [-o MODELS_DIR] [--sm-count N] [--rounds R]\n"
		"Trains one model per (GPU, operator, precision, fwd/bwd, time/energy) from the sweep CSVs\n"
		"in DATA_DIR ({GPU}_{op}_{precision}[_{parts}_{part}].csv): a log-linear baseline in the\n"
		"operator's FLOPs and bytes, times an XGBoost model on FLOPs, bytes, waves and the shape.\n"
		"A fifth of the shapes is held out and scored. The NCCL collectives keep their measured\n"
		"points per GPU count instead, read log-log between sizes (docs/multi-gpu-sweep.md).\n"
		"Writes MODELS_DIR (default: models)/\n"
		"models.json (with each model's shape range), one XGBoost .json and one predicted-against-\n"
		"measured .svg per model. Every CSV is read before anything is written; the folder is built\n"
		"beside MODELS_DIR and renamed into place, keeping an earlier fit's models of other keys: a\n"
		"refused fit leaves no folder and the earlier one as it was. A models.json that is no models\n"
		"index, or a MODELS_DIR of other files, is refused.\n"
		"  --gpu NAME     only this GPU's files (name as in the file names or as NVML says it)\n"
		"  --sm-count N   SMs for the wave features (default: kjoule's table of known GPUs)\n"
		"  --rounds R     boosting rounds (default 200)\n");
}

int cmd_fit(int argc, char **argv)
{
	struct kj_fit_opts o = {.out_dir = "models", .rounds = 200};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--gpu") && next) {
			o.gpu = argv[++i];
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && next) {
			o.out_dir = argv[++i];
		} else if ((!strcmp(a, "--sm-count") || !strcmp(a, "--rounds")) && next) {
			char *end;
			long x = strtol(argv[++i], &end, 10);
			if (*end || x < 1 || x > 100000) {
				kj_errorf("fit: bad value '%s' for %s", argv[i], a);
				return 2;
			}
			*(a[2] == 's' ? &o.sm_count : &o.rounds) = (int)x;
		} else if (a[0] == '-' || o.data_dir) {
			kj_errorf("fit: unexpected argument '%s'", a);
			usage(stderr);
			return 2;
		} else {
			o.data_dir = a;
		}
	}
	if (!o.data_dir) {
		usage(stderr);
		return 2;
	}
	return kj_fit_run(&o) ? 1 : 0;
}
