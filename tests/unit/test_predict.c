/* Regressor features (SM table, waves), the transformer's operator terms and MODEL.yml checks. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kj_error.h"
#include "kj_predict.h"
#include "kj_sweep.h"
#include "tmpdir.h"

static void test_sm_table(void **state)
{
	(void)state;
	assert_int_equal(kj_predict_sm_count("NVIDIAH10080GBHBM3"), 132);
	assert_int_equal(kj_predict_sm_count("NVIDIAH100PCIe"), 114);
	assert_int_equal(kj_predict_sm_count("NVIDIAH200"), 132);
	assert_int_equal(kj_predict_sm_count("NVIDIAA100-SXM4-80GB"), 108);
	assert_int_equal(kj_predict_sm_count("NVIDIAA10"), 72);
	assert_int_equal(kj_predict_sm_count("MysteryGPU"), -1);
}

static void test_features(void **state)
{
	(void)state;
	const struct kj_sweep_op *op = kj_sweep_op_find("linear1");
	int64_t v[] = {1, 4, 512, 1024}; /* M = 2048, N = 3072: 16 x 24 tiles */
	assert_true(kj_predict_units(op, v, KJ_FWD, 2) == 16 * 24);
	float f[KJ_PREDICT_NF];
	double l2 = kj_predict_l2_bytes("NVIDIAH10080GBHBM3");
	assert_true(l2 == 50.0 * 1048576);
	kj_predict_features(op, v, KJ_FWD, 2, 132, l2, f);
	assert_true(fabsf(f[0] - (float)log1p(op->flops(v, KJ_FWD))) < 1e-3f); /* GEMM tiles: even */
	assert_true(f[2] == 3.0f); /* 384 / 132 = 2.9 waves -> 3 */
	assert_true(fabsf(f[3] - (float)(3.0 - 384.0 / 132)) < 1e-5f);
	assert_true(fabsf(f[4] - (float)log(op->bytes(v, KJ_FWD, 2) / l2)) < 1e-4f);
	assert_true(fabsf(f[KJ_PREDICT_COL0 + 2] - logf(512)) < 1e-4f);
	assert_true(isnan(f[KJ_PREDICT_COL0 + 4])); /* past the operator's columns */
	assert_true(f[5] == 6.0f && f[6] == 6.0f); /* N 3072, K 1024: both past the 64 cap */
	const struct kj_sweep_op *l2op = kj_sweep_op_find("linear2");
	int64_t odd[] = {2, 1, 1136, 1248}; /* N 1248 = 32 x 39, K = 1248 / 2 = 16 x 39 */
	kj_predict_features(l2op, odd, KJ_BWD, 2, 132, l2, f);
	assert_true(f[5] == 5.0f && f[6] == 4.0f); /* the forward product's N and K, either pass */
	kj_predict_features(kj_sweep_op_find("layernorm"), v, KJ_FWD, 2, 132, l2, f);
	assert_true(isnan(f[5]) && isnan(f[6])); /* no GEMM: missing */
	kj_predict_features(op, v, KJ_FWD, 2, -1, -1, f);
	assert_true(isnan(f[2]) && isnan(f[3]) && isnan(f[4]));
	assert_true(kj_predict_l2_bytes("SomeNewGPU") < 0);
	const struct kj_sweep_op *fa = kj_sweep_op_find("flash_atten");
	int64_t a[] = {2, 4, 16, 1024, 2048}; /* 4 * 8 heads x 8 query blocks */
	assert_true(kj_predict_units(fa, a, KJ_FWD, 2) == 256);
	/* causal attention: 32 heads x 8 query blocks of work 1..8 on 132 SMs (two forward CTAs an
	 * SM); the busiest slot works longer than the average, more so for fewer CTAs */
	double ia = kj_predict_imbalance(fa, a, KJ_FWD, 2, 132);
	int64_t one[] = {1, 1, 1, 1024, 64}; /* one head: 8 CTAs on 8 SMs, the last of work 8 */
	double i1 = kj_predict_imbalance(fa, one, KJ_FWD, 2, 132);
	assert_true(ia > 1.0 && ia < i1);
	assert_true(fabs(i1 - 8.0 * 264 / 36.0) < 1e-9); /* makespan 8, total work 36, 264 slots */
	assert_true(fabs(kj_predict_imbalance(fa, one, KJ_BWD, 2, 132) - 8.0 * 132 / 36.0) < 1e-9);
	/* 544 = 4.25 x 128: five CTAs of work 1..5 (makespan 5 of 15), on whole tiles: 640 queries
	 * against 576 keys (tiles of 64) forward, 640 keys against 544 queries (tiles of 32) backward */
	int64_t off[] = {1, 1, 1, 544, 64};
	double p544 = 640.0 / 544;
	assert_true(fabs(kj_predict_imbalance(fa, off, KJ_FWD, 2, 132) - p544 * 576.0 / 544 * 5.0 * 264 / 15.0) < 1e-9);
	assert_true(fabs(kj_predict_imbalance(fa, off, KJ_BWD, 2, 132) - p544 * 5.0 * 132 / 15.0) < 1e-9);
	assert_true(kj_predict_imbalance(op, v, KJ_FWD, 2, 132) == 1.0); /* whole 256 x 128 tiles */
	/* linear2 at dim 1088 (64 past 1024): M = 4 x 544 = 2176, N = 1088, K = 1088 (17 k-steps of
	 * 64). 256 x 128 tiles cover 2304 x 1152, the least: 128 x 256 cover 2176 x 1280, 128 x 128
	 * 2176 x 1152 at 0.9 of the rate */
	int64_t past[] = {1, 4, 544, 1088};
	double want = (2304.0 * 1152) / (2176.0 * 1088);
	assert_true(fabs(kj_predict_imbalance(l2op, past, KJ_FWD, 2, 132) - want) < 1e-9);
	/* the backward's two GEMMs ([M, K] over N, [N, K] over M) on whole tiles: even again */
	int64_t even[] = {1, 4, 512, 2048};
	assert_true(kj_predict_imbalance(l2op, even, KJ_BWD, 2, 132) == 1.0);
	assert_true(kj_predict_imbalance(l2op, past, KJ_BWD, 2, 132) > 1.0);
	/* layer norm's rows: 640 fp16 columns are 80 packs on 32 threads, 3 for the busiest: 96/80 */
	const struct kj_sweep_op *ln = kj_sweep_op_find("layernorm");
	int64_t r640[] = {1, 1, 640}, r768[] = {1, 1, 768};
	assert_true(fabs(kj_predict_imbalance(ln, r640, KJ_FWD, 2, 132) - 96.0 / 80) < 1e-9);
	assert_true(kj_predict_imbalance(ln, r768, KJ_FWD, 2, 132) == 1.0);
	/* layer norm's backward rows (ln_bwd_plan): 4096 rows of 2688 fp16 columns are 336 packs on 352
	 * threads, 2 blocks an SM: 264 blocks of 16 rows, 16 x 132 x 1024 / (4096 x 336); 2048
	 * columns: 256 threads, 4 blocks an SM but at most 512 (rows / 8) blocks of 8 rows */
	int64_t b2688[] = {2, 2048, 2688}, b2048[] = {2, 2048, 2048};
	assert_true(fabs(kj_predict_imbalance(ln, b2688, KJ_BWD, 2, 132) - 16.0 * 132 * 1024 / (4096.0 * 336)) < 1e-9);
	assert_true(fabs(kj_predict_imbalance(ln, b2048, KJ_BWD, 2, 132) - 8.0 * 132 * 1024 / (4096.0 * 256)) < 1e-9);
	/* softmax's backward rows are memory-bound: no busiest-lane factor; its forward computes on
	 * whole packs a lane: 640 fp16 columns are 80 packs, 3 a lane of 32, 96 slots for 80 */
	const struct kj_sweep_op *smx = kj_sweep_op_find("softmax");
	int64_t s640[] = {1, 1, 16, 640}, s1024[] = {1, 1, 16, 1024};
	assert_true(kj_predict_imbalance(smx, s640, KJ_BWD, 2, 132) == 1.0);
	assert_true(fabs(kj_predict_imbalance(smx, s640, KJ_FWD, 2, 132) - 96.0 / 80) < 1e-12);
	assert_true(kj_predict_imbalance(smx, s1024, KJ_FWD, 2, 132) == 1.0);
}

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

