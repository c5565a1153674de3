/* kjoule predict: time and energy of one operator shape, or of a transformer step, from the
 * models `kjoule fit` saved. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_predict_against.h"
#include "kj_predict_out.h"
#include "kj_predict_step.h"
#include "kj_sweep.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule predict --gpu NAME --op OP --precision P --prop fwd|bwd --shape V1,V2,...\n"
		"                      [--models DIR] [--json]\n"
		"       kjoule predict --model MODEL.yml [--gpu NAME] [--models DIR] [--json]\n"
		"                      [--run RUN.kjdb [--region NAME] [--skip N]]\n"
		"One operator: its time (us) and energy (uJ) with each model's held-out MAPE, and the MAPE fit\n"
		"measured on figures of the prediction's size (half-decades of the value; JSON\n"
		"time_mape_at_size_pct, energy_mape_at_size_pct, with their row counts). Outside the shapes\n"
		"a model was fitted on (models.json shape_range) predict says how far outside, per column,\n"
		"and that the error is unknown there (no held-out MAPE; JSON in_grid, *_outside_grid), and\n"
		"gives no figure below what the model resolves (JSON *_unresolved). A shape value that is no\n"
		"positive integer, or a wrong count of them, is refused naming the column.\n"
		"MODEL.yml: a GPT-style transformer (layers, hidden, heads, seq, batch; optional mp: 1,\n"
		"precision: fp16, mode: train|inference, optimizer: adam|none, norm: layernorm|RMSlayernorm,\n"
		"rope: false, attention: flash|unfused, master_copies: false|true, gpu; LLaMA's gated FFN:\n"
		"ffn: swiglu with intermediate: N (inference); an output layer of its own: vocab: N,\n"
		"lm_head: parallel|replicated) predicted as the sum\n"
		"of its operators' kernels: a line after the totals (JSON scope) names what a measured step\n"
		"holds beside them (idle time, communication, a framework's own kernels).\n"
		"  --models DIR   where kjoule fit wrote (default: models)\n"
		"  --run RUN.kjdb the same step measured (kjoule run of the training program): the sum against\n"
		"                 its mean step time, energy and kernel sum (errors in %%, none from a partial\n"
		"                 sum) and, per kernel tier, the operators' time against the run's kernels'\n"
		"                 (JSON: against); --region and --skip choose its iterations as compare does\n"
		"An operator without a model is shown as '-' and the total says what it leaves out; the\n"
		"grid column marks an operator predicted OUTSIDE its measured grid (JSON in_grid,\n"
		"outside_grid), and --run names those operators beside the step's errors.\n");
}

/* One operator shape: parse it, predict it, print it. Returns the exit code. */
static int predict_op(struct kj_models *m, const char *gpu, const char *opname, int precision,
		      int prop, const char *shape, int json)
{
	const struct kj_sweep_op *op = kj_sweep_op_find(opname);
	int64_t v[KJ_SWEEP_MAX_COLS];
	char err[1024], why[128];
	struct kj_op_prediction o;
	if (!op) {
		kj_errorf("predict: unknown operator '%s'", opname);
		return 2;
	}
	if (kj_predict_shape_parse(op, shape, v, err, sizeof(err))) {
		kj_errorf("predict: --shape '%s': %s", shape, err);
		return 2;
	}
	if (!kj_sweep_shape_valid(op, v, why, sizeof(why)))
		kj_warnf("predict: shape %s does not split as Megatron splits it (%s)", shape, why);
	if (kj_predict_op(m, gpu, op, precision, prop, v, &o, err, sizeof(err))) {
		kj_errorf("predict: %s", err);
		return 1;
	}
	if (!o.t.found && !o.e.found) {
		kj_errorf("predict: no model for %s %s %s on %s (run kjoule fit on its sweep CSVs)",
			  op->name, kj_precision_name(precision), prop ? "bwd" : "fwd", gpu);
		return 1;
	}
	kj_predict_op_write(stdout, &o, gpu, precision, prop, shape, json);
	return 0;
}

/* where --run takes the measured step from */
struct run_opts {
	const char *run, *region;
	int skip;
};

/* A model's step: predicted whole, then read against --run's step, then printed (a bad run
 * prints nothing). Returns the exit code. */
