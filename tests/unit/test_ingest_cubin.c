/* Module images (cubins, fatbins) read for the functions they define, as the ingest reads them:
 * names, a damaged image refused, a .reqntid block shape and the facts per function. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "kj_cubin.h"

static void count_fn(const char *name, void *ud)
{
	char *found = ud;
	if (!strcmp(name, "_Z8kj_scalePKfPfif"))
		found[0] = 1;
	if (!strcmp(name, "kj_plain"))
		found[1] = 1;
}

static void *slurp(const char *name, size_t *n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/cubin/%s", KJ_TEST_DATA, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc(*n);
	assert_int_equal(fread(p, 1, *n, f), *n);
	fclose(f);
	return p;
}

static void test_cubin_symbols(void **state)
{
	(void)state;
	size_t n;
	char found[2] = {0, 0};
	void *p = slurp("tiny_sm90.cubin", &n);
	assert_string_equal(kj_cubin_format(p, n), "cubin");
	assert_true(kj_cubin_functions(p, n, count_fn, found) >= 2);
	assert_true(found[0] && found[1]);
	/* a damaged image is refused, not read out of bounds */
	assert_true(kj_cubin_functions(p, 40, count_fn, found) < 0);
	free(p);
	memset(found, 0, sizeof(found));
	p = slurp("tiny.fatbin", &n);
	assert_string_equal(kj_cubin_format(p, n), "fatbin");
	assert_true(kj_cubin_functions(p, n, count_fn, found) >= 2);
	assert_true(found[0] && found[1]);
	free(p);
}

static void note_facts(const struct kj_cubin_fn *f, void *ud)
{
	struct kj_cubin_fn *out = ud; /* [0] k_req, [1] k_free */
	int i = !strcmp(f->name, "k_req") ? 0 : !strcmp(f->name, "k_free") ? 1 : -1;
	if (i >= 0) {
		out[i] = *f;
		out[i].name = "seen";
	}
}

/* A function compiled with .reqntid (Triton's) carries its one block shape; others carry none. */
static void test_cubin_reqntid(void **state)
{
	(void)state;
	size_t n;
	struct kj_cubin_fn f[2];
	memset(f, 0, sizeof(f));
	void *p = slurp("reqntid_sm90.cubin", &n);
	assert_int_equal(kj_cubin_function_facts(p, n, note_facts, f), 2);
	assert_string_equal(f[0].name, "seen");
	assert_string_equal(f[1].name, "seen");
	assert_int_equal(f[0].reqntid[0], 128);
	assert_int_equal(f[0].reqntid[1], 1);
	assert_int_equal(f[0].reqntid[2], 1);
	assert_int_equal(f[1].reqntid[0], 0);
	assert_true(f[0].regs > 0);
	assert_int_equal(f[0].param_bytes, 8);
	assert_int_equal(f[1].param_bytes, 12);
	free(p);
}

/* A stored image comes back as it was stored; a frame whose size is not its row's is damaged and
 * refused, before anything the size claims is allocated. */
static void test_stored_image(void **state)
{
	(void)state;
	unsigned char raw[3000], z[4096];
	size_t n = 0;
	const char *why = NULL;
	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (unsigned char)(i * 7 % 251);
	size_t zn = ZSTD_compress(z, sizeof(z), raw, sizeof(raw), 3);
	assert_false(ZSTD_isError(zn));
	unsigned char *img = kj_cubin_image("zstd", z, zn, sizeof(raw), &n, &why);
	assert_non_null(img);
	assert_int_equal(n, sizeof(raw));
	assert_memory_equal(img, raw, sizeof(raw));
	assert_int_equal(img[n], 0);
	free(img);
	why = NULL;
	assert_null(kj_cubin_image("zstd", z, zn, sizeof(raw) + 1, &n, &why));
	assert_non_null(why);
	assert_non_null(strstr(why, "size"));
	/* a row that gives no size: the frame's own */
	img = kj_cubin_image("zstd", z, zn, 0, &n, &why);
	assert_non_null(img);
	assert_int_equal(n, sizeof(raw));
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cubin_reqntid),
		cmocka_unit_test(test_cubin_symbols),
		cmocka_unit_test(test_stored_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