static void test_model_terms(void **state)
{
	(void)state;
	struct kj_model_spec m;
	char err[512];
	struct kj_model_term t[32];
	assert_int_equal(kj_model_load(write_file("m.yml", "layers: 24\nhidden: 2048\nheads: 16\n"
						  "seq: 1024\nbatch: 2\nmp: 2\nrope: true\n"),
				       &m, err, sizeof(err)), 0);
	int n = kj_model_terms(&m, t, 32);
	int found = 0;
	for (int i = 0; i < n; i++) {
		assert_non_null(t[i].op);
		if (!strcmp(t[i].op->name, "flash_atten")) {
			assert_int_equal(t[i].count, 24);
			int64_t want[] = {2, 2, 16, 1024, 2048};
			assert_memory_equal(t[i].v, want, sizeof(want));
			found++;
		}
		if (!strcmp(t[i].op->name, "RoPE"))
			assert_int_equal(t[i].count, 48), found++;
		if (!strcmp(t[i].op->name, "lastStage_optimizer")) {
			assert_true(t[i].fwd_only);
			assert_int_equal(t[i].v[2], 24);
			found++;
		}
		if (!strcmp(t[i].op->name, "layernorm"))
			assert_int_equal(t[i].count, 49), found++;
		assert_string_not_equal(t[i].op->name, "master_copies"); /* not asked for */
	}
	assert_int_equal(found, 4);
	/* master_copies: true adds the casts around the optimizer, over its parameters, once a step;
	 * an fp32 model has none to make */
	static const char *const prec[] = {"bf16", "fp32"};
	for (int k = 0; k < 2; k++) {
		char text[256];
		snprintf(text, sizeof(text), "layers: 4\nhidden: 1024\nheads: 8\nseq: 128\nbatch: 1\n"
			 "precision: %s\nmaster_copies: true\n", prec[k]);
		assert_int_equal(kj_model_load(write_file("mc.yml", text), &m, err, sizeof(err)), 0);
		n = kj_model_terms(&m, t, 32);
		int copies = 0;
		for (int i = 0; i < n; i++)
			if (!strcmp(t[i].op->name, "master_copies")) {
				int64_t want[] = {1, 1024, 4};
				assert_memory_equal(t[i].v, want, sizeof(want));
				assert_true(t[i].fwd_only && t[i].count == 1);
				copies++;
			}
		assert_int_equal(copies, k == 0 ? 1 : 0);
	}
	assert_int_equal(kj_model_load(write_file("md.yml", "layers: 2\nhidden: 1024\nheads: 8\nseq: 8\n"
						  "batch: 1\nmaster_copies: yes\n"), &m, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "md.yml:6: key 'master_copies': 'yes' is neither true nor false"));
	/* inference, unfused attention: no loss, no optimizer, three attention operators */
	assert_int_equal(kj_model_load(write_file("i.yml", "{layers: 2, hidden: 1024, heads: 8, seq: 128, "
						  "batch: 1, mode: inference, attention: unfused}"),
				       &m, err, sizeof(err)), 0);
	n = kj_model_terms(&m, t, 32);
	for (int i = 0; i < n; i++) {
		assert_string_not_equal(t[i].op->name, "parallel_cross_entropy_128");
		assert_string_not_equal(t[i].op->name, "flash_atten");
	}
	assert_int_equal(kj_model_load(write_file("b.yml", "layers: 2\nhidden: 1024\nheads: 12\nseq: 8\nbatch: 1\n"),
				       &m, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "heads must divide hidden"));
	assert_int_equal(kj_model_load(write_file("c.yml", "layers: 2\nhidden: 1024\nseq: 8\nbatch: 1\n"),
				       &m, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "key 'heads': missing"));
	assert_int_equal(kj_model_load(write_file("d.yml", "layers: 2\nhidden: 1024\nheads: 8\nseq: 8\n"
						  "batch: 1\nprecision: fp8\n"),
				       &m, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "d.yml:6: key 'precision': unknown precision 'fp8'"));
}

