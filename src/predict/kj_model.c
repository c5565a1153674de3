/* A transformer step as the operators the sweep measures: MODEL.yml's shape (layers, hidden,
 * heads, seq, batch, mp, precision, optimizer) into a list of (operator, shape, count). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kj_error.h"
#include "kj_predict.h"
#include "kj_yaml.h"

static const char *const int_keys[] = {"layers", "hidden", "heads", "seq", "batch", "mp", "tp", "dp",
					"intermediate", "vocab"};
#define NINT ((int)(sizeof(int_keys) / sizeof(int_keys[0])))

/* the value of one key into m; returns 0 or writes err */
static int set_key(struct kj_model_spec *m, const char *k, const char *val, char *msg, size_t len)
{
	int64_t *dst[] = {&m->layers, &m->hidden, &m->heads, &m->seq,  &m->batch,
			  &m->mp,     &m->tp,     &m->dp,    &m->intermediate, &m->vocab};
	for (int i = 0; i < NINT; i++)
		if (!strcmp(k, int_keys[i])) {
			char *end;
			errno = 0;
			long long x = strtoll(val, &end, 10);
			if (!*val || *end || errno || x < 1) {
				snprintf(msg, len, "'%s' is not a positive integer", val);
				return -1;
			}
			if ((!strcmp(k, "tp") || !strcmp(k, "dp")) && x > 65536) { /* GPU counts */
				snprintf(msg, len, "%lld GPUs is more than kjoule models (65536)", x);
				return -1;
			}
			*dst[i] = x;
			return 0;
		}
	struct {
		const char *key, *a, *b;
		int *dst;
	} words[] = {{"mode", "train", "inference", &m->train},
		     {"optimizer", "adam", "none", &m->adam},
		     {"norm", "RMSlayernorm", "layernorm", &m->rms},
		     {"rope", "true", "false", &m->rope},
		     {"attention", "flash", "unfused", &m->flash},
		     {"master_copies", "true", "false", &m->master_copies},
		     {"ffn", "swiglu", "gelu", &m->swiglu},
		     {"lm_head", "replicated", "parallel", &m->lm_head_replicated}};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(k, words[i].key)) {
			if (strcmp(val, words[i].a) && strcmp(val, words[i].b)) {
				snprintf(msg, len, "'%s' is neither %s nor %s", val, words[i].a, words[i].b);
				return -1;
			}
			*words[i].dst = !strcmp(val, words[i].a);
			return 0;
		}
	if (!strcmp(k, "precision")) {
		if ((m->precision = kj_precision_parse(val)) < 0) {
			snprintf(msg, len, "unknown precision '%s' (fp16, bf16 or fp32)", val);
			return -1;
		}
		return 0;
	}
	if (!strcmp(k, "gpu")) {
		snprintf(m->gpu, sizeof(m->gpu), "%s", val);
		return 0;
	}
	snprintf(msg, len, "unknown key (known: layers, hidden, heads, seq, batch, mp, tp, dp, precision, "
		 "mode, optimizer, norm, rope, attention, master_copies, ffn, intermediate, vocab, lm_head, gpu)");
	return -1;
}

