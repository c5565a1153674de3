/* compare's clock state (kj_compare_clocks.h) in the text report and the JSON: each side's
 * verdict, what it saw and its SM clock (docs/analysis-compare.md, "Clock state"). */
#include <stdint.h>
#include <string.h>

#include "kj_compare_out_internal.h"

/* "SW power cap in 12 of 40 readings" / "no capping or throttling in 1 window". unit: "reading"
 * or "window". */
static void side_text(const struct kj_clock_state *s, const char *unit, char *buf, size_t len)
{
	char words[200];
	const char *pl = s->readings == 1 ? "" : "s";
	kj_clock_throttled(s->reasons, words, sizeof(words));
	if (s->throttled > 0)
		snprintf(buf, len, "%s in %lld of %lld %s%s", words, (long long)s->throttled, (long long)s->readings,
			 unit, pl);
	else
		snprintf(buf, len, "no capping or throttling in %lld %s%s", (long long)s->readings, unit, pl);
}

/* One side's line: its verdict, what it saw, its SM clock. */
static void side_line(FILE *f, const char *label, const struct kj_clock_state *s, const char *unit,
		      const char *unknown)
{
	char t[320];
	fprintf(f, "    %-22s", label);
	if (!s->recorded) {
		fprintf(f, "not recorded (%s)\n", unknown);
		return;
	}
	if (s->readings > 0) {
		side_text(s, unit, t, sizeof(t));
		fprintf(f, "%s: %s", kj_clock_verdict_name(kj_clock_verdict_of(s)), t);
	} else if (!strcmp(unit, "reading")) {
		fprintf(f, "no reading of the clocks-event reasons (they are read every ~100 ms)");
	} else {
		fprintf(f, "no window recorded the clocks-event reasons (an older worker, or no NVML call for them)");
	}
	if (s->sm_clock_median_mhz > 0)
		fprintf(f, "; SM clock median %.0f MHz (%d-%d)", s->sm_clock_median_mhz, s->sm_clock_min_mhz,
			s->sm_clock_max_mhz);
	fprintf(f, "\n");
}

void cmp_clocks_print(const struct kj_compare *c, FILE *f)
{
	const struct cmp_clocks *k = &c->clocks;
	int kernels = c->n_replay_energy_rows > 0;
	int seq = c->seq_graph_mj >= 0 || c->seq_topo_mj >= 0 || c->seq_eager_mj >= 0;
	int any = k->program.readings > 0 || k->program.clock_readings > 0 || (kernels && k->kernels.recorded) ||
		  (seq && k->sequence.recorded);
	if (!any)
		return; /* a run of an older kjoule, replayed by one: printed as it always was */
	fprintf(f, "  clock state (NVML clocks-event reasons; GPU idle and clock settings are not throttling):\n");
	side_line(f, "program", &k->program, "reading", "the run's power samples hold no clock state");
	if (kernels)
		side_line(f, "per-kernel replays", &k->kernels, "window",
			  "replayed by an older kjoule: replay with --energy again to record it");
	if (seq)
		side_line(f, "iteration replay", &k->sequence, "window",
			  "replayed by an older kjoule: replay with --energy again to record it");
	if (k->mismatch == 1 && kernels)
		fprintf(f, "  ! %s: the kernel-sum energy error is not judged\n", k->why[0]);
	if (k->sequence_mismatch == 1 && seq)
		fprintf(f, "  ! %s: the iteration replay's energy error is not judged\n", k->why[1]);
}

static json_t *names_json(uint64_t mask, int throttling)
{
	json_t *a = json_array();
	for (int b = 0; b < 64; b++) {
		uint64_t bit = 1ULL << b;
		if (!(mask & bit) || ((bit & KJ_CLOCK_BENIGN) != 0) == throttling)
			continue;
		const char *n = kj_clock_reason_name(b);
		char other[32];
		snprintf(other, sizeof(other), "reason 0x%llx", (unsigned long long)bit);
		json_array_append_new(a, json_string(n ? n : other));
	}
	return a;
}

