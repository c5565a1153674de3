/* Replay, CPU side: layouts, pointer classification, relocation, regions, statistics and the
 * worker's line protocol. See kj_replay.h. */
#include "kj_replay.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_clock_state.h"
#include "kj_db.h"
#include "kj_error.h"

int kj_replay_layout_parse(const char *layout, size_t blob_len, struct kj_replay_param **out,
			   size_t *n, char *errbuf, size_t errlen)
{
	struct kj_replay_param *p = NULL;
	size_t cap = 0, k = 0;
	const char *s = layout;
	uint64_t prev_end = 0;

	*out = NULL;
	*n = 0;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!layout || !*layout)
		return 0;
	while (*s) {
		char *end;
		unsigned long long off, size;
		if (!isdigit((unsigned char)*s))
			goto bad;
		errno = 0;
		off = strtoull(s, &end, 10);
		if (errno || *end != ':' || !isdigit((unsigned char)end[1]))
			goto bad;
		size = strtoull(end + 1, &end, 10);
		if (errno || (*end != ',' && *end != '\0') || size == 0 || off > UINT32_MAX ||
		    size > UINT32_MAX)
			goto bad;
		if (off < prev_end) {
			if (errbuf)
				snprintf(errbuf, errlen, "layout: parameter %zu at offset %llu overlaps the previous one", k, off);
			free(p);
			return KJ_EINVAL;
		}
		if (blob_len != SIZE_MAX && off + size > blob_len) {
			if (errbuf)
				snprintf(errbuf, errlen, "layout: parameter %zu (%llu:%llu) ends past the %zu-byte parameter block", k, off, size, blob_len);
			free(p);
			return KJ_EINVAL;
		}
		if (k == cap) {
			size_t nc = cap ? cap * 2 : 8;
			struct kj_replay_param *np = realloc(p, nc * sizeof(*np));
			if (!np) {
				free(p);
				return KJ_ENOMEM;
			}
			p = np;
			cap = nc;
		}
		p[k].offset = (uint32_t)off;
		p[k].size = (uint32_t)size;
		k++;
		prev_end = off + size;
		s = *end == ',' ? end + 1 : end;
		if (*end == ',' && !*s)
			goto bad;
		continue;
	bad:
		if (errbuf)
			snprintf(errbuf, errlen, "layout: malformed at character %zu of \"%.60s\"", (size_t)(s - layout), layout);
		free(p);
		return KJ_EINVAL;
	}
	*out = p;
	*n = k;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct kj_replay_range *x = a, *y = b;
	return x->address < y->address ? -1 : x->address > y->address;
}

size_t kj_replay_ranges_normalize(struct kj_replay_range *r, size_t n)
{
	/* Newest wins: walk from the end, keep a range only if it overlaps no kept (newer) one. */
	size_t kept = 0;
	if (!n)
		return 0;
	struct kj_replay_range *tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		/* degrade: just sort; lookups still work, overlaps resolve to the lower address */
		qsort(r, n, sizeof(*r), range_cmp);
		return n;
	}
	for (size_t i = n; i-- > 0;) {
		int clash = r[i].bytes == 0;
		for (size_t j = 0; j < kept && !clash; j++)
			if (r[i].address < tmp[j].address + tmp[j].bytes &&
			    tmp[j].address < r[i].address + r[i].bytes)
				clash = 1;
		if (!clash)
			tmp[kept++] = r[i];
	}
	qsort(tmp, kept, sizeof(*tmp), range_cmp);
	memcpy(r, tmp, kept * sizeof(*r));
	free(tmp);
	return kept;
}

ssize_t kj_replay_range_find(const struct kj_replay_range *r, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	/* first range with address > addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r[mid].address <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	const struct kj_replay_range *c = &r[lo - 1];
	if (addr - c->address < c->bytes)
		return (ssize_t)(lo - 1);
	if (addr - c->address == c->bytes) /* end pointer; another range starting here won above */
		return (ssize_t)(lo - 1);
	return -1;
}

static int push_ptr(struct kj_replay_ptr **v, size_t *n, size_t *cap, uint32_t off, uint32_t range,
		    uint64_t value)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		struct kj_replay_ptr *nv = realloc(*v, nc * sizeof(**v));
		if (!nv)
			return KJ_ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[*n].offset = off;
	(*v)[*n].range = range;
	(*v)[*n].value = value;
	(*n)++;
	return 0;
}

