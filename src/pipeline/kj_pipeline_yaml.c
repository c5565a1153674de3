/* Pipeline files (YAML, libyaml's document API): every message names the file, the line, the
 * pipeline, the phase and the field. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kj_error.h"
#include "kj_pipeline.h"
#include "kj_yaml.h"

struct ctx {
	yaml_document_t *doc;
	const char *path;
	const struct kj_pipeline_overrides *ov;
};

static yaml_node_t *node(struct ctx *c, int id)
{
	return yaml_document_get_node(c->doc, id);
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in a mapping node, NULL when absent. */
static yaml_node_t *map_get(struct ctx *c, yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(node(c, p->key));
		if (k && !strcmp(k, key))
			return node(c, p->value);
	}
	return NULL;
}

/* The key of an earlier pair of mapping m with the same key as pair pr (a key given twice), or
 * NULL. */
static yaml_node_t *dup_key(struct ctx *c, yaml_node_t *m, yaml_node_pair_t *pr)
{
	const char *k = scalar(node(c, pr->key));
	for (yaml_node_pair_t *q = m->data.mapping.pairs.start; k && q < pr; q++) {
		const char *kq = scalar(node(c, q->key));
		if (kq && !strcmp(kq, k))
			return node(c, q->key);
	}
	return NULL;
}

/* 1 when key is one of the NULL-terminated list. */
static int key_known(const char *key, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(key, *list))
			return 1;
	return 0;
}

struct ifield {
	const char *key;
	size_t off;
	size_t off2; /* second field set with the same value (stride, pad, dilation, seq), or 0 */
};
#define O(m) offsetof(struct kj_phase, m)
static const struct ifield ifields[] = {
	{"N", O(N), 0}, {"C", O(C), 0}, {"H", O(H), 0}, {"W", O(W), 0}, {"M", O(M), 0},
	{"K", O(K), 0}, {"R", O(R), 0}, {"S", O(S), 0}, {"P", O(P), 0}, {"Q", O(Q), 0},
	{"head_dim", O(K), 0}, {"stride", O(stride_h), O(stride_w)}, {"stride_h", O(stride_h), 0},
	{"stride_w", O(stride_w), 0}, {"HS", O(stride_h), 0}, {"WS", O(stride_w), 0},
	{"pad", O(pad_h), O(pad_w)}, {"pad_h", O(pad_h), 0}, {"pad_w", O(pad_w), 0},
	{"dilation", O(dil_h), O(dil_w)}, {"dil_h", O(dil_h), 0}, {"dil_w", O(dil_w), 0},
	{"groups", O(groups), 0}, {"G", O(groups), 0}, {"count", O(count), 0},
	{"heads", O(heads), 0}, {"seq", O(seq_q), O(seq_kv)}, {"seq_q", O(seq_q), 0},
	{"seq_kv", O(seq_kv), 0}, {"causal", O(causal), 0}, {"repeat", O(repeat), 0},
	{"window", O(R), O(S)}, {"kernel_size", O(R), O(S)},
};

