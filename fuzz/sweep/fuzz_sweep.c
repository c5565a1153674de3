/* libFuzzer target for the sweep's readers: the config (libyaml), the sweep CSV and the
 * transformer MODEL.yml, each given the bytes as a file. Build and run: fuzz/sweep/README.md. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kj_predict.h"
#include "kj_sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[2048];
	snprintf(path, sizeof(path), "/tmp/kj_fuzz_sweep_%d.csv", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	struct kj_sweep_config cfg;
	if (kj_sweep_config_load(path, &cfg, err, sizeof(err)) == 0) {
		int64_t *s, n, inv;
		if (kj_sweep_grid_size(&cfg) < 100000 && kj_sweep_shapes(&cfg, 3, 2, &s, &n, &inv) == 0)
			free(s);
	}
	struct kj_sweep_csv csv;
	if (kj_sweep_csv_read(path, NULL, &csv, err, sizeof(err)) == 0)
		kj_sweep_csv_free(&csv);
	struct kj_model_spec m;
	struct kj_model_term t[32];
	if (kj_model_load(path, &m, err, sizeof(err)) == 0)
		kj_model_terms(&m, t, 32);
	unlink(path);
	return 0;
}