static json_t *side_json(const struct kj_clock_state *s)
{
	int known = s->recorded && s->readings > 0, clk = s->recorded && s->sm_clock_median_mhz > 0;
	json_t *o = json_object();
	json_object_set_new(o, "recorded", json_boolean(s->recorded));
	json_object_set_new(o, "state", json_string(kj_clock_verdict_name(kj_clock_verdict_of(s))));
	json_object_set_new(o, "readings", s->recorded ? json_integer(s->readings) : json_null());
	json_object_set_new(o, "throttled_readings", known ? json_integer(s->throttled) : json_null());
	json_object_set_new(o, "throttled_fraction",
			    cmp_ratio_or_null(known ? (double)s->throttled / (double)s->readings : 0, known));
	json_object_set_new(o, "throttle_reasons", known ? names_json(s->reasons, 1) : json_null());
	json_object_set_new(o, "other_reasons", known ? names_json(s->reasons, 0) : json_null());
	json_object_set_new(o, "sm_clock_median_mhz", cmp_num_or_null(s->sm_clock_median_mhz, clk));
	json_object_set_new(o, "sm_clock_min_mhz", clk && s->sm_clock_min_mhz > 0 ? json_integer(s->sm_clock_min_mhz) : json_null());
	json_object_set_new(o, "sm_clock_max_mhz", clk && s->sm_clock_max_mhz > 0 ? json_integer(s->sm_clock_max_mhz) : json_null());
	return o;
}

static json_t *flag(int v)
{
	return v < 0 ? json_null() : json_boolean(v);
}

json_t *cmp_clocks_json(const struct kj_compare *c)
{
	const struct cmp_clocks *k = &c->clocks;
	json_t *o = json_object();
	json_object_set_new(o, "program", side_json(&k->program));
	json_object_set_new(o, "replay_kernels", side_json(&k->kernels));
	json_object_set_new(o, "replay_sequence", side_json(&k->sequence));
	json_object_set_new(o, "mismatch", flag(k->mismatch));
	json_object_set_new(o, "sequence_mismatch", flag(k->sequence_mismatch));
	json_object_set_new(o, "not_judged_reason", k->mismatch == 1 ? json_string(k->why[0]) : json_null());
	json_object_set_new(o, "sequence_not_judged_reason",
			    k->sequence_mismatch == 1 ? json_string(k->why[1]) : json_null());
	return o;
}

int cmp_clocks_program_capped(const struct kj_compare *c)
{
	const struct kj_clock_state *p = &c->clocks.program;
	if (!p->recorded || p->readings <= 0)
		return -1;
	return kj_clock_verdict_of(p) >= KJ_CLOCK_PARTLY;
}

void cmp_clocks_time_note(const struct kj_compare *c, const struct cmp_summary *s, FILE *f)
{
	char t[320];
	if (cmp_clocks_program_capped(c) != 1)
		return;
	side_text(&c->clocks.program, "reading", t, sizeof(t));
	fprintf(f, "  ! the program ran capped or throttled (%s; SM clock median %.0f MHz): its kernels ran at the"
		   " clocks the cap left them, their timing replays (a few launches each) at the clock a short burst"
		   " gets, so the replayed times are short of the program's by what the cap took and"
		   " explained_fraction reads low by as much (docs/analysis-compare.md, \"Clock state\")\n",
		t, c->clocks.program.sm_clock_median_mhz);
	if (s->have_explained_clocks)
		fprintf(f, "  explained_fraction at the program's clocks = %.4f  (%d kernel(s), %.1f%% of the replayed"
			   " kernel time, measured also back to back under the cap: each timed at the program's SM"
			   " clocks, its time going as a + b/f through its warm replay and its capped window;"
			   " the other kernels at their replayed times)\n",
			s->explained_fraction_clocks, s->clocks_adjusted_kernels, 100 * s->clocks_adjusted_share);
	else
		fprintf(f, "  (explained_fraction at the program's clocks: not computed: no kernel has a back-to-back"
			   " window under the cap beside its timing replay; `kjoule replay --energy` keeps one where"
			   " a kernel draws the GPU into its cap)\n");
}
