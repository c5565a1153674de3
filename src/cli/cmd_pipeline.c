/* kjoule pipeline: per-layer latency and energy of model pipelines, from shape files (YAML) or
 * from the NVTX ranges of a traced run; summary.csv, per-phase CSV, an SVG and a log each. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd_pipeline_args.h"
#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_pipeline.h"
#include "kj_pipeline_child.h"
#include "kj_replay.h"

/* "%.6g" of v, or "-" when v is not a finite number (not measured). */
static const char *fmt_or_dash(double v, char *buf, size_t len)
{
	if (!isfinite(v))
		return "-";
	snprintf(buf, len, "%.6g", v);
	return buf;
}

/* A program beside this kjoule binary (or named by env). */
static int find_beside(const char *env, const char *name, char *buf, size_t len)
{
	const char *const rel[] = {name, NULL};
	return kj_cli_find_beside(env, rel, X_OK, buf, len);
}

/* ---- the GPU side ---- */
struct gpu {
	const struct popts *o;
	char worker[PATH_MAX];
	struct kj_child *c;
	/* results already measured, by request text (identical layers are measured once) */
	char **keys;
	struct kj_phase_result *vals;
	size_t n, cap;
};

static int gpu_worker_start(struct gpu *g)
{
	char unroll[16], iters[32], es[32], dev[16];
	snprintf(unroll, sizeof(unroll), "%d", g->o->unroll);
	snprintf(iters, sizeof(iters), "%" PRId64, g->o->iters);
	snprintf(es, sizeof(es), "%g", g->o->energy_s);
	snprintf(dev, sizeof(dev), "%d", g->o->device);
	char *argv[] = {g->worker, "--device", dev, "--unroll", unroll, "--iters", iters,
			"--energy-seconds", es, g->o->no_energy ? "--no-energy" : NULL, NULL};
	return kj_child_start(argv, &g->c);
}

/* One request line to the pipeline worker, one KJ_PHASE reply (restarting a dead worker first). */
static void gpu_request(struct gpu *g, const char *req, double timeout_s, struct kj_phase_result *r,
			char *extra, size_t extra_len)
{
	char line[1024];
	int rc;
	if (!kj_child_alive(g->c)) {
		kj_child_close(g->c);
		g->c = NULL;
		if (gpu_worker_start(g)) {
			snprintf(r->status, sizeof(r->status), "failed");
			snprintf(r->error, sizeof(r->error), "cannot start %.200s", g->worker);
			return;
		}
	}
	if (kj_child_send(g->c, req)) { /* it ended since the last reply: a new one, once */
		kj_child_close(g->c);
		g->c = NULL;
		if (!gpu_worker_start(g) && !kj_child_send(g->c, req))
			goto read;
		snprintf(r->status, sizeof(r->status), "failed");
		snprintf(r->error, sizeof(r->error), "worker not reachable");
		return;
	}
read:
	while (!(rc = kj_child_line(g->c, timeout_s, line, sizeof(line))))
		if (kj_phase_result_parse(line, r) == 1)
			return;
		else if (!strncmp(line, "KJ_", 3) && extra)
			snprintf(extra, extra_len, "%.400s", line);
		else if (!strncmp(line, "KJ_", 3))
			continue;
		else
			fprintf(stderr, "%s\n", line);
	snprintf(r->status, sizeof(r->status), "failed");
	if (rc == KJ_ETIMEDOUT_CHILD) {
		snprintf(r->error, sizeof(r->error), "timed out after %.0f s (worker killed)", timeout_s);
	} else {
		char why[128];
		kj_child_describe_exit(g->c, why, sizeof(why));
		snprintf(r->error, sizeof(r->error), "%s before a result (see its message above)", why);
	}
}

static void gpu_phase(struct gpu *g, const struct kj_phase *ph, struct kj_phase_result *r)
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