static int scan_span(const uint8_t *blob, size_t start, size_t end, const struct kj_replay_range *r,
		     size_t nr, struct kj_replay_ptr **v, size_t *n, size_t *cap)
{
	size_t w = (start + 7) & ~(size_t)7;
	for (; w + 8 <= end; w += 8) {
		uint64_t value;
		memcpy(&value, blob + w, 8);
		if (!value)
			continue;
		ssize_t i = kj_replay_range_find(r, nr, value);
		if (i >= 0 && push_ptr(v, n, cap, (uint32_t)w, (uint32_t)i, value))
			return KJ_ENOMEM;
	}
	return 0;
}

int kj_replay_scan_pointers(const uint8_t *blob, size_t len, const struct kj_replay_param *p,
			    size_t np, const struct kj_replay_range *r, size_t nr,
			    struct kj_replay_ptr **out, size_t *nout)
{
	struct kj_replay_ptr *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	*out = NULL;
	*nout = 0;
	if (!blob || !len || !nr)
		return 0;
	if (!np) {
		rc = scan_span(blob, 0, len, r, nr, &v, &n, &cap);
	} else {
		for (size_t i = 0; i < np && !rc; i++) {
			size_t s = p[i].offset, e = (size_t)p[i].offset + p[i].size;
			if (p[i].size < 8 || e > len)
				continue;
			rc = scan_span(blob, s, e, r, nr, &v, &n, &cap);
		}
	}
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

size_t kj_replay_relocate(uint8_t *blob, size_t len, const struct kj_replay_ptr *ptrs, size_t n,
			  const struct kj_replay_range *r, const uint64_t *new_base)
{
	size_t done = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t nb = new_base[ptrs[i].range];
		if (!nb || (size_t)ptrs[i].offset + 8 > len)
			continue;
		uint64_t value = nb + (ptrs[i].value - r[ptrs[i].range].address);
		memcpy(blob + ptrs[i].offset, &value, 8);
		done++;
	}
	return done;
}

int kj_replay_regions(const struct kj_replay_range *r, const int *used, size_t nr, uint64_t gran,
		      struct kj_replay_region **out, size_t *nout, int *region_of)
{
	struct kj_replay_region *g = NULL;
	size_t n = 0;

	*out = NULL;
	*nout = 0;
	if (!gran || (gran & (gran - 1)))
		return KJ_EINVAL;
	for (size_t i = 0; i < nr; i++) {
		region_of[i] = -1;
		if (!used[i])
			continue;
		uint64_t b = r[i].address & ~(gran - 1);
		uint64_t e = (r[i].address + r[i].bytes + gran - 1) & ~(gran - 1);
		if (e <= b)
			e = b + gran;
		if (n && b <= g[n - 1].base + g[n - 1].bytes) { /* ranges are sorted: join the last */
			if (e > g[n - 1].base + g[n - 1].bytes)
				g[n - 1].bytes = e - g[n - 1].base;
		} else {
			struct kj_replay_region *ng = realloc(g, (n + 1) * sizeof(*ng));
			if (!ng) {
				free(g);
				return KJ_ENOMEM;
			}
			g = ng;
			g[n].base = b;
			g[n].bytes = e - b;
			n++;
		}
		region_of[i] = (int)(n - 1);
	}
	*out = g;
	*nout = n;
	return 0;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

void kj_replay_stats(int64_t *ns, size_t n, struct kj_replay_timing *out)
{
	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), i64_cmp);
	double sum = 0, sq = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
	double mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += ((double)ns[i] - mean) * ((double)ns[i] - mean);
	out->runs = (int)n;
	out->min_ns = ns[0];
	out->max_ns = ns[n - 1];
	out->median_ns = n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2;
	out->mean_ns = mean;
	out->stdev_ns = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
}

void kj_replay_result_set(struct kj_replay_result *r, const char *status, const char *fmt, ...)
{
	va_list ap;
	snprintf(r->status, sizeof(r->status), "%s", status);
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
}

/* Copy text with tabs and newlines turned into spaces. */
static void clean(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = (src[i] == '\t' || src[i] == '\n' || src[i] == '\r') ? ' ' : src[i];
	dst[i] = '\0';
}

void kj_replay_emit_timing(FILE *f, int64_t unique_id, const char *cache, const char *timer,
			   const struct kj_replay_timing *t)
{
	fprintf(f, "KJ_TIMING\tunique=%" PRId64 "\tcache=%s\ttimer=%s\truns=%d\tmin=%" PRId64
		   "\tmedian=%" PRId64 "\tmean=%.3f\tmax=%" PRId64 "\tstdev=%.3f\n",
		unique_id, cache, timer, t->runs, t->min_ns, t->median_ns, t->mean_ns, t->max_ns, t->stdev_ns);
}

