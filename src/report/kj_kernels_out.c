/* kjoule kernels' output: a kernel report's chosen rows as an aligned table, CSV or JSON lines
 * (kj_kernels_out.h). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kj_clock_state.h"
#include "kj_error.h"
#include "kj_escape.h"
#include "kj_kernels_out.h"

/* Duration in ns as microseconds with three decimals, exactly. */
static void fmt_us(char *buf, size_t len, int64_t ns)
{
	snprintf(buf, len, "%" PRId64 ".%03" PRId64, ns / 1000, (ns < 0 ? -ns : ns) % 1000);
}

static void fmt_dims(char *buf, size_t len, const int64_t d[3])
{
	if (d[0] < 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%" PRId64 "x%" PRId64 "x%" PRId64, d[0], d[1] < 0 ? 1 : d[1],
			 d[2] < 0 ? 1 : d[2]);
}

/* The name shown in a table: demangled, without "void " and without the parameter list. */
static void display_name(char *buf, size_t len, const struct kj_kernel_stat *s, size_t width)
{
	const char *n = s->demangled ? s->demangled : s->name;
	size_t l;
	if (!strncmp(n, "void ", 5))
		n += 5;
	l = strlen(n);
	if (l > 0 && n[l - 1] == ')' && s->kind == KJ_ACT_KERNEL) {
		int depth = 0;
		for (size_t i = l; i-- > 0;) {
			if (n[i] == ')')
				depth++;
			else if (n[i] == '(' && --depth == 0) {
				if (i > 0)
					l = i;
				break;
			}
		}
	}
	if (s->kind != KJ_ACT_KERNEL) {
		snprintf(buf, len, "[%s %" PRId64 " B]", n, s->bytes);
		return;
	}
	if (width > 3 && l > width) {
		snprintf(buf, len, "%.*s...", (int)(width - 3), n);
		return;
	}
	snprintf(buf, len, "%.*s", (int)l, n);
}

static int by_energy_id(const void *a, const void *b)
{
	int64_t x = ((const struct kj_kernel_energy *)a)->unique_id, y = ((const struct kj_kernel_energy *)b)->unique_id;
	return x < y ? -1 : x > y;
}

/* A kernel's energy per launch from x (NULL when x holds none for it). */
static const struct kj_kernel_energy *energy_of(const struct kj_kernels_extras *x, const struct kj_kernel_stat *s)
{
	if (!x || !x->n_energies || s->kind != KJ_ACT_KERNEL || s->unique_id < 0)
		return NULL;
	struct kj_kernel_energy key = {.unique_id = s->unique_id};
	return bsearch(&key, x->energies, x->n_energies, sizeof(key), by_energy_id);
}

/* An energy figure is known when it is finite and not negative (compare's -1: none). */
static int mj_known(double mj)
{
	return mj >= 0 && isfinite(mj);
}

/* One energy figure (mJ) into buf: four decimals, or unknown when not known. */
static void fmt_mj(char *buf, size_t len, double mj, const char *unknown)
{
	if (mj_known(mj))
		snprintf(buf, len, "%.4f", mj);
	else
		snprintf(buf, len, "%s", unknown);
}

void kj_kernels_print_table(FILE *f, const struct kj_kernel_report *r, struct kj_kernel_stat **rows,
			    size_t n, size_t namew, const struct kj_kernels_extras *x)
{
	char name[4096], tot[32], mean[32], mn[32], mx[32], g[64], b[64], alone[32] = "", insitu[32] = "";
	const int energy = x && x->n_energies > 0;

	fprintf(f, "%-13s %8s %12s %10s %10s %10s %7s ", "TIER", "COUNT", "TOTAL_us", "MEAN_us", "MIN_us",
		   "MAX_us", "BUSY%");
	if (energy)
		fprintf(f, "%10s %10s ", "ALONE_mJ", "INSITU_mJ");
	fprintf(f, "%-13s %-13s %s\n", "GRID", "BLOCK", "NAME");
	for (size_t i = 0; i < n; i++) {
		const struct kj_kernel_stat *s = rows[i];
		fmt_us(tot, sizeof(tot), s->total_ns);
		snprintf(mean, sizeof(mean), "%.3f", s->mean_ns / 1000.0);
		fmt_us(mn, sizeof(mn), s->min_ns);
		fmt_us(mx, sizeof(mx), s->max_ns);
		if (s->kind == KJ_ACT_KERNEL) {
			fmt_dims(g, sizeof(g), s->grid);
			fmt_dims(b, sizeof(b), s->block);
		} else {
			snprintf(g, sizeof(g), "-");
			snprintf(b, sizeof(b), "-");
		}
		display_name(name, sizeof(name), s, namew);
		fprintf(f, "%-13s %8" PRId64 " %12s %10s %10s %10s %6.2f%% ", s->tier, s->count, tot, mean, mn,
			   mx, 100.0 * s->share_of_busy);
		if (energy) {
			const struct kj_kernel_energy *e = energy_of(x, s);
			fmt_mj(alone, sizeof(alone), e ? e->predicted_mj : -1, "-");
			fmt_mj(insitu, sizeof(insitu), e ? e->in_situ_mj : -1, "-");
			fprintf(f, "%10s %10s ", alone, insitu);
		}
		fprintf(f, "%-13s %-13s %s\n", g, b, name);
	}
	fmt_us(tot, sizeof(tot), r->busy_ns);
	fmt_us(mean, sizeof(mean), r->span_ns);
	fprintf(f, "# %" PRId64 " kernel launches of %zu unique kernels, %" PRId64 " memcpy, %" PRId64
	           " memset; GPU busy %s us on %d device%s (span %s us); %zu of %zu rows shown\n",
	           r->kernel_launches, r->unique_kernels, r->memcpys, r->memsets, tot, r->devices,
	           r->devices == 1 ? "" : "s", mean, n, r->n);
	if (r->untimed)
		fprintf(f, "# %" PRId64 " rows without valid timestamps are counted but not timed\n",
		           r->untimed);
	if (energy)
		fprintf(f, "# energy per launch over the measured iterations (compare's): ALONE_mJ as its replays "
			   "predict it, INSITU_mJ as it ran in the program (the measured energy less idle, shared "
			   "out in proportion to ALONE_mJ); '-': not replayed with energy\n");
}

