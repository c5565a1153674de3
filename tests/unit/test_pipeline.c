/* Pipelines, CPU side: YAML parsing and shape checks (good and bad), expressions, FLOP counts,
 * the worker's line formats, the sequential and pipeline-parallel arithmetic on hand-computed
 * cases, summary.csv's format, and --from phase grouping on the shipped BLOOM-560M run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_pipeline.h"
#include "tmpdir.h"

#define STARTS(s, lit) (!strncmp((s), (lit), sizeof(lit) - 1))
#define RUN KJ_TEST_DATA "/../../examples/runs/bloom560m.kjdb"

static int read_text(const char *text, const struct kj_pipeline_overrides *ov, struct kj_pipeline_set *s,
		     char *err)
{
	return kj_pipeline_text_read("t.yml", text, strlen(text), ov, s, err, 512);
}

static const char good[] =
	"pipelines:\n"
	"  - name: a\n"
	"    precision: bf16\n"
	"    params: {batch: 2, tp: 8}\n"
	"    phases:\n"
	"      - {name: c1, type: conv, C: 3, H: 224, W: 224, M: 64, R: 7, S: 7, stride: 2, pad: 3}\n"
	"      - {name: seed, type: conv, C: 64, G: 1, M: 64, N: 1, P: 56, Q: 56, R: 3, S: 3, HS: 1, WS: 1,"
	" pad: 1}\n"
	"      - {name: dw, type: conv, C: 32, H: 14, W: 14, M: 32, R: 31, S: 31, pad: 15, groups: 32}\n"
	"      - {name: fc, type: matmul, M: 3*9216/tp, K: 9216, N: 197*batch, repeat: 12}\n"
	"      - {name: mp, type: pool, op: max, C: 64, H: 112, W: 112, R: 3, S: 3, stride: 2, pad: 1}\n"
	"      - {name: ln, type: norm, op: layer, N: 197*batch, C: 768}\n"
	"      - {name: at, type: attention, heads: 72/tp, seq: 128, head_dim: 128, causal: true}\n"
	"      - {name: cu, type: custom, kernel: add_relu, M: 64, N: 64}\n"
	"  - name: b\n"
	"    phases:\n"
	"      - {name: r, type: act, op: relu, C: 8}\n";

static void test_yaml_good(void **state)
{
	(void)state;
	struct kj_pipeline_set s;
	char err[512] = "";
	assert_int_equal(read_text(good, NULL, &s, err), 0);
	assert_int_equal(s.n, 2);
	struct kj_pipeline *p = &s.p[0];
	assert_string_equal(p->error, "");
	assert_string_equal(p->precision, "bf16");
	assert_int_equal(p->nphases, 8);
	struct kj_phase *c1 = &p->phases[0];
	assert_int_equal(c1->N, 2); /* batch fills a missing N */
	assert_int_equal(c1->P, 112);
	assert_int_equal(c1->Q, 112);
	/* the seed's notation: output P x Q given, input derived */
	assert_int_equal(p->phases[1].H, 56);
	assert_int_equal(p->phases[1].N, 1);
	assert_int_equal(p->phases[1].groups, 1);
	assert_int_equal(p->phases[2].P, 14);
	assert_int_equal(p->phases[3].M, 3456);
	assert_int_equal(p->phases[3].N, 394);
	assert_int_equal(p->phases[3].repeat, 12);
	assert_int_equal(p->phases[4].P, 56);
	assert_int_equal(p->phases[5].N, 394);
	assert_int_equal(p->phases[6].heads, 9);
	assert_int_equal(p->phases[6].seq_kv, 128);
	assert_int_equal(p->phases[6].causal, 1);
	assert_string_equal(p->phases[7].op, "add_relu");
	assert_string_equal(s.p[1].precision, "fp16");
	assert_int_equal(s.p[1].phases[0].N, 1);
	kj_pipeline_set_free(&s);

	/* overrides: --batch, --precision, --set tp=4 */
	struct kj_pipeline_overrides ov;
	memset(&ov, 0, sizeof(ov));
	ov.batch = 32;
	ov.precision = "fp32";
	ov.nset = 1;
	snprintf(ov.set_name[0], sizeof(ov.set_name[0]), "tp");
	ov.set_value[0] = 4;
	assert_int_equal(read_text(good, &ov, &s, err), 0);
	assert_int_equal(s.p[0].phases[0].N, 32);
	assert_int_equal(s.p[0].phases[3].N, 197 * 32);
	assert_int_equal(s.p[0].phases[3].M, 3 * 9216 / 4);
	assert_string_equal(s.p[0].phases[0].precision, "fp32");
	assert_string_equal(s.p[1].precision, "fp32");
	/* --set reaches the pipelines that declare the name (a declares tp, b does not) */
	assert_int_equal(s.p[0].set_used, 1u);
	assert_int_equal(s.p[1].set_used, 0u);
	for (int i = 0; i < s.p[1].nparams; i++)
		assert_string_not_equal(s.p[1].param_name[i], "tp");
	kj_pipeline_set_free(&s);
}

