/* kjoule replay --sequence: one worker replays a captured iteration in order (eager, as one
 * graph, its graph launches as recorded), on other data where random data faults; the results
 * are stored and reported. docs/replay.md, "Sequence replay". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_grow.h"
#include "kj_replay.h"
#include "kj_replay_host.h"
#include "kj_replay_run_internal.h"
#include "kj_replay_seq_topo.h"


/* A worker's time limit: want seconds, or what is left of --budget where that is less (at least
 * 1 s). *by_budget: 1 when the budget set it. */
static int budget_limit(const struct kj_replay_opts *o, int want, int *by_budget)
{
	*by_budget = 0;
	if (o->budget_s <= 0)
		return want;
	double left = o->budget_s - kj_replay_elapsed_s(o);
	if (left < (double)want) {
		*by_budget = 1;
		return left < 1 ? 1 : (int)left;
	}
	return want;
}

struct seq_ctx {
	struct kj_replay_seq s[3]; /* eager, graph, topology */
	size_t n;
	struct kj_replay_seq_kernel *k; /* per-kernel in-sequence times */
	size_t nk, capk;
	struct kj_topo_node_time *nt;   /* per-node times in the topology graph */
	size_t nnt, capnt;
};

static void seq_ctx_reset(struct seq_ctx *c)
{
	free(c->k);
	free(c->nt);
	memset(c, 0, sizeof(*c));
}

static void on_seq_line(const char *line, void *arg)
{
	struct seq_ctx *c = arg;
	struct kj_replay_seq_kernel k;
	struct kj_topo_node_time nt;
	if (c->n < 3 && kj_replay_parse_seq(line, &c->s[c->n]) == 1) {
		c->n++;
	} else if (kj_replay_parse_topo_node(line, &nt) == 1) {
		struct kj_topo_node_time *nn = kj_grow(c->nt, &c->capnt, c->nnt, sizeof(*nn), 64);
		if (!nn)
			return;
		c->nt = nn;
		c->nt[c->nnt++] = nt;
	} else if (kj_replay_parse_seq_kernel(line, &k) == 1) {
		struct kj_replay_seq_kernel *nk = kj_grow(c->k, &c->capk, c->nk, sizeof(*nk), 64);
		if (!nk)
			return;
		c->k = nk;
		c->k[c->nk++] = k;
	}
}

/* The in-sequence kernel times a worker that crashed in the topology replay did not get to (they
 * come last): one more worker on the same fill, without the topology and without energy (the
 * eager and graph results, and their energy, stay the first worker's). */
static void seq_kernels_again(const struct kj_replay_opts *o, char *const argv[], struct seq_ctx *c,
			      const char *it)
{
	char *a[32];
	int k = 0, status = 0, timed_out = 0;
	struct seq_ctx again;
	memset(&again, 0, sizeof(again));
	for (int i = 0; argv[i] && k < 31; i++) {
		if (!strcmp(argv[i], "--topology") || !strcmp(argv[i], "--energy") || !strcmp(argv[i], "--no-pace"))
			continue;
		if (!strcmp(argv[i], "--energy-seconds") && argv[i + 1]) {
			i++;
			continue;
		}
		a[k++] = argv[i];
	}
	a[k] = NULL;
	if (kj_replay_host_run(a, o->timeout_s, on_seq_line, &again, &status, &timed_out) == 0 && again.nk) {
		free(c->k);
		c->k = again.k;
		c->nk = again.nk;
		c->capk = again.capk;
		again.k = NULL;
		kj_warnf("sequence replay of iteration %s: each kernel's in-sequence time taken by another worker,"
			 " without the graph launches as recorded", it);
	} else {
		kj_warnf("sequence replay of iteration %s: the in-sequence kernel times were not measured either"
			 " (the second worker: %s)", it, timed_out ? "timed out" : WIFSIGNALED(status) ?
			 strsignal(WTERMSIG(status)) : "gave none");
	}
	seq_ctx_reset(&again);
}

/* --sequence: one worker replays the whole iteration (eager, and as a graph with --graph).
 * quiet: store the results and print nothing on stdout (after a per-kernel --json report). */