/* One CSV field (kj_csv_put_str) and its separator. */
static void csv_field(FILE *f, const char *s, int last)
{
	kj_csv_put_str(f, s);
	fputc(last ? '\n' : ',', f);
}

static void csv_i64(FILE *f, int64_t v)
{
	if (v >= 0)
		fprintf(f, "%" PRId64, v);
	fputc(',', f);
}

static const char *kind_name(enum kj_activity_kind k)
{
	return k == KJ_ACT_MEMCPY ? "memcpy" : k == KJ_ACT_MEMSET ? "memset" : "kernel";
}

void kj_kernels_print_csv(FILE *f, struct kj_kernel_stat **rows, size_t n, const struct kj_kernels_extras *x)
{
	char a[32], b[32], c[32], g[64], bl[64], alone[32], insitu[32];
	fprintf(f, "kind,tier,count,total_us,mean_us,min_us,max_us,share_of_busy,grid,block,shmem,"
	           "shmem_static,registers,shmem_executed,carveout,unique_id,key,keyed_by,bytes,copy_kind,name,"
	           "demangled,energy_predicted_mj_per_launch,energy_in_situ_mj_per_launch\n");
	for (size_t i = 0; i < n; i++) {
		const struct kj_kernel_stat *s = rows[i];
		fmt_us(a, sizeof(a), s->total_ns);
		fmt_us(b, sizeof(b), s->min_ns);
		fmt_us(c, sizeof(c), s->max_ns);
		fprintf(f, "%s,%s,%" PRId64 ",%s,%.3f,%s,%s,%.6f,", kind_name(s->kind), s->tier, s->count,
		           a, s->mean_ns / 1000.0, b, c, s->share_of_busy);
		if (s->kind == KJ_ACT_KERNEL) {
			fmt_dims(g, sizeof(g), s->grid);
			fmt_dims(bl, sizeof(bl), s->block);
			fprintf(f, "%s,%s,", g, bl);
		} else {
			fprintf(f, ",,");
		}
		csv_i64(f, s->shmem_dynamic);
		csv_i64(f, s->shmem_static);
		csv_i64(f, s->registers);
		csv_i64(f, s->shmem_executed);
		csv_i64(f, s->carveout);
		csv_i64(f, s->unique_id);
		csv_field(f, s->key, 0);
		csv_field(f, s->keyed_by, 0);
		csv_i64(f, s->bytes);
		csv_field(f, s->copy_kind, 0);
		csv_field(f, s->name, 0);
		csv_field(f, s->demangled, 0);
		const struct kj_kernel_energy *e = energy_of(x, s);
		fmt_mj(alone, sizeof(alone), e ? e->predicted_mj : -1, "");
		fmt_mj(insitu, sizeof(insitu), e ? e->in_situ_mj : -1, "");
		fprintf(f, "%s,%s\n", alone, insitu);
	}
}

