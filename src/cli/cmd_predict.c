/* kjoule predict: time and energy of one operator shape, or of a transformer step, from the
 * models `kjoule fit` saved. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_predict.h"
#include "kj_sweep.h"
#include "cmd_predict_run.h"

/* What a --model total is the sum of, printed beside it: a measured step also holds the rest. */
#define MODEL_SCOPE                                                                               \
	"the sum of these operators' kernels: not in it are the GPU's idle time between kernels, "      \
	"communication other than the tp/dp all-reduces listed (none without tp or dp), overlap of "   \
	"communication with compute (the sum counts both whole), and kernels a framework runs beside " \
	"them (unfused losses, separate bias "                                                         \
	"gradients, slower norms: docs/sweep.md, 'Against a measured step')"

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
		"rope: false, attention: flash|unfused, master_copies: false|true, gpu) predicted as the sum\n"
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

/* x with two decimals, or four significant digits from 1e7 on (no digit cut off); "-" when !ok */
static void fmt(char *buf, size_t len, double x, int ok)
{
	if (ok && isfinite(x))
		snprintf(buf, len, fabs(x) < 1e7 ? "%.2f" : "%.4g", x);
	else
		snprintf(buf, len, "-");
}

/* "; 10.31% at this size, 23 rows" where fit measured the error of figures of this size */
static void at_size(char *buf, size_t len, const struct kj_prediction *p)
{
	if (p->found && p->size_mape_pct >= 0 && isfinite(p->size_mape_pct))
		snprintf(buf, len, "; %.2f%% at this size, %d rows", p->size_mape_pct, p->size_n);
	else
		buf[0] = 0;
}

/* One line of predict_op's text: "  time    12.34 us   (held-out MAPE 0.50%; ...)", the error
 * unknown outside the measured grid, no figure where the model does not resolve one. */
static void print_target(const char *what, const char *unit, const struct kj_prediction *p)
{
	char v[32], mape[32], sz[96];
	if (!p->found) {
		printf("  %-7s -  (no model)\n", what);
		return;
	}
	if (!p->resolved) {
		printf("  %-7s no figure: %s\n", what, p->unresolved);
		return;
	}
	fmt(v, sizeof(v), p->value, 1);
	if (p->nout) {
		printf("  %-7s %s %s   (error unknown outside the measured grid)\n", what, v, unit);
		return;
	}
	fmt(mape, sizeof(mape), p->mape_pct, p->mape_pct >= 0);
	at_size(sz, sizeof(sz), p);
	printf("  %-7s %s %s   (held-out MAPE %s%%%s%s)\n", what, v, unit, mape, sz,
	       p->grid_known ? "" : "; the measured grid is unknown: models.json predates it, refit to check");
}

/* p's misses of the measured grid as JSON ([{column, value, min, max}]; null: not recorded) */
static json_t *outside_json(const struct kj_sweep_op *op, const struct kj_prediction *p)
{
	if (!p->found || !p->grid_known)
		return json_null();
	json_t *a = json_array();
	for (int i = 0; i < p->nout; i++)
		json_array_append_new(a, json_pack("{s:s,s:I,s:I,s:I}", "column", op->columns[p->out[i].col], "value",
						   (json_int_t)p->out[i].value, "min", (json_int_t)p->out[i].lo, "max",
						   (json_int_t)p->out[i].hi));
	return a;
}

/* the figure of p as JSON: null without a model or where the model does not resolve one */
static json_t *value_json(const struct kj_prediction *p)
{
	return kj_predict_num_or_null(p->value, p->found && p->resolved);
}

/* in the measured grid: 1 inside (both models), 0 outside (either), -1 not recorded */
static int in_grid(const struct kj_prediction *t, const struct kj_prediction *e)
{
	if ((t->found && t->nout) || (e->found && e->nout))
		return 0;
	return (!t->found || t->grid_known) && (!e->found || e->grid_known) ? 1 : -1;
}

