/* kjoule run --capture: what was captured, said once the run is written. A window that never
 * opened is said plainly, so an empty trace is never taken for an empty program. */
#include <stdio.h>
#include <string.h>

#include "cmd_run.h"
#include "kj_ingest.h"

void kj_run_capture_say(const struct kj_capture_summary *c, const struct kj_capture_spec *spec)
{
	const char *what = spec->mode == KJ_CAPTURE_PROFILER ? "cudaProfilerStart..Stop windows"
							     : "instances of the range";
	if (!strcmp(c->status, "never_opened")) {
		if (spec->mode == KJ_CAPTURE_PROFILER)
			fprintf(stderr, "kjoule: --capture %s: the program never called cudaProfilerStart: "
				"nothing was captured (the run records no kernels; its power samples are kept)\n",
				c->spec);
		else
			fprintf(stderr, "kjoule: --capture %s: the window never opened: the NVTX range '%s' had "
				"%lld instances (counted from 0, the window starts at instance %lld): nothing was "
				"captured (the run records no kernels; its power samples are kept)\n",
				c->spec, spec->name, (long long)c->instances, (long long)spec->first);
		return;
	}
	fprintf(stderr, "kjoule: --capture %s: %lld of %lld %s captured", c->spec, (long long)c->captured,
		(long long)c->instances, what);
	if (c->window_start_ns >= 0 && c->window_end_ns >= c->window_start_ns)
		fprintf(stderr, " (window %.3f s)", (double)(c->window_end_ns - c->window_start_ns) / 1e9);
	if (!strcmp(c->status, "unclosed_at_exit"))
		fprintf(stderr, "; the window was still open when the program ended (unclosed at exit): "
			"what it recorded is kept");
	else if (!strcmp(c->status, "start_without_stop"))
		fprintf(stderr, "; cudaProfilerStart without cudaProfilerStop: the window ended at exit");
	else if (spec->mode == KJ_CAPTURE_NVTX && c->captured < spec->count)
		fprintf(stderr, "; %lld asked", (long long)spec->count);
	if (c->detaches > 0)
		fprintf(stderr, "; CUPTI out of the program for %.1f s outside the window (%lld period%s)",
			(double)c->detached_ns / 1e9, (long long)c->detaches, c->detaches == 1 ? "" : "s");
	fputc('\n', stderr);
}
