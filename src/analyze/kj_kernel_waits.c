/* Rules for kernels that wait on something outside themselves (kj_kernel_waits.h). */
#include "kj_kernel_waits.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int kj_kernel_waits_by_name(const char *name, char *why, size_t len)
{
	static const struct {
		const char *part, *reason;
	} known[] = {
		{"DelayKernel", "a host-written semaphore (XLA's DelayKernel)"},
		{"ncclKernel", "its NCCL peers on other GPUs"},
		{"ncclDevKernel", "its NCCL peers on other GPUs"},
		{"ncclDevFunc", "its NCCL peers on other GPUs"},
	};
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(name, known[i].part)) {
			if (why && len)
				snprintf(why, len, "waits on %s", known[i].reason);
			return 1;
		}
	return 0;
}

int kj_kernel_waits_by_replay(double traced_ns, double replayed_ns, int timed_out, char *why,
			      size_t len)
{
	if (timed_out) {
		if (why && len)
			snprintf(why, len, "waits on something outside itself: its replay never finished"
				 " (worker killed at its timeout)");
		return 1;
	}
	if (traced_ns > 0 && replayed_ns > KJ_WAITS_MIN_RATIO * traced_ns &&
	    replayed_ns - traced_ns >= KJ_WAITS_MIN_EXCESS_NS) {
		if (why && len)
			snprintf(why, len, "waits on something outside itself: replayed alone it took"
				 " %.0f us against %.1f us traced (%.0fx)", replayed_ns / 1e3,
				 traced_ns / 1e3, replayed_ns / traced_ns);
		return 1;
	}
	return 0;
}

int kj_kernel_standin_data(const char *note, double traced_ns, double replayed_ns, char *why, size_t len)
{
	const char *fill = NULL;
	if (!note || traced_ns <= 0 || replayed_ns <= 0)
		return 0;
	if (!strncmp(note, "data: smallint", 14))
		fill = "small integers";
	else if (!strncmp(note, "data: zero", 10))
		fill = "zeros";
	double off = replayed_ns / traced_ns - 1;
	if (!fill || (off <= KJ_STANDIN_MAX_OFF && off >= -KJ_STANDIN_MAX_OFF))
		return 0;
	if (why && len)
		snprintf(why, len, "its work depends on its inputs: random data faulted, and on %s it took"
			 " %.1f us against %.1f us traced (%+.0f %%); trace with --snapshot to replay it on the"
			 " program's buffers", fill, replayed_ns / 1e3, traced_ns / 1e3, 100 * off);
	return 1;
}

/* How many times off traced_ns t is, either way (>= 1). */
static double factor_off(double t, double traced_ns)
{
	double r = t / traced_ns;
	return r >= 1 ? r : 1 / r;
}

int kj_kernel_alone_differs(double traced_ns, double warm_ns, double cold_ns, double seq_ns, char *why,
			    size_t len)
{
	if (traced_ns <= 0 || warm_ns <= 0)
		return 0;
	double r = warm_ns / traced_ns, f = factor_off(warm_ns, traced_ns);
	/* a cold replay near the traced time says the program read from memory what warm found in L2 */
	if (cold_ns > 0 && factor_off(cold_ns, traced_ns) < f)
		f = factor_off(cold_ns, traced_ns);
	int seq_agrees = seq_ns > 0 && fabs(seq_ns / traced_ns - 1) <= KJ_STANDIN_MAX_OFF;
	if (f < (seq_agrees ? KJ_ALONE_SEQ_FACTOR : KJ_ALONE_FACTOR))
		return 0;
	if (why && len && seq_agrees)
		snprintf(why, len, "replayed alone it took %.1f us against %.1f us traced (%.1fx %s), in its"
			 " iteration's replay %.1f us: alone it does other work than in the program (it reads state"
			 " its predecessors leave: a counter, a workspace, a flag)", warm_ns / 1e3,
			 traced_ns / 1e3, f, r < 1 ? "faster" : "slower", seq_ns / 1e3);
	else if (why && len)
		snprintf(why, len, "replayed alone it took %.1f us against %.1f us traced (%.1fx %s): alone it"
			 " likely does other work than in the program (state its predecessors leave, or"
			 " data-dependent work); `kjoule replay RUN --sequence` times it where it ran",
			 warm_ns / 1e3, traced_ns / 1e3, f, r < 1 ? "faster" : "slower");
	return 1;
}