static json_t *jint(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *jdims(const int64_t d[3])
{
	if (d[0] < 0)
		return json_null();
	return json_pack("[III]", (json_int_t)d[0], (json_int_t)(d[1] < 0 ? 1 : d[1]),
			 (json_int_t)(d[2] < 0 ? 1 : d[2]));
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* A finite double for JSON (jansson refuses NaN and infinities). */
static json_t *jreal(double v, double scale)
{
	if (!isfinite(v))
		v = 0.0;
	return json_real(round(v * scale) / scale);
}

static int by_window_id(const void *a, const void *b)
{
	int64_t x = ((const struct kj_clock_window *)a)->id, y = ((const struct kj_clock_window *)b)->id;
	return x < y ? -1 : x > y;
}

/* replay_energy_clock of a kernel: the clock state over its energy replay's window (null when it
 * has none, or its replay stored none: docs/energy.md, "Clock and throttle state"). */
static json_t *clock_json(const struct kj_clock_window *w, size_t nw, int64_t unique_id)
{
	struct kj_clock_window key = {.id = unique_id};
	const struct kj_clock_window *c = nw ? bsearch(&key, w, nw, sizeof(*w), by_window_id) : NULL;
	char words[256];
	if (!c || (c->reasons < 0 && c->sm_clock_mean_mhz <= 0))
		return json_null();
	json_t *o = json_object();
	int thr = c->reasons >= 0 && kj_clock_throttled((uint64_t)c->reasons, words, sizeof(words));
	json_object_set_new(o, "throttled", c->reasons >= 0 ? json_boolean(thr) : json_null());
	json_object_set_new(o, "throttle_reasons", thr ? json_string(words) : json_null());
	json_object_set_new(o, "sm_clock_mean_mhz", c->sm_clock_mean_mhz > 0 ? jreal(c->sm_clock_mean_mhz, 10.0) : json_null());
	json_object_set_new(o, "sm_clock_min_mhz", c->sm_clock_min_mhz > 0 ? json_integer(c->sm_clock_min_mhz) : json_null());
	json_object_set_new(o, "sm_clock_max_mhz", c->sm_clock_max_mhz > 0 ? json_integer(c->sm_clock_max_mhz) : json_null());
	return o;
}

/* A kernel's energy per launch, predicted and in situ (compare's; k from energy_of), as JSON
 * numbers or nulls. */
static void energy_json(json_t *o, const struct kj_kernel_energy *k)
{
	json_object_set_new(o, "energy_predicted_mj_per_launch",
			    k && mj_known(k->predicted_mj) ? jreal(k->predicted_mj, 1e4) : json_null());
	json_object_set_new(o, "energy_in_situ_mj_per_launch",
			    k && mj_known(k->in_situ_mj) ? jreal(k->in_situ_mj, 1e4) : json_null());
}

int kj_kernels_print_jsonl(FILE *f, struct kj_kernel_stat **rows, size_t n,
			   const struct kj_kernels_extras *x)
{
	const struct kj_clock_window *w = x->windows;
	size_t nw = x->n_windows;
	for (size_t i = 0; i < n; i++) {
		const struct kj_kernel_stat *s = rows[i];
		json_t *o = json_object();
		char *text;
		if (!o)
			return KJ_ENOMEM;
		json_object_set_new(o, "kind", json_string(kind_name(s->kind)));
		json_object_set_new(o, "name", jstr(s->name));
		json_object_set_new(o, "demangled", jstr(s->demangled));
		json_object_set_new(o, "tier", json_string(s->tier));
		json_object_set_new(o, "count", json_integer(s->count));
		json_object_set_new(o, "total_us", jreal(s->total_ns / 1000.0, 1000.0));
		json_object_set_new(o, "mean_us", jreal(s->mean_ns / 1000.0, 1000.0));
		json_object_set_new(o, "min_us", jreal(s->min_ns / 1000.0, 1000.0));
		json_object_set_new(o, "max_us", jreal(s->max_ns / 1000.0, 1000.0));
		json_object_set_new(o, "share_of_busy", jreal(s->share_of_busy, 1e6));
		json_object_set_new(o, "grid", s->kind == KJ_ACT_KERNEL ? jdims(s->grid) : json_null());
		json_object_set_new(o, "block", s->kind == KJ_ACT_KERNEL ? jdims(s->block) : json_null());
		json_object_set_new(o, "cluster", s->kind == KJ_ACT_KERNEL ? jdims(s->cluster) : json_null());
		json_object_set_new(o, "shmem", jint(s->shmem_dynamic));
		json_object_set_new(o, "shmem_static", jint(s->shmem_static));
		json_object_set_new(o, "registers", jint(s->registers));
		json_object_set_new(o, "shmem_executed", jint(s->shmem_executed));
		json_object_set_new(o, "carveout", jint(s->carveout));
		json_object_set_new(o, "cooperative", s->cooperative < 0 ? json_null() : json_boolean(s->cooperative));
		json_object_set_new(o, "unique_id", jint(s->unique_id));
		json_object_set_new(o, "key", jstr(s->key));
		json_object_set_new(o, "keyed_by", jstr(s->keyed_by));
		json_object_set_new(o, "bytes", jint(s->bytes));
		json_object_set_new(o, "copy_kind", jstr(s->copy_kind));
		json_object_set_new(o, "replay_energy_clock",
				    s->kind == KJ_ACT_KERNEL && s->unique_id >= 0 ? clock_json(w, nw, s->unique_id) : json_null());
		energy_json(o, energy_of(x, s));
		text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
		json_decref(o);
		if (!text)
			return KJ_ENOMEM;
		fputs(text, f);
		fputc('\n', f);
		free(text);
	}
	return 0;
}