static int predict_model(struct kj_models *m, const char *gpu_opt, const char *path, int json,
			 const struct run_opts *ro)
{
	struct kj_step_prediction *s = NULL;
	char err[1024];
	int rc = kj_predict_step(m, gpu_opt, path, &s, err, sizeof(err));
	if (rc) {
		kj_errorf("predict: %s", rc == KJ_ENOMEM ? kj_strerror(rc) : err);
		return rc == KJ_ENOTFOUND ? 2 : 1;
	}
	json_t *against = NULL;
	if (ro->run && !(against = kj_predict_against_run(ro->run, ro->region, ro->skip, s->tiers, s->ntiers,
							   s->time_us, !s->missing_t, s->energy_uj,
							   !s->missing_e, s->gpu))) {
		free(s);
		return 1;
	}
	if (against) /* operators the models extrapolate: the step's error holds them too */
		json_object_set_new(against, "outside_grid", json_string(s->outside));
	if (json) {
		kj_predict_step_json(stdout, s, path, against);
	} else {
		kj_predict_step_print(stdout, s);
		if (against)
			kj_predict_against_print(against, stdout);
	}
	json_decref(against);
	free(s);
	return 0;
}

int cmd_predict(int argc, char **argv)
{
	const char *gpu = NULL, *op = NULL, *shape = NULL, *model = NULL, *dir = "models";
	int precision = KJ_FP16, prop = -1, json = 0;
	struct run_opts ro = {NULL, NULL, -1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--gpu") && next) {
			gpu = argv[++i];
		} else if (!strcmp(a, "--op") && next) {
			op = argv[++i];
		} else if (!strcmp(a, "--shape") && next) {
			shape = argv[++i];
		} else if (!strcmp(a, "--model") && next) {
			model = argv[++i];
		} else if (!strcmp(a, "--models") && next) {
			dir = argv[++i];
		} else if (!strcmp(a, "--run") && next) {
			ro.run = argv[++i];
		} else if (!strcmp(a, "--region") && next) {
			ro.region = argv[++i];
		} else if (!strcmp(a, "--skip") && next) {
			if (kj_cli_parse_count("predict", "--skip", argv[++i], &ro.skip))
				return 2;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--precision") && next) {
			if ((precision = kj_precision_parse(argv[++i])) < 0) {
				kj_errorf("predict: unknown precision '%s' (fp16, bf16 or fp32)", argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--prop") && next) {
			i++;
			prop = !strcmp(argv[i], "fwd") ? 0 : !strcmp(argv[i], "bwd") ? 1 : -2;
			if (prop == -2) {
				kj_errorf("predict: --prop is fwd or bwd, not '%s'", argv[i]);
				return 2;
			}
		} else {
			kj_errorf("predict: unexpected argument '%s'", a);
			usage(stderr);
			return 2;
		}
	}
	if (!model && (ro.run || ro.region || ro.skip >= 0)) {
		kj_errorf("predict: --run, --region and --skip go with --model MODEL.yml");
		return 2;
	}
	if (!ro.run && (ro.region || ro.skip >= 0)) {
		kj_errorf("predict: --region and --skip choose the iterations of --run RUN.kjdb: give it");
		return 2;
	}
	if (!model && (!op || !shape || prop < 0)) {
		kj_errorf("predict: give --op, --precision, --prop and --shape, or --model MODEL.yml");
		usage(stderr);
		return 2;
	}
	struct kj_models *m;
	char err[1024];
	if (kj_models_open(dir, &m, err, sizeof(err))) {
		kj_errorf("predict: %s", err);
		return 1;
	}
	int rc;
	if (model) {
		rc = predict_model(m, gpu, model, json, &ro);
	} else {
		if (!gpu)
			gpu = kj_models_only_gpu(m);
		if (!gpu) {
			kj_errorf("predict: give --gpu NAME (the models hold %s)",
				  kj_models_count(m) ? "several GPUs" : "no model: models.json lists none");
			kj_models_close(m);
			return 2;
		}
		rc = predict_op(m, gpu, op, precision, prop, shape, json);
	}
	kj_models_close(m);
	return rc;
}