/* One phase mapping into ph; returns 0 or KJ_EINVAL with "phase 'x': field 'y': why" in err. */
static int phase_read(struct ctx *c, struct kj_pipeline *p, yaml_node_t *m, int idx,
		      struct kj_phase *ph, char *err, size_t errlen)
{
	char why[256];
	memset(ph, 0, sizeof(*ph));
	snprintf(ph->name, sizeof(ph->name), "#%d", idx + 1);
	if (!m || m->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "phase %d: not a mapping", idx + 1);
		return KJ_EINVAL;
	}
	const char *nm = scalar(map_get(c, m, "name"));
	if (nm)
		snprintf(ph->name, sizeof(ph->name), "%s", nm);
	const char *type = scalar(map_get(c, m, "type"));
	if (!type) {
		snprintf(err, errlen, "phase '%s' (line %lu): field 'type': missing", ph->name,
			 (unsigned long)m->start_mark.line + 1);
		return KJ_EINVAL;
	}
	int kind = kj_phase_kind_parse(type);
	if (kind < 0 || kind == KJ_PHASE_SEQ) {
		snprintf(err, errlen, "phase '%s' (line %lu): field 'type': unknown layer type '%s' (conv, "
			 "matmul, pool, norm, act, attention, custom)", ph->name,
			 (unsigned long)m->start_mark.line + 1, type);
		return KJ_EINVAL;
	}
	ph->kind = (enum kj_phase_kind)kind;
	snprintf(ph->precision, sizeof(ph->precision), "%s", p->precision);
	/* the pipeline's layout holds for the kinds whose tensors have channels */
	ph->nhwc = !strcmp(p->layout, "nhwc") && (ph->kind == KJ_PHASE_CONV || ph->kind == KJ_PHASE_NORM ||
						  ph->kind == KJ_PHASE_POOL || ph->kind == KJ_PHASE_ACT);
	ph->conv_fastest = ph->kind == KJ_PHASE_CONV && !strcmp(p->conv_algo, "fastest");
	int bn_plane = -1; /* the phase's own bn_kernel, -1 when it names none */
	for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; pr++) {
		const char *k = scalar(node(c, pr->key));
		yaml_node_t *vn = node(c, pr->value);
		const char *v = scalar(vn);
		unsigned long line = (unsigned long)vn->start_mark.line + 1;
		if (!k) {
			snprintf(err, errlen, "phase '%s' (line %lu): a key that is not a word", ph->name, line);
			return KJ_EINVAL;
		}
		yaml_node_t *first = dup_key(c, m, pr);
		if (first) {
			snprintf(err, errlen, "phase '%s' (line %lu): field '%s': given twice (first on line %lu)",
				 ph->name, line, k, (unsigned long)first->start_mark.line + 1);
			return KJ_EINVAL;
		}
		if (!strcmp(k, "name") || !strcmp(k, "type"))
			continue;
		if (!v) {
			snprintf(err, errlen, "phase '%s' (line %lu): field '%s': not a scalar", ph->name, line, k);
			return KJ_EINVAL;
		}
		if (!strcmp(k, "op") || !strcmp(k, "kernel") || !strcmp(k, "mode")) {
			snprintf(ph->op, sizeof(ph->op), "%s", v);
			continue;
		}
		if (!strcmp(k, "precision")) {
			if (!c->ov || !c->ov->precision)
				snprintf(ph->precision, sizeof(ph->precision), "%s", v);
			continue;
		}
		if (!strcmp(k, "conv_algo")) {
			if (!kj_pipeline_conv_algo_ok(v)) {
				snprintf(err, errlen, "phase '%s' (line %lu): field 'conv_algo': '%s' is not fastest "
					 "or heuristic", ph->name, line, v);
				return KJ_EINVAL;
			}
			if (!c->ov || !c->ov->conv_algo)
				ph->conv_fastest = ph->kind == KJ_PHASE_CONV && !strcmp(v, "fastest");
			continue;
		}
		if (!strcmp(k, "bn_kernel")) {
			if (!kj_pipeline_bn_kernel_ok(v)) {
				snprintf(err, errlen, "phase '%s' (line %lu): field 'bn_kernel': '%s' is not vector "
					 "or plane", ph->name, line, v);
				return KJ_EINVAL;
			}
			bn_plane = !strcmp(v, "plane");
			continue;
		}
		if (!strcmp(k, "layout")) {
			if (!kj_pipeline_layout_ok(v)) {
				snprintf(err, errlen, "phase '%s' (line %lu): field 'layout': '%s' is not nchw or nhwc",
					 ph->name, line, v);
				return KJ_EINVAL;
			}
			if (!c->ov || !c->ov->layout)
				ph->nhwc = !strcmp(v, "nhwc");
			continue;
		}
		size_t i;
		for (i = 0; i < sizeof(ifields) / sizeof(ifields[0]); i++)
			if (!strcmp(k, ifields[i].key))
				break;
		if (i == sizeof(ifields) / sizeof(ifields[0])) {
			snprintf(err, errlen, "phase '%s' (line %lu): field '%s': unknown field", ph->name, line, k);
			return KJ_EINVAL;
		}
		int64_t x;
		int is_causal = !strcmp(k, "causal"), is_pad = !strncmp(k, "pad", 3);
		if (is_causal && (!strcmp(v, "true") || !strcmp(v, "false"))) {
			x = !strcmp(v, "true");
		} else if (kj_pipeline_expr_eval(v, p, &x, why, sizeof(why))) {
			snprintf(err, errlen, "phase '%s' (line %lu): field '%s': '%s': %s", ph->name, line, k, v, why);
			return KJ_EINVAL;
		}
		/* a size given is a size: 0 is never "absent" (only a field left out takes its default) */
		const char *bad = is_causal ? (x != 0 && x != 1 ? "must be 0 or 1 (or true, false)" : NULL) :
				  is_pad ? (x < 0 ? "must be >= 0" : NULL) : (x <= 0 ? "must be > 0" : NULL);
		if (bad) {
			snprintf(err, errlen, "phase '%s' (line %lu): field '%s': '%s': %s (%" PRId64 ")", ph->name, line,
				 k, v, bad, x);
			return KJ_EINVAL;
		}
		*(int64_t *)((char *)ph + ifields[i].off) = x;
		if (ifields[i].off2)
			*(int64_t *)((char *)ph + ifields[i].off2) = x;
	}
	/* the batch-norm kernel: the command line's, else the phase's, else the pipeline's, which holds
	 * for NCHW batch norm only (channels-last batch norm has one kernel) */
	if (c->ov && c->ov->bn_kernel)
		bn_plane = -1;
	if (bn_plane >= 0)
		ph->bn_plane = bn_plane;
	else
		ph->bn_plane = !strcmp(p->bn_kernel, "plane") && ph->kind == KJ_PHASE_NORM && !ph->nhwc &&
			       (!ph->op[0] || !strcmp(ph->op, "batch"));
	/* a batch dimension left out is the pipeline's batch */
	if (!ph->N && ph->kind != KJ_PHASE_MATMUL && ph->kind != KJ_PHASE_CUSTOM)
		for (int i = 0; i < p->nparams; i++)
			if (!strcmp(p->param_name[i], "batch"))
				ph->N = p->param_value[i];
	if (kj_phase_check(ph, why, sizeof(why))) {
		snprintf(err, errlen, "phase '%s' (line %lu): field %s", ph->name,
			 (unsigned long)m->start_mark.line + 1, why);
		return KJ_EINVAL;
	}
	return 0;
}