int kj_model_load(const char *path, struct kj_model_spec *m, char *err, size_t len)
{
	FILE *f = fopen(path, "rb");
	yaml_parser_t p;
	yaml_document_t doc;
	int rc = 0;
	char msg[512];

	memset(m, 0, sizeof(*m));
	m->mp = 0; /* 0 until given: tp may give it */
	m->train = m->adam = m->flash = 1;
	if (!f) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		return KJ_EIO;
	}
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	if (!yaml_parser_load(&p, &doc)) {
		rc = kj_yaml_error(&p, path, err, len);
		yaml_parser_delete(&p);
		fclose(f);
		return rc;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		snprintf(err, len, "%s: expected a mapping (layers: 24, hidden: 1024, ...)", path);
		rc = KJ_EINVAL;
		goto out;
	}
	for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(&doc, pr->key), *v = yaml_document_get_node(&doc, pr->value);
		const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "?";
		if (v->type != YAML_SCALAR_NODE) {
			snprintf(err, len, "%s:%lu: key '%s': expected a single value", path,
				 (unsigned long)v->start_mark.line + 1, key);
			rc = KJ_EINVAL;
			goto out;
		}
		if (set_key(m, key, (const char *)v->data.scalar.value, msg, sizeof(msg))) {
			snprintf(err, len, "%s:%lu: key '%s': %s", path, (unsigned long)k->start_mark.line + 1,
				 key, msg);
			rc = KJ_EINVAL;
			goto out;
		}
	}
	int64_t *req[] = {&m->layers, &m->hidden, &m->heads, &m->seq, &m->batch};
	for (int i = 0; i < 5; i++)
		if (!*req[i]) {
			snprintf(err, len, "%s: key '%s': missing", path, int_keys[i]);
			rc = KJ_EINVAL;
			goto out;
		}
	/* tp is Megatron's mp under its usual name: one of them, or both the same */
	if (m->tp && m->mp && m->tp != m->mp) {
		snprintf(err, len, "%s: key 'tp': tp %lld and mp %lld differ (tp is the tensor-parallel size "
			 "mp names: give one, or both the same)", path, (long long)m->tp, (long long)m->mp);
		rc = KJ_EINVAL;
		goto out;
	}
	m->mp = m->tp ? m->tp : m->mp ? m->mp : 1;
	m->tp = m->mp;
	m->dp = m->dp ? m->dp : 1;
	if (m->dp > 1 && !m->train) {
		snprintf(err, len, "%s: key 'dp': dp %lld with mode inference: data parallelism adds "
			 "communication only to a training step (its gradient all-reduce); drop dp or use "
			 "mode train", path, (long long)m->dp);
		rc = KJ_EINVAL;
		goto out;
	}
	/* LLaMA's gated FFN (its width split over the tp ranks; modelled for inference: the
	 * optimizer's operators count a GELU FFN's parameters) and an output layer of its own */
	const struct {
		int bad;
		const char *key, *why;
	} rules[] = {
		{!m->swiglu && m->intermediate, "intermediate", "intermediate is the width of ffn: swiglu; add ffn: swiglu"},
		{m->swiglu && !m->intermediate, "ffn", "ffn: swiglu needs intermediate (its width)"},
		{m->swiglu && m->train, "ffn", "ffn: swiglu is modelled for mode inference (the optimizer's operators "
					      "count a GELU FFN's parameters)"},
		{m->swiglu && m->intermediate % m->mp != 0, "intermediate", "mp must divide intermediate"},
		{m->lm_head_replicated && !m->vocab, "lm_head", "lm_head: replicated needs vocab (the output layer's rows)"},
		{m->vocab && !m->lm_head_replicated && m->vocab % m->mp != 0, "vocab",
		 "mp must divide vocab (lm_head: parallel; replicated keeps it whole)"},
	};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (rules[i].bad) {
			snprintf(err, len, "%s: key '%s': %s", path, rules[i].key, rules[i].why);
			rc = KJ_EINVAL;
			goto out;
		}
	if (m->heads % m->mp || m->hidden % m->heads) {
		snprintf(err, len, "%s: key '%s': mp must divide heads and heads must divide hidden "
			 "(layers %lld, hidden %lld, heads %lld, mp %lld)", path,
			 m->heads % m->mp ? "mp" : "heads", (long long)m->layers, (long long)m->hidden,
			 (long long)m->heads, (long long)m->mp);
		rc = KJ_EINVAL;
	}
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	fclose(f);
	return rc;
}

int64_t kj_model_grad_bytes(const struct kj_model_spec *m)
{
	/* the last stage's parameters (lastStage_optimizer's count: layers, final norm, the output
	 * layer tied to the embedding) at the model's precision, whole fp32 elements */
	const struct kj_sweep_op *opt = kj_sweep_op_find("lastStage_optimizer");
	int64_t v[KJ_SWEEP_MAX_COLS] = {m->mp, m->hidden, m->layers};
	/* its bytes are params x (28 + e): recover the parameters from the table's one formula */
	int e = kj_precision_bytes(m->precision);
	double params = opt->bytes(v, KJ_FWD, e) / (28.0 + (e < 4 ? e : 0));
	int64_t b = (int64_t)(params + 0.5) * e;
	return (b + 3) / 4 * 4;
}

static int add(struct kj_model_term *t, int n, int cap, const char *op, int64_t count, int fwd_only,
	       int64_t a, int64_t b, int64_t c, int64_t d, int64_t e)
{
	if (n >= cap)
		return n;
	int64_t v[5] = {a, b, c, d, e};
	t[n].op = kj_sweep_op_find(op);
	memset(t[n].v, 0, sizeof(t[n].v));
	memcpy(t[n].v, v, sizeof(v));
	t[n].count = count;
	t[n].fwd_only = fwd_only;
	return n + 1;
}