/* Each bad phase: the pipeline carries an error naming file, pipeline, phase and field; the
 * pipeline after it still reads. */
static void test_yaml_bad(void **state)
{
	(void)state;
	static const struct {
		const char *phase, *want;
	} cases[] = {
		{"{name: x, type: deconv, C: 3}", "field 'type': unknown layer type 'deconv'"},
		{"{name: x, type: conv, C: 3, H: 4, W: 4, M: 8, R: 7, S: 7}", "field P: output height is not positive"},
		{"{name: x, type: conv, C: 30, H: 8, W: 8, M: 32, R: 3, S: 3, groups: 4}",
		 "field groups: does not divide the input channels C"},
		{"{name: x, type: conv, C: 32, H: 8, W: 8, M: 30, R: 3, S: 3, groups: 4}",
		 "field groups: does not divide the output channels M"},
		{"{name: x, type: matmul, M: 8, K: 8, N: 8, Z: 1}", "field 'Z': unknown field"},
		{"{name: x, type: matmul, M: 8*heads, K: 8, N: 8}", "field 'M': '8*heads': unknown name 'heads'"},
		{"{name: x, type: matmul, M: 0, K: 8, N: 8}", "field 'M': '0': must be > 0"},
		/* a size given as 0 is refused, never taken as left out (defaults: repeat 1, N batch,
		 * stride 1, count 1, groups 1) */
		{"{name: x, type: matmul, M: 8, K: 8, N: 8, repeat: 0}", "(line 5): field 'repeat': '0': must be > 0"},
		{"{name: x, type: act, C: 8, N: 0}", "(line 5): field 'N': '0': must be > 0"},
		{"{name: x, type: act, C: 8, H: 0}", "field 'H': '0': must be > 0"},
		{"{name: x, type: conv, C: 8, H: 8, W: 8, M: 8, R: 3, S: 3, stride: 0}", "field 'stride': '0': must be > 0"},
		{"{name: x, type: conv, C: 8, H: 8, W: 8, M: 8, R: 3, S: 3, groups: 0}", "field 'groups': '0': must be > 0"},
		{"{name: x, type: matmul, M: 8, K: 8, N: 8, count: 0}", "field 'count': '0': must be > 0"},
		{"{name: x, type: matmul, M: 8, K: 8, N: 8, repeat: -2}", "field 'repeat': '-2': must be > 0"},
		{"{name: x, type: conv, C: 8, H: 8, W: 8, M: 8, R: 3, S: 3, pad: -1}", "field 'pad': '-1': must be >= 0"},
		{"{name: x, type: attention, heads: 2, seq: 8, head_dim: 64, causal: 2}", "field 'causal': '2': must be 0 or 1"},
		/* numbers are whole integers: no trailing text, no fractions, no words for numbers */
		{"{name: x, type: matmul, M: 3x, K: 8, N: 8}", "field 'M': '3x': unexpected text after the expression"},
		{"{name: x, type: matmul, M: 8.5, K: 8, N: 8}", "field 'M': '8.5': unexpected text"},
		{"{name: x, type: matmul, M: true, K: 8, N: 8}", "field 'M': 'true': unknown name 'true'"},
		{"{name: x, type: matmul, M: 99999999999999999999, K: 8, N: 8}", "field 'M': '99999999999999999999': number too large"},
		{"{name: x, type: matmul, M: 8, K: 8, N: 8, M: 16}", "field 'M': given twice (first on line 5)"},
		{"{name: x, type: pool, op: median, C: 8, H: 8, W: 8, R: 2, S: 2}", "field op: 'median'"},
		{"{name: x, type: conv, C: 8, H: 8, W: 8, M: 8, R: 3, S: 3, P: 7}", "field P: does not match"},
		{"{name: x, type: matmul, M: 8, K: 8, N: 8, precision: fp8}", "precision: 'fp8'"},
		{"{name: x, M: 8}", "field 'type': missing"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024], err[512] = "";
		struct kj_pipeline_set s;
		snprintf(text, sizeof(text),
			 "pipelines:\n  - name: bad\n    phases:\n      - {name: ok, type: act, C: 4}\n      - %s\n"
			 "  - name: fine\n    phases:\n      - {name: r, type: act, op: relu, C: 8}\n",
			 cases[i].phase);
		assert_int_equal(read_text(text, NULL, &s, err), 0);
		assert_int_equal(s.n, 2);
		if (!strstr(s.p[0].error, cases[i].want) || !strstr(s.p[0].error, "t.yml: pipeline 'bad': phase 'x'"))
			fail_msg("case %zu: '%s' lacks '%s'", i, s.p[0].error, cases[i].want);
		assert_int_equal(s.p[0].nphases, 0);
		assert_string_equal(s.p[1].error, "");
		assert_int_equal(s.p[1].nphases, 1);
		kj_pipeline_set_free(&s);
	}
	/* file-level errors */
	struct kj_pipeline_set s;
	char err[512] = "";
	assert_int_equal(read_text("pipelines: [\n  - {name: a\n", NULL, &s, err), KJ_EINVAL);
	assert_non_null(strstr(err, "t.yml:"));
	assert_non_null(strstr(err, "YAML error"));
	assert_int_equal(read_text("{}\n", NULL, &s, err), KJ_EINVAL);
	assert_non_null(strstr(err, "field 'pipelines': missing"));
	/* unknown keys: at the top (the file's line), in a pipeline (its line) */
	assert_int_equal(read_text("pipelines: []\nother: 1\n", NULL, &s, err), KJ_EINVAL);
	assert_non_null(strstr(err, "t.yml:2: field 'other': unknown"));
	assert_int_equal(read_text("pipelines:\n  - name: a\n    phase:\n      - {name: r, type: act, C: 8}\n",
				   NULL, &s, err), 0);
	assert_non_null(strstr(s.p[0].error, "t.yml: pipeline 'a' (line 3): field 'phase': unknown"));
	kj_pipeline_set_free(&s);
	assert_int_equal(read_text("pipelines:\n  - name: a\n    params: {tp: 2x}\n    phases:\n"
				   "      - {name: r, type: act, C: 8}\n", NULL, &s, err), 0);
	assert_non_null(strstr(s.p[0].error, "pipeline 'a' (line 3): field 'params.tp': '2x': unexpected text"));
	kj_pipeline_set_free(&s);
	assert_int_equal(read_text("pipelines:\n  - name: a\n    phases: []\n", NULL, &s, err), 0);
	assert_non_null(strstr(s.p[0].error, "field 'phases': empty"));
	kj_pipeline_set_free(&s);
	assert_int_equal(kj_pipeline_file_read("/nonexistent/x.yml", NULL, &s, err, sizeof(err)), KJ_EIO);
	assert_non_null(strstr(err, "/nonexistent/x.yml"));
}