static int param_set(struct kj_pipeline *p, const char *name, int64_t v)
{
	for (int i = 0; i < p->nparams; i++)
		if (!strcmp(p->param_name[i], name)) {
			p->param_value[i] = v;
			return 0;
		}
	if (p->nparams == 16 || strlen(name) >= sizeof(p->param_name[0]))
		return KJ_EINVAL;
	snprintf(p->param_name[p->nparams], sizeof(p->param_name[0]), "%s", name);
	p->param_value[p->nparams++] = v;
	return 0;
}

/* One pipeline mapping; on error p->error holds the message (prefixed by file and pipeline). */
/* A pipeline-wide word field (layout, conv_algo, bn_kernel): the command line's override, else the file's, else
 * dflt, into dst; KJ_EINVAL with the field named in err when ok() refuses it. */
static int pipeline_word(struct ctx *c, yaml_node_t *m, const char *key, const char *override,
			 int (*ok)(const char *), const char *dflt, const char *choices, char *dst, size_t len,
			 char *err, size_t errlen)
{
	const char *v = override ? override : scalar(map_get(c, m, key));
	if (v && !ok(v)) {
		snprintf(err, errlen, "field '%s': '%s' is not %s", key, v, choices);
		return KJ_EINVAL;
	}
	snprintf(dst, len, "%s", v ? v : dflt);
	return 0;
}

static const char *const pipeline_keys[] = {"name", "description", "precision", "layout", "conv_algo",
					    "bn_kernel", "params", "phases", NULL};

