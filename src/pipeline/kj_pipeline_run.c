/* kjoule pipeline's work: the pipeline worker host, idle power, ceilings and one pipeline
 * measured and written. See kj_pipeline_run.h. */
#include "kj_pipeline_run.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_proc.h"
#include "kj_store_w_run.h"

/* "%.6g" of v, or "-" when v is not a finite number (not measured). */
static const char *fmt_or_dash(double v, char *buf, size_t len)
{
	if (!isfinite(v))
		return "-";
	snprintf(buf, len, "%.6g", v);
	return buf;
}

/* ---- the GPU side ---- */
struct kj_pipeline_host {
	const struct kj_pipeline_opts *o;
	char worker[PATH_MAX];
	kj_pipeline_seq_fn seq; /* --from's phases */
	struct kj_proc *c; /* the worker, once started */
	/* results already measured, by request text (identical layers are measured once) */
	char **keys;
	struct kj_phase_result *vals;
	size_t n, cap;
};

static int gpu_worker_start(struct kj_pipeline_host *g)
{
	char unroll[16], iters[32], es[32], dev[16];
	snprintf(unroll, sizeof(unroll), "%d", g->o->unroll);
	snprintf(iters, sizeof(iters), "%" PRId64, g->o->iters);
	snprintf(es, sizeof(es), "%g", g->o->energy_s);
	snprintf(dev, sizeof(dev), "%d", g->o->device);
	char *argv[] = {g->worker, "--device", dev, "--unroll", unroll, "--iters", iters,
			"--energy-seconds", es, g->o->no_energy ? "--no-energy" : NULL, NULL};
	struct kj_proc_opts po = {.requests = 1, .limit_s = g->o->timeout_s, .clock = KJ_PROC_SILENCE};
	return kj_proc_spawn(argv, &po, &g->c);
}

/* One request line to the pipeline worker, one KJ_PHASE reply within timeout_s of silence
 * (starting the worker, or a new one where the last has ended, first). */
static void gpu_request(struct kj_pipeline_host *g, const char *req, double timeout_s, struct kj_phase_result *r,
			char *extra, size_t extra_len)
{
	char line[1024];
	int rc;
	if (kj_proc_ended(g->c) && (g->c ? kj_proc_restart(g->c) : gpu_worker_start(g))) {
		snprintf(r->status, sizeof(r->status), "failed");
		snprintf(r->error, sizeof(r->error), "cannot start %.200s", g->worker);
		return;
	}
	kj_proc_set_limit(g->c, timeout_s);
	/* it ended since the last reply: a new one, once */
	if (kj_proc_send(g->c, req) && (kj_proc_restart(g->c) || kj_proc_send(g->c, req))) {
		snprintf(r->status, sizeof(r->status), "failed");
		snprintf(r->error, sizeof(r->error), "worker not reachable");
		return;
	}
	while (!(rc = kj_proc_line(g->c, line, sizeof(line))))
		if (kj_phase_result_parse(line, r) == 1)
			return;
		else if (!strncmp(line, "KJ_", 3) && extra)
			snprintf(extra, extra_len, "%.400s", line);
		else if (!strncmp(line, "KJ_", 3))
			continue;
		else
			fprintf(stderr, "%s\n", line);
	snprintf(r->status, sizeof(r->status), "failed");
	if (rc == KJ_ETIMEDOUT) {
		snprintf(r->error, sizeof(r->error), "timed out after %.0f s (worker killed)", timeout_s);
	} else {
		char why[128];
		kj_proc_describe_exit(g->c, why, sizeof(why));
		snprintf(r->error, sizeof(r->error), "%s before a result (see its message above)", why);
	}
}

static void gpu_phase(struct kj_pipeline_host *g, const struct kj_phase *ph, struct kj_phase_result *r)
{
	char req[600], key[600];
	struct kj_phase k = *ph;
	k.repeat = 0;
	snprintf(k.name, sizeof(k.name), "-");
	kj_phase_format(&k, key, sizeof(key));
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->keys[i], key)) {
			double f = r->flops, b = r->bytes;
			*r = g->vals[i];
			r->flops = f;
			r->bytes = b;
			return;
		}
	kj_phase_format(ph, req, sizeof(req) - 1);
	strcat(req, "\n");
	gpu_request(g, req, g->o->timeout_s, r, NULL, 0);
	if (g->n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 64;
		char **nk = realloc(g->keys, nc * sizeof(*nk));
		if (nk)
			g->keys = nk;
		struct kj_phase_result *nv = realloc(g->vals, nc * sizeof(*nv));
		if (nv)
			g->vals = nv;
		if (!nk || !nv)
			return;
		g->cap = nc;
	}
	if (!strcmp(r->status, "ok") && (g->keys[g->n] = strdup(key)))
		g->vals[g->n++] = *r;
}