/* LLaMA's gated FFN and an output layer of the model's own vocabulary, replicated or split */
static void test_model_swiglu(void **state)
{
	(void)state;
	struct kj_model_spec m;
	struct kj_model_term t[32];
	char err[512];
	const char *llama = "layers: 4\nhidden: 4096\nheads: 32\nseq: 1\nbatch: 2\ntp: 2\nmode: inference\n"
			    "ffn: swiglu\nintermediate: 11008\nvocab: 32000\n";
	char text[512];
	snprintf(text, sizeof(text), "%slm_head: replicated\n", llama);
	assert_int_equal(kj_model_load(write_file("l.yml", text), &m, err, sizeof(err)), 0);
	int n = kj_model_terms(&m, t, 32), seen = 0;
	for (int i = 0; i < n; i++) {
		const char *op = t[i].op->name;
		/* the GELU FFN and the table's output layer are gone */
		assert_true(strcmp(op, "linear3") && strcmp(op, "gelu") && strcmp(op, "linear4") && strcmp(op, "linear_final"));
		if (!strcmp(op, "ffn_gate_up") || !strcmp(op, "ffn_down")) {
			assert_int_equal(t[i].count, 4);
			assert_int_equal(t[i].v[0], 2); /* mp */
			assert_int_equal(t[i].v[1] * t[i].v[2], 2); /* b x l tokens */
			assert_int_equal(t[i].v[4], 11008);
			seen++;
		} else if (!strcmp(op, "silu_mul")) {
			assert_int_equal(t[i].v[3], 11008);
			assert_int_equal(t[i].count, 4);
			seen++;
		} else if (!strcmp(op, "lm_head")) {
			assert_int_equal(t[i].v[0], 1); /* replicated: every rank holds all of it */
			assert_int_equal(t[i].v[4], 32000);
			assert_int_equal(t[i].count, 1);
			seen++;
		}
		assert_string_not_equal(kj_model_op_tier(op), "other");
	}
	assert_int_equal(seen, 4);
	/* split over the ranks by default */
	assert_int_equal(kj_model_load(write_file("p.yml", llama), &m, err, sizeof(err)), 0);
	n = kj_model_terms(&m, t, 32);
	for (int i = 0; i < n; i++)
		if (!strcmp(t[i].op->name, "lm_head"))
			assert_int_equal(t[i].v[0], 2);
	/* refusals, each naming the key */
	static const struct {
		const char *text, *want;
	} bad[] = {
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nmode: inference\nffn: swiglu\n",
		 "key 'ffn': ffn: swiglu needs intermediate"},
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nmode: inference\nintermediate: 2816\n",
		 "key 'intermediate': intermediate is the width of ffn: swiglu"},
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nffn: swiglu\nintermediate: 2816\n",
		 "key 'ffn': ffn: swiglu is modelled for mode inference"},
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nmp: 2\nmode: inference\nffn: swiglu\n"
		 "intermediate: 2817\n", "key 'intermediate': mp must divide intermediate"},
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nmp: 2\nvocab: 32001\n",
		 "key 'vocab': mp must divide vocab"},
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nlm_head: replicated\n",
		 "key 'lm_head': lm_head: replicated needs vocab"},
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nffn: geglu\n",
		 "key 'ffn': 'geglu' is neither swiglu nor gelu"},
		{"layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\nintermediate: 0\n",
		 "key 'intermediate': '0' is not a positive integer"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kj_model_load(write_file("bad.yml", bad[i].text), &m, err, sizeof(err)), KJ_EINVAL);
		if (!strstr(err, bad[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, bad[i].want);
	}
	/* a vocabulary of 70,000 with mp 1 is no GPU count: allowed */
	assert_int_equal(kj_model_load(write_file("v.yml", "layers: 2\nhidden: 1024\nheads: 8\nseq: 8\nbatch: 1\n"
						  "vocab: 70000\n"), &m, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sm_table),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_model_terms),
		cmocka_unit_test(test_model_swiglu),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