static void pipeline_read(struct ctx *c, yaml_node_t *m, int idx, struct kj_pipeline *p)
{
	char err[400], why[256];
	unsigned long eline = 0; /* the line of a pipeline-level error, 0 when it has none */
	snprintf(p->file, sizeof(p->file), "%s", c->path);
	snprintf(p->name, sizeof(p->name), "#%d", idx + 1);
	snprintf(p->precision, sizeof(p->precision), "fp16");
	err[0] = 0;
	if (!m || m->type != YAML_MAPPING_NODE) {
		snprintf(err, sizeof(err), "not a mapping");
		goto bad;
	}
	const char *nm = scalar(map_get(c, m, "name"));
	if (nm)
		snprintf(p->name, sizeof(p->name), "%s", nm);
	for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; pr++) {
		const char *k = scalar(node(c, pr->key));
		yaml_node_t *first = dup_key(c, m, pr);
		unsigned long line = (unsigned long)node(c, pr->key)->start_mark.line + 1;
		if (!k || !key_known(k, pipeline_keys)) {
			eline = line;
			snprintf(err, sizeof(err), "field '%s': unknown (a pipeline has name, description, precision, "
				 "layout, conv_algo, bn_kernel, params, phases)", k ? k : "?");
			goto bad;
		}
		if (first) {
			eline = line;
			snprintf(err, sizeof(err), "field '%s': given twice (first on line %lu)", k,
				 (unsigned long)first->start_mark.line + 1);
			goto bad;
		}
	}
	if (!nm) {
		snprintf(err, sizeof(err), "field 'name': missing");
		goto bad;
	}
	const char *d = scalar(map_get(c, m, "description"));
	if (d)
		snprintf(p->description, sizeof(p->description), "%s", d);
	const char *prec = c->ov && c->ov->precision ? c->ov->precision : scalar(map_get(c, m, "precision"));
	if (prec)
		snprintf(p->precision, sizeof(p->precision), "%s", prec);
	if (!kj_pipeline_elem_bytes(p->precision)) {
		snprintf(err, sizeof(err), "field 'precision': '%s' is not fp16, bf16 or fp32", prec);
		goto bad;
	}
	if (pipeline_word(c, m, "layout", c->ov ? c->ov->layout : NULL, kj_pipeline_layout_ok, "nchw", "nchw or nhwc",
			  p->layout, sizeof(p->layout), err, sizeof(err)) ||
	    pipeline_word(c, m, "conv_algo", c->ov ? c->ov->conv_algo : NULL, kj_pipeline_conv_algo_ok, "heuristic",
			  "fastest or heuristic", p->conv_algo, sizeof(p->conv_algo), err, sizeof(err)) ||
	    pipeline_word(c, m, "bn_kernel", c->ov ? c->ov->bn_kernel : NULL, kj_pipeline_bn_kernel_ok, "vector",
			  "vector or plane", p->bn_kernel, sizeof(p->bn_kernel), err, sizeof(err)))
		goto bad;
	param_set(p, "batch", 1);
	yaml_node_t *pm = map_get(c, m, "params");
	if (pm && pm->type != YAML_MAPPING_NODE) {
		snprintf(err, sizeof(err), "field 'params': not a mapping");
		goto bad;
	}
	for (yaml_node_pair_t *pr = pm ? pm->data.mapping.pairs.start : NULL; pm && pr < pm->data.mapping.pairs.top;
	     pr++) {
		const char *k = scalar(node(c, pr->key)), *v = scalar(node(c, pr->value));
		yaml_node_t *first = dup_key(c, pm, pr);
		unsigned long line = (unsigned long)node(c, pr->key)->start_mark.line + 1;
		int64_t x;
		if (first) {
			eline = line;
			snprintf(err, sizeof(err), "field 'params.%s': given twice (first on line %lu)", k,
				 (unsigned long)first->start_mark.line + 1);
			goto bad;
		}
		if (!k || !v) {
			eline = line;
			snprintf(err, sizeof(err), "field 'params.%s': not a scalar", k ? k : "?");
			goto bad;
		}
		if (kj_pipeline_expr_eval(v, p, &x, why, sizeof(why))) {
			eline = line;
			snprintf(err, sizeof(err), "field 'params.%s': '%s': %s", k, v, why);
			goto bad;
		}
		if (param_set(p, k, x)) {
			eline = line;
			snprintf(err, sizeof(err), "field 'params.%s': more than 16 params, or a name of 24 characters "
				 "or more", k);
			goto bad;
		}
	}
	if (c->ov && c->ov->batch > 0)
		param_set(p, "batch", c->ov->batch);
	/* --set reaches the pipelines that declare the name; the command refuses one none declares */
	for (int i = 0; c->ov && i < c->ov->nset; i++)
		for (int j = 0; j < p->nparams; j++)
			if (!strcmp(p->param_name[j], c->ov->set_name[i])) {
				p->param_value[j] = c->ov->set_value[i];
				p->set_used |= 1u << i;
			}
	yaml_node_t *ps = map_get(c, m, "phases");
	if (!ps || ps->type != YAML_SEQUENCE_NODE) {
		snprintf(err, sizeof(err), "field 'phases': %s", ps ? "not a list" : "missing");
		goto bad;
	}
	int n = (int)(ps->data.sequence.items.top - ps->data.sequence.items.start);
	if (!n) {
		snprintf(err, sizeof(err), "field 'phases': empty");
		goto bad;
	}
	p->phases = calloc((size_t)n, sizeof(*p->phases));
	if (!p->phases) {
		snprintf(err, sizeof(err), "out of memory");
		goto bad;
	}
	for (int i = 0; i < n; i++) {
		if (phase_read(c, p, node(c, ps->data.sequence.items.start[i]), i, &p->phases[i], err,
			       sizeof(err)))
			goto bad;
		p->nphases++;
	}
	return;
