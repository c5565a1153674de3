/* kjoule replay RUN: re-launch every captured unique kernel alone, in a worker process each
 * (kjoule-replay-worker, which links libcuda; this binary does not), store and print the results.
 * docs/replay.md describes the method. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kj_cli.h"
#include "kj_db.h"
#include "kj_error.h"
#include "kj_gpu_watch.h"
#include "kj_grow.h"
#include "kj_replay.h"
#include "cmd_replay_topo.h"

struct replay_opts {
	const char *run, *pattern, *cache, *timer;
	int runs, warmup, energy, unroll, json, jobs, device, any_arch, relocate, timeout_s, sequence;
	int graph, verify, no_sequence, all, energy_s_given;
	int topology; /* -1: with --graph when the iteration is graph-launched; 0 never; 1 asked */
	int back_to_back; /* --back-to-back: iteration energy unpaced even where the program paused */
	int dry_run;
	long long iteration;
	double energy_s, budget_s;
	double seq_reserve_s;    /* of --budget, kept for the kept iteration's replay after the kernels */
	struct timespec started; /* the command's start: --budget counts from here */
};

/* The shortest energy window of a kernel when the pool is shared out: three counter updates */
#define KJ_REPLAY_ENERGY_MIN_S 0.3
/* Kernels get cold-L2 energy only while the windows stay this long: that energy is the difference
 * of two windows (flush and launch, flush alone), each carrying the flush's energy */
#define KJ_REPLAY_COLD_ENERGY_MIN_S 0.5
/* the warm-up before each energy window of a worker after its first (worker_timing.c) */
#define KJ_REPLAY_ENERGY_WARMUP_S 0.25

/* Under --budget, the kept iteration's replay starts only with this many seconds left; the
 * per-kernel replays leave it this share of the budget (at most KJ_REPLAY_SEQ_RESERVE_MAX_S, and
 * none where the share is under KJ_REPLAY_SEQ_MIN_S). */
#define KJ_REPLAY_SEQ_MIN_S 10
#define KJ_REPLAY_SEQ_RESERVE 0.3
#define KJ_REPLAY_SEQ_RESERVE_MAX_S 60.0

/* Seconds since the replay command started. */
static double since_start(const struct replay_opts *o)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - o->started.tv_sec) + (t.tv_nsec - o->started.tv_nsec) * 1e-9;
}

/* A worker's time limit: want seconds, or what is left of --budget where that is less (at least
 * 1 s). *by_budget: 1 when the budget set it. */
