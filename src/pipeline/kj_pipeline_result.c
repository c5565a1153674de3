/* The worker's result line for one phase, written by kjoule-pipeline-worker and read by
 * `kjoule pipeline`. Times in ns and energy in mJ on the line, ms and J in the struct. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_error.h"
#include "kj_pipeline.h"

void kj_phase_result_emit(FILE *f, const struct kj_phase_result *r)
{
	char err[sizeof(r->error)];
	snprintf(err, sizeof(err), "%s", r->error);
	for (char *c = err; *c; c++) /* one line: vendor messages may hold newlines */
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	fprintf(f, "KJ_PHASE status=%s latency_ns=%.3f single_ns=%.3f host_ns=%.3f power_w=%.3f sm_mhz=%.0f "
		"energy_mj=%.6f unc_mj=%.6f launches=%" PRId64 " has_energy=%d error=%s\n",
		r->status[0] ? r->status : "failed", r->latency_ms * 1e6, r->single_ms * 1e6, r->host_ms * 1e6,
		r->power_w, r->sm_clock_mhz > 0 ? r->sm_clock_mhz : 0.0, r->energy_j * 1e3, r->energy_unc_j * 1e3,
		r->launches, r->has_energy, err);
	fflush(f);
}

int kj_phase_result_parse(const char *line, struct kj_phase_result *r)
{
	if (strncmp(line, "KJ_PHASE ", 9))
		return 0;
	double flops = r->flops, bytes = r->bytes;
	memset(r, 0, sizeof(*r));
	r->flops = flops;
	r->bytes = bytes;
	r->dynamic_j = NAN;
	const char *p = line + 9;
	int seen = 0;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *eq = strchr(p, '=');
		if (!eq)
			break;
		size_t kl = (size_t)(eq - p);
		const char *v = eq + 1;
		if (kl == 5 && !strncmp(p, "error", 5)) {
			snprintf(r->error, sizeof(r->error), "%s", v);
			break;
		}
		size_t vl = strcspn(v, " ");
		char *end;
		double x = strtod(v, &end);
		if (kl == 6 && !strncmp(p, "status", 6)) {
			snprintf(r->status, sizeof(r->status), "%.*s", (int)(vl < 15 ? vl : 15), v);
			seen = 1;
		} else if (end != v + vl) {
			return KJ_EINVAL;
		} else if (kl == 10 && !strncmp(p, "latency_ns", 10)) {
			r->latency_ms = x * 1e-6;
		} else if (kl == 9 && !strncmp(p, "single_ns", 9)) {
			r->single_ms = x * 1e-6;
		} else if (kl == 7 && !strncmp(p, "host_ns", 7)) {
			r->host_ms = x * 1e-6;
		} else if (kl == 7 && !strncmp(p, "power_w", 7)) {
			r->power_w = x;
		} else if (kl == 6 && !strncmp(p, "sm_mhz", 6)) {
			r->sm_clock_mhz = x > 0 ? x : 0;
		} else if (kl == 9 && !strncmp(p, "energy_mj", 9)) {
			r->energy_j = x * 1e-3;
		} else if (kl == 6 && !strncmp(p, "unc_mj", 6)) {
			r->energy_unc_j = x * 1e-3;
		} else if (kl == 8 && !strncmp(p, "launches", 8)) {
			r->launches = (int64_t)x;
		} else if (kl == 10 && !strncmp(p, "has_energy", 10)) {
			r->has_energy = (int)x;
		}
		p = v + vl;
	}
	return seen ? 1 : KJ_EINVAL;
}