int kj_pipeline_host_open(const struct kj_pipeline_opts *o, const char *worker, kj_pipeline_seq_fn seq,
			  struct kj_pipeline_host **out)
{
	struct kj_pipeline_host *g = calloc(1, sizeof(*g));
	*out = g;
	if (!g)
		return KJ_ENOMEM;
	g->o = o;
	g->seq = seq;
	snprintf(g->worker, sizeof(g->worker), "%s", worker ? worker : "");
	return 0;
}

void kj_pipeline_host_close(struct kj_pipeline_host *g)
{
	if (!g)
		return;
	kj_proc_close(g->c);
	for (size_t i = 0; i < g->n; i++)
		free(g->keys[i]);
	free(g->keys);
	free(g->vals);
	free(g);
}

/* Idle power and where it came from: --idle-w, --idle-db, or `kjoule power --idle` now. */
double kj_pipeline_idle_power(const struct kj_pipeline_opts *o, char *src, size_t len)
{
	if (o->idle_w >= 0) {
		snprintf(src, len, "given (--idle-w)");
		return o->idle_w;
	}
	const char *db_path = o->idle_db;
	char tmp[PATH_MAX];
	if (!db_path) {
		if (o->no_energy) {
			snprintf(src, len, "none (--no-energy)");
			return -1;
		}
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return -1;
		self[n] = 0;
		snprintf(tmp, sizeof(tmp), "%s/idle.kjdb", o->out);
		unlink(tmp);
		char cmd[3 * PATH_MAX];
		snprintf(cmd, sizeof(cmd), "'%s' power --idle --duration 3 --gpu %d --db '%s' >&2", self,
			 o->device, tmp);
		if (system(cmd)) {
			snprintf(src, len, "unknown (kjoule power --idle failed)");
			return -1;
		}
		db_path = tmp;
	}
	sqlite3 *db = NULL;
	double w = -1;
	if (!kj_db_open(db_path, 0, &db)) {
		struct kj_store_idle idle;
		if (kj_store_idle_first(db, &idle) == 1) {
			w = idle.median_mw * 1e-3;
			snprintf(src, len, "kjoule power --idle median (%s%s%s)",
				 o->idle_db ? o->idle_db : "measured now, 3 s", idle.source[0] ? ", " : "", idle.source);
		}
		kj_db_close(db);
	}
	if (w < 0)
		snprintf(src, len, "unknown (no idle_power in %.200s)", db_path);
	return w;
}

/* "resnet-50/x" -> "resnet-50_x": a file name from a pipeline name */
static void file_stem(const char *name, char *buf, size_t len)
{
	size_t i = 0;
	for (; name[i] && i + 1 < len; i++)
		buf[i] = (name[i] == '/' || name[i] == ' ' || name[i] == '#') ? '_' : name[i];
	buf[i] = 0;
}

static FILE *open_out(const char *dir, const char *stem, const char *ext)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s%s", dir, stem, ext);
	FILE *f = fopen(path, "w");
	if (!f)
		kj_errorf("%s: %s", path, strerror(errno));
	return f;
}

/* Run one pipeline (read without error: kj_pipeline_inputs_read refused any other); writes its
 * files and its summary row. Returns 0 when every phase was measured. */