static int budget_limit(const struct replay_opts *o, int want, int *by_budget)
{
	*by_budget = 0;
	if (o->budget_s <= 0)
		return want;
	double left = o->budget_s - since_start(o);
	if (left < (double)want) {
		*by_budget = 1;
		return left < 1 ? 1 : (int)left;
	}
	return want;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule replay RUN.kjdb [--runs N] [--warmup W] [--cache warm|cold|both]\n"
		"                     [--energy] [--unroll U] [--energy-seconds S] [--kernel PATTERN]\n"
		"                     [--json] [--jobs 1] [--device D] [--timeout S] [--any-arch]\n"
		"                     [--timer cupti|events] [--relocate] [--verify] [--no-sequence]\n"
		"                     [--all] [--budget SECONDS]\n"
		"       kjoule replay RUN.kjdb --sequence [--iteration I] [--graph] [--no-topology] [--runs N]\n"
		"                     [--energy] [--back-to-back] [--dry-run]\n"
		"Re-launches each captured unique kernel alone (same binary, same parameters) in its own\n"
		"worker process and reports latency and, with --energy, energy per launch (warm/cold L2).\n"
		"Results go into the run's replay_kernel / replay_energy(_cold) tables. docs/replay.md.\n"
		"  --runs N         timed launches per cache mode (100)     --warmup W  untimed first (10)\n"
		"  --cache MODE     warm, cold (L2 flushed before each launch) or both (both)\n"
		"  --energy         CUDA graph of U launches (--unroll, 100) measured over >= S seconds;\n"
		"                   with the cold cache also L2-flush+launch pairs less the flushes alone\n"
		"                   (default: 40 s shared among the windows, 0.3..2 s each; cold windows\n"
		"                   for the largest kernels while they stay >= 0.5 s)\n"
		"  --all            energy for every kernel; by default only the kernels that hold 97 %% of\n"
		"                   the measured iterations' kernel time get it (warm-up and autotuning\n"
		"                   kernels: latency only); compare extrapolates the rest and says so\n"
		"  --budget S       bounds the whole replay: the kernels' replays start within 0.7 S where\n"
		"                   the run keeps an iteration and S >= 34 (10-60 s kept for its replay,\n"
		"                   which comes after them; else within S), what is left listed as skipped;\n"
		"                   energy windows share at most 0.4 S; the iteration is replayed only with\n"
		"                   10 s left and stopped at S\n"
		"  --kernel PATTERN glob or substring of the mangled or demangled name\n"
		"  --timeout S      a worker silent longer is killed, its kernel marked failed (60)\n"
		"  --any-arch       replay even when this GPU's architecture differs from the captured one\n"
		"  --relocate       do not re-create original addresses: relocate pointers (testing)\n"
		"  --verify         run each kernel once on the buffers saved by `kjoule run --snapshot`\n"
		"                   and compare its outputs with the saved ones, bit for bit\n"
		"  --sequence       replay one captured iteration (kjoule run --params-iteration) in order,\n"
		"                   on its streams with its event dependencies; --graph: also as one CUDA\n"
		"                   graph (energy per iteration with --energy); results in replay_sequence\n"
		"  --topology       with --graph (the default when the iteration is graph-launched): also\n"
		"                   its graph launches rebuilt with their recorded nodes and edges, timed,\n"
		"                   with energy, each kernel node timed where it runs; node kinds that\n"
		"                   cannot be rebuilt are named. --no-topology: the linear chain only\n"
		"  --back-to-back   the iteration's energy (graph, topology) with launches back to back;\n"
		"                   by default, where the program's GPU waited between the iteration's graph\n"
		"                   launches (a host synchronisation after each), one launch per program\n"
		"                   period, each waited for, as the program ran them\n"
		"  --dry-run        with --sequence: say what would be replayed (the iteration, its graph\n"
		"                   topology) without a GPU, and stop\n"
		"  --no-sequence    per-kernel replay only: without it, a run that holds an iteration\n"
		"                   (kjoule run keeps one by default) is also replayed --sequence --graph,\n"
		"                   which times every kernel where the iteration ran it\n"
		"Environment: KJ_REPLAY_WORKER names the worker (default: beside the kjoule binary).\n");
}

/* The worker's path: $KJ_REPLAY_WORKER, else beside this binary (or its build-tree place). */
static int find_worker(char *buf, size_t len)
{
	static const char *const rel[] = {"kjoule-replay-worker", "src/replay/worker/kjoule-replay-worker",
					  "../libexec/kjoule/kjoule-replay-worker", NULL};
	return kj_cli_find_beside("KJ_REPLAY_WORKER", rel, X_OK, buf, len);
}

/* A worker's stderr, once it has exited, onto ours: its own warnings as they are, but the
 * device-side assertion messages of a kernel run on substitute data (one per thread, hundreds;
 * the kernel's result already says which data it ran on) as one line with their count, unless
 * KJ_REPLAY_DEBUG is set. */
static void relay_worker_stderr(FILE *err)
{
	char line[2048];
	long asserts = 0;
	int all = getenv("KJ_REPLAY_DEBUG") != NULL;
	if (!err)
		return;
	rewind(err);
	while (fgets(line, sizeof(line), err)) {
		if (!all && strstr(line, "Assertion `") && strstr(line, "block: [")) {
			asserts++;
			continue;
		}
		fputs(line, stderr);
	}
	if (asserts)
		fprintf(stderr, "kjoule replay: %ld device-side assertion message(s) of a kernel run on substitute "
				"data not shown (KJ_REPLAY_DEBUG=1 shows them)\n", asserts);
	fclose(err);
}