/* --from: one kjoule-replay-worker per phase, the kept iteration's ordinals first..last. */
static void seq_phase_fill(const struct popts *o, int64_t it, const struct kj_phase *ph, const char *fill,
			   struct kj_phase_result *r)
{
	char worker[PATH_MAX], its[32], ord[64], runs[16], es[32], dev[16], line[1024];
	struct kj_child *c = NULL;
	struct kj_replay_seq s[2];
	int ns = 0, rc;
	snprintf(r->status, sizeof(r->status), "failed");
	if (find_beside("KJ_REPLAY_WORKER", "kjoule-replay-worker", worker, sizeof(worker))) {
		snprintf(r->error, sizeof(r->error), "kjoule-replay-worker not found (%.200s)", worker);
		return;
	}
	snprintf(its, sizeof(its), "%" PRId64, it);
	snprintf(ord, sizeof(ord), "%" PRId64 ":%" PRId64, ph->first, ph->last);
	snprintf(runs, sizeof(runs), "%d", o->runs);
	snprintf(es, sizeof(es), "%g", o->energy_s);
	snprintf(dev, sizeof(dev), "%d", o->device);
	char *argv[] = {worker, "--db", (char *)o->from, "--sequence", its, "--ordinals", ord, "--graph",
			"--runs", runs, "--device", dev, "--fill", (char *)fill,
			o->no_energy ? NULL : "--energy", "--energy-seconds", es, NULL};
	if (kj_child_start(argv, &c)) {
		snprintf(r->error, sizeof(r->error), "cannot start %.200s", worker);
		return;
	}
	kj_child_send(c, ""); /* nothing to ask: it reads no stdin */
	while (!(rc = kj_child_line(c, o->timeout_s + o->energy_s * 3, line, sizeof(line))))
		if (ns < 2 && kj_replay_parse_seq(line, &s[ns]) == 1)
			ns++;
	if (rc == KJ_ETIMEDOUT_CHILD) {
		snprintf(r->error, sizeof(r->error), "sequence replay timed out (worker killed)");
	} else if (!ns) {
		char why[128];
		kj_child_describe_exit(c, why, sizeof(why));
		snprintf(r->error, sizeof(r->error), "the replay worker gave no result: %s (its message above)", why);
	}
	kj_child_close(c);
	for (int i = 0; i < ns; i++) {
		if (strcmp(s[i].mode, "graph") && ns > 1)
			continue;
		if (!strcmp(s[i].status, "failed")) {
			snprintf(r->error, sizeof(r->error), "%s", s[i].error);
			return;
		}
		snprintf(r->status, sizeof(r->status), "ok");
		r->latency_ms = (double)s[i].median_ns * 1e-6;
		r->launches = s[i].runs;
		r->has_energy = s[i].has_energy;
		r->energy_j = s[i].energy_mj * 1e-3;
		r->energy_unc_j = s[i].energy_unc_mj * 1e-3;
		r->power_w = r->latency_ms > 0 ? r->energy_j / (r->latency_ms * 1e-3) : 0;
		if (s[i].error[0])
			snprintf(r->error, sizeof(r->error), "%s", s[i].error);
		return;
	}
	if (!r->error[0])
		snprintf(r->error, sizeof(r->error), "the replay worker gave no result");
}

/* --from: a phase replayed on random data, and on small integers when random data made it fail
 * (indices drawn at random can trip a kernel's bounds assert: docs/replay.md). */
static void seq_phase(const struct popts *o, int64_t it, const struct kj_phase *ph, struct kj_phase_result *r)
{
	seq_phase_fill(o, it, ph, "random", r);
	if (!strcmp(r->status, "ok") || strstr(r->error, "timed out") || strstr(r->error, "not found"))
		return;
	char first[160];
	snprintf(first, sizeof(first), "%.150s", r->error);
	kj_warnf("phase '%s' failed on random data (%s): again with small-integer data", ph->name, first);
	double f = r->flops, b = r->bytes;
	memset(r, 0, sizeof(*r));
	r->flops = f;
	r->bytes = b;
	seq_phase_fill(o, it, ph, "smallint", r);
	if (!strcmp(r->status, "ok") && !r->error[0])
		snprintf(r->error, sizeof(r->error), "replayed on small-integer data (random data: %.150s)", first);
}

/* Idle power and where it came from: --idle-w, --idle-db, or `kjoule power --idle` now. */
static double idle_power(const struct popts *o, char *src, size_t len)
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
		sqlite3_stmt *st = NULL;
		if (!kj_db_prepare(db, "SELECT median_mw, coalesce(source, '') FROM idle_power ORDER BY"
				   " device_id LIMIT 1", &st) && sqlite3_step(st) == SQLITE_ROW) {
			w = sqlite3_column_double(st, 0) * 1e-3;
			snprintf(src, len, "kjoule power --idle median (%s%s%s)",
				 o->idle_db ? o->idle_db : "measured now, 3 s", sqlite3_column_text(st, 1)[0] ? ", " : "",
				 (const char *)sqlite3_column_text(st, 1));
		}
		sqlite3_finalize(st);
		sqlite3_close(db);
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

