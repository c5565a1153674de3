/* kjoule pipeline: per-layer latency and energy of model pipelines, from shape files (YAML) or
 * from the NVTX ranges of a traced run; summary.csv, per-phase CSV, an SVG and a log each. The
 * measuring is kj_pipeline_run.h's; here the options, the inputs, --from's phases (replay's
 * worker) and --list. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd_pipeline_args.h"
#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_pipeline_run.h"
#include "kj_proc.h"
#include "kj_replay.h"


/* A program beside this kjoule binary (or named by env). */
static int find_beside(const char *env, const char *name, char *buf, size_t len)
{
	const char *const rel[] = {name, NULL};
	return kj_cli_find_beside(env, rel, X_OK, buf, len);
}

/* --from: one kjoule-replay-worker per phase, the kept iteration's ordinals first..last. */
static void seq_phase_fill(const struct kj_pipeline_opts *o, int64_t it, const struct kj_phase *ph, const char *fill,
			   struct kj_phase_result *r)
{
	char worker[PATH_MAX], its[32], ord[64], runs[16], es[32], dev[16], line[1024];
	struct kj_proc *c = NULL;
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
	struct kj_proc_opts po = {.limit_s = o->timeout_s + o->energy_s * 3}; /* stdin: none, it reads none */
	if (kj_proc_spawn(argv, &po, &c)) {
		snprintf(r->error, sizeof(r->error), "cannot start %.200s", worker);
		return;
	}
	while (!(rc = kj_proc_line(c, line, sizeof(line))))
		if (ns < 2 && kj_replay_parse_seq(line, &s[ns]) == 1)
			ns++;
	if (rc == KJ_ETIMEDOUT) {
		snprintf(r->error, sizeof(r->error), "sequence replay timed out (worker killed)");
	} else if (!ns) {
		char why[128];
		kj_proc_describe_exit(c, why, sizeof(why));
		snprintf(r->error, sizeof(r->error), "the replay worker gave no result: %s (its message above)", why);
	}
	kj_proc_close(c);
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
static void seq_phase(const struct kj_pipeline_opts *o, int64_t it, const struct kj_phase *ph, struct kj_phase_result *r)
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


/* The command: options and every input checked first (a refusal starts nothing and writes
 * nothing), then each chosen pipeline listed or measured. */
int cmd_pipeline(int argc, char **argv)
{
	struct kj_pipeline_opts o;
	struct kj_pipeline_host *g = NULL;
	char worker[PATH_MAX] = "";
	int rc = kj_cli_pipeline_args(argc, argv, &o), failed = 0;
	int nsets = 0, total = 0;
	int64_t it = -1;
	char err[600];
	struct kj_pipeline_set *sets = NULL;
	if (rc) {
		rc = rc > 0 ? 0 : 2;
		goto out;
	}
	signal(SIGPIPE, SIG_IGN); /* a reader of our stdout gone does not end the measuring midway */
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
		int in = kj_pipeline_inputs_read(&o, sets, &nsets);
		if (in == KJ_ENOTFOUND) {
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
	if (!o.from && find_beside("KJ_PIPELINE_WORKER", "kjoule-pipeline-worker", worker, sizeof(worker))) {
		kj_errorf("pipeline worker not found (%s): build kjoule with CUDA (KJ_WITH_CUDA) or set "
			  "KJ_PIPELINE_WORKER", worker);
		rc = 1;
		goto out;
	}
	if (mkdir(o.out, 0777) && errno != EEXIST) {
		kj_errorf("%s: %s", o.out, strerror(errno));
		rc = 1;
		goto out;
	}
	if (kj_pipeline_host_open(&o, worker, seq_phase, &g)) {
		rc = 1;
		goto out;
	}
	char idle_src[256];
	double idle_w = kj_pipeline_idle_power(&o, idle_src, sizeof(idle_src));
	if (!o.from)
		kj_pipeline_ceilings(&o, g, stdout);
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
				failed |= kj_pipeline_measure(&o, g, &sets[s].p[i], it, idle_w, idle_src, summary, stdout);
	fclose(summary);
	printf("summary: %s (%d pipeline(s))\n", path, total);
	rc = failed ? 1 : 0;
out:
	kj_pipeline_host_close(g);
	for (int s = 0; sets && s < nsets; s++)
		kj_pipeline_set_free(&sets[s]);
	free(sets);
	kj_cli_pipeline_free(&o);
	return rc;
}