/* Run argv with stdout piped back; each line goes to on_line, and its stderr to ours when it has
 * exited (relay_worker_stderr). Kills the child after timeout_s.
 * *status receives the waitpid status; *timed_out 1 if it was killed for time. */
static int run_child(char *const argv[], int timeout_s, void (*on_line)(const char *, void *),
		     void *arg, int *status, int *timed_out)
{
	int fd[2];
	pid_t pid;
	char buf[8192];
	size_t have = 0;
	struct timespec t0, t;

	*timed_out = 0;
	if (pipe(fd))
		return KJ_EIO;
	FILE *err = tmpfile(); /* NULL: the worker writes to our stderr directly */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		if (err)
			fclose(err);
		return KJ_EIO;
	}
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		if (err)
			dup2(fileno(err), STDERR_FILENO);
		close(fd[0]);
		close(fd[1]);
		execv(argv[0], argv);
		fprintf(stderr, "kjoule: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {fd[0], POLLIN, 0};
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left_ms = (long)timeout_s * 1000 - ((t.tv_sec - t0.tv_sec) * 1000 +
							 (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left_ms <= 0) {
			kill(pid, SIGKILL);
			*timed_out = 1;
			break;
		}
		int pr = poll(&p, 1, (int)(left_ms > 1000 ? 1000 : left_ms));
		if (pr < 0 && errno != EINTR)
			break;
		if (pr <= 0)
			continue;
		ssize_t r = read(fd[0], buf + have, sizeof(buf) - 1 - have);
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &t0); /* the timeout runs from the last output */
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			on_line(line, arg);
			line = nl + 1;
		}
		have = strlen(line);
		memmove(buf, line, have + 1);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer is not ours: drop it */
	}
	close(fd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	relay_worker_stderr(err);
	return 0;
}

struct line_ctx {
	struct kj_replay_result *res;
	int got_result;
	struct kj_replay_device *dev;
	int got_device;
};

static void on_line(const char *line, void *arg)
{
	struct line_ctx *c = arg;
	if (c->res && kj_replay_parse_line(line, c->res) == 1 && !strncmp(line, "KJ_RESULT\t", 10))
		c->got_result = 1;
	if (c->dev && kj_replay_parse_device(line, c->dev) == 1)
		c->got_device = 1;
}

/* Errors that random data can cause (indices out of range, counters that never settle). */
static int data_dependent(const struct kj_replay_result *r)
{
	static const char *const marks[] = {"ASSERT", "ILLEGAL_ADDRESS", "hung", "LAUNCH_FAILED",
					    "MISALIGNED", "ILLEGAL_INSTRUCTION", "timed out", "signal"};
	if (strcmp(r->status, "failed"))
		return 0;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strstr(r->error, marks[i]))
			return 1;
	return 0;
}

struct batch {
	struct kj_replay_plan *plan;
	size_t *idx;       /* plan items in this worker, in order */
	int *got;          /* per idx: a KJ_RESULT arrived */
	size_t n;
	ssize_t current;   /* position in idx of the kernel the worker announced last */
	/* the progress line, printed as each result arrives */
	const struct replay_opts *o;
	const int *tier;       /* per plan item: the data fill it ran on (a fault may retry it) */
	unsigned char *shown;  /* per plan item: its progress line is out */
	size_t done, total;    /* kernels settled, of all to replay */
	double kernels_s;      /* the kernels' part of --budget */
};

static int data_dependent(const struct kj_replay_result *r);