static void test_expr(void **state)
{
	(void)state;
	struct kj_pipeline p;
	memset(&p, 0, sizeof(p));
	p.nparams = 1;
	snprintf(p.param_name[0], sizeof(p.param_name[0]), "tp");
	p.param_value[0] = 8;
	int64_t v;
	char err[128];
	assert_int_equal(kj_pipeline_expr_eval("3*9216/tp", &p, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 3456);
	assert_int_equal(kj_pipeline_expr_eval(" (1 + 2) * 3 - -1", &p, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 10);
	assert_int_equal(kj_pipeline_expr_eval("17 % 5", &p, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 2);
	assert_int_equal(kj_pipeline_expr_eval("1/0", &p, &v, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "division by zero"));
	assert_int_equal(kj_pipeline_expr_eval("2*", &p, &v, err, sizeof(err)), KJ_EINVAL);
	assert_int_equal(kj_pipeline_expr_eval("4611686018427387904*4", &p, &v, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "overflow"));
	assert_int_equal(kj_pipeline_expr_eval("(2", &p, &v, err, sizeof(err)), KJ_EINVAL);
	assert_int_equal(kj_pipeline_expr_eval("2 3", &p, &v, err, sizeof(err)), KJ_EINVAL);
}

static void test_cost_and_lines(void **state)
{
	(void)state;
	struct kj_phase ph, back;
	char err[128], line[600];
	double f, b;
	memset(&ph, 0, sizeof(ph));
	ph.kind = KJ_PHASE_CONV;
	snprintf(ph.name, sizeof(ph.name), "conv1 (7x7, stride 2)");
	ph.N = 1, ph.C = 3, ph.H = ph.W = 224, ph.M = 64, ph.R = ph.S = 7, ph.stride_h = 2, ph.pad_h = ph.pad_w = 3;
	assert_int_equal(kj_phase_check(&ph, err, sizeof(err)), 0);
	kj_phase_cost(&ph, &f, &b);
	assert_true(fabs(f - 2.0 * 64 * 112 * 112 * 3 * 7 * 7) < 1);
	assert_true(fabs(b - 2.0 * (3 * 224 * 224 + 64 * 3 * 49 + 64 * 112 * 112)) < 1);
	assert_true(kj_phase_format(&ph, line, sizeof(line)) > 0);
	assert_int_equal(kj_phase_parse(line, &back), 0);
	assert_int_equal(memcmp(&ph, &back, sizeof(ph)), 0);
	assert_int_equal(kj_phase_parse("type=conv C=x", &back), KJ_EINVAL);
	assert_int_equal(kj_phase_parse("type=nope", &back), KJ_EINVAL);
	assert_int_equal(kj_phase_parse("type=conv bogus=1", &back), KJ_EINVAL);
	memset(&ph, 0, sizeof(ph));
	ph.kind = KJ_PHASE_MATMUL;
	ph.M = 1000, ph.K = 2048, ph.N = 4;
	assert_int_equal(kj_phase_check(&ph, err, sizeof(err)), 0);
	kj_phase_cost(&ph, &f, &b);
	assert_true(fabs(f - 2.0 * 1000 * 2048 * 4) < 1);

	struct kj_phase_result r, r2;
	memset(&r, 0, sizeof(r));
	snprintf(r.status, sizeof(r.status), "ok");
	snprintf(r.error, sizeof(r.error), "energy not measured: no GPU,\ndriver, NVML");
	r.latency_ms = 0.0123, r.single_ms = 0.015, r.host_ms = 0.25, r.power_w = 412.5, r.energy_j = 0.00507, r.energy_unc_j = 1e-5;
	r.launches = 2000, r.has_energy = 1, r.sm_clock_mhz = 1755.4;
	char *buf = NULL;
	size_t len = 0;
	FILE *f2 = open_memstream(&buf, &len);
	kj_phase_result_emit(f2, &r);
	fclose(f2);
	memset(&r2, 0, sizeof(r2));
	assert_int_equal(kj_phase_result_parse(buf, &r2), 1);
	assert_string_equal(r2.status, "ok");
	assert_string_equal(r2.error, "energy not measured: no GPU, driver, NVML\n");
	assert_true(fabs(r2.latency_ms - 0.0123) < 1e-9);
	assert_true(fabs(r2.single_ms - 0.015) < 1e-9);
	assert_true(fabs(r2.host_ms - 0.25) < 1e-9);
	assert_true(fabs(r2.energy_j - 0.00507) < 1e-9);
	assert_int_equal(r2.launches, 2000);
	assert_int_equal(r2.has_energy, 1);
	assert_true(fabs(r2.sm_clock_mhz - 1755) < 1e-9); /* whole MHz on the line */
	/* a line without sm_mhz (an older worker): the clock is unknown, 0 */
	assert_int_equal(kj_phase_result_parse("KJ_PHASE status=ok latency_ns=1000 error=", &r2), 1);
	assert_true(r2.sm_clock_mhz == 0);
	assert_int_equal(kj_phase_result_parse("KJ_SEQ x=1", &r2), 0);
	assert_int_equal(kj_phase_result_parse("KJ_PHASE latency_ns=abc status=ok", &r2), KJ_EINVAL);
	free(buf);
}

/* Three phases, latencies 1, 3, 2 ms (the last twice), energies 0.5, 1.2, 0.6 J, idle 100 W:
 * sequential 1 + 3 + 2x2 = 8 ms and 0.5 + 1.2 + 2x0.6 = 2.9 J; period 3 ms (phase 1); pipeline-
 * parallel (0.5 + 2 ms x 100 W) + 1.2 + 2 x (0.6 + 1 ms x 100 W) = 0.7 + 1.2 + 1.4 = 3.3 J. */
static void test_totals(void **state)
{
	(void)state;
	struct kj_phase ph[4];
	struct kj_phase_result r[4];
	struct kj_pipeline p;
	struct kj_pipeline_totals t;
	memset(ph, 0, sizeof(ph));
	memset(r, 0, sizeof(r));
	memset(&p, 0, sizeof(p));
	p.phases = ph;
	p.nphases = 3;
	double lat[] = {1, 3, 2, 9}, en[] = {0.5, 1.2, 0.6, 9};
	int64_t rep[] = {1, 1, 2, 1};
	for (int i = 0; i < 4; i++) {
		ph[i].repeat = rep[i];
		snprintf(r[i].status, sizeof(r[i].status), "ok");
		r[i].latency_ms = lat[i];
		r[i].energy_j = en[i];
		r[i].dynamic_j = en[i] - 100 * lat[i] * 1e-3;
		r[i].has_energy = 1;
	}
	kj_pipeline_totals(&p, r, 100, &t);
	assert_true(fabs(t.seq_latency_ms - 8) < 1e-12);
	assert_true(fabs(t.seq_energy_j - 2.9) < 1e-12);
	assert_true(fabs(t.seq_dynamic_j - (2.9 - 0.8)) < 1e-12);
	assert_true(fabs(t.pp_period_ms - 3) < 1e-12);
	assert_int_equal(t.bottleneck, 1);
	assert_true(fabs(t.pp_energy_j - 3.3) < 1e-12);
	assert_int_equal(t.stages, 4);
	assert_int_equal(t.failed, 0);
	/* a failed phase (the slowest) is left out of every sum and counted */
	p.nphases = 4;
	snprintf(r[3].status, sizeof(r[3].status), "failed");
	kj_pipeline_totals(&p, r, 100, &t);
	assert_int_equal(t.failed, 1);
	assert_true(fabs(t.pp_energy_j - 3.3) < 1e-12);
	assert_int_equal(t.bottleneck, 1);
	/* idle unknown: no pipeline-parallel energy */
	kj_pipeline_totals(&p, r, -1, &t);
	assert_true(isnan(t.pp_energy_j));
	assert_true(fabs(t.seq_energy_j - 2.9) < 1e-12);
	/* a measured phase without an energy (--no-energy, no counter): time still summed, every
	 * energy sum unknown, never a partial sum */
	r[2].has_energy = 0;
	kj_pipeline_totals(&p, r, 100, &t);
	assert_int_equal(t.energy_unmeasured, 1);
	assert_true(fabs(t.seq_latency_ms - 8) < 1e-12);
	assert_true(isnan(t.seq_energy_j) && isnan(t.seq_dynamic_j) && isnan(t.pp_energy_j));
	r[2].has_energy = 1;
	/* one stage only: pipeline-parallel = sequential */
	p.nphases = 1;
	kj_pipeline_totals(&p, r, 100, &t);
	assert_true(fabs(t.pp_energy_j - 0.5) < 1e-12);
}

/* Fields of one CSV line, quotes honoured. */
static int csv_fields(const char *line)
{
	int n = 1, q = 0;
	for (const char *c = line; *c && *c != '\n'; c++) {
		if (*c == '"')
			q = !q;
		else if (*c == ',' && !q)
			n++;
	}
	return n;
}

static void test_summary_csv(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	kj_summary_header_write(f);
	struct kj_summary_row row;
	memset(&row, 0, sizeof(row));
	row.name = "resnet50";
	row.batch = 4;
	row.precision = "fp16";
	row.status = "partial";
	row.note = "1 phase(s) failed, first 'x': out of memory: \"big\", sorry";
	row.bottleneck = "layer1.0.conv2";
	row.idle_source = "given (--idle-w)";
	row.t.phases = 3, row.t.failed = 1, row.t.stages = 2, row.t.bottleneck = 0;
	row.t.seq_latency_ms = 8, row.t.seq_energy_j = 2.9, row.t.pp_period_ms = 3, row.t.pp_energy_j = 3.3;
	row.t.idle_w = 100;
	kj_summary_row_write(f, &row);
	row.status = "failed";
	row.t.bottleneck = -1;
	row.t.idle_w = -1;
	kj_summary_row_write(f, &row);
	fclose(f);
	char *l1 = buf, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
	assert_int_equal(csv_fields(l1), 17);
	assert_int_equal(csv_fields(l2), 17);
	assert_int_equal(csv_fields(l3), 17);
	assert_true(STARTS(l1, "name,batch,precision,status,phases,failed_phases,stages,seq_latency_ms,seq_energy_j,"));
	assert_true(STARTS(l2, "resnet50,4,fp16,partial,3,1,2,8.000000,2.9,"));
	assert_non_null(strstr(l2, ",3.000000,3.000000,0.825,100.00,given (--idle-w),")); /* 3.3 J / 4 items */
	assert_non_null(strstr(l2, "\"1 phase(s) failed, first 'x': out of memory: \"\"big\"\", sorry\""));
	assert_non_null(strstr(l3, "resnet50,4,fp16,failed,3,1,2,,,,layer1.0.conv2,,,,,given"));
	free(buf);
}

/* --from on the shipped run: forward#28 holds 631 operations (ordinals 0..630) and one nested
 * NVTX range (cub::DeviceScan::InclusiveScan); which ordinals fall inside it is checked against
 * SQL written independently here. */
static void test_from_grouping(void **state)
{
	(void)state;
	struct kj_pipeline p;
	int64_t it = -1;
	char err[512] = "";
	assert_int_equal(kj_pipeline_from_run(RUN, 1, NULL, &p, &it, err, sizeof(err)), 0);
	assert_int_equal(it, 28);
	assert_string_equal(p.name, "forward#28");
	assert_int_equal(p.nphases, 3);
	assert_string_equal(p.phases[1].name, "cub::DeviceScan::InclusiveScan");
	assert_non_null(strstr(p.phases[0].name, "(before cub::"));
	assert_non_null(strstr(p.phases[2].name, "(after cub::"));
	assert_int_equal(p.phases[0].first, 0);
	assert_int_equal(p.phases[2].last, 630);
	for (int i = 0; i < 3; i++)
		assert_int_equal(p.phases[i].kind, KJ_PHASE_SEQ);
	assert_int_equal(p.phases[0].last + 1, p.phases[1].first);
	assert_int_equal(p.phases[1].last + 1, p.phases[2].first);
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(RUN, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
		"WITH f AS (SELECT start_ns s, end_ns e FROM nvtx_range WHERE name = 'forward' ORDER BY start_ns"
		" LIMIT 1 OFFSET 27), c AS (SELECT n.start_ns s, n.end_ns e FROM nvtx_range n, f"
		" WHERE n.name = 'cub::DeviceScan::InclusiveScan' AND n.start_ns BETWEEN f.s AND f.e)"
		" SELECT min(q.ordinal), max(q.ordinal), count(*) FROM sequence_op q JOIN launch_params l"
		" ON l.id = q.launch_params_id, c WHERE q.iteration = 28 AND l.launch_ns BETWEEN c.s AND c.e",
		-1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_true(sqlite3_column_int64(st, 2) > 0);
	assert_int_equal(p.phases[1].first, sqlite3_column_int64(st, 0));
	assert_int_equal(p.phases[1].last, sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(p.phases);

	assert_int_equal(kj_pipeline_from_run(RUN, 0, NULL, &p, &it, err, sizeof(err)), 0);
	assert_int_equal(p.nphases, 1);
	assert_int_equal(p.phases[0].first, 0);
	assert_int_equal(p.phases[0].last, 630);
	free(p.phases);
	assert_int_equal(kj_pipeline_from_run(RUN, 1, "cub::DeviceScan::InclusiveScan", &p, &it, err, sizeof(err)), 0);
	assert_int_equal(p.nphases, 1);
	free(p.phases);
	assert_int_equal(kj_pipeline_from_run(RUN, 2, NULL, &p, &it, err, sizeof(err)), KJ_ENOTFOUND);
	assert_non_null(strstr(err, "no NVTX range at depth 2"));
	assert_int_equal(kj_pipeline_from_run(RUN, 1, "nope", &p, &it, err, sizeof(err)), KJ_ENOTFOUND);
	assert_non_null(strstr(err, "no NVTX range named 'nope'"));
	assert_int_equal(kj_pipeline_from_run("/nonexistent.kjdb", 1, NULL, &p, &it, err, sizeof(err)) < 0, 1);
}

/* The shipped files read without error and their FLOP totals match the published figures
 * (multiply-adds x 2, within 3 %). */
static void test_shipped_configs(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		double gflop;
	} want[] = {
		{"resnet18.yml", 3.64}, {"resnet50.yml", 8.21}, {"mobilenet_v3_small.yml", 0.12},
		{"efficientnet_b0.yml", 0.80}, {"vit_b_16.yml", 35.1}, {"replknet31b.yml", 30.6},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char path[512], err[512] = "";
		struct kj_pipeline_set s;
		snprintf(path, sizeof(path), KJ_TEST_DATA "/../../configs/pipelines/%s", want[i].file);
		assert_int_equal(kj_pipeline_file_read(path, NULL, &s, err, sizeof(err)), 0);
		assert_int_equal(s.n, 1);
		assert_string_equal(s.p[0].error, "");
		double tot = 0;
		for (int k = 0; k < s.p[0].nphases; k++) {
			double f, b;
			kj_phase_cost(&s.p[0].phases[k], &f, &b);
			tot += f * (double)s.p[0].phases[k].repeat;
		}
		if (fabs(tot * 1e-9 / want[i].gflop - 1) > 0.03)
			fail_msg("%s: %.3f GFLOP, published %.3f", want[i].file, tot * 1e-9, want[i].gflop);
		kj_pipeline_set_free(&s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_good),     cmocka_unit_test(test_yaml_bad),
		cmocka_unit_test(test_expr),          cmocka_unit_test(test_cost_and_lines),
		cmocka_unit_test(test_totals),        cmocka_unit_test(test_summary_csv),
		cmocka_unit_test(test_from_grouping), cmocka_unit_test(test_shipped_configs),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
