/* libFuzzer target for the pipeline file reader and the worker's line formats
 * (src/pipeline/kj_pipeline_yaml.c, kj_pipeline_expr.c, kj_pipeline_phase.c, kj_pipeline_result.c).
 * Build and run: fuzz/pipeline/build.sh [run]. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct kj_pipeline_set s;
	if (kj_pipeline_text_read("fuzz.yml", (const char *)data, size, NULL, &s, err, sizeof(err)) == 0) {
		for (int i = 0; i < s.n; i++)
			for (int k = 0; k < s.p[i].nphases; k++) {
				double f, b;
				char line[700];
				struct kj_phase back;
				kj_phase_cost(&s.p[i].phases[k], &f, &b);
				if (kj_phase_format(&s.p[i].phases[k], line, sizeof(line)) > 0)
					kj_phase_parse(line, &back);
			}
		kj_pipeline_set_free(&s);
	}
	char *z = malloc(size + 1);
	if (!z)
		return 0;
	memcpy(z, data, size);
	z[size] = 0;
	struct kj_phase ph;
	if (kj_phase_parse(z, &ph) == 0)
		kj_phase_check(&ph, err, sizeof(err));
	struct kj_phase_result r;
	memset(&r, 0, sizeof(r));
	kj_phase_result_parse(z, &r);
	int64_t v;
	kj_pipeline_expr_eval(z, NULL, &v, err, sizeof(err));
	free(z);
	return 0;
}