void kj_replay_emit(FILE *f, const struct kj_replay_result *r)
{
	char err[sizeof(r->error)];
	const struct kj_replay_timing *t[2] = {&r->warm, &r->cold};
	const char *names[2] = {"warm", "cold"};
	for (int i = 0; i < 2; i++)
		if (t[i]->runs > 0)
			kj_replay_emit_timing(f, r->unique_id, names[i], r->timer[0] ? r->timer : "events", t[i]);
	if (r->has_energy)
		fprintf(f, "KJ_ENERGY\tunique=%" PRId64 "\tunroll=%d\tlaunches=%" PRId64
			   "\tseconds=%.6f\tmj=%.9g\tunc=%.9g\tpower_mw=%.3f\tidle_mw=%.3f\tdyn=%.9g\tmethod=%s"
			   "\tsm_mean=%.1f\tsm_min=%d\tsm_max=%d\treasons=%" PRId64 "\tdata=%s\n",
			r->unique_id, r->unroll, r->energy_launches, r->seconds, r->energy_mj_per_launch,
			r->energy_unc_mj, r->power_mw, r->idle_mw, r->dynamic_mj_per_launch,
			r->method[0] ? r->method : "none", r->sm_clock_mean_mhz, r->sm_clock_min_mhz,
			r->sm_clock_max_mhz, r->throttle_reasons, r->data[0] ? r->data : "unknown");
	if (r->has_b2b)
		fprintf(f, "KJ_ENERGY_B2B\tunique=%" PRId64 "\tns=%.3f\tmj=%.9g\tsm_mean=%.1f\n", r->unique_id,
			r->b2b_ns_per_launch, r->b2b_mj_per_launch, r->b2b_sm_clock_mhz);
	if (r->has_energy_cold)
		fprintf(f, "KJ_ENERGY_COLD\tunique=%" PRId64 "\tlaunches=%" PRId64 "\tseconds=%.6f\tmj=%.9g\tunc=%.9g"
			   "\tns=%.3f\tflush_mj=%.9g\tflush_unc=%.9g\n",
			r->unique_id, r->energy_cold_launches, r->energy_cold_seconds, r->energy_cold_mj_per_launch,
			r->energy_cold_unc_mj, r->energy_cold_ns_per_launch, r->flush_mj, r->flush_unc_mj);
	if (r->verify[0])
		fprintf(f, "KJ_VERIFY\tunique=%" PRId64 "\tverify=%s\tbuffers=%" PRId64 "\tbytes=%" PRId64
			   "\tdiff=%" PRId64 "\n",
			r->unique_id, r->verify, r->verify_buffers, r->verify_bytes, r->verify_diff_bytes);
	clean(err, sizeof(err), r->error);
	fprintf(f, "KJ_RESULT\tunique=%" PRId64 "\tstatus=%s\terror=%s\n", r->unique_id,
		r->status[0] ? r->status : "failed", err);
	fflush(f);
}

/* Value of key in a tab-separated line, copied into buf; NULL when absent. */
static const char *field(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = line;
	while ((p = strchr(p, '\t'))) {
		p++;
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			const char *v = p + kl + 1, *e = strchr(v, '\t');
			size_t l = e ? (size_t)(e - v) : strcspn(v, "\r\n");
			if (l >= len)
				l = len - 1;
			memcpy(buf, v, l);
			buf[l] = '\0';
			return buf;
		}
	}
	return NULL;
}

static int field_i64(const char *line, const char *key, int64_t *out)
{
	char b[64], *end;
	if (!field(line, key, b, sizeof(b)))
		return KJ_EINVAL;
	errno = 0;
	long long v = strtoll(b, &end, 10);
	if (errno || *end)
		return KJ_EINVAL;
	*out = v;
	return 0;
}

static int field_dbl(const char *line, const char *key, double *out)
{
	char b[64], *end;
	if (!field(line, key, b, sizeof(b)))
		return KJ_EINVAL;
	*out = strtod(b, &end);
	if (*end && strcmp(b, "nan") && strcmp(b, "-nan"))
		return KJ_EINVAL;
	if (!strcmp(b, "nan") || !strcmp(b, "-nan"))
		*out = NAN;
	return 0;
}

/* The clock fields of a KJ_ENERGY or KJ_SEQ line (sm_mean, sm_min, sm_max, reasons); each -1
 * when absent (a worker before they were sent) or not a number. */
