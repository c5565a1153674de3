/* The seed's sweep config: a YAML mapping (its flow form with quoted lists and comments parses
 * as is), read with libyaml's document API so every complaint can name the line of the key. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kj_error.h"
#include "kj_sweep.h"
#include "kj_yaml.h"

static const char *const run_names[] = {"get_all", "get_one", "get_profiler", "run_function"};

const char *kj_sweep_run_name(int run)
{
	return run >= 0 && run < 4 ? run_names[run] : "?";
}

struct ctx {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
};

/* "FILE:LINE: key 'K': message" into the error buffer; returns KJ_EINVAL */
static int fail(struct ctx *c, const yaml_node_t *n, const char *key, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n && key)
		snprintf(c->err, c->errlen, "%s:%lu: key '%s': %s", c->path,
			 (unsigned long)n->start_mark.line + 1, key, msg);
	else if (n)
		snprintf(c->err, c->errlen, "%s:%lu: %s", c->path, (unsigned long)n->start_mark.line + 1, msg);
	else if (key)
		snprintf(c->err, c->errlen, "%s: key '%s': %s", c->path, key, msg);
	else
		snprintf(c->err, c->errlen, "%s: %s", c->path, msg);
	return KJ_EINVAL;
}

static int get_int(struct ctx *c, yaml_node_t *n, const char *key, int64_t *out)
{
	char *end;
	if (n->type != YAML_SCALAR_NODE)
		return fail(c, n, key, "expected an integer");
	const char *s = (const char *)n->data.scalar.value;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (!*s || *end || errno)
		return fail(c, n, key, "'%s' is not an integer", s);
	*out = x;
	return 0;
}

static int get_str(struct ctx *c, yaml_node_t *n, const char *key, char *out, size_t len)
{
	if (n->type != YAML_SCALAR_NODE)
		return fail(c, n, key, "expected a string");
	if (snprintf(out, len, "%s", (const char *)n->data.scalar.value) >= (int)len)
		return fail(c, n, key, "too long");
	return 0;
}

/* a flow or block sequence of at most cap scalars; *n receives its length */
static int get_seq(struct ctx *c, yaml_node_t *n, const char *key, yaml_node_t **items, int cap,
		   int *count)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(c, n, key, "expected a list");
	int k = 0;
	for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		if (k == cap)
			return fail(c, n, key, "more than %d values", cap);
		items[k++] = yaml_document_get_node(c->doc, *it);
	}
	*count = k;
	return 0;
}

static int get_int_list(struct ctx *c, yaml_node_t *n, const char *key, int64_t *out, int *count)
{
	yaml_node_t *items[KJ_SWEEP_MAX_CSV_COLS];
	int rc = get_seq(c, n, key, items, KJ_SWEEP_MAX_COLS, count);
	for (int i = 0; !rc && i < *count; i++)
		rc = get_int(c, items[i], key, &out[i]);
	return rc;
}

enum key_id { K_MODULE, K_KERNEL, K_FUNCTION, K_COLUMNS, K_TARGETS, K_FIRSTN, K_STARTS, K_STEPS,
	      K_ENDS, K_OPERATORS, K_WARMUP_SHAPES, K_WAIT, K_WARMUP, K_ACTIVE, K_SHAPES, K_RUN, K_N };
static const char *const key_names[K_N] = {
	"module_name", "kernel_name", "function_name", "columns_name", "targets", "first_n_column",
	"starts", "steps", "ends", "operators", "warmup_shapes", "wait", "warmup", "active",
	"shapes", "run"};

