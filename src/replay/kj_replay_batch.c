/* kjoule replay's per-kernel replay: batches of unique kernels, each batch in one worker process
 * (kj_replay_host.h), retried on other data where random data faults, stored as they come.
 * docs/replay.md, "Method". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kj_error.h"
#include "kj_replay.h"
#include "kj_replay_host.h"
#include "kj_replay_run_internal.h"
#include "kj_schema.h"

struct batch {
	struct kj_replay_plan *plan;
	size_t *idx;       /* plan items in this worker, in order */
	int *got;          /* per idx: a KJ_RESULT arrived */
	size_t n;
	ssize_t current;   /* position in idx of the kernel the worker announced last */
	/* the progress line, printed as each result arrives */
	const struct kj_replay_opts *o;
	const int *tier;       /* per plan item: the data fill it ran on (a fault may retry it) */
	unsigned char *shown;  /* per plan item: its progress line is out */
	size_t done, total;    /* kernels settled, of all to replay */
	double kernels_s;      /* the kernels' part of --budget */
};

/* "[done/total elapsed, ~left] status name" on stderr (on a terminal too under --json). */
static void progress_line(const struct batch *b, const struct kj_replay_item *it)
{
	const struct kj_replay_opts *o = b->o;
	if (o->json && !isatty(STDERR_FILENO))
		return;
	double el = kj_replay_elapsed_s(o), left = el / (double)b->done * (double)(b->total - b->done);
	int capped = o->budget_s > 0 && b->kernels_s - el < left;
	if (capped)
		left = b->kernels_s - el > 0 ? b->kernels_s - el : 0;
	fprintf(stderr, "[%zu/%zu %3.0fs, ~%.0fs left%s] %-9s%s %.60s\n", b->done, b->total, el, left,
		capped ? " of the budget" : "", it->res.status, it->energy ? " +energy" : "",
		it->demangled ? it->demangled : it->mangled);
}

static ssize_t batch_find(const struct batch *b, const char *line)
{
	const char *u = strstr(line, "\tunique=");
	if (!u)
		return -1;
	long long id = atoll(u + 8);
	for (size_t i = 0; i < b->n; i++)
		if (b->plan->items[b->idx[i]].unique_id == id)
			return (ssize_t)i;
	return -1;
}

static void on_batch_line(const char *line, void *arg)
{
	struct batch *b = arg;
	ssize_t i = batch_find(b, line);
	if (i < 0)
		return;
	struct kj_replay_result *r = &b->plan->items[b->idx[i]].res;
	if (!strncmp(line, "KJ_BEGIN\t", 9)) {
		int64_t id = r->unique_id;
		memset(r, 0, sizeof(*r));
		r->unique_id = id;
		r->dynamic_mj_per_launch = 0.0 / 0.0;
		b->current = i;
		return;
	}
	if (kj_replay_parse_line(line, r) == 1 && !strncmp(line, "KJ_RESULT\t", 10)) {
		size_t item = b->idx[i];
		b->got[i] = 1;
		/* settled unless a data-dependent fault sends it back for another fill */
		if (b->o && !(kj_replay_data_dependent(r) && b->tier[item] < 2)) {
			b->done++;
			b->shown[item] = 1;
			progress_line(b, &b->plan->items[item]);
		}
	}
}

/* Replay every item that is not skipped: batches of kernels per worker process (one context);
 * a worker that dies or poisons its context costs the kernel it was on, and the rest go on in a
 * new worker. Kernels that fail in a data-dependent way are retried with small-integer data, then
 * zeros, and say so. */
