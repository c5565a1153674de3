/* The sweep's operator table, config checks, shape grid, parts and CSV reader. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kj_error.h"
#include "kj_sweep.h"
#include "tmpdir.h"

static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_ops_table(void **state)
{
	(void)state;
	static const char *const seed[] = {
		"embedding", "layernorm", "RMSlayernorm", "linear1", "linear2", "linear3", "linear4",
		"linear_final", "flash_atten", "gelu", "RoPE", "res_add", "parallel_cross_entropy_128",
		"softmax", "fillmask", "baddbmm", "bmm", "ScaledUpperTriangMaskedSoftmax", "moe",
		"firstStage_optimizer", "middleStage_optimizer", "lastStage_optimizer", "master_copies",
		"ffn_gate_up", "silu_mul", "ffn_down", "lm_head"};
	/* the seed's 22, master_copies, LLaMA's gated FFN and output layer (4) and the five NCCL
	 * collectives */
	assert_int_equal(kj_sweep_op_count(), 32);
	for (size_t i = 0; i < sizeof(seed) / sizeof(seed[0]); i++) {
		const struct kj_sweep_op *op = kj_sweep_op_find(seed[i]);
		assert_non_null(op);
		int64_t v[KJ_SWEEP_MAX_COLS];
		for (int j = 0; j < op->ncolumns; j++)
			v[j] = 8;
		assert_null(op->columns[op->ncolumns]);
		for (int p = 0; p < 2; p++) {
			assert_true(op->flops(v, p) >= 0);
			assert_true(op->bytes(v, p, 2) >= 0);
		}
		assert_true(op->bytes(v, KJ_FWD, 2) > 0);
	}
	assert_null(kj_sweep_op_find("linear5"));
	/* flash_atten's columns as in the seed */
	const struct kj_sweep_op *fa = kj_sweep_op_find("flash_atten");
	assert_string_equal(fa->columns[2], "h");
	assert_int_equal(fa->ncolumns, 5);
	assert_int_equal(kj_sweep_op_find("moe")->ncolumns, 7);
}

