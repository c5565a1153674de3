/* kjoule meter: energy, duration and power of an external power meter's log (WattsUp or generic
 * CSV), optionally for a window, as text or JSON; --run imports the samples into a run database. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cli.h"
#include "kj_error.h"
#include "kj_meter.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kjoule meter FILE.csv [--format wattsup|generic] [--from TIME --to TIME] [--json]\n"
		"                    [--run RUN.kjdb]\n"
		"  WattsUp logs: header time,id,pm1,pm2,sum (watts; sum = pm1 + pm2); generic: time,watts.\n"
		"  TIME: ISO-8601 (2026-11-21T10:00:00.5Z; no zone = UTC) or Unix seconds.\n"
		"  Prints energy (J, trapezoidal), duration, average/peak/min power and sample count.\n"
		"  Gaps over %.0f sampling periods inside the window are errors (never integrated as 0).\n"
		"  --run imports the window's samples into the run's meter_sample table.\n",
		KJ_METER_GAP_PERIODS);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
}

int cmd_meter(int argc, char **argv)
{
	const char *file = NULL, *run = NULL, *from_s = NULL, *to_s = NULL;
	enum kj_meter_format fmt = KJ_METER_AUTO;
	int json = 0, rc = 1;
	double from = NAN, to = NAN;
	char err[512];
	char *buf = NULL;
	size_t len = 0;
	struct kj_meter_log *log = NULL;
	struct kj_meter_stats st;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int needs = !strcmp(a, "--format") || !strcmp(a, "--from") || !strcmp(a, "--to") ||
			    !strcmp(a, "--run");
		if (needs && i + 1 >= argc) {
			fprintf(stderr, "kjoule meter: %s needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--format")) {
			const char *v = argv[++i];
			if (!strcmp(v, "wattsup"))
				fmt = KJ_METER_WATTSUP;
			else if (!strcmp(v, "generic"))
				fmt = KJ_METER_GENERIC;
			else {
				fprintf(stderr, "kjoule meter: --format '%s': want wattsup or generic\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--from")) {
			from_s = argv[++i];
		} else if (!strcmp(a, "--to")) {
			to_s = argv[++i];
		} else if (!strcmp(a, "--run")) {
			run = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "kjoule meter: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else if (!file) {
			file = a;
		} else {
			fprintf(stderr, "kjoule meter: one log at a time ('%s' and '%s')\n", file, a);
			return 2;
		}
	}
	if (!file) {
		usage(stderr);
		return 2;
	}
	if (from_s && kj_meter_parse_time(from_s, strlen(from_s), &from)) {
		fprintf(stderr, "kjoule meter: --from '%s' is neither ISO-8601 nor Unix seconds\n", from_s);
		return 2;
	}
	if (to_s && kj_meter_parse_time(to_s, strlen(to_s), &to)) {
		fprintf(stderr, "kjoule meter: --to '%s' is neither ISO-8601 nor Unix seconds\n", to_s);
		return 2;
	}
	buf = read_file(file, &len);
	if (!buf) {
		kj_errorf("%s: %s", file, strerror(errno));
		return 1;
	}
	if (kj_meter_parse(buf, len, file, fmt, &log, err, sizeof(err))) {
		kj_errorf("%s", err);
		goto out;
	}
	if (kj_meter_window(log, file, from, to, &st, err, sizeof(err))) {
		kj_errorf("%s", err);
		goto out;
	}
	if (json) {
		json_t *o = json_pack("{s:f, s:f, s:{s:f, s:f, s:f}, s:I}", "energy_j", st.energy_j,
				      "duration_s", st.duration_s, "power_w", "average", st.avg_w,
				      "peak", st.peak_w, "min", st.min_w, "samples",
				      (json_int_t)st.samples);
		char *txt = o ? json_dumps(o, JSON_REAL_PRECISION(12)) : NULL;
		if (!txt) {
			kj_errorf("JSON output failed");
			json_decref(o);
			goto out;
		}
		printf("%s\n", txt);
		free(txt);
		json_decref(o);
	} else {
		printf("%s (%s): energy %.3f J over %.3f s; power average %.2f W, peak %.2f W, min %.2f "
		       "W; %zu samples (period %.3f s)\n",
		       file, log->format == KJ_METER_WATTSUP ? "wattsup" : "generic", st.energy_j,
		       st.duration_s, st.avg_w, st.peak_w, st.min_w, st.samples, log->period_s);
	}
	rc = 0;
	if (run) {
		size_t n = 0;
		double a = isnan(from) ? log->t_s[0] : from, b = isnan(to) ? log->t_s[log->n - 1] : to;
		if (kj_meter_import(run, file, log, a, b, &n)) {
			rc = 1;
			goto out;
		}
		fprintf(stderr, "kjoule meter: %zu samples imported into %s\n", n, run);
	}
out:
	kj_meter_free(log);
	free(buf);
	return rc;
}