int kj_pipeline_measure(const struct kj_pipeline_opts *o, struct kj_pipeline_host *g, const struct kj_pipeline *p,
			int64_t it, double idle_w, const char *idle_src, FILE *summary, FILE *out)
{
	struct kj_summary_row row;
	char stem[128];
	int64_t batch = 0;
	memset(&row, 0, sizeof(row));
	for (int i = 0; i < p->nparams; i++)
		if (!strcmp(p->param_name[i], "batch"))
			batch = p->param_value[i];
	row.name = p->name;
	row.batch = batch;
	row.precision = p->precision;
	row.idle_source = idle_src;
	row.bottleneck = "";
	struct kj_phase_result *r = calloc((size_t)p->nphases, sizeof(*r));
	if (!r)
		return 1;
	file_stem(p->name, stem, sizeof(stem));
	FILE *log = open_out(o->out, stem, ".log");
	fprintf(out, "== %s (%s%s%s, batch %" PRId64 ", %d phases)\n", p->name, p->precision, p->layout[0] ? ", " : "",
	       p->layout, batch, p->nphases);
	for (int i = 0; i < p->nphases; i++) {
		const struct kj_phase *ph = &p->phases[i];
		kj_phase_cost(ph, &r[i].flops, &r[i].bytes);
		if (ph->kind == KJ_PHASE_SEQ)
			g->seq(o, it, ph, &r[i]);
		else
			gpu_phase(g, ph, &r[i]);
		r[i].dynamic_j = idle_w >= 0 && r[i].has_energy ? r[i].energy_j - idle_w * r[i].latency_ms * 1e-3 : NAN;
		char desc[600], dyn[32];
		kj_phase_format(ph, desc, sizeof(desc));
		if (!strcmp(r[i].status, "ok") && r[i].has_energy)
			fprintf(out, "  %-40.40s %10.4f ms %8.1f W %11.4g J (+-%.2g)%s\n", ph->name, r[i].latency_ms,
			       r[i].power_w, r[i].energy_j, r[i].energy_unc_j, ph->repeat > 1 ? " x" : "");
		else if (!strcmp(r[i].status, "ok"))
			fprintf(out, "  %-40.40s %10.4f ms   energy not measured%s\n", ph->name, r[i].latency_ms,
			       ph->repeat > 1 ? " x" : "");
		else
			fprintf(out, "  %-40.40s FAILED: %s\n", ph->name, r[i].error);
		if (!strcmp(r[i].status, "failed"))
			kj_errorf("%s: pipeline '%s': phase '%s' (%s): %s", p->file, p->name, ph->name, desc,
				  r[i].error);
		if (log && strcmp(r[i].status, "ok")) /* a failed phase has no figures: none are written */
			fprintf(log, "phase %d %s: status=%s repeat=%" PRId64 " request: %s%s%s\n", i, ph->name,
				r[i].status, ph->repeat, desc, r[i].error[0] ? " error: " : "", r[i].error);
		else if (log)
			fprintf(log, "phase %d %s: status=%s latency_ms=%.6f single_ms=%.6f host_ms=%.6f power_w=%.2f "
				"energy_j=%.6g unc_j=%.3g dynamic_j=%s repeat=%" PRId64 " request: %s%s%s\n", i, ph->name,
				r[i].status, r[i].latency_ms, r[i].single_ms, r[i].host_ms, r[i].power_w, r[i].energy_j,
				r[i].energy_unc_j, fmt_or_dash(r[i].dynamic_j, dyn, sizeof(dyn)), ph->repeat, desc,
				r[i].error[0] ? " error: " : "", r[i].error);
		fflush(out);
	}
	kj_pipeline_totals(p, r, idle_w, &row.t);
	row.status = row.t.failed == 0 ? "ok" : row.t.failed == p->nphases ? "failed" : "partial";
	char note[400] = "";
	for (int i = 0; i < p->nphases && row.t.failed; i++)
		if (strcmp(r[i].status, "ok")) {
			snprintf(note, sizeof(note), "%d phase(s) failed, first '%s': %.250s", row.t.failed,
				 p->phases[i].name, r[i].error);
			break;
		}
	/* --from on random data: a chain of kernels on it draws less than on the program's data */
	int random_data = o->from && !o->no_energy && !o->from_snapshot && row.t.failed < p->nphases &&
			  !row.t.energy_unmeasured;
	if (random_data && !note[0])
		snprintf(note, sizeof(note), "phases replayed on random data: their energy runs low (trace with"
			 " --snapshot-graphs for the program's buffers)");
	row.note = note;
	row.bottleneck = row.t.bottleneck >= 0 ? p->phases[row.t.bottleneck].name : "";
	kj_summary_row_write(summary, &row);
	fflush(summary);
	/* nothing measured, or no idle power: say so rather than print 0 or nan */
	if (row.t.failed == p->nphases)
		fprintf(out, "  not measured: every phase failed (%s)\n", note);
	else if (row.t.energy_unmeasured)
		fprintf(out, "  sequential %.4f ms%s; energy not measured (%d phase(s) without one%s); bottleneck %s %.4f ms\n",
		       row.t.seq_latency_ms, row.t.failed ? " (partial)" : "", row.t.energy_unmeasured,
		       o->no_energy ? ": --no-energy" : "", row.bottleneck, row.t.pp_period_ms);
	else if (!isfinite(row.t.pp_energy_j) || idle_w < 0)
		fprintf(out, "  sequential %.4f ms, %.4g J%s; bottleneck %s %.4f ms; pipeline-parallel energy not known"
		       " (idle power unknown: %s)\n", row.t.seq_latency_ms, row.t.seq_energy_j,
		       row.t.failed ? " (partial)" : "", row.bottleneck, row.t.pp_period_ms, idle_src);
	else
		fprintf(out, "  sequential %.4f ms, %.4g J%s; bottleneck %s %.4f ms; pipeline-parallel %.4g J per item "
		       "(idle %.1f W: %s)\n", row.t.seq_latency_ms, row.t.seq_energy_j,
		       row.t.failed ? " (partial)" : "", row.bottleneck, row.t.pp_period_ms,
		       row.t.pp_energy_j / (double)(batch > 0 ? batch : 1), idle_w, idle_src);
	if (random_data)
		fprintf(out, "  (phases replayed on random data: on it a chain of kernels draws less energy than on the"
		       " program's, -11 %% for ResNet-50's layers; `kjoule run --snapshot-graphs` saves the"
		       " program's buffers: docs/replay.md, \"Data\")\n");
	if (log) {
		char a[32], b[32], w[32], e[32];
		if (row.t.failed == p->nphases)
			fprintf(log, "totals: not measured (every phase failed) status=%s\n", row.status);
		else
			fprintf(log, "totals: sequential_ms=%.6f energy_j=%s dynamic_j=%s period_ms=%.6f "
				"pp_energy_per_call_j=%s idle_w=%s idle_source=%s status=%s\n", row.t.seq_latency_ms,
				fmt_or_dash(row.t.seq_energy_j, e, sizeof(e)),
				fmt_or_dash(idle_w >= 0 ? row.t.seq_dynamic_j : NAN, a, sizeof(a)),
				row.t.pp_period_ms, fmt_or_dash(row.t.pp_energy_j, b, sizeof(b)),
				fmt_or_dash(idle_w >= 0 ? idle_w : NAN, w, sizeof(w)), idle_src, row.status);
		fclose(log);
	}
	FILE *f = open_out(o->out, stem, ".phases.csv");
	if (f) {
		kj_phases_csv_write(f, p, r, o->peak_tflops, o->peak_gbs);
		fclose(f);
	}
	f = open_out(o->out, stem, ".svg");
	if (f) {
		kj_phases_svg_write(f, p, r, &row.t);
		fclose(f);
	}
	free(r);
	return row.t.failed ? 1 : 0;
}

