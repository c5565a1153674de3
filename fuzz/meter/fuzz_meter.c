/* libFuzzer target for the meter log reader (src/energy/kj_meter.c). Build and run: see
 * fuzz/meter/README.md. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kj_meter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct kj_meter_log *log = NULL;
	for (int fmt = KJ_METER_AUTO; fmt <= KJ_METER_GENERIC; fmt++) {
		if (kj_meter_parse((const char *)data, size, "fuzz", (enum kj_meter_format)fmt, &log, err,
				   sizeof(err)) == 0) {
			struct kj_meter_stats st;
			kj_meter_window(log, "fuzz", NAN, NAN, &st, err, sizeof(err));
			kj_meter_window(log, "fuzz", log->t_s[0] + 0.5, log->t_s[log->n - 1], &st, err,
					sizeof(err));
			kj_meter_free(log);
		}
	}
	double t;
	kj_meter_parse_time((const char *)data, size < 64 ? size : 64, &t);
	return 0;
}