/* the checks that span keys, once each key has been read */
static int check(struct ctx *c, struct kj_sweep_config *cfg, yaml_node_t **val, int *lens)
{
	static const int need[] = {K_KERNEL, K_COLUMNS, K_FIRSTN, K_STARTS, K_STEPS, K_ENDS, K_OPERATORS};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!val[need[i]])
			return fail(c, NULL, key_names[need[i]], "missing");
	const struct kj_sweep_op *op = cfg->op;
	if (cfg->ncols != op->ncolumns)
		return fail(c, val[K_FIRSTN], "first_n_column", "%d, but %s has %d shape columns",
			    cfg->ncols, op->name, op->ncolumns);
	static const int lists[] = {K_STARTS, K_STEPS, K_ENDS, K_OPERATORS, K_WARMUP_SHAPES, K_SHAPES};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (val[lists[i]] && lens[lists[i]] != cfg->ncols)
			return fail(c, val[lists[i]], key_names[lists[i]],
				    "%d values, but first_n_column is %d", lens[lists[i]], cfg->ncols);
	for (int i = 0; i < cfg->ncols; i++) {
		const char *col = op->columns[i];
		if (cfg->starts[i] < 1)
			return fail(c, val[K_STARTS], "starts", "%s starts at %lld; shapes are >= 1", col,
				    (long long)cfg->starts[i]);
		if (cfg->ends[i] < cfg->starts[i])
			return fail(c, val[K_ENDS], "ends", "%s ends at %lld, below its start %lld", col,
				    (long long)cfg->ends[i], (long long)cfg->starts[i]);
		if ((cfg->mul[i] && cfg->steps[i] < 2) || (!cfg->mul[i] && cfg->steps[i] < 1))
			return fail(c, val[K_STEPS], "steps",
				    "%s: step %lld with '%s' never advances (need %s)", col,
				    (long long)cfg->steps[i], cfg->mul[i] ? "mul" : "add",
				    cfg->mul[i] ? ">= 2" : ">= 1");
		if (cfg->warmup_shapes[i] < 1 || cfg->shapes[i] < 1)
			return fail(c, val[cfg->warmup_shapes[i] < 1 ? K_WARMUP_SHAPES : K_SHAPES],
				    cfg->warmup_shapes[i] < 1 ? "warmup_shapes" : "shapes",
				    "%s is %lld; shapes are >= 1", col,
				    (long long)(cfg->warmup_shapes[i] < 1 ? cfg->warmup_shapes[i] : cfg->shapes[i]));
	}
	if (cfg->wait < 0 || cfg->warmup < 0 || cfg->active < 1) {
		int k = cfg->active < 1 ? K_ACTIVE : cfg->wait < 0 ? K_WAIT : K_WARMUP;
		return fail(c, val[k], key_names[k], "must be %s", k == K_ACTIVE ? ">= 1" : ">= 0");
	}
	if (kj_sweep_grid_size(cfg) > 10000000)
		return fail(c, val[K_ENDS], "ends", "the grid has more than 10 million shapes");
	return 0;
}

/* columns_name: the operator's shape columns in order, then result columns the sweep knows */
static int check_columns(struct ctx *c, struct kj_sweep_config *cfg, yaml_node_t *n)
{
	yaml_node_t *items[KJ_SWEEP_MAX_CSV_COLS];
	int k = 0;
	char name[64];
	int rc = get_seq(c, n, "columns_name", items, KJ_SWEEP_MAX_CSV_COLS, &k);
	if (rc)
		return rc;
	for (int i = 0; i < k; i++) {
		if ((rc = get_str(c, items[i], "columns_name", name, sizeof(name))))
			return rc;
		if (i < cfg->op->ncolumns) {
			if (strcmp(name, cfg->op->columns[i]))
				return fail(c, items[i], "columns_name",
					    "column %d is '%s', but %s's shape column %d is '%s'", i + 1,
					    name, cfg->op->name, i + 1, cfg->op->columns[i]);
		} else if (strcmp(name, "F_dur(us)") && strcmp(name, "B_dur(us)") &&
			   strcmp(name, "F_energy(uJ)") && strcmp(name, "B_energy(uJ)")) {
			return fail(c, items[i], "columns_name",
				    "'%s' is not a column the sweep writes (F_dur(us), B_dur(us), "
				    "F_energy(uJ), B_energy(uJ))", name);
		}
	}
	if (k < cfg->op->ncolumns)
		return fail(c, n, "columns_name", "%d names, but %s has %d shape columns", k,
			    cfg->op->name, cfg->op->ncolumns);
	return 0;
}