/* Measured ceilings (a device-to-device copy, a large GEMM) unless given. */
void kj_pipeline_ceilings(struct kj_pipeline_opts *o, struct kj_pipeline_host *g, FILE *out)
{
	if (o->peak_tflops > 0 && o->peak_gbs > 0)
		return;
	struct kj_phase_result r;
	memset(&r, 0, sizeof(r));
	char req[64];
	snprintf(req, sizeof(req), "type=ceiling precision=%s\n", o->precision[0] ? o->precision : "fp16");
	char line[512] = "";
	double tf = 0, gbs = 0;
	gpu_request(g, req, 120, &r, line, sizeof(line));
	const char *a = strstr(line, "tflops="), *b = strstr(line, "gbs=");
	if (!strcmp(r.status, "ok") && a && b) {
		tf = atof(a + 7);
		gbs = atof(b + 4);
		if (o->peak_tflops <= 0)
			o->peak_tflops = tf;
		if (o->peak_gbs <= 0)
			o->peak_gbs = gbs;
		fprintf(out, "ceilings (measured now): %.1f TFLOP/s (%s GEMM 8192^3), %.0f GB/s (1 GiB device copy, "
		       "read + write)\n", tf, o->precision[0] ? o->precision : "fp16", gbs);
	} else {
		kj_warnf("ceilings not measured: %s", r.error);
	}
}