int kj_replay_sequence(const struct kj_replay_opts *o, sqlite3 *db, int quiet)
{
	struct kj_replay_seq_info info;
	struct kj_replay_topo topo;
	struct seq_ctx c;
	char it[32], runs[16], warm[16], dev[16], es[32];
	int status, timed_out, rc, ret = KJ_EIO, have_topo = 0, use_topo = 0;

	memset(&c, 0, sizeof(c));
	memset(&topo, 0, sizeof(topo));
	if ((rc = kj_replay_seq_info_load(db, o->run, o->iteration, &info)))
		return rc;
	/* graph-launched: its launches rebuilt as recorded too, unless --no-topology */
	if (o->graph && o->topology != 0) {
		rc = kj_replay_seq_topo_plan(db, o->run, info.iteration, o->topology, &topo, &use_topo);
		if (rc && rc != KJ_ENOTFOUND)
			return rc;
		have_topo = rc == 0;
	}
	if (o->dry_run) {
		if (o->json) {
			char *text = kj_replay_seq_topo_json(kj_replay_seq_json(&info, NULL, 0), &topo, have_topo,
							     use_topo, NULL, 0, 1);
			if (text)
				printf("%s\n", text);
			free(text);
		} else {
			kj_replay_seq_print(stdout, &info, NULL, 0);
			if (have_topo)
				kj_replay_topo_print(stdout, &topo);
			else if (o->graph && o->topology != 0)
				printf("graph topology: none (%s)\n", topo.reason);
		}
		kj_replay_topo_free(&topo);
		return 0;
	}
	if (!o->worker_found) {
		kj_errorf("replay worker not found (%s); build kjoule with CUDA or set KJ_REPLAY_WORKER", o->worker);
		ret = KJ_ENOTFOUND;
		goto out;
	}
	snprintf(it, sizeof(it), "%lld", (long long)info.iteration);
	snprintf(runs, sizeof(runs), "%d", o->runs);
	snprintf(warm, sizeof(warm), "%d", o->warmup);
	snprintf(dev, sizeof(dev), "%d", o->device);
	snprintf(es, sizeof(es), "%g", o->energy_s);
	char *argv[24];
	int k = 0;
	argv[k++] = (char *)o->worker;
	argv[k++] = "--db";
	argv[k++] = (char *)o->run;
	argv[k++] = "--sequence";
	argv[k++] = it;
	argv[k++] = "--runs";
	argv[k++] = runs;
	argv[k++] = "--warmup";
	argv[k++] = warm;
	argv[k++] = "--device";
	argv[k++] = dev;
	if (o->graph)
		argv[k++] = "--graph";
	if (use_topo)
		argv[k++] = "--topology";
	if (o->back_to_back)
		argv[k++] = "--no-pace";
	if (o->energy) {
		argv[k++] = "--energy";
		argv[k++] = "--energy-seconds";
		argv[k++] = es;
	}
	if (o->relocate)
		argv[k++] = "--relocate";
	argv[k] = NULL;
	static const char *const fills[] = {"random", "smallint", "zero"};
	const int nfills = 3;
	char first[160] = "";
	argv[k++] = "--fill";
	int used = 0;
	for (int t = 0; t < nfills; t++) {
		used = t;
		argv[k] = (char *)fills[t];
		argv[k + 1] = NULL;
		seq_ctx_reset(&c);
		/* with --energy, each measured graph (linear, and the topology) gets its energy span */
		int energy_span = o->energy ? ((int)(o->energy_s * 3) + 30) * (use_topo ? 2 : 1) : 0;
		int by_budget = 0, limit = budget_limit(o, o->timeout_s + energy_span, &by_budget);
		if (kj_replay_host_run(argv, limit, on_seq_line, &c, &status, &timed_out) || !c.n) {
			if (timed_out && by_budget)
				kj_errorf("sequence replay of iteration %s: stopped when the --budget of %g s was spent"
					  " (worker killed after %d s)", it, o->budget_s, limit);
			else
				kj_errorf("sequence replay of iteration %s: %s", it,
					  timed_out ? "timed out (worker killed)" :
					  WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) :
					  "the worker gave no result");
			goto out;
		}
		struct kj_replay_result probe_r;
		memset(&probe_r, 0, sizeof(probe_r));
		snprintf(probe_r.status, sizeof(probe_r.status), "%s", c.s[0].status);
		snprintf(probe_r.error, sizeof(probe_r.error), "%s", c.s[0].error);
		if (!kj_replay_data_dependent(&probe_r))
			break;
		if (!t)
			snprintf(first, sizeof(first), "%.150s", c.s[0].error);
		if (t < nfills - 1)
			kj_warnf("iteration %s faulted on %s data (%s); again with %s data", it, fills[t],
				 c.s[0].error, fills[t + 1]);
	}
	/* a worker that died after the eager and graph results (in the topology replay, the last
	 * mode): those stand, and the topology is a failure that names the crash */
	int have_topo_line = 0;
	for (size_t i = 0; i < c.n; i++)
		have_topo_line |= !strcmp(c.s[i].mode, "topology");
	if (WIFSIGNALED(status) && use_topo && !have_topo_line && c.n < 3) {
		struct kj_replay_seq *t = &c.s[c.n++];
		*t = c.s[0];
		snprintf(t->mode, sizeof(t->mode), "topology");
		snprintf(t->status, sizeof(t->status), "failed");
		t->runs = 0;
		t->min_ns = t->median_ns = t->max_ns = 0;
		t->has_energy = 0;
		snprintf(t->error, sizeof(t->error), "the replay worker crashed (%s) in the graph launches"
			 " rebuilt as recorded; the eager and graph results stand", strsignal(WTERMSIG(status)));
		kj_warnf("sequence replay of iteration %s: %s", it, t->error);
		if (!c.nk)
			seq_kernels_again(o, argv, &c, it);
	}
	/* what the replayed buffers held: the fill tier, under the run's saved buffers where it has them */
	int snap = kj_db_has_snapshot(db);
	if (used > 0 && !snap)
		kj_warnf("iteration %s replayed on %s data: its energy is not the program's (operands of few set"
			 " bits draw less power); trace with `kjoule run --snapshot-graphs` (graph programs) or"
			 " `--snapshot` to replay on the program's buffers", it, fills[used]);
	for (size_t i = 0; i < c.n; i++)
		snprintf(c.s[i].data, sizeof(c.s[i].data), "%s%s", fills[used], snap ? "+snapshot" : "");
	for (size_t i = 0; first[0] && i < c.n; i++) /* c.n <= 3: on_seq_line keeps three */
		if (strcmp(c.s[i].status, "failed")) {
			char note[sizeof(c.s[i].error)];
			snprintf(note, sizeof(note), "data: %s (random data failed: %.100s)%s%.100s", fills[used],
				 first, c.s[i].error[0] ? "; " : "", c.s[i].error);
			snprintf(c.s[i].error, sizeof(c.s[i].error), "%s", note);
		}
	if ((rc = kj_replay_seq_store(db, c.s, c.n, c.k, c.nk)) ||
	    (have_topo && (rc = kj_replay_seq_topo_finish(db, &topo, use_topo, c.s, c.n, c.nt, c.nnt)))) {
		ret = rc;
		goto out;
	}
	info.have_fidelity = c.nk > 0 && !kj_replay_seq_fidelity(db, &info, &info.fidelity);
	if (quiet) {
		/* nothing on stdout */
	} else if (o->json) {
		char *text = kj_replay_seq_topo_json(kj_replay_seq_json(&info, c.s, c.n), &topo, have_topo,
						     use_topo, c.nt, c.nnt, 0);
		if (!text) {
			ret = KJ_ENOMEM;
			goto out;
		}
		printf("%s\n", text);
		free(text);
	} else {
		kj_replay_seq_print(stdout, &info, c.s, c.n);
		if (have_topo)
			kj_replay_seq_topo_print(stdout, &topo, use_topo, c.s, c.n, c.nt, c.nnt);
	}
	ret = strcmp(c.s[0].status, "failed") ? 0 : KJ_EGPU;
out:
	seq_ctx_reset(&c);
	kj_replay_topo_free(&topo);
	return ret;
}
