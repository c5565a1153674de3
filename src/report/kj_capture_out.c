/* --capture runs in words and JSON (kj_capture_out.h). Nothing not measured is printed as a
 * number: it is named, with why. */
#include "kj_capture_out.h"

#include <math.h>
#include <string.h>

/* One set of iterations on one line: count, mean wall time, mean energy (or why not). */
static void print_set(FILE *f, const char *label, const struct kj_iter_set *s, const char *why)
{
	fprintf(f, "  %-22s %lld", label, (long long)s->instances);
	if (!s->instances) {
		fputs("\n", f);
		return;
	}
	fprintf(f, ", %.3f ms wall each, over %.3f s", s->wall_ms, s->span_s);
	if (s->measured)
		fprintf(f, ", %.4g J each (+/- %.2g J: the span's energy over its iterations)", s->energy_j,
			s->uncertainty_j);
	else
		fprintf(f, ", energy not measured: %s", why ? why : "no power samples cover them");
	fputs("\n", f);
}

const char *kj_capture_status_words(const char *status)
{
	if (!strcmp(status, "never_opened"))
		return "nothing was captured (no kernels are recorded; this is not an empty program)";
	if (!strcmp(status, "unclosed_at_exit"))
		return "the window was still open when the program ended (unclosed at exit): what it "
		       "recorded is kept";
	if (!strcmp(status, "start_without_stop"))
		return "cudaProfilerStart without cudaProfilerStop: the window ended at exit";
	return NULL;
}

void kj_capture_print(const struct kj_capture_stats *s, FILE *f)
{
	if (s->db_bytes >= 0 && s->launches > 0)
		fprintf(f, "trace size: %.1f MB, %.0f bytes per kernel launch (%lld launches)\n",
			(double)s->db_bytes / 1e6, s->bytes_per_launch, (long long)s->launches);
	else
		fprintf(f, "trace size: %s\n", s->db_bytes < 0 ? "unknown (the file cannot be read)"
								: "no kernel launches recorded: bytes per launch not defined");
	if (!s->active)
		return;
	fprintf(f, "capture: %s, %s", s->spec[0] ? s->spec : "(range not recorded)", s->status);
	if (s->window_start_ns >= 0 && s->window_end_ns >= s->window_start_ns)
		fprintf(f, ", window %.3f s", (double)(s->window_end_ns - s->window_start_ns) / 1e9);
	if (kj_capture_status_words(s->status))
		fprintf(f, ": %s", kj_capture_status_words(s->status));
	fputs("\n", f);
	if (s->detaches > 0)
		fprintf(f, "  CUPTI out of the program outside the window: %.1f s in %lld period%s\n", s->detached_s,
			(long long)s->detaches, s->detaches == 1 ? "" : "s");
	char label[64];
	snprintf(label, sizeof(label), "whole run, iterations (first %lld left out)", (long long)s->all_skipped);
	print_set(f, s->all_skipped ? label : "whole run, iterations", &s->all, s->energy_why);
	print_set(f, "captured iterations", &s->captured, s->energy_why);
	if (isfinite(s->captured_slower_pct))
		fprintf(f, "  captured iterations' wall time against the whole run's: %+.1f%%\n",
			s->captured_slower_pct);
	if (s->agreement_known)
		fprintf(f, "  captured against the whole run: %+.2f%% (the two bounds added: +/- %.2f%%): %s\n",
			s->agreement_apart_pct, s->agreement_bound_pct, kj_capture_agreement_words(s));
}

const char *kj_capture_agreement_words(const struct kj_capture_stats *s)
{
	if (s->agreement_within < 0)
		return "not judged: bounds this wide cannot tell (the captured span is short against the"
		       " energy counter's period; capture more iterations)";
	if (s->agreement_within)
		return "within their bounds";
	if (s->captured_slower_pct > s->agreement_bound_pct)
		return "outside their bounds: the captured iterations ran slower than the run's by more than"
		       " that (tracing's cost on the program's threads inside the window), so their energy is"
		       " the traced program's";
	return "outside their bounds: the captured iterations did not draw what the run's iterations"
	       " drew on average (a program that changes over the run, or a window at its start)";
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *set_json(const struct kj_iter_set *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "instances", json_integer(s->instances));
	json_object_set_new(o, "wall_ms_mean", num_or_null(s->wall_ms));
	json_object_set_new(o, "span_s", num_or_null(s->span_s));
	json_object_set_new(o, "energy_instances", json_integer(s->measured));
	json_object_set_new(o, "energy_j_mean", num_or_null(s->energy_j));
	json_object_set_new(o, "energy_unc_j_mean", num_or_null(s->uncertainty_j));
	return o;
}

json_t *kj_capture_json(const struct kj_capture_stats *s)
{
	json_t *o = json_object(), *t = json_object();
	if (!o || !t) {
		json_decref(o);
		json_decref(t);
		return NULL;
	}
	json_object_set_new(t, "db_bytes", s->db_bytes >= 0 ? json_integer(s->db_bytes) : json_null());
	json_object_set_new(t, "kernel_launches", json_integer(s->launches));
	json_object_set_new(t, "bytes_per_launch", num_or_null(s->bytes_per_launch));
	if (!isfinite(s->bytes_per_launch))
		json_object_set_new(t, "why", json_string(s->db_bytes < 0 ? "file size unknown" : "no kernel launches"));
	json_object_set_new(o, "trace_size", t);
	if (!s->active)
		return o;
	json_t *c = json_object();
	json_object_set_new(c, "range", s->spec[0] ? json_string(s->spec) : json_null());
	json_object_set_new(c, "status", json_string(s->status));
	json_object_set_new(c, "window_start_ns", s->window_start_ns >= 0 ? json_integer(s->window_start_ns) : json_null());
	json_object_set_new(c, "window_end_ns", s->window_end_ns >= 0 ? json_integer(s->window_end_ns) : json_null());
	json_object_set_new(c, "cupti_detaches", s->detaches >= 0 ? json_integer(s->detaches) : json_null());
	json_object_set_new(c, "cupti_detached_s", num_or_null(s->detached_s));
	json_object_set_new(c, "whole_run", set_json(&s->all));
	json_object_set_new(json_object_get(c, "whole_run"), "warmup_left_out", json_integer(s->all_skipped));
	json_object_set_new(c, "captured", set_json(&s->captured));
	json_object_set_new(c, "captured_slower_pct", num_or_null(s->captured_slower_pct));
	if (s->energy_why)
		json_object_set_new(c, "energy_why", json_string(s->energy_why));
	if (s->agreement_known) {
		json_t *g = json_object();
		json_object_set_new(g, "apart_pct", json_real(s->agreement_apart_pct));
		json_object_set_new(g, "bound_pct", json_real(s->agreement_bound_pct));
		json_object_set_new(g, "within", s->agreement_within < 0 ? json_null() : json_boolean(s->agreement_within));
		json_object_set_new(g, "verdict", json_string(kj_capture_agreement_words(s)));
		json_object_set_new(c, "energy_agreement", g);
	} else {
		json_object_set_new(c, "energy_agreement", json_null());
	}
	json_object_set_new(o, "capture", c);
	return o;
}