/* "[done/total elapsed, ~left] status name" on stderr (on a terminal too under --json). */
static void progress_line(const struct batch *b, const struct kj_replay_item *it)
{
	const struct replay_opts *o = b->o;
	if (o->json && !isatty(STDERR_FILENO))
		return;
	double el = since_start(o), left = el / (double)b->done * (double)(b->total - b->done);
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
		if (b->o && !(data_dependent(r) && b->tier[item] < 2)) {
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
static int run_batches(const struct replay_opts *o, sqlite3 *db, const char *worker, struct kj_replay_plan *plan)
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
	while (ntodo) {
		if (o->budget_s > 0 && since_start(o) >= kernels_s) {
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
		argv[k++] = (char *)worker;
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
		size_t take = kj_replay_budget_chunk(chunk, kernels_s, since_start(o), done);
		for (size_t i = 0; i < ntodo && b.n < take; i++)
			if (tier[todo[i]] == t && plan->items[todo[i]].energy == want_energy) {
				snprintf(ids[b.n], sizeof(ids[0]), "%" PRId64, plan->items[todo[i]].unique_id);
				argv[k++] = "--unique";
				argv[k++] = ids[b.n];
				got[b.n] = 0;
				b.idx[b.n++] = todo[i];
			}
		argv[k] = NULL;
		if (run_child(argv, o->timeout_s + (o->energy && want_energy
							? (int)(o->energy_s * 3 * (want_energy == 2 ? 3 : 1)) + 30 : 0),
			      on_batch_line, &b, &status, &timed_out)) {
			free(b.idx);
			rc = KJ_EIO;
			goto out;
		}
		/* the kernel the worker was on when it died or hung has no result: it is the culprit */
		if (b.current >= 0 && !got[b.current]) {
			struct kj_replay_result *r = &plan->items[b.idx[b.current]].res;
			if (timed_out)
				kj_replay_result_set(r, "failed", "timed out after %d s (worker killed)", o->timeout_s);
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
			if (data_dependent(&it->res) && tier[item] < 2) {
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

static int parse_args(int argc, char **argv, struct replay_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->runs = 100;
	o->warmup = 10;
	o->cache = "both";
	o->unroll = 100;
	o->jobs = 1;
	o->timeout_s = 60;
	o->energy_s = 2.0;
	o->iteration = -1;
	o->topology = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "--energy")) {
			o->energy = 1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--any-arch")) {
			o->any_arch = 1;
		} else if (!strcmp(a, "--relocate")) {
			o->relocate = 1;
		} else if (!strcmp(a, "--verify")) {
			o->verify = 1;
		} else if (!strcmp(a, "--sequence")) {
			o->sequence = 1;
		} else if (!strcmp(a, "--no-sequence")) {
			o->no_sequence = 1;
		} else if (!strcmp(a, "--graph")) {
			o->graph = 1;
		} else if (!strcmp(a, "--topology")) {
			o->topology = 1;
		} else if (!strcmp(a, "--no-topology")) {
			o->topology = 0;
		} else if (!strcmp(a, "--back-to-back")) {
			o->back_to_back = 1;
		} else if (!strcmp(a, "--dry-run")) {
			o->dry_run = 1;
		} else if (!strcmp(a, "--all")) {
			o->all = 1;
		} else if (v && !strcmp(a, "--budget")) {
			char *end;
			o->budget_s = strtod(v, &end), i++;
			if (*end || !(o->budget_s > 0)) {
				fprintf(stderr, "kjoule replay: --budget wants seconds > 0, got '%s'\n", v);
				return 2;
			}
		} else if (v && !strcmp(a, "--iteration")) {
			o->iteration = atoll(v), i++;
		} else if (v && !strcmp(a, "--runs")) {
			o->runs = atoi(v), i++;
		} else if (v && !strcmp(a, "--warmup")) {
			o->warmup = atoi(v), i++;
		} else if (v && !strcmp(a, "--cache")) {
			o->cache = v, i++;
		} else if (v && !strcmp(a, "--unroll")) {
			o->unroll = atoi(v), i++;
		} else if (v && !strcmp(a, "--energy-seconds")) {
			o->energy_s = atof(v), i++;
			o->energy_s_given = 1;
		} else if (v && !strcmp(a, "--kernel")) {
			o->pattern = v, i++;
		} else if (v && !strcmp(a, "--jobs")) {
			o->jobs = atoi(v), i++;
		} else if (v && !strcmp(a, "--device")) {
			o->device = atoi(v), i++;
		} else if (v && !strcmp(a, "--timeout")) {
			o->timeout_s = atoi(v), i++;
		} else if (v && !strcmp(a, "--timer")) {
			o->timer = v, i++;
		} else if (a[0] == '-') {
			fprintf(stderr, "kjoule replay: unknown or incomplete option '%s'\n", a);
			return 2;
		} else if (!o->run) {
			o->run = a;
		} else {
			fprintf(stderr, "kjoule replay: one run database only ('%s')\n", a);
			return 2;
		}
	}
	if (!o->run || o->runs < 1 || o->warmup < 0 || o->unroll < 1 || o->timeout_s < 1 ||
	    o->energy_s <= 0 ||
	    (strcmp(o->cache, "warm") && strcmp(o->cache, "cold") && strcmp(o->cache, "both")) ||
	    (o->timer && strcmp(o->timer, "cupti") && strcmp(o->timer, "events"))) {
		usage(stderr);
		return 2;
	}
	if (o->dry_run && !o->sequence) {
		fprintf(stderr, "kjoule replay: --dry-run goes with --sequence (it says what the iteration's "
				"replay would rebuild)\n");
		return 2;
	}
	if (o->topology == 1 && !o->graph) {
		fprintf(stderr, "kjoule replay: --topology rebuilds the graph launches beside the one-graph "
				"replay: give it with --sequence --graph\n");
		return 2;
	}
	if (o->jobs != 1) {
		kj_warnf("--jobs %d: replays run one at a time on one GPU (timing needs the GPU alone)", o->jobs);
		o->jobs = 1;
	}
	return 0;
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
static void seq_kernels_again(const struct replay_opts *o, char *const argv[], struct seq_ctx *c, const char *it)
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
	if (run_child(a, o->timeout_s, on_seq_line, &again, &status, &timed_out) == 0 && again.nk) {
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
static int replay_sequence(const struct replay_opts *o, sqlite3 *db, int quiet)
{
	struct kj_replay_seq_info info;
	struct kj_replay_topo topo;
	struct seq_ctx c;
	char worker[PATH_MAX], it[32], runs[16], warm[16], dev[16], es[32];
	int status, timed_out, ret = 1, have_topo = 0, use_topo = 0;

	memset(&c, 0, sizeof(c));
	memset(&topo, 0, sizeof(topo));
	if (kj_replay_seq_info_load(db, o->run, o->iteration, &info))
		return 1;
	/* graph-launched: its launches rebuilt as recorded too, unless --no-topology */
	if (o->graph && o->topology != 0) {
		int rc = replay_topo_plan(db, o->run, info.iteration, o->topology, &topo, &use_topo);
		if (rc && rc != KJ_ENOTFOUND)
			return 1;
		have_topo = rc == 0;
	}
	if (o->dry_run) {
		if (o->json) {
			char *text = replay_topo_json(kj_replay_seq_json(&info, NULL, 0), &topo, have_topo, use_topo,
						      NULL, 0, 1);
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
	if (find_worker(worker, sizeof(worker))) {
		kj_errorf("replay worker not found (%s); build kjoule with CUDA or set KJ_REPLAY_WORKER", worker);
		goto out;
	}
	snprintf(it, sizeof(it), "%lld", (long long)info.iteration);
	snprintf(runs, sizeof(runs), "%d", o->runs);
	snprintf(warm, sizeof(warm), "%d", o->warmup);
	snprintf(dev, sizeof(dev), "%d", o->device);
	snprintf(es, sizeof(es), "%g", o->energy_s);
	char *argv[24];
	int k = 0;
	argv[k++] = worker;
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
		if (run_child(argv, limit, on_seq_line, &c, &status, &timed_out) || !c.n) {
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
		if (!data_dependent(&probe_r))
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
	if (kj_replay_seq_store(db, c.s, c.n, c.k, c.nk))
		goto out;
	if (have_topo && replay_topo_finish(db, &topo, use_topo, c.s, c.n, c.nt, c.nnt))
		goto out;
	info.have_fidelity = c.nk > 0 && !kj_replay_seq_fidelity(db, &info, &info.fidelity);
	if (quiet) {
		/* nothing on stdout */
	} else if (o->json) {
		char *text = replay_topo_json(kj_replay_seq_json(&info, c.s, c.n), &topo, have_topo, use_topo,
					      c.nt, c.nnt, 0);
		if (!text)
			goto out;
		printf("%s\n", text);
		free(text);
	} else {
		kj_replay_seq_print(stdout, &info, c.s, c.n);
		if (have_topo)
			replay_topo_print(stdout, &topo, use_topo, c.s, c.n, c.nt, c.nnt);
	}
	ret = strcmp(c.s[0].status, "failed") ? 0 : 1;
out:
	seq_ctx_reset(&c);
	kj_replay_topo_free(&topo);
	return ret;
}

/* replay --energy on a shared GPU: NVML's energy is the whole GPU's, so other processes listed
 * before or after the measurement are named (pids as the driver reports them). Cheap: one listing
 * each time. *seen accumulates distinct pids over calls; last prints the verdict. */
struct others {
	int64_t pids[32];
	int n, blind;
	char why[400];
};

static void energy_others(struct others *ot, int last)
{
	int64_t p[32];
	int n = 0;
	char why[400];
	int st = kj_gpu_watch_others_now(p, 32, &n, why, sizeof(why));
	if (st == KJ_WATCH_BLIND && !ot->blind) {
		ot->blind = 1;
		snprintf(ot->why, sizeof(ot->why), "%s", why);
	}
	for (int i = 0; i < n; i++) {
		int dup = 0;
		for (int j = 0; j < ot->n; j++)
			dup |= ot->pids[j] == p[i];
		if (!dup && ot->n < 32)
			ot->pids[ot->n++] = p[i];
	}
	if (!last)
		return;
	if (ot->blind) {
		kj_warnf("replay --energy: %s; the energies per launch may include their work", ot->why);
	} else if (ot->n) {
		char list[400];
		size_t k = 0;
		for (int i = 0; i < ot->n && k < sizeof(list); i++)
			k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%lld", i ? ", " : "", (long long)ot->pids[i]);
		kj_warnf("replay --energy: shared GPU: other processes (pids %s) were on the GPUs around the "
			 "energy measurement; the energies per launch include their work if they shared the "
			 "replay's GPU", list);
	}
}

int cmd_replay(int argc, char **argv)
{
	struct others ot;
	struct replay_opts o;
	struct kj_replay_plan plan;
	struct kj_replay_device dev;
	sqlite3 *db = NULL;
	char worker[PATH_MAX];
	int rc, status, timed_out, ret = 1;

	memset(&plan, 0, sizeof(plan));
	memset(&ot, 0, sizeof(ot));
	if ((rc = parse_args(argc, argv, &o)))
		return rc == 1 ? 0 : rc;
	clock_gettime(CLOCK_MONOTONIC, &o.started);
	if (kj_db_open(o.run, 1, &db))
		return 1;
	if (o.energy)
		energy_others(&ot, 0);
	if (o.sequence) {
		ret = replay_sequence(&o, db, 0);
		if (o.energy)
			energy_others(&ot, 1);
		kj_db_close(db);
		return ret;
	}
	snprintf(plan.run_path, sizeof(plan.run_path), "%s", o.run);
	plan.cache_warm = strcmp(o.cache, "cold") != 0;
	plan.cache_cold = strcmp(o.cache, "warm") != 0;
	if (kj_replay_plan_load(db, o.pattern, &plan))
		goto out;
	/* runs made before snapshot phases existed have none */
	if (o.verify && !kj_db_has_row(db, "SELECT 1 FROM snapshot WHERE phase = 'after' LIMIT 1")) {
		kj_errorf("%s holds no after-launch buffer snapshots: --verify compares outputs with them; "
			  "trace the program again with `kjoule run --snapshot`", o.run);
		goto out;
	}
	if (find_worker(worker, sizeof(worker))) {
		kj_errorf("replay worker not found (%s); build kjoule with CUDA (KJ_WITH_CUDA) or set "
			  "KJ_REPLAY_WORKER", worker);
		goto out;
	}
	/* the GPU we are on, against the one the run was captured on */
	{
		char devs[16];
		snprintf(devs, sizeof(devs), "%d", o.device);
		char *pargv[] = {worker, "--probe", "--device", devs, NULL};
		struct line_ctx c = {NULL, 0, &dev, 0};
		memset(&dev, 0, sizeof(dev));
		if (run_child(pargv, 60, on_line, &c, &status, &timed_out) || !c.got_device) {
			kj_errorf("no usable GPU for replay (the worker's probe of device %d failed)", o.device);
			goto out;
		}
	}
	if (plan.captured_cc_major >= 0 &&
	    (plan.captured_cc_major != dev.cc_major || plan.captured_cc_minor != dev.cc_minor)) {
		if (!o.any_arch) {
			kj_errorf("%s was captured on %s (sm_%d%d); this GPU is %s (sm_%d%d): its kernels are "
				  "binaries for the captured architecture. Replay on a sm_%d%d GPU, or re-trace "
				  "here (`kjoule run`); --any-arch tries anyway",
				  o.run, plan.captured_gpu[0] ? plan.captured_gpu : "another GPU",
				  plan.captured_cc_major, plan.captured_cc_minor, dev.name, dev.cc_major,
				  dev.cc_minor, plan.captured_cc_major, plan.captured_cc_minor);
			goto out;
		}
		kj_warnf("captured on sm_%d%d, replaying on sm_%d%d (--any-arch)", plan.captured_cc_major,
			 plan.captured_cc_minor, dev.cc_major, dev.cc_minor);
	}
	if (kj_replay_plan_rank(db, &plan, o.energy, o.all))
		goto out;
	/* with the cold cache a kernel's energy is measured warm, then with its data out of L2
	 * (flush and launch pairs, then the flushes alone): three windows */
	size_t ne = 0, ncold = 0;
	for (size_t i = 0; i < plan.n; i++)
		ne += plan.items[i].energy && !plan.items[i].skip[0];
	ncold = plan.cache_cold ? ne : 0;
	if (o.energy && !o.energy_s_given) {
		/* 40 s of energy windows shared out, 0.3 to 2 s each: the counter moves every 100 ms;
		 * under --budget at most 40 % of it, leaving the rest to latencies and the iteration.
		 * The cold windows go to the largest kernels first, as many as the pool holds */
		double pool = o.budget_s > 0 && 0.4 * o.budget_s < 40.0 ? 0.4 * o.budget_s : 40.0;
		/* each window also warms up for KJ_REPLAY_ENERGY_WARMUP_S */
		double windows = pool / (KJ_REPLAY_COLD_ENERGY_MIN_S + KJ_REPLAY_ENERGY_WARMUP_S);
		if (ncold && (double)(ne + 2 * ncold) > windows)
			ncold = windows > (double)ne ? (size_t)((windows - (double)ne) / 2) : 0;
		o.energy_s = ne ? pool / (double)(ne + 2 * ncold) - KJ_REPLAY_ENERGY_WARMUP_S : 2.0;
		o.energy_s = o.energy_s < KJ_REPLAY_ENERGY_MIN_S ? KJ_REPLAY_ENERGY_MIN_S : o.energy_s > 2.0 ? 2.0 : o.energy_s;
	}
	for (size_t i = 0, taken = 0; i < plan.n; i++) /* plan order: largest share first */
		if (plan.items[i].energy && !plan.items[i].skip[0] && taken < ncold) {
			plan.items[i].energy = 2;
			taken++;
		}
	if (!o.json) {
		size_t ni = 0;
		char cold[160] = "";
		for (size_t i = 0; i < plan.n; i++)
			ni += plan.items[i].iter_launches > 0;
		if (o.energy && ncold == ne && ne)
			snprintf(cold, sizeof(cold), ", each also with cold L2 (two windows more)");
		else if (o.energy && ncold)
			snprintf(cold, sizeof(cold), ", the largest %zu also with cold L2 (two windows more each, as many as"
				 " keep windows of %.1f s or more; --energy-seconds S measures all)", ncold,
				 KJ_REPLAY_COLD_ENERGY_MIN_S);
		else if (o.energy && plan.cache_cold && ne)
			snprintf(cold, sizeof(cold), ", none with cold L2 (two windows more each would take windows under"
				 " %.1f s; --energy-seconds S measures all)", KJ_REPLAY_COLD_ENERGY_MIN_S);
		fprintf(stderr, "kjoule replay: %zu unique kernels, %zu of them inside the iterations ('%s')"
			"%s; energy for %zu at %.2g s a window%s%s\n", plan.n, ni,
			plan.iteration_range[0] ? plan.iteration_range : "none: the whole run",
			ni ? ", replayed first" : "", o.energy ? ne : 0, o.energy ? o.energy_s : 0.0, cold,
			o.energy && !o.all && ne < plan.n ? "; --all measures every kernel's" : "");
	}
	/* the kept iteration is replayed after the kernels; under --budget, part of it is kept for that */
	const int then_sequence = !o.pattern && !o.verify && !o.no_sequence &&
				  kj_db_has_row(db, "SELECT 1 FROM sequence_op LIMIT 1");
	if (o.budget_s > 0 && then_sequence) {
		o.seq_reserve_s = KJ_REPLAY_SEQ_RESERVE * o.budget_s;
		if (o.seq_reserve_s > KJ_REPLAY_SEQ_RESERVE_MAX_S)
			o.seq_reserve_s = KJ_REPLAY_SEQ_RESERVE_MAX_S;
		if (o.seq_reserve_s < KJ_REPLAY_SEQ_MIN_S) /* too little for it: the kernels take it all */
			o.seq_reserve_s = 0;
	}
	if (run_batches(&o, db, worker, &plan))
		goto out;
	{
		/* what was not replayed, and why, counted by reason */
		size_t nskip = 0;
		for (size_t i = 0; i < plan.n; i++)
			nskip += plan.items[i].skip[0] != 0;
		if (nskip && !o.json) {
			fprintf(stderr, "kjoule replay: %zu kernel(s) not replayed:\n", nskip);
			for (size_t i = 0; i < plan.n; i++) {
				const char *why = plan.items[i].skip;
				int first = 1;
				size_t count = 0;
				if (!why[0])
					continue;
				for (size_t j = 0; j < plan.n; j++) {
					if (j < i && !strcmp(plan.items[j].skip, why))
						first = 0;
					count += !strcmp(plan.items[j].skip, why);
				}
				if (first)
					fprintf(stderr, "  %zu x %s\n", count, why);
			}
		}
	}
	/* what the batches did not store already: the kernels skipped, or never reached */
	unsigned char *rest = calloc(plan.n + 1, 1);
	for (size_t i = 0; rest && i < plan.n; i++)
		rest[i] = !plan.items[i].stored;
	int stored = rest ? kj_replay_plan_store_some(db, &plan, rest) : kj_replay_plan_store(db, &plan);
	free(rest);
	if (stored)
		goto out;
	if (o.json) {
		char *text = kj_replay_report_json(&plan);
		if (!text) {
			kj_errorf("out of memory writing JSON");
			goto out;
		}
		printf("%s\n", text);
		free(text);
	} else {
		printf("kjoule replay %s on %s (sm_%d%d), %d runs, cache %s%s\n", o.run, dev.name,
		       dev.cc_major, dev.cc_minor, o.runs, o.cache, o.energy ? ", energy" : "");
		kj_replay_report_print(stdout, &plan);
	}
	ret = 0;
	/* the kept iteration too: in-sequence kernel times, eager and graph iteration */
	double left_s = o.budget_s - since_start(&o);
	if (then_sequence && o.budget_s > 0 && left_s < KJ_REPLAY_SEQ_MIN_S) {
		kj_warnf("the kept iteration was not replayed: %.0f s of the --budget of %g s were left, under the"
			 " %d s a sequence replay needs at least; `kjoule replay %s --sequence --graph` replays it",
			 left_s > 0 ? left_s : 0, o.budget_s, KJ_REPLAY_SEQ_MIN_S, o.run);
	} else if (then_sequence) {
		o.graph = 1;
		if (!o.json)
			printf("\n");
		if (replay_sequence(&o, db, o.json))
			kj_warnf("the per-kernel results are stored; the sequence replay failed (above). "
				 "`kjoule replay %s --sequence --graph` tries it alone", o.run);
	}
out:
	if (o.energy && ret == 0)
		energy_others(&ot, 1);
	kj_replay_plan_free(&plan);
	kj_db_close(db);
	return ret;
}