static void parse_clocks(const char *line, double *mean, int *min, int *max, int64_t *reasons)
{
	int64_t a, b;
	if (field_dbl(line, "sm_mean", mean) || !(*mean > 0))
		*mean = -1;
	*min = !field_i64(line, "sm_min", &a) && a > 0 && a < 1000000 ? (int)a : -1;
	*max = !field_i64(line, "sm_max", &b) && b > 0 && b < 1000000 ? (int)b : -1;
	if (field_i64(line, "reasons", reasons) || *reasons < 0)
		*reasons = -1;
}

/* The timing fields of a KJ_TIMING line (runs, min, median, max, mean, stdev). 0 or KJ_EINVAL. */
static int parse_timing(const char *line, struct kj_replay_timing *t)
{
	int64_t runs;
	memset(t, 0, sizeof(*t));
	if (field_i64(line, "runs", &runs) || field_i64(line, "min", &t->min_ns) ||
	    field_i64(line, "median", &t->median_ns) || field_i64(line, "max", &t->max_ns) ||
	    field_dbl(line, "mean", &t->mean_ns) || field_dbl(line, "stdev", &t->stdev_ns))
		return KJ_EINVAL;
	t->runs = (int)runs;
	return 0;
}

int kj_replay_parse_line(const char *line, struct kj_replay_result *r)
{
	int64_t v;
	char b[64];
	if (!strncmp(line, "KJ_TIMING\t", 10)) {
		struct kj_replay_timing t;
		if (!field(line, "cache", b, sizeof(b)) || parse_timing(line, &t))
			return KJ_EINVAL;
		if (!strcmp(b, "warm"))
			r->warm = t;
		else if (!strcmp(b, "cold"))
			r->cold = t;
		else
			return KJ_EINVAL;
		field(line, "timer", r->timer, sizeof(r->timer));
		return 1;
	}
	if (!strncmp(line, "KJ_ENERGY\t", 10)) {
		int64_t unroll;
		if (field_i64(line, "unroll", &unroll) || field_i64(line, "launches", &r->energy_launches) ||
		    field_dbl(line, "seconds", &r->seconds) || field_dbl(line, "mj", &r->energy_mj_per_launch) ||
		    field_dbl(line, "unc", &r->energy_unc_mj) || field_dbl(line, "power_mw", &r->power_mw) ||
		    field_dbl(line, "idle_mw", &r->idle_mw) || field_dbl(line, "dyn", &r->dynamic_mj_per_launch))
			return KJ_EINVAL;
		r->unroll = (int)unroll;
		if (!field(line, "method", r->method, sizeof(r->method)))
			snprintf(r->method, sizeof(r->method), "unknown");
		parse_clocks(line, &r->sm_clock_mean_mhz, &r->sm_clock_min_mhz, &r->sm_clock_max_mhz,
			     &r->throttle_reasons);
		if (!field(line, "data", r->data, sizeof(r->data)) || !strcmp(r->data, "unknown"))
			r->data[0] = '\0';
		r->has_energy = 1;
		return 1;
	}
	if (!strncmp(line, "KJ_ENERGY_B2B\t", 14)) {
		if (field_dbl(line, "ns", &r->b2b_ns_per_launch) || field_dbl(line, "mj", &r->b2b_mj_per_launch) ||
		    field_dbl(line, "sm_mean", &r->b2b_sm_clock_mhz))
			return KJ_EINVAL;
		r->has_b2b = 1;
		return 1;
	}
	if (!strncmp(line, "KJ_ENERGY_COLD\t", 15)) {
		if (field_i64(line, "launches", &r->energy_cold_launches) ||
		    field_dbl(line, "seconds", &r->energy_cold_seconds) ||
		    field_dbl(line, "mj", &r->energy_cold_mj_per_launch) || field_dbl(line, "unc", &r->energy_cold_unc_mj) ||
		    field_dbl(line, "ns", &r->energy_cold_ns_per_launch) || field_dbl(line, "flush_mj", &r->flush_mj) ||
		    field_dbl(line, "flush_unc", &r->flush_unc_mj))
			return KJ_EINVAL;
		r->has_energy_cold = 1;
		return 1;
	}
	if (!strncmp(line, "KJ_VERIFY\t", 10)) {
		if (!field(line, "verify", r->verify, sizeof(r->verify)) ||
		    field_i64(line, "buffers", &r->verify_buffers) || field_i64(line, "bytes", &r->verify_bytes) ||
		    field_i64(line, "diff", &r->verify_diff_bytes))
			return KJ_EINVAL;
		return 1;
	}
	if (!strncmp(line, "KJ_RESULT\t", 10)) {
		if (field_i64(line, "unique", &v) || !field(line, "status", r->status, sizeof(r->status)))
			return KJ_EINVAL;
		r->unique_id = v;
		if (!field(line, "error", r->error, sizeof(r->error)))
			r->error[0] = '\0';
		return 1;
	}
	return 0;
}