int kj_replay_batches(const struct kj_replay_opts *o, sqlite3 *db, struct kj_replay_plan *plan)
{
	size_t *todo = calloc(plan->n + 1, sizeof(*todo)), ntodo = 0;
	unsigned char *settled = calloc(plan->n + 1, 1); /* results of this batch, to store now */
	unsigned char *shown = calloc(plan->n + 1, 1);   /* progress line printed */
	int *tier = calloc(plan->n + 1, sizeof(*tier)), *got = calloc(plan->n + 1, sizeof(*got));
	char (*first_err)[160] = calloc(plan->n + 1, sizeof(*first_err));
	char **argv = calloc(2 * plan->n + 40, sizeof(*argv));
	char (*ids)[24] = calloc(plan->n + 1, sizeof(*ids));
	char num[8][32];
	int rc = 0, status, timed_out;
	size_t done = 0, total = 0;
	static const char *const fills[] = {"random", "smallint", "zero"};
	/* a worker takes at most this many kernels, so --budget is checked often, a kernel that
	 * hangs a worker costs few others a restart, and results are stored as they come */
	const size_t chunk = o->budget_s > 0 || o->energy ? 8 : 64;
	const double kernels_s = o->budget_s - o->seq_reserve_s; /* the kernels' part of --budget */

	if (!todo || !tier || !got || !first_err || !argv || !ids || !settled || !shown) {
		rc = KJ_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < plan->n; i++)
		if (!plan->items[i].skip[0])
			todo[ntodo++] = i;
	total = ntodo;
	snprintf(num[1], sizeof(num[1]), "%d", o->runs);
	snprintf(num[2], sizeof(num[2]), "%d", o->warmup);
	snprintf(num[3], sizeof(num[3]), "%d", o->unroll);
	snprintf(num[4], sizeof(num[4]), "%d", o->device);
	snprintf(num[5], sizeof(num[5]), "%g", o->energy_s);
	snprintf(num[6], sizeof(num[6]), "%.4f", o->pace_duty);
	while (ntodo) {
		if (o->budget_s > 0 && kj_replay_elapsed_s(o) >= kernels_s) {
			for (size_t i = 0; i < ntodo; i++) {
				struct kj_replay_item *it = &plan->items[todo[i]];
				char kept[80] = "";
				if (o->seq_reserve_s > 0)
					snprintf(kept, sizeof(kept), "%.0f s of it kept for the iteration's replay; ",
						 o->seq_reserve_s);
				snprintf(it->skip, sizeof(it->skip), "not replayed: the --budget of %g s was spent (%s`kjoule"
					 " replay RUN --kernel NAME` replays it)", o->budget_s, kept);
				kj_replay_result_set(&it->res, "skipped", "%s", it->skip);
			}
			break;
		}
		/* one worker for the kernels of the lowest pending fill tier, energy or latency alone,
		 * in plan order (largest share of the iterations first) */
		int t = 3, want_energy = -1;
		for (size_t i = 0; i < ntodo; i++)
			if (tier[todo[i]] < t)
				t = tier[todo[i]];
		for (size_t i = 0; i < ntodo && want_energy < 0; i++)
			if (tier[todo[i]] == t)
				want_energy = plan->items[todo[i]].energy;
		struct batch b = {plan, calloc(ntodo, sizeof(size_t)), got, 0, -1, o, tier, shown, done, total, kernels_s};
		if (!b.idx) {
			rc = KJ_ENOMEM;
			goto out;
		}
		int k = 0;
		argv[k++] = (char *)o->worker;
		argv[k++] = "--db";
		argv[k++] = (char *)o->run;
		argv[k++] = "--runs";
		argv[k++] = num[1];
		argv[k++] = "--warmup";
		argv[k++] = num[2];
		argv[k++] = "--cache";
		argv[k++] = (char *)o->cache;
		argv[k++] = "--device";
		argv[k++] = num[4];
		argv[k++] = "--fill";
		argv[k++] = (char *)fills[t];
		if (o->energy && want_energy) {
			argv[k++] = "--energy";
			if (want_energy == 1 && plan->cache_cold)
				argv[k++] = "--no-cold-energy";
			argv[k++] = "--unroll";
			argv[k++] = num[3];
			argv[k++] = "--energy-seconds";
			argv[k++] = num[5];
			if (o->back_to_back)
				argv[k++] = "--no-pace";
			if (o->pace_duty > 0) {
				argv[k++] = "--pace-duty";
				argv[k++] = num[6];
			}
		}
		if (o->timer) {
			argv[k++] = "--timer";
			argv[k++] = (char *)o->timer;
		}
		if (o->relocate)
			argv[k++] = "--relocate";
		if (o->verify)
			argv[k++] = "--verify";
		/* near the end of a budget, as many kernels as the time left holds at the pace so far */
		size_t take = kj_replay_budget_chunk(chunk, kernels_s, kj_replay_elapsed_s(o), done);
		for (size_t i = 0; i < ntodo && b.n < take; i++)
			if (tier[todo[i]] == t && plan->items[todo[i]].energy == want_energy) {
				snprintf(ids[b.n], sizeof(ids[0]), "%" PRId64, plan->items[todo[i]].unique_id);
				argv[k++] = "--unique";
				argv[k++] = ids[b.n];
				got[b.n] = 0;
				b.idx[b.n++] = todo[i];
			}
		argv[k] = NULL;
		/* an energy worker also gets time for its windows (three for a kernel with cold L2) */
		int limit_s = o->timeout_s + (o->energy && want_energy
					      ? (int)(o->energy_s * 3 * (want_energy == 2 ? 3 : 1)) + 30 : 0);
		if (kj_replay_host_run(argv, limit_s, on_batch_line, &b, &status, &timed_out)) {
			free(b.idx);
			rc = KJ_EIO;
			goto out;
		}
		/* the kernel the worker was on when it died or hung has no result: it is the culprit */
		if (b.current >= 0 && !got[b.current]) {
			struct kj_replay_result *r = &plan->items[b.idx[b.current]].res;
			if (timed_out) {
				kj_replay_result_set(r, "failed", "timed out after %d s (worker killed)", o->timeout_s);
				snprintf(r->reason, sizeof(r->reason), "%s", KJ_REASON_TIMED_OUT);
			}
			else if (WIFSIGNALED(status))
				kj_replay_result_set(r, "failed", "worker died of signal %d (%s)", WTERMSIG(status),
						     strsignal(WTERMSIG(status)));
			else
				kj_replay_result_set(r, "failed", "worker exited %d without a result",
						     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			got[b.current] = 1;
		} else if (b.current < 0 && b.n) {
			/* the worker never began: fail the first so that the loop cannot spin */
			kj_replay_result_set(&plan->items[b.idx[0]].res, "failed",
					     "the replay worker did not start (exit %d)",
					     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			got[0] = 1;
		}
		/* settle what has a result; retry data-dependent failures with the next fill */
		size_t nn = 0;
		for (size_t i = 0; i < ntodo; i++) {
			size_t item = todo[i];
			ssize_t pos = -1;
			for (size_t j = 0; j < b.n; j++)
				if (b.idx[j] == item)
					pos = (ssize_t)j;
			if (pos < 0 || !got[pos]) {
				todo[nn++] = item; /* not reached in this worker */
				continue;
			}
			struct kj_replay_item *it = &plan->items[item];
			if (kj_replay_data_dependent(&it->res) && tier[item] < 2) {
				if (!tier[item])
					snprintf(first_err[item], sizeof(first_err[0]), "%.150s", it->res.error);
				tier[item]++;
				todo[nn++] = item;
				continue;
			}
			if (tier[item] && strcmp(it->res.status, "failed")) {
				char note[sizeof(it->res.error)];
				snprintf(note, sizeof(note), "data: %s (random data failed: %.150s)%s%.200s",
					 fills[tier[item]], first_err[item], it->res.error[0] ? "; " : "",
					 it->res.error);
				snprintf(it->res.error, sizeof(it->res.error), "%s", note);
			} else if (tier[item]) { /* every fill failed: say so, with the first failure */
				char note[sizeof(it->res.error)];
				snprintf(note, sizeof(note), "on every data fill (random: %.150s; %s: %.200s)",
					 first_err[item], fills[tier[item]], it->res.error);
				snprintf(it->res.error, sizeof(it->res.error), "%s", note);
			}
			done++;
			settled[item] = 1;
			if (!shown[item]) { /* settled only now (a worker that died on it): say so */
				b.done = done;
				shown[item] = 1;
				progress_line(&b, it);
			}
		}
		ntodo = nn;
		free(b.idx);
		/* stored now: a replay killed later (a timeout, a lost session) keeps these */
		if (kj_replay_plan_store_some(db, plan, settled)) {
			rc = KJ_EDB;
			goto out;
		}
		memset(settled, 0, plan->n + 1);
	}
out:
	free(todo);
	free(tier);
	free(got);
	free(first_err);
	free(argv);
	free(ids);
	free(settled);
	free(shown);
	if (rc)
		kj_errorf("replay workers: %s", kj_strerror(rc));
	return rc;
}