static int predict_op(struct kj_models *m, const char *gpu, const char *opname, int precision,
		      int prop, const char *shape, int json)
{
	const struct kj_sweep_op *op = kj_sweep_op_find(opname);
	int64_t v[KJ_SWEEP_MAX_COLS];
	char err[1024], why[128];
	struct kj_prediction t, e;
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
	if (kj_models_predict(m, gpu, op, precision, prop, "time", v, &t, err, sizeof(err)) ||
	    kj_models_predict(m, gpu, op, precision, prop, "energy", v, &e, err, sizeof(err))) {
		kj_errorf("predict: %s", err);
		return 1;
	}
	if (!t.found && !e.found) {
		kj_errorf("predict: no model for %s %s %s on %s (run kjoule fit on its sweep CSVs)",
			  op->name, kj_precision_name(precision), prop ? "bwd" : "fwd", gpu);
		return 1;
	}
	int ig = in_grid(&t, &e);
	const char *impl = t.found && t.implementation[0] ? t.implementation : e.implementation;
	char tout[512], eout[512];
	kj_prediction_outside(op, &t, tout, sizeof(tout));
	kj_prediction_outside(op, &e, eout, sizeof(eout));
	if (json) {
		json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "gpu", gpu, "op", op->name, "precision",
				      kj_precision_name(precision), "prop", prop ? "bwd" : "fwd", "shape", shape);
		json_object_set_new(j, "time_us", value_json(&t));
		json_object_set_new(j, "time_mape_pct", kj_predict_num_or_null(t.mape_pct, t.found && t.mape_pct >= 0));
		json_object_set_new(j, "energy_uj", value_json(&e));
		json_object_set_new(j, "energy_mape_pct", kj_predict_num_or_null(e.mape_pct, e.found && e.mape_pct >= 0));
		json_object_set_new(j, "time_mape_at_size_pct",
				    kj_predict_num_or_null(t.size_mape_pct, t.found && t.size_mape_pct >= 0));
		json_object_set_new(j, "time_rows_at_size", json_integer(t.found ? t.size_n : 0));
		json_object_set_new(j, "energy_mape_at_size_pct",
				    kj_predict_num_or_null(e.size_mape_pct, e.found && e.size_mape_pct >= 0));
		json_object_set_new(j, "energy_rows_at_size", json_integer(e.found ? e.size_n : 0));
		json_object_set_new(j, "in_grid", ig < 0 ? json_null() : json_boolean(ig));
		json_object_set_new(j, "time_outside_grid", outside_json(op, &t));
		json_object_set_new(j, "energy_outside_grid", outside_json(op, &e));
		json_object_set_new(j, "error_note", ig == 0 ? json_string("error unknown outside the measured grid")
						    : ig < 0 ? json_string("the measured grid is unknown: models.json "
									   "predates it, refit to check")
							     : json_null());
		json_object_set_new(j, "time_unresolved", t.found && !t.resolved ? json_string(t.unresolved) : json_null());
		json_object_set_new(j, "energy_unresolved", e.found && !e.resolved ? json_string(e.unresolved) : json_null());
		json_object_set_new(j, "implementation", impl[0] ? json_string(impl) : json_null());
		json_dumpf(j, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
		printf("\n");
		json_decref(j);
		return 0;
	}
	printf("%s %s %s %s on %s%s%s%s\n", op->name, kj_precision_name(precision), prop ? "bwd" : "fwd", shape, gpu,
	       impl[0] ? " (fitted on " : "", impl, impl[0] ? ")" : "");
	print_target("time", "us", &t);
	print_target("energy", "uJ", &e);
	if (tout[0] || eout[0])
		printf("  outside the measured grid: %s\n", tout[0] ? tout : eout);
	if (tout[0] && eout[0] && strcmp(tout, eout))
		printf("  outside the energy model's grid: %s\n", eout);
	return 0;
}

#define MAX_TERMS 32

/* where --run takes the measured step from */
struct run_opts {
	const char *run, *region;
	int skip;
};

/* term i's step total (count x fwd, + bwd where it has one) into the tier sums */
static int add_to_tier(struct kj_tier_sum *ts, int n, const char *op, double t, int t_ok, double e, int e_ok)
{
	const char *tier = kj_model_op_tier(op);
	int i = 0;
	while (i < n && strcmp(ts[i].tier, tier))
		i++;
	if (i == n) {
		memset(&ts[i], 0, sizeof(ts[i]));
		ts[i].tier = tier;
		ts[i].time_ok = ts[i].energy_ok = 1;
		n++;
	}
	size_t used = strlen(ts[i].ops);
	if (used + strlen(op) + 3 < sizeof(ts[i].ops))
		snprintf(ts[i].ops + used, sizeof(ts[i].ops) - used, "%s%s", used ? ", " : "", op);
	ts[i].time_us += t;
	ts[i].energy_uj += e;
	ts[i].time_ok &= t_ok;
	ts[i].energy_ok &= e_ok;
	return n;
}