int kj_replay_parse_seq_kernel(const char *line, struct kj_replay_seq_kernel *k)
{
	char b[32];
	if (strncmp(line, "KJ_TIMING\t", 10) || !field(line, "cache", b, sizeof(b)) || strcmp(b, "sequence"))
		return 0;
	memset(k, 0, sizeof(*k));
	if (field_i64(line, "unique", &k->unique_id) || parse_timing(line, &k->t))
		return KJ_EINVAL;
	return 1;
}

int kj_replay_parse_device(const char *line, struct kj_replay_device *d)
{
	int64_t a, b, l2 = -1;
	if (strncmp(line, "KJ_DEVICE\t", 10))
		return 0;
	if (field_i64(line, "cc_major", &a) || field_i64(line, "cc_minor", &b))
		return 0;
	field_i64(line, "l2", &l2);
	int64_t nv = -1;
	if (field_i64(line, "nvml_index", &nv))
		nv = -1;
	d->nvml_index = (int)nv;
	d->cc_major = (int)a;
	d->cc_minor = (int)b;
	d->l2_bytes = l2;
	if (!field(line, "name", d->name, sizeof(d->name)))
		d->name[0] = '\0';
	return 1;
}

void kj_replay_seq_emit(FILE *f, const struct kj_replay_seq *s)
{
	char err[sizeof(s->error)];
	clean(err, sizeof(err), s->error);
	/* the clock fields mean something only beside an energy */
	int e = s->has_energy;
	fprintf(f, "KJ_SEQ\titeration=%" PRId64 "\tmode=%s\tstatus=%s\truns=%d\tlaunches=%" PRId64
		   "\tops=%" PRId64 "\tmin=%" PRId64 "\tmedian=%" PRId64 "\tmax=%" PRId64
		   "\tenergy=%d\tmj=%.9g\tunc=%.9g\tpace=%" PRId64 "\tsm_mean=%.1f\tsm_min=%d\tsm_max=%d"
		   "\treasons=%" PRId64 "\terror=%s\n",
		s->iteration, s->mode, s->status[0] ? s->status : "failed", s->runs, s->launches, s->ops,
		s->min_ns, s->median_ns, s->max_ns, s->has_energy, s->energy_mj, s->energy_unc_mj, s->pace_ns,
		e ? s->sm_clock_mean_mhz : -1.0, e ? s->sm_clock_min_mhz : -1, e ? s->sm_clock_max_mhz : -1,
		e ? s->throttle_reasons : (int64_t)-1, err);
	fflush(f);
}

int kj_replay_parse_seq(const char *line, struct kj_replay_seq *s)
{
	int64_t runs, energy;
	if (strncmp(line, "KJ_SEQ\t", 7))
		return 0;
	memset(s, 0, sizeof(*s));
	if (field_i64(line, "iteration", &s->iteration) || !field(line, "mode", s->mode, sizeof(s->mode)) ||
	    !field(line, "status", s->status, sizeof(s->status)) || field_i64(line, "runs", &runs) ||
	    field_i64(line, "launches", &s->launches) || field_i64(line, "ops", &s->ops) ||
	    field_i64(line, "min", &s->min_ns) || field_i64(line, "median", &s->median_ns) ||
	    field_i64(line, "max", &s->max_ns) || field_i64(line, "energy", &energy) ||
	    field_dbl(line, "mj", &s->energy_mj) || field_dbl(line, "unc", &s->energy_unc_mj))
		return KJ_EINVAL;
	s->runs = (int)runs;
	s->has_energy = energy != 0;
	if (field_i64(line, "pace", &s->pace_ns) || s->pace_ns < 0)
		s->pace_ns = 0; /* workers before pacing: back to back */
	parse_clocks(line, &s->sm_clock_mean_mhz, &s->sm_clock_min_mhz, &s->sm_clock_max_mhz, &s->throttle_reasons);
	if (!field(line, "error", s->error, sizeof(s->error)))
		s->error[0] = '\0';
	return 1;
}

void kj_replay_now(char when[32])
{
	time_t now = time(NULL);
	struct tm tm;
	if (!gmtime_r(&now, &tm) || !strftime(when, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(when, 32, "unknown");
}
