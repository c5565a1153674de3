/* How the program spaced its graph launches (kj_replay_pace.h). */
#include "kj_replay_pace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_db.h"
#include "kj_error.h"
#include "kj_num.h"
#include "kj_quantile.h"
#include "kj_store_r_seq.h"

#define PACE_MIN_LAUNCHES 4
#define PACE_MIN_GAP_NS 20000
#define PACE_MIN_GAP_FRAC 0.01
#define PACE_MAX_GAP_SPANS 4.0

static double median_of(double *v, size_t n)
{
	kj_sort_doubles(v, n);
	return kj_quantile_sorted(v, n, 0.5);
}

int kj_pace_decide(const struct kj_pace_launch *l, size_t n, struct kj_pace *p)
{
	memset(p, 0, sizeof(*p));
	p->launches = (int64_t)n;
	if (n > 0 && !l)
		return KJ_EINVAL;
	if (n < PACE_MIN_LAUNCHES) {
		snprintf(p->why, sizeof(p->why), "back to back: %zu launches of the graph, too few to see a cadence", n);
		return 0;
	}
	double *period = malloc(n * sizeof(double)), *gap = malloc(n * sizeof(double)),
	       *span = malloc(n * sizeof(double));
	if (!period || !gap || !span) {
		free(period), free(gap), free(span);
		return KJ_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		span[i] = (double)(l[i].last_ns - l[i].first_ns);
	for (size_t i = 0; i + 1 < n; i++) {
		period[i] = (double)(l[i + 1].host_ns - l[i].host_ns);
		gap[i] = (double)(l[i + 1].first_ns - l[i].last_ns);
	}
	p->span_ns = (int64_t)median_of(span, n);
	p->gap_ns = (int64_t)median_of(gap, n - 1);
	double per = median_of(period, n - 1);
	free(period), free(gap), free(span);
	double us = 1e-3;
	if (p->gap_ns <= PACE_MIN_GAP_NS || (double)p->gap_ns <= PACE_MIN_GAP_FRAC * (double)p->span_ns)
		snprintf(p->why, sizeof(p->why), "back to back, as the program ran: the GPU waited %.1f µs between"
			 " launches of %.1f µs", (double)p->gap_ns * us, (double)p->span_ns * us);
	else if ((double)p->gap_ns > PACE_MAX_GAP_SPANS * (double)p->span_ns)
		snprintf(p->why, sizeof(p->why), "back to back: the GPU waited %.1f µs between launches of %.1f µs,"
			 " longer than a loop's cadence", (double)p->gap_ns * us, (double)p->span_ns * us);
	else if (per <= (double)p->span_ns)
		snprintf(p->why, sizeof(p->why), "back to back: launches every %.1f µs, no longer than their"
			 " %.1f µs on the GPU", per * us, (double)p->span_ns * us);
	else {
		p->period_ns = (int64_t)per;
		snprintf(p->why, sizeof(p->why), "paced as the program ran: one launch every %.1f µs, the GPU idle"
			 " %.1f µs between launches of %.1f µs", per * us, (double)p->gap_ns * us,
			 (double)p->span_ns * us);
	}
	return 0;
}

/* The one graph launch of the iteration: its process and exec. 1 found, 0 not (why filled), <0 error. */
static int iteration_launch(sqlite3 *db, int64_t iteration, int64_t *pid, int64_t *exec, struct kj_pace *p)
{
	struct kj_store_r_graph_launch g[2];
	int n = kj_store_r_iteration_graph_launches(db, iteration, g);
	if (n < 0)
		return n;
	if (n > 0) {
		*pid = g[n - 1].pid;
		*exec = g[n - 1].exec;
	}
	if (n == 0)
		snprintf(p->why, sizeof(p->why), "back to back: the iteration launched no recorded graph");
	else if (n > 1)
		snprintf(p->why, sizeof(p->why), "back to back: the iteration launched more than one graph");
	else if (*exec < 0)
		snprintf(p->why, sizeof(p->why), "back to back: the graph launch names no executable graph");
	return n == 1 && *exec >= 0;
}

int kj_pace_load(sqlite3 *db, int64_t iteration, struct kj_pace *p)
{
	int64_t pid = -1, exec = -1;
	struct kj_store_r_launch_span *g = NULL;
	struct kj_pace_launch *l = NULL;
	size_t n = 0;
	int rc;
	memset(p, 0, sizeof(*p));
	if (!kj_db_caps(db)->host_call) {
		snprintf(p->why, sizeof(p->why), "back to back: the run recorded no graph launches");
		return 0;
	}
	if ((rc = iteration_launch(db, iteration, &pid, &exec, p)) <= 0)
		return rc < 0 ? rc : 0;
	/* every launch of that graph, with its kernels' GPU span */
	if ((rc = kj_store_r_exec_launches(db, pid, exec, &g, &n)))
		return rc;
	if (n && !(l = malloc(n * sizeof(*l)))) {
		free(g);
		return KJ_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		l[i] = (struct kj_pace_launch){g[i].host_ns, g[i].first_ns, g[i].last_ns};
	free(g);
	rc = kj_pace_decide(l, n, p);
	free(l);
	return rc;
}

int kj_pace_ratios(double out[KJ_PACE_RATIOS_MAX], size_t *n, char *why, size_t whylen)
{
	const char *env = getenv(KJ_PACE_RATIOS_ENV);
	if (!env) {
		out[0] = 1;
		out[1] = 3;
		*n = 2;
		return 0;
	}
	char item[160];
	if (kj_num_f64_list(env, 0.25, 16, out, KJ_PACE_RATIOS_MAX, n, item, sizeof(item))) {
		snprintf(why, whylen, "%s=%s: %s (the spacings to try, each 0.25 to 16, at most %d: e.g. 1,3)",
			 KJ_PACE_RATIOS_ENV, env, item, KJ_PACE_RATIOS_MAX);
		return KJ_EINVAL;
	}
	return 0;
}