int kj_model_terms(const struct kj_model_spec *m, struct kj_model_term *t, int cap)
{
	int64_t L = m->layers, b = m->batch, l = m->seq, d = m->hidden, h = m->heads, mp = m->mp;
	const char *norm = m->rms ? "RMSlayernorm" : "layernorm";
	int n = 0;
	n = add(t, n, cap, "embedding", 1, 0, mp, b, l, d, 0);
	n = add(t, n, cap, norm, 2 * L + 1, 0, b, l, d, 0, 0);
	n = add(t, n, cap, "linear1", L, 0, mp, b, l, d, 0);
	if (m->rope)
		n = add(t, n, cap, "RoPE", 2 * L, 0, mp, b, h, l, d);
	if (m->flash) {
		n = add(t, n, cap, "flash_atten", L, 0, mp, b, h, l, d);
	} else {
		n = add(t, n, cap, "baddbmm", L, 0, mp, b, h, l, d);
		n = add(t, n, cap, "ScaledUpperTriangMaskedSoftmax", L, 0, mp, b, h, l, 0);
		n = add(t, n, cap, "bmm", L, 0, mp, b, h, l, d);
	}
	n = add(t, n, cap, "linear2", L, 0, mp, b, l, d, 0);
	n = add(t, n, cap, "res_add", 2 * L, 0, b, l, d, 0, 0);
	if (m->swiglu) { /* LLaMA's gated FFN: gate and up fused, silu(gate) * up, down */
		n = add(t, n, cap, "ffn_gate_up", L, 0, mp, b, l, d, m->intermediate);
		n = add(t, n, cap, "silu_mul", L, 0, mp, b, l, m->intermediate, 0);
		n = add(t, n, cap, "ffn_down", L, 0, mp, b, l, d, m->intermediate);
	} else {
		n = add(t, n, cap, "linear3", L, 0, mp, b, l, d, 0);
		n = add(t, n, cap, "gelu", L, 0, mp, b, l, d, 0);
		n = add(t, n, cap, "linear4", L, 0, mp, b, l, d, 0);
	}
	if (m->vocab) /* an output layer of the model's own vocabulary, on every rank when replicated */
		n = add(t, n, cap, "lm_head", 1, 0, m->lm_head_replicated ? 1 : mp, b, l, d, m->vocab);
	else
		n = add(t, n, cap, "linear_final", 1, 0, mp, b, l, d, 0);
	if (m->train) {
		n = add(t, n, cap, "parallel_cross_entropy_128", 1, 0, mp, b, l, 0, 0);
		/* one pipeline stage holding everything: the last stage's parameters (layers, final
		 * norm, output layer tied to the embedding) */
		if (m->adam)
			n = add(t, n, cap, "lastStage_optimizer", 1, 1, mp, d, L, 0, 0);
		/* an AdamW over fp32 masters that neither reads the half gradients nor writes the half
		 * weights (PyTorch's): the two casts around it */
		if (m->adam && m->master_copies && m->precision != KJ_FP32)
			n = add(t, n, cap, "master_copies", 1, 1, mp, d, L, 0, 0);
	}
	/* tensor parallelism: the row-parallel linears' outputs summed over the tp ranks, twice a
	 * layer (attention out, FFN down) in a forward; a training step's backward sums the column-
	 * parallel inputs' gradients as often. Bytes: batch x seq x hidden at the model's precision. */
	if (m->tp > 1) {
		int64_t bytes = (b * l * d * kj_precision_bytes(m->precision) + 3) / 4 * 4;
		n = add(t, n, cap, "all_reduce", (m->train ? 4 : 2) * L, 1, m->tp, bytes, 0, 0, 0);
	}
	/* data parallelism: a training step's gradients all-reduced over the dp replicas in DDP's
	 * buckets, full ones and the rest */
	if (m->dp > 1 && m->train) {
		int64_t g = kj_model_grad_bytes(m), full = g / KJ_MODEL_DDP_BUCKET_BYTES;
		int64_t rest = g - full * KJ_MODEL_DDP_BUCKET_BYTES;
		if (full)
			n = add(t, n, cap, "all_reduce", full, 1, m->dp, KJ_MODEL_DDP_BUCKET_BYTES, 0, 0, 0);
		if (rest)
			n = add(t, n, cap, "all_reduce", 1, 1, m->dp, rest, 0, 0, 0);
	}
	return n;
}

const char *kj_model_op_tier(const char *op)
{
	static const struct {
		const char *op, *tier;
	} map[] = {{"linear1", "gemm"},
		   {"linear2", "gemm"},
		   {"linear3", "gemm"},
		   {"linear4", "gemm"},
		   {"linear_final", "gemm"},
		   {"ffn_gate_up", "gemm"},
		   {"ffn_down", "gemm"},
		   {"lm_head", "gemm"},
		   {"silu_mul", "elementwise"},
		   {"bmm", "gemm"},
		   {"baddbmm", "gemm"},
		   {"moe", "gemm"},
		   {"flash_atten", "attention"},
		   {"layernorm", "norm"},
		   {"RMSlayernorm", "norm"},
		   {"parallel_cross_entropy_128", "reduction"},
		   {"softmax", "reduction"},
		   {"ScaledUpperTriangMaskedSoftmax", "reduction"},
		   {"gelu", "elementwise"},
		   {"res_add", "elementwise"},
		   {"embedding", "elementwise"},
		   {"RoPE", "elementwise"},
		   {"fillmask", "elementwise"},
		   {"all_reduce", "communication"},
		   {"all_gather", "communication"},
		   {"reduce_scatter", "communication"},
		   {"broadcast", "communication"},
		   {"send_recv", "communication"}};
	for (size_t i = 0; op && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(op, map[i].op))
			return map[i].tier;
	return "other";
}
