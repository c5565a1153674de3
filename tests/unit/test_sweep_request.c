/* kjoule-sweep-worker's request lines and answer lines (src/sweep/worker/worker_request.c, which
 * needs no GPU and is compiled into this test directly): good lines, each kind of bad line with the
 * field its message names, and answers that write '-' for every figure not measured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sweep/worker/worker_request.c"

static void test_good(void **state)
{
	struct sw_req r;
	char msg[256];
	(void)state;
	assert_int_equal(sw_req_parse("linear1 fp16 1,4,2048,4096 1 1\n", &r, msg, sizeof(msg)), 0);
	assert_string_equal(r.op, "linear1");
	assert_int_equal(r.precision, KJ_FP16);
	assert_int_equal(r.nv, 4);
	assert_true(r.v[0] == 1 && r.v[1] == 4 && r.v[2] == 2048 && r.v[3] == 4096);
	assert_int_equal(r.energy, 1);
	assert_int_equal(r.check, 1);
	assert_int_equal(sw_req_parse("  flash_atten\tbf16 1,4,32,2048,4096 0 0  \r\n", &r, msg, sizeof(msg)), 0);
	assert_int_equal(r.precision, KJ_BF16);
	assert_int_equal(r.nv, 5);
	assert_true(r.v[4] == 4096 && r.energy == 0 && r.check == 0);
	assert_int_equal(sw_req_parse("moe fp32 1,2,3,4,5,6,7,8 0 1", &r, msg, sizeof(msg)), 0);
	assert_int_equal(r.nv, 8);
	assert_true(r.v[7] == 8 && r.precision == KJ_FP32);
}

/* Each bad line fails with KJ_EINVAL and a message containing `needle`. */
static void bad(const char *line, const char *needle)
{
	struct sw_req r;
	char msg[256] = "";
	assert_int_equal(sw_req_parse(line, &r, msg, sizeof(msg)), KJ_EINVAL);
	if (!strstr(msg, needle))
		fail_msg("line '%s': message '%s' lacks '%s'", line, msg, needle);
}

static void test_bad(void **state)
{
	char big[2000];
	(void)state;
	bad("", "none");
	bad("linear1 fp16 1,2,3,4 1", "fewer");
	bad("linear1 fp16 1,2,3,4 1 1 extra", "more");
	bad("linear1 fp8 1,2,3,4 1 1", "precision");
	bad("linear1 fp16 1,2,x,4 1 1", "value 3");
	bad("linear1 fp16 1,2,,4 1 1", "value 3");
	bad("linear1 fp16 1,2,3, 1 1", "value 4");
	bad("linear1 fp16 -1,2 1 1", "value 1");
	bad("linear1 fp16 0,2 1 1", "value 1");
	bad("linear1 fp16 1,2;3 1 1", "unexpected ';'");
	bad("linear1 fp16 99999999999999999999 1 1", "out of range");
	bad("linear1 fp16 1,2,3,4,5,6,7,8,9 1 1", "more than 8");
	bad("linear1 fp16 1,2 2 1", "ENERGY");
	bad("linear1 fp16 1,2 1 yes", "CHECK");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	bad(big, "longer");
	bad("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa fp16 1 0 0", "too long");
}

static void test_answer(void **state)
{
	struct sw_answer a;
	char buf[1024];
	(void)state;
	sw_answer_init(&a, "ok", "unroll \"8\"\nnext");
	a.f_us = 12.5, a.b_us = 30, a.err_f = 1e-4;
	a.f_uj = NAN;
	int n = sw_answer_format(&a, buf, sizeof(buf));
	assert_true(n > 0 && (size_t)n == strlen(buf));
	assert_string_equal(buf, "KJ_SWEEP status=ok f_us=12.5 b_us=30 f_uj=- f_uj_unc=- b_uj=- b_uj_unc=- "
				 "err_f=0.0001 err_b=- flops_f=- flops_b=- bytes_f=- bytes_b=- f_mhz=- b_mhz=- "
				 "f_tmhz=- b_tmhz=- f_wus=- b_wus=- f_uj_warm=- f_uj_cold=- b_uj_warm=- b_uj_cold=- "
				 "f_algo=- b_algo=- msg=\"unroll '8' next\"\n");
	a.f_mhz = 1755, a.b_mhz = 1980.4;
	a.f_tmhz = 1620, a.b_wus = 31.25;
	assert_true(sw_answer_format(&a, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, " f_mhz=1755 b_mhz=1980.4 f_tmhz=1620 b_tmhz=- f_wus=- b_wus=31.25 "));
	/* the warm and cold energies the pass's energy is the mean of */
	a.f_uj_warm = 410.5, a.f_uj_cold = 522;
	assert_true(sw_answer_format(&a, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, " f_uj_warm=410.5 f_uj_cold=522 b_uj_warm=- b_uj_cold=- "));
	/* the algorithm words: as given, '-' for a word a reader could not split on spaces */
	a.f_algo = "12.20.1.3.0+7.18.1.2.0", a.b_algo = "1 2";
	assert_true(sw_answer_format(&a, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, " f_algo=12.20.1.3.0+7.18.1.2.0 b_algo=- msg="));
	sw_answer_init(&a, "oom", NULL);
	a.b_us = INFINITY;
	assert_true(sw_answer_format(&a, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "status=oom f_us=- b_us=-"));
	assert_non_null(strstr(buf, "msg=\"\"\n"));
	assert_true(sw_answer_format(&a, buf, 20) < 0);
	assert_string_equal(sw_precision_name(KJ_BF16), "bf16");
	assert_string_equal(sw_precision_name(7), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