bad:
	if (eline)
		snprintf(p->error, sizeof(p->error), "%s: pipeline '%s' (line %lu): %s", c->path, p->name, eline, err);
	else
		snprintf(p->error, sizeof(p->error), "%s: pipeline '%s'%s%s", c->path, p->name,
			 err[0] ? ": " : "", err);
	free(p->phases);
	p->phases = NULL;
	p->nphases = 0;
}

int kj_pipeline_text_read(const char *path, const char *text, size_t len,
			  const struct kj_pipeline_overrides *ov, struct kj_pipeline_set *out,
			  char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct ctx c = {&doc, path, ov};
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!yaml_parser_initialize(&parser))
		return KJ_ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = kj_yaml_error(&parser, path, err, errlen);
		yaml_parser_delete(&parser);
		return rc;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	for (yaml_node_pair_t *pr = root && root->type == YAML_MAPPING_NODE ? root->data.mapping.pairs.start : NULL;
	     pr && pr < root->data.mapping.pairs.top; pr++) {
		const char *k = scalar(node(&c, pr->key));
		unsigned long line = (unsigned long)node(&c, pr->key)->start_mark.line + 1;
		if (!k || strcmp(k, "pipelines") || dup_key(&c, root, pr)) {
			snprintf(err, errlen, "%s:%lu: field '%s': %s", path, line, k ? k : "?",
				 k && !strcmp(k, "pipelines") ? "given twice" : "unknown (a pipeline file holds 'pipelines:')");
			rc = KJ_EINVAL;
			goto out;
		}
	}
	yaml_node_t *list = map_get(&c, root, "pipelines");
	if (!list || list->type != YAML_SEQUENCE_NODE) {
		snprintf(err, errlen, "%s: field 'pipelines': %s", path,
			 !root ? "empty file" : list ? "not a list" : "missing (a list of pipelines)");
		rc = KJ_EINVAL;
		goto out;
	}
	int n = (int)(list->data.sequence.items.top - list->data.sequence.items.start);
	out->p = calloc((size_t)(n ? n : 1), sizeof(*out->p));
	if (!out->p) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++)
		pipeline_read(&c, node(&c, list->data.sequence.items.start[i]), i, &out->p[out->n++]);
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

int kj_pipeline_file_read(const char *path, const struct kj_pipeline_overrides *ov,
			  struct kj_pipeline_set *out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	memset(out, 0, sizeof(*out));
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KJ_EIO;
	}
	for (;;) {
		if (len + 4096 > cap) {
			size_t nc = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, nc);
			if (!nb) {
				free(buf);
				fclose(f);
				return KJ_ENOMEM;
			}
			buf = nb;
			cap = nc;
		}
		size_t r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (!r)
			break;
	}
	fclose(f);
	int rc = kj_pipeline_text_read(path, buf, len, ov, out, err, errlen);
	free(buf);
	return rc;
}

void kj_pipeline_set_free(struct kj_pipeline_set *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		free(s->p[i].phases);
	free(s->p);
	s->p = NULL;
	s->n = 0;
}