/* Run one pipeline (read without error: kj_cli_pipeline_inputs refused any other); writes its
 * files and its summary row. Returns 0 when every phase was measured. */
static int pipeline_run(const struct popts *o, struct gpu *g, const struct kj_pipeline *p, int64_t it,
			double idle_w, const char *idle_src, FILE *summary)
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
	printf("== %s (%s%s%s, batch %" PRId64 ", %d phases)\n", p->name, p->precision, p->layout[0] ? ", " : "",
	       p->layout, batch, p->nphases);
	for (int i = 0; i < p->nphases; i++) {
		const struct kj_phase *ph = &p->phases[i];
		kj_phase_cost(ph, &r[i].flops, &r[i].bytes);
		if (ph->kind == KJ_PHASE_SEQ)
			seq_phase(o, it, ph, &r[i]);
		else
			gpu_phase(g, ph, &r[i]);
		r[i].dynamic_j = idle_w >= 0 && r[i].has_energy ? r[i].energy_j - idle_w * r[i].latency_ms * 1e-3 : NAN;
		char desc[600], dyn[32];
		kj_phase_format(ph, desc, sizeof(desc));
		if (!strcmp(r[i].status, "ok") && r[i].has_energy)
			printf("  %-40.40s %10.4f ms %8.1f W %11.4g J (+-%.2g)%s\n", ph->name, r[i].latency_ms,
			       r[i].power_w, r[i].energy_j, r[i].energy_unc_j, ph->repeat > 1 ? " x" : "");
		else if (!strcmp(r[i].status, "ok"))
			printf("  %-40.40s %10.4f ms   energy not measured%s\n", ph->name, r[i].latency_ms,
			       ph->repeat > 1 ? " x" : "");
		else
			printf("  %-40.40s FAILED: %s\n", ph->name, r[i].error);
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
		fflush(stdout);
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
		printf("  not measured: every phase failed (%s)\n", note);
	else if (row.t.energy_unmeasured)
		printf("  sequential %.4f ms%s; energy not measured (%d phase(s) without one%s); bottleneck %s %.4f ms\n",
		       row.t.seq_latency_ms, row.t.failed ? " (partial)" : "", row.t.energy_unmeasured,
		       o->no_energy ? ": --no-energy" : "", row.bottleneck, row.t.pp_period_ms);
	else if (!isfinite(row.t.pp_energy_j) || idle_w < 0)
		printf("  sequential %.4f ms, %.4g J%s; bottleneck %s %.4f ms; pipeline-parallel energy not known"
		       " (idle power unknown: %s)\n", row.t.seq_latency_ms, row.t.seq_energy_j,
		       row.t.failed ? " (partial)" : "", row.bottleneck, row.t.pp_period_ms, idle_src);
	else
		printf("  sequential %.4f ms, %.4g J%s; bottleneck %s %.4f ms; pipeline-parallel %.4g J per item "
		       "(idle %.1f W: %s)\n", row.t.seq_latency_ms, row.t.seq_energy_j,
		       row.t.failed ? " (partial)" : "", row.bottleneck, row.t.pp_period_ms,
		       row.t.pp_energy_j / (double)(batch > 0 ? batch : 1), idle_w, idle_src);
	if (random_data)
		printf("  (phases replayed on random data: on it a chain of kernels draws less energy than on the"
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

static void pipeline_list(const struct kj_pipeline *p)
{
	if (p->error[0]) {
		printf("%s: ERROR %s\n", p->name, p->error);
		return;
	}
	double tf = 0, tb = 0;
	printf("%s (%s%s%s, %d phases)%s%s\n", p->name, p->precision, p->layout[0] ? ", " : "", p->layout, p->nphases, p->description[0] ? ": " : "",
	       p->description);
	for (int i = 0; i < p->nphases; i++) {
		char desc[600];
		double f, b;
		kj_phase_cost(&p->phases[i], &f, &b);
		tf += f * (double)p->phases[i].repeat;
		tb += b * (double)p->phases[i].repeat;
		kj_phase_format(&p->phases[i], desc, sizeof(desc));
		char *nm = strstr(desc, " name=");
		if (nm)
			*nm = 0;
		printf("  %-36.36s x%-3" PRId64 " %10.4f GFLOP %9.3f MB  %s\n", p->phases[i].name,
		       p->phases[i].repeat, f * 1e-9, b * 1e-6, desc);
	}
	printf("  total %.4f GFLOP, %.3f MB\n", tf * 1e-9, tb * 1e-6);
}

/* Measured ceilings (a device-to-device copy, a large GEMM) unless given. */
static void ceilings(struct popts *o, struct gpu *g)
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
		printf("ceilings (measured now): %.1f TFLOP/s (%s GEMM 8192^3), %.0f GB/s (1 GiB device copy, "
		       "read + write)\n", tf, o->precision[0] ? o->precision : "fp16", gbs);
	} else {
		kj_warnf("ceilings not measured: %s", r.error);
	}
}