static int predict_model(struct kj_models *m, const char *gpu_opt, const char *path, int json,
			 const struct run_opts *ro)
{
	struct kj_model_spec spec;
	struct kj_model_term t[MAX_TERMS];
	char err[1024];
	if (kj_model_load(path, &spec, err, sizeof(err))) {
		kj_errorf("predict: %s", err);
		return 1;
	}
	const char *gpu = gpu_opt ? gpu_opt : spec.gpu[0] ? spec.gpu : kj_models_only_gpu(m);
	if (!gpu) {
		kj_errorf("predict: %s: give --gpu NAME", kj_models_count(m) ? "the models hold several GPUs"
									   : "models.json lists no model");
		return 2;
	}
	int n = kj_model_terms(&spec, t, MAX_TERMS), ntiers = 0;
	struct kj_tier_sum tiers[MAX_TERMS]; /* the step's time and energy by tier: what was predicted */
	int missing_t = 0, missing_e = 0;
	char missing[1024] = "", unresolved[1024] = "", outside[2048] = "";
	int grid_unknown = 0;
	json_t *rows = json_array();
	/* the text table is held until the run, if any, has been read: a bad run prints no table */
	char *tab_text = NULL;
	size_t tab_len = 0;
	FILE *tab = json ? NULL : open_memstream(&tab_text, &tab_len);
	if (!json && !tab) {
		kj_errorf("predict: out of memory");
		goto fail;
	}
	if (!json)
		fprintf(tab, "%-31s %5s %-22s %12s %12s %14s %14s  %s\n", "operator", "count", "shape", "fwd us",
			"bwd us", "fwd uJ", "bwd uJ", "grid");
	for (int i = 0; i < n; i++) {
		struct kj_prediction p[4];
		char shape[128];
		kj_sweep_shape_format(t[i].v, t[i].op->ncolumns, shape, sizeof(shape));
		for (int k = 0; k < 4; k++) {
			int prop = k % 2;
			memset(&p[k], 0, sizeof(p[k]));
			if (prop == 1 && (t[i].fwd_only || !spec.train))
				continue;
			if (kj_models_predict(m, gpu, t[i].op, spec.precision, prop, k < 2 ? "time" : "energy",
					      t[i].v, &p[k], err, sizeof(err))) {
				kj_errorf("predict: %s", err);
				goto fail;
			}
			if (!p[k].found || !p[k].resolved) { /* no figure: the totals leave it out */
				missing_t += k < 2;
				missing_e += k >= 2;
				char *list = p[k].found ? unresolved : missing;
				if (!strstr(list, t[i].op->name) && strlen(list) + 64 < sizeof(missing))
					snprintf(list + strlen(list), sizeof(missing) - strlen(list), "%s%s",
						 list[0] ? ", " : "", t[i].op->name);
			}
		}
		int need_b = spec.train && !t[i].fwd_only;
		double v[4]; /* what was predicted, per call: time fwd, bwd, energy fwd, bwd */
		int ok[4], out_k = -1, unknown = 0, any = 0;
		for (int k = 0; k < 4; k++) {
			int used = k % 2 == 0 || need_b;
			ok[k] = p[k].found && p[k].resolved;
			v[k] = ok[k] && used ? p[k].value : 0.0;
			if (used && p[k].found && p[k].nout && (out_k < 0 || p[k].nout > p[out_k].nout))
				out_k = k;
			unknown |= used && p[k].found && !p[k].grid_known;
			any |= used && p[k].found;
		}
		grid_unknown |= unknown;
		char where[512] = ""; /* how far outside the measured grid the shape lies */
		if (out_k >= 0) {
			kj_prediction_outside(t[i].op, &p[out_k], where, sizeof(where));
			size_t used = strlen(outside);
			if (used + strlen(where) + 64 < sizeof(outside))
				snprintf(outside + used, sizeof(outside) - used, "%s%s (%s)", used ? "; " : "",
					 t[i].op->name, where);
		}
		ntiers = add_to_tier(tiers, ntiers, t[i].op->name, t[i].count * (v[0] + v[1]),
				     ok[0] && (!need_b || ok[1]), t[i].count * (v[2] + v[3]), ok[2] && (!need_b || ok[3]));
		if (json) {
			json_t *r = json_pack("{s:s,s:I,s:s}", "op", t[i].op->name, "count",
					      (json_int_t)t[i].count, "shape", shape);
			json_t *cols = json_array();
			for (int c = 0; c < t[i].op->ncolumns; c++)
				json_array_append_new(cols, json_string(t[i].op->columns[c]));
			json_object_set_new(r, "columns", cols);
			json_object_set_new(r, "backward", json_boolean(need_b));
			json_object_set_new(r, "tier", json_string(kj_model_op_tier(t[i].op->name)));
			json_object_set_new(r, "fwd_us", kj_predict_num_or_null(p[0].value, ok[0]));
			json_object_set_new(r, "bwd_us", kj_predict_num_or_null(p[1].value, need_b && ok[1]));
			json_object_set_new(r, "fwd_uj", kj_predict_num_or_null(p[2].value, ok[2]));
			json_object_set_new(r, "bwd_uj", kj_predict_num_or_null(p[3].value, need_b && ok[3]));
			/* outside the grid its rows spanned the error is unknown; null: not recorded */
			json_object_set_new(r, "in_grid", out_k >= 0 ? json_false() : unknown || !any ? json_null() : json_true());
			json_object_set_new(r, "outside_grid", where[0] ? json_string(where) : json_null());
			json_array_append_new(rows, r);
		} else {
			char a[32], b[32], c[32], d[32];
			fmt(a, sizeof(a), p[0].value, ok[0]);
			fmt(b, sizeof(b), p[1].value, need_b && ok[1]);
			fmt(c, sizeof(c), p[2].value, ok[2]);
			fmt(d, sizeof(d), p[3].value, need_b && ok[3]);
			fprintf(tab, "%-31s %5lld %-22s %12s %12s %14s %14s  %s\n", t[i].op->name, (long long)t[i].count,
				shape, a, b, c, d, out_k >= 0 ? "OUTSIDE" : unknown ? "unknown" : any ? "in" : "-");
		}
	}
	double time_us = 0, energy_uj = 0; /* of what was predicted: partial where something is missing */
	for (int i = 0; i < ntiers; i++)
		time_us += tiers[i].time_us, energy_uj += tiers[i].energy_uj;
	const char *what = spec.train ? "training step" : "inference forward";
	json_t *against = NULL;
	if (ro->run && !(against = kj_predict_against_run(ro->run, ro->region, ro->skip, tiers, ntiers, time_us,
							   !missing_t, energy_uj, !missing_e, gpu)))
		goto fail;
	if (against) /* operators the models extrapolate: the step's error holds them too */
		json_object_set_new(against, "outside_grid", json_string(outside));
	if (tab) {
		fclose(tab);
		fputs(tab_text ? tab_text : "", stdout);
		free(tab_text);
	}
	if (json) {
		json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:o}", "gpu", gpu, "model", path, "what", what,
				      "precision", kj_precision_name(spec.precision), "operators", rows);
		json_object_set_new(j, "time_us", kj_predict_num_or_null(time_us, !missing_t));
		json_object_set_new(j, "energy_uj", kj_predict_num_or_null(energy_uj, !missing_e));
		/* null, not 0, where no operator has a figure */
		json_object_set_new(j, "time_us_partial", kj_predict_num_or_null(time_us, time_us > 0));
		json_object_set_new(j, "energy_uj_partial", kj_predict_num_or_null(energy_uj, energy_uj > 0));
		json_object_set_new(j, "missing_models", json_string(missing));
		json_object_set_new(j, "unresolved", json_string(unresolved));
		json_object_set_new(j, "outside_grid", json_string(outside));
		json_object_set_new(j, "scope", json_string(MODEL_SCOPE));
		if (against)
			json_object_set_new(j, "against", against);
		json_dumpf(j, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
		printf("\n");
		json_decref(j);
	} else {
		json_decref(rows);
		char ts[48] = "- (no operator predicted)", es[48] = "- (no operator predicted)";
		if (time_us > 0)
			snprintf(ts, sizeof(ts), "%.3f ms%s", time_us / 1e3, missing_t ? " (partial)" : "");
		if (energy_uj > 0)
			snprintf(es, sizeof(es), "%.3f J%s", energy_uj / 1e6, missing_e ? " (partial)" : "");
		printf("%s on %s: time %s, energy %s\n", what, gpu, ts, es);
		if (missing[0])
			printf("no model for: %s (their rows show '-'; the totals leave them out)\n", missing);
		if (unresolved[0])
			printf("no figure the model resolves (outside its measured grid) for: %s (their rows show '-'; "
			       "the totals leave them out)\n", unresolved);
		if (outside[0])
			printf("outside the measured grid, error unknown: %s\n", outside);
		if (grid_unknown)
			printf("grid 'unknown': models.json predates the record of the measured grid (refit to check "
			       "these shapes against it)\n");
		printf("%s\n", MODEL_SCOPE);
		if (against) {
			kj_predict_against_print(against, stdout);
			json_decref(against);
		}
	}
	return 0;
fail: /* nothing printed yet: the table waits in tab */
	json_decref(rows);
	if (tab)
		fclose(tab);
	free(tab_text);
	return 1;
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