static void test_ops_formulas(void **state)
{
	(void)state;
	/* linear1 mp=2 b=4 l=512 dim=1024: M=2048, N=3*1024/2=1536, K=1024, bias */
	const struct kj_sweep_op *op = kj_sweep_op_find("linear1");
	int64_t v[] = {2, 4, 512, 1024};
	double m = 2048, n = 1536, k = 1024;
	assert_true(op->flops(v, KJ_FWD) == 2 * m * n * k + m * n);
	assert_true(op->flops(v, KJ_BWD) == 4 * m * n * k + m * n);
	assert_true(op->bytes(v, KJ_FWD, 2) == (m * k + k * n + n + m * n) * 2);
	/* halving mp halves a column-parallel GEMM's work */
	int64_t v1[] = {1, 4, 512, 1024};
	assert_true(op->flops(v1, KJ_FWD) > 1.99 * op->flops(v, KJ_FWD));
	/* flash attention, causal: 4*b*(h/mp)*l*l*d/2 forward, 2.5x backward */
	const struct kj_sweep_op *fa = kj_sweep_op_find("flash_atten");
	int64_t a[] = {2, 1, 16, 1024, 2048};
	double fwd = 4.0 * 1 * 8 * 1024.0 * 1024 * 128 / 2;
	assert_true(fa->flops(a, KJ_FWD) == fwd);
	assert_true(fa->flops(a, KJ_BWD) == 2.5 * fwd);
	/* LLaMA's gated FFN at Vicuna-7B's sizes, mp 2, one token: gate and up fused dim -> 2*I/mp,
	 * down I/mp -> dim, silu(gate)*up over I/mp; the output layer over its own vocabulary */
	int64_t g[] = {2, 1, 1, 4096, 11008}, sm[] = {2, 1, 1, 11008}, lm[] = {2, 1, 1, 4096, 32000};
	assert_true(kj_sweep_op_find("ffn_gate_up")->flops(g, KJ_FWD) == 2.0 * 1 * 11008 * 4096);
	assert_true(kj_sweep_op_find("ffn_gate_up")->bytes(g, KJ_FWD, 2) == (4096 + 4096.0 * 11008 + 11008) * 2);
	assert_true(kj_sweep_op_find("ffn_down")->flops(g, KJ_FWD) == 2.0 * 4096 * 5504);
	assert_true(kj_sweep_op_find("ffn_down")->bytes(g, KJ_FWD, 2) == (5504 + 5504.0 * 4096 + 4096) * 2);
	assert_true(kj_sweep_op_find("silu_mul")->bytes(sm, KJ_FWD, 2) == 3.0 * 5504 * 2);
	assert_true(kj_sweep_op_find("silu_mul")->bytes(sm, KJ_BWD, 2) == 5.0 * 5504 * 2);
	assert_true(kj_sweep_op_find("lm_head")->flops(lm, KJ_FWD) == 2.0 * 16000 * 4096);
	char rule[128];
	int64_t odd[] = {3, 1, 1, 4096, 32000};
	assert_false(kj_sweep_shape_valid(kj_sweep_op_find("lm_head"), odd, rule, sizeof(rule)));
	assert_string_equal(rule, "mp must divide dim");
	int64_t oddv[] = {2, 1, 1, 4096, 32001};
	assert_false(kj_sweep_shape_valid(kj_sweep_op_find("lm_head"), oddv, rule, sizeof(rule)));
	assert_string_equal(rule, "mp must divide vocab");
	int64_t oddi[] = {2, 1, 1, 4096, 11007};
	assert_false(kj_sweep_shape_valid(kj_sweep_op_find("ffn_down"), oddi, rule, sizeof(rule)));
	assert_string_equal(rule, "mp must divide intermediate_size");
	/* an optimizer has no backward */
	const struct kj_sweep_op *opt = kj_sweep_op_find("middleStage_optimizer");
	int64_t o[] = {1, 1024, 2};
	assert_true(opt->flops(o, KJ_BWD) == 0 && opt->bytes(o, KJ_BWD, 2) == 0);
	assert_true(opt->flops(o, KJ_FWD) > 16.0 * 2 * 12 * 1024 * 1024);
	/* the master copies move the last stage's parameters: e + 4 bytes read, 4 + e written each,
	 * where the last stage's Adam moves 28 + e */
	const struct kj_sweep_op *cp = kj_sweep_op_find("master_copies"), *last = kj_sweep_op_find("lastStage_optimizer");
	double params = last->bytes(o, KJ_FWD, 2) / 30.0;
	assert_true(cp->flops(o, KJ_FWD) == 0 && cp->bytes(o, KJ_BWD, 2) == 0);
	assert_true(fabs(cp->bytes(o, KJ_FWD, 2) - 12.0 * params) < 1e-6 * params);
	assert_int_equal(kj_precision_parse("bf16"), KJ_BF16);
	assert_int_equal(kj_precision_parse("fp8"), -1);
	assert_int_equal(kj_precision_bytes(KJ_FP32), 4);
}

static const char *good =
	"{\n"
	"  # comment\n"
	"  \"module_name\": \"target_functions\",\n"
	"  \"kernel_name\": \"linear1\",\n"
	"  \"columns_name\": ['mp', 'b', 'l', 'dim', 'F_dur(us)', 'B_dur(us)'],\n"
	"  \"first_n_column\": 4,\n"
	"  \"starts\": [1, 4, 1024, 2048],\n"
	"  \"steps\": [2, 2, 512, 512],\n"
	"  \"ends\": [16, 8, 2048, 3072],\n"
	"  \"operators\": ['mul', 'mul', 'add', 'add'],\n"
	"  \"wait\": 2, \"warmup\": 2, \"active\": 10,\n"
	"  \"run\": \"get_all\"\n"
	"}\n";