/* fill cfg from the root mapping; val[] keeps each key's value node for later messages */
static int read_keys(struct ctx *c, yaml_node_t *root, struct kj_sweep_config *cfg)
{
	yaml_node_t *val[K_N] = {0};
	int lens[K_N] = {0};
	int64_t x = 0; /* set by get_int before each read; gcc -O3 cannot see that fail() is non-zero */
	int rc;
	char word[32];

	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(c->doc, p->value);
		if (kn->type != YAML_SCALAR_NODE)
			return fail(c, kn, NULL, "a key must be a string");
		const char *key = (const char *)kn->data.scalar.value;
		int id = -1;
		for (int i = 0; i < K_N; i++)
			if (!strcmp(key, key_names[i]))
				id = i;
		if (id < 0)
			return fail(c, kn, key, "unknown key (known: module_name, kernel_name, "
				    "function_name, columns_name, targets, first_n_column, starts, steps, "
				    "ends, operators, warmup_shapes, wait, warmup, active, shapes, run)");
		val[id] = vn;
	}
	if (!val[K_KERNEL])
		return fail(c, root, "kernel_name", "missing");
	if ((rc = get_str(c, val[K_KERNEL], "kernel_name", cfg->kernel_name, sizeof(cfg->kernel_name))))
		return rc;
	if (!(cfg->op = kj_sweep_op_find(cfg->kernel_name))) {
		char known[1024] = "";
		for (int i = 0; i < kj_sweep_op_count(); i++) {
			size_t l = strlen(known);
			snprintf(known + l, sizeof(known) - l, "%s%s", i ? ", " : "", kj_sweep_op_at(i)->name);
		}
		return fail(c, val[K_KERNEL], "kernel_name", "unknown operator '%s' (known: %s)",
			    cfg->kernel_name, known);
	}
	if (val[K_MODULE] && (rc = get_str(c, val[K_MODULE], "module_name", cfg->module_name,
					   sizeof(cfg->module_name))))
		return rc;
	if (val[K_FUNCTION] && (rc = get_str(c, val[K_FUNCTION], "function_name", cfg->function_name,
					     sizeof(cfg->function_name))))
		return rc;
	if (!val[K_FIRSTN])
		return fail(c, root, "first_n_column", "missing");
	if ((rc = get_int(c, val[K_FIRSTN], "first_n_column", &x)))
		return rc;
	if (x < 1 || x > KJ_SWEEP_MAX_COLS)
		return fail(c, val[K_FIRSTN], "first_n_column", "%lld is out of range 1..%d",
			    (long long)x, KJ_SWEEP_MAX_COLS);
	cfg->ncols = (int)x;
	if (val[K_COLUMNS] && (rc = check_columns(c, cfg, val[K_COLUMNS])))
		return rc;
	if (val[K_STARTS] && (rc = get_int_list(c, val[K_STARTS], "starts", cfg->starts, &lens[K_STARTS])))
		return rc;
	if (val[K_STEPS] && (rc = get_int_list(c, val[K_STEPS], "steps", cfg->steps, &lens[K_STEPS])))
		return rc;
	if (val[K_ENDS] && (rc = get_int_list(c, val[K_ENDS], "ends", cfg->ends, &lens[K_ENDS])))
		return rc;
	if (val[K_OPERATORS]) {
		yaml_node_t *items[KJ_SWEEP_MAX_CSV_COLS];
		if ((rc = get_seq(c, val[K_OPERATORS], "operators", items, KJ_SWEEP_MAX_COLS,
				  &lens[K_OPERATORS])))
			return rc;
		for (int i = 0; i < lens[K_OPERATORS]; i++) {
			if ((rc = get_str(c, items[i], "operators", word, sizeof(word))))
				return rc;
			if (strcmp(word, "mul") && strcmp(word, "add"))
				return fail(c, items[i], "operators", "'%s' is neither 'mul' nor 'add'", word);
			cfg->mul[i] = !strcmp(word, "mul");
		}
	}
	memcpy(cfg->warmup_shapes, cfg->starts, sizeof(cfg->starts));
	memcpy(cfg->shapes, cfg->starts, sizeof(cfg->starts));
	if (val[K_WARMUP_SHAPES] && (rc = get_int_list(c, val[K_WARMUP_SHAPES], "warmup_shapes",
							 cfg->warmup_shapes, &lens[K_WARMUP_SHAPES])))
		return rc;
	if (val[K_SHAPES] && (rc = get_int_list(c, val[K_SHAPES], "shapes", cfg->shapes, &lens[K_SHAPES])))
		return rc;
	cfg->wait = 2;
	cfg->warmup = 2;
	cfg->active = 10;
	static const int nums[] = {K_WAIT, K_WARMUP, K_ACTIVE};
	int *dst[] = {&cfg->wait, &cfg->warmup, &cfg->active};
	for (int i = 0; i < 3; i++) {
		if (!val[nums[i]])
			continue;
		if ((rc = get_int(c, val[nums[i]], key_names[nums[i]], &x)))
			return rc;
		if (x < -1 || x > 1000000)
			return fail(c, val[nums[i]], key_names[nums[i]], "%lld is out of range", (long long)x);
		*dst[i] = (int)x;
	}
	if (!val[K_RUN])
		return fail(c, root, "run", "missing");
	if ((rc = get_str(c, val[K_RUN], "run", word, sizeof(word))))
		return rc;
	cfg->run = -1;
	for (int i = 0; i < 4; i++)
		if (!strcmp(word, run_names[i]))
			cfg->run = i;
	if (cfg->run < 0)
		return fail(c, val[K_RUN], "run", "'%s' is not get_all, get_one, get_profiler or run_function",
			    word);
	if (!val[K_COLUMNS])
		return fail(c, root, "columns_name", "missing");
	return check(c, cfg, val, lens);
}

int kj_sweep_config_load(const char *path, struct kj_sweep_config *cfg, char *err, size_t errlen)
{
	struct ctx c = {path, NULL, err, errlen};
	yaml_parser_t parser;
	yaml_document_t doc;
	int rc;
	FILE *f = fopen(path, "rb");

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KJ_EIO;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = kj_yaml_error(&parser, path, err, errlen);
		yaml_parser_delete(&parser);
		fclose(f);
		return rc;
	}
	c.doc = &doc;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root)
		rc = fail(&c, NULL, NULL, "empty file");
	else if (root->type != YAML_MAPPING_NODE)
		rc = fail(&c, root, NULL, "expected a mapping of keys (the seed's { \"key\": value, ... })");
	else
		rc = read_keys(&c, root, cfg);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	return rc;
}
