/* libFuzzer target for the module-image reader (src/store/kj_cubin.c): arbitrary bytes as a
 * cubin or fatbin (every function's name and facts, as the ingest and replay read them) and as a
 * stored zstd image. Build and run: see fuzz/cubin/README.md. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_cubin.h"

static volatile size_t sink; /* what the callbacks read, kept so that the reads are made */

static void on_name(const char *name, void *ud)
{
	size_t *total = ud;
	*total += strlen(name); /* reads the whole name: a name running off the image shows here */
}

static void on_facts(const struct kj_cubin_fn *f, void *ud)
{
	size_t *total = ud;
	*total += strlen(f->name) + (size_t)f->param_bytes + f->reqntid[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t total = 0, out_len = 0;
	const char *why = NULL;
	kj_cubin_format(data, size);
	kj_cubin_functions(data, size, on_name, &total);
	kj_cubin_function_facts(data, size, on_facts, &total);
	/* a stored image, as its readers pass it: with the size its row gives */
	unsigned char *img = kj_cubin_image("zstd", data, size, size * 4 + 16, &out_len, &why);
	free(img);
	img = kj_cubin_image("none", data, size, size, &out_len, &why);
	free(img);
	sink = total;
	return 0;
}