static void test_config_good_and_grid(void **state)
{
	(void)state;
	struct kj_sweep_config c;
	char err[1024];
	assert_int_equal(kj_sweep_config_load(write_file("good.yml", good), &c, err, sizeof(err)), 0);
	assert_string_equal(c.op->name, "linear1");
	assert_int_equal(c.run, KJ_RUN_GET_ALL);
	int64_t vals[16];
	assert_int_equal(kj_sweep_axis_values(&c, 0, vals, 16), 5); /* 1 2 4 8 16 */
	assert_int_equal(vals[4], 16);
	assert_int_equal(kj_sweep_axis_values(&c, 2, vals, 16), 3); /* 1024 1536 2048 */
	assert_int_equal(vals[1], 1536);
	assert_int_equal(kj_sweep_grid_size(&c), 5 * 2 * 3 * 3);
	int64_t v[4];
	kj_sweep_grid_at(&c, 1, v); /* last column fastest */
	assert_int_equal(v[0], 1);
	assert_int_equal(v[3], 2560);
	/* parts: disjoint, together the whole (valid) grid */
	int64_t *all, n, inv, total = 0;
	assert_int_equal(kj_sweep_shapes(&c, 1, 1, &all, &n, &inv), 0);
	for (int p = 1; p <= 4; p++) {
		int64_t *s, m;
		assert_int_equal(kj_sweep_shapes(&c, 4, p, &s, &m, &inv), 0);
		for (int64_t i = 0; i < m; i++)
			assert_memory_equal(s + i * 4, all + ((i * 4) + p - 1) * 4, 4 * sizeof(int64_t));
		total += m;
		free(s);
	}
	assert_int_equal(total, n);
	free(all);
	assert_int_not_equal(kj_sweep_shapes(&c, 4, 5, &all, &n, &inv), 0);
}

/* each bad config: the message names the key and the line */
static void bad(const char *from, const char *to, const char *want)
{
	char text[4096], err[1024];
	struct kj_sweep_config c;
	const char *p = strstr(good, from);
	assert_non_null(p);
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(p - good), good, to, p + strlen(from));
	int rc = kj_sweep_config_load(write_file("bad.yml", text), &c, err, sizeof(err));
	if (rc != KJ_EINVAL || !strstr(err, want))
		fail_msg("for '%s' -> '%s' want '%s', got %d '%s'", from, to, want, rc, err);
}

static void test_config_bad(void **state)
{
	(void)state;
	bad("\"ends\": [16, 8, 2048, 3072]", "\"ends\": [16, 8, 2048]", "bad.yml:9: key 'ends': 3 values");
	bad("\"ends\": [16, 8, 2048, 3072]", "\"ends\": [16, 2, 2048, 3072]", "key 'ends': b ends at 2, below its start 4");
	bad("\"steps\": [2, 2, 512, 512]", "\"steps\": [1, 2, 512, 512]", ":8: key 'steps': mp: step 1 with 'mul' never advances");
	bad("\"steps\": [2, 2, 512, 512]", "\"steps\": [2, 2, 0, 512]", "key 'steps': l: step 0 with 'add' never advances");
	bad("\"kernel_name\": \"linear1\"", "\"kernel_name\": \"linear9\"", ":4: key 'kernel_name': unknown operator 'linear9'");
	bad("  \"first_n_column\": 4,\n", "", "key 'first_n_column': missing");
	bad("\"run\": \"get_all\"", "\"run\": \"get_some\"", "key 'run': 'get_some' is not");
	bad("'mul', 'mul', 'add', 'add'", "'mul', 'mul', 'add', 'sub'", "key 'operators': 'sub' is neither");
	bad("\"wait\": 2", "\"wiat\": 2", "key 'wiat': unknown key");
	bad("['mp', 'b', 'l', 'dim',", "['mp', 'b', 'h', 'dim',", "key 'columns_name': column 3 is 'h'");
	bad("\"starts\": [1, 4, 1024, 2048]", "\"starts\": [1, 4, x, 2048]", "key 'starts': 'x' is not an integer");
	bad("\"starts\": [1, 4, 1024, 2048],", "\"starts\": [1, 4, 1024, 2048", "bad.yml:");
	/* libyaml's own complaint, placed by line and column (kj_yaml_error) */
	bad("\"wait\": 2", "\"wait\": [2", ": YAML error: ");
}