/* The command: options and every input checked first (a refusal starts nothing and writes
 * nothing), then each chosen pipeline listed or measured. */
int cmd_pipeline(int argc, char **argv)
{
	struct popts o;
	struct gpu g;
	int rc = kj_cli_pipeline_args(argc, argv, &o), failed = 0;
	memset(&g, 0, sizeof(g));
	g.o = &o;
	int nsets = 0, total = 0;
	int64_t it = -1;
	char err[600];
	struct kj_pipeline_set *sets = NULL;
	if (rc) {
		rc = rc > 0 ? 0 : 2;
		goto out;
	}
	sets = calloc((size_t)o.nfiles + 1, sizeof(*sets));
	if (!sets) {
		rc = 1;
		goto out;
	}
	if (o.from) {
		sets[0].p = calloc(1, sizeof(*sets[0].p));
		if (!sets[0].p) {
			rc = 1;
			goto out;
		}
		sets[0].n = 1;
		nsets = 1;
		if (kj_pipeline_from_run(o.from, o.layers, o.region, sets[0].p, &it, err, sizeof(err))) {
			kj_errorf("%s", err);
			rc = 1;
			goto out;
		}
		total = 1;
		sqlite3 *rdb = NULL;
		if (!kj_db_open(o.from, 0, &rdb)) {
			o.from_snapshot = kj_db_has_snapshot(rdb);
			kj_db_close(rdb);
		}
	} else {
		int in = kj_cli_pipeline_inputs(&o, sets, &nsets);
		if (in == -2) {
			rc = 2;
			goto out;
		}
		failed = in < 0;
		for (int s = 0; s < nsets; s++)
			total += sets[s].n;
		if (failed && !o.list) { /* refused: no worker, no output */
			rc = 1;
			goto out;
		}
	}
	if (o.list) {
		for (int s = 0; s < nsets; s++)
			for (int i = 0; i < sets[s].n; i++)
				if (!o.only || !strcmp(sets[s].p[i].name, o.only))
					pipeline_list(&sets[s].p[i]);
		rc = failed;
		goto out;
	}
	if (!o.from && find_beside("KJ_PIPELINE_WORKER", "kjoule-pipeline-worker", g.worker, sizeof(g.worker))) {
		kj_errorf("pipeline worker not found (%s): build kjoule with CUDA (KJ_WITH_CUDA) or set "
			  "KJ_PIPELINE_WORKER", g.worker);
		rc = 1;
		goto out;
	}
	if (mkdir(o.out, 0777) && errno != EEXIST) {
		kj_errorf("%s: %s", o.out, strerror(errno));
		rc = 1;
		goto out;
	}
	char idle_src[256];
	double idle_w = idle_power(&o, idle_src, sizeof(idle_src));
	if (!o.from)
		ceilings(&o, &g);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/summary.csv", o.out);
	FILE *summary = fopen(path, "w");
	if (!summary) {
		kj_errorf("%s: %s", path, strerror(errno));
		rc = 1;
		goto out;
	}
	kj_summary_header_write(summary);
	for (int s = 0; s < nsets; s++)
		for (int i = 0; i < sets[s].n; i++)
			if (!o.only || !strcmp(sets[s].p[i].name, o.only))
				failed |= pipeline_run(&o, &g, &sets[s].p[i], it, idle_w, idle_src, summary);
	fclose(summary);
	printf("summary: %s (%d pipeline(s))\n", path, total);
	rc = failed ? 1 : 0;
out:
	kj_child_close(g.c);
	for (size_t i = 0; i < g.n; i++)
		free(g.keys[i]);
	free(g.keys);
	free(g.vals);
	for (int s = 0; sets && s < nsets; s++)
		kj_pipeline_set_free(&sets[s]);
	free(sets);
	kj_cli_pipeline_free(&o);
	return rc;
}