static void test_shape_valid_and_parse(void **state)
{
	(void)state;
	const struct kj_sweep_op *fa = kj_sweep_op_find("flash_atten");
	char why[128];
	int64_t ok[] = {2, 4, 16, 1024, 2048}, no[] = {16, 4, 24, 1024, 2048};
	assert_true(kj_sweep_shape_valid(fa, ok, why, sizeof(why)));
	assert_false(kj_sweep_shape_valid(fa, no, why, sizeof(why)));
	assert_string_equal(why, "mp must divide h");
	int64_t v[4];
	assert_int_equal(kj_sweep_shape_parse("1,4,2048,4096", 4, v), 0);
	assert_int_equal(v[3], 4096);
	assert_int_equal(kj_sweep_shape_parse("1,4,2048", 4, v), -1);
	assert_int_equal(kj_sweep_shape_parse("1,4,2048,4096,5", 4, v), -1);
	assert_int_equal(kj_sweep_shape_parse("1,0,2048,4096", 4, v), -1);
	char buf[64];
	kj_sweep_shape_format(v, 4, buf, sizeof(buf));
	assert_string_equal(buf, "1,4,2048,4096");
}

static void test_csv_and_names(void **state)
{
	(void)state;
	struct kj_sweep_csv csv;
	char err[1024], hdr[512];
	kj_sweep_csv_header(kj_sweep_op_find("layernorm"), 1, hdr, sizeof(hdr));
	assert_string_equal(hdr, "b,l,dim,F_dur(us),B_dur(us),F_energy(uJ),F_energy_unc(uJ),"
				 "B_energy(uJ),B_energy_unc(uJ),status");
	const char *p = write_file("a.csv", "b,l,dim,F_dur(us),B_dur(us),status\n1,2,3,4.5,-,ok\n");
	assert_int_equal(kj_sweep_csv_read(p, NULL, &csv, err, sizeof(err)), 0);
	assert_int_equal(csv.nrows, 1);
	assert_string_equal(csv.rows[0][4], "-");
	kj_sweep_csv_free(&csv);
	p = write_file("b.csv", "b,l,dim,F_dur(us),B_dur(us),speed\n");
	assert_int_equal(kj_sweep_csv_read(p, NULL, &csv, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "b.csv:1: foreign column 'speed'"));
	p = write_file("c.csv", "b,l,dim,F_dur(us),B_dur(us)\n1,2,3,4,5\n1,2,3,nan,5\n");
	assert_int_equal(kj_sweep_csv_read(p, NULL, &csv, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "c.csv:3: column 'F_dur(us)': 'nan' is not a finite number or '-'"));
	p = write_file("d.csv", "b,l,dim,F_dur(us),B_dur(us)\n1,2,3,4\n");
	assert_int_equal(kj_sweep_csv_read(p, NULL, &csv, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "d.csv:2: 4 fields, the header has 5"));
	struct kj_sweep_name nm;
	assert_int_equal(kj_sweep_name_parse("x/NVIDIAH100_linear_final_bf16_4_2.csv", &nm), 0);
	assert_string_equal(nm.gpu, "NVIDIAH100");
	assert_string_equal(nm.op, "linear_final");
	assert_int_equal(nm.precision, KJ_BF16);
	assert_int_equal(nm.parts, 4);
	assert_int_equal(nm.part, 2);
	assert_int_equal(kj_sweep_name_parse("G_parallel_cross_entropy_128_fp16.csv", &nm), 0);
	assert_string_equal(nm.op, "parallel_cross_entropy_128");
	assert_int_equal(nm.parts, 0);
	assert_int_equal(kj_sweep_name_parse("G_nothing_fp16.csv", &nm), -1);
	char tag[64];
	kj_sweep_gpu_tag("NVIDIA A100-SXM4-80GB", tag, sizeof(tag));
	assert_string_equal(tag, "NVIDIAA100-SXM4-80GB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_table),
		cmocka_unit_test(test_ops_formulas),
		cmocka_unit_test(test_config_good_and_grid),
		cmocka_unit_test(test_config_bad),
		cmocka_unit_test(test_shape_valid_and_parse),
		cmocka_unit_test(test_csv_and_names),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
