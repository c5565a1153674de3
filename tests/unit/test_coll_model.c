/* The collectives' model (kj_coll_model.h) on a synthetic alpha-beta curve of known latency and
 * bandwidth: interpolated and extrapolated figures against the formula, the latency floor, log-log
 * (not linear-in-bytes) reading between two points, and a GPU count that was not measured. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kj_coll_model.h"
#include "kj_error.h"
#include "kj_sweep_op.h"
#include "tmpdir.h"

#define ALPHA_US 9.0        /* latency */
#define BW_BYTES_PER_US 3e5 /* 300 GB/s */

static double alpha_beta(int64_t b)
{
	return ALPHA_US + (double)b / BW_BYTES_PER_US;
}

/* 8 KiB .. 2 GiB in steps of sqrt(2), whole multiples of 4 bytes */
#define NGRID 37
static void grid(int64_t *b, double *t)
{
	for (int k = 0; k < NGRID; k++) {
		b[k] = (int64_t)(8192.0 * pow(2.0, k / 2.0) / 4.0 + 0.5) * 4;
		t[k] = alpha_beta(b[k]);
	}
}

static void test_alpha_beta(void **state)
{
	(void)state;
	int64_t b[NGRID];
	double t[NGRID];
	grid(b, t);
	/* between every two sizes (their geometric middle, where log-log reading strays most), and
	 * a quarter of the way: within 1 % of the formula */
	for (int k = 0; k + 1 < NGRID; k++)
		for (double f = 0.25; f < 0.8; f += 0.25) {
			int64_t x = (int64_t)((double)b[k] * pow((double)b[k + 1] / (double)b[k], f));
			double p = kj_coll_interp(b, t, NGRID, x);
			assert_true(fabs(p / alpha_beta(x) - 1) < 0.01);
		}
	/* the measured sizes themselves: exactly */
	for (int k = 0; k < NGRID; k++)
		assert_true(kj_coll_interp(b, t, NGRID, b[k]) == t[k]);
	/* above the largest: the last segment's bandwidth, linear in bytes: the formula itself */
	for (int64_t x = b[NGRID - 1] + 4; x < (16ll << 30); x *= 2) {
		double p = kj_coll_interp(b, t, NGRID, x);
		assert_true(fabs(p / alpha_beta(x) - 1) < 0.01);
		assert_true(fabs(p / alpha_beta(x) - 1) < 1e-9); /* alpha-beta: exact */
	}
	/* below the least: the latency floor, the least size's figure, near alpha */
	for (int64_t x = 4; x < b[0]; x *= 4) {
		assert_true(kj_coll_interp(b, t, NGRID, x) == t[0]);
		assert_true(fabs(kj_coll_interp(b, t, NGRID, x) / ALPHA_US - 1) < 0.01);
	}
}

static void test_log_log(void **state)
{
	(void)state;
	/* two sizes a factor 4 apart, the figure doubling: log-log puts sqrt(2) x the first at the
	 * geometric middle (linear in bytes would give 13.33) */
	int64_t b[] = {1024, 4096, 16384};
	double t[] = {10, 20, 400};
	assert_true(fabs(kj_coll_interp(b, t, 3, 2048) - 10 * sqrt(2.0)) < 1e-9);
	/* the segment of the asked size, not its neighbour's: 8192 lies between 4096 and 16384 */
	assert_true(fabs(kj_coll_interp(b, t, 3, 8192) - 20 * sqrt(20.0)) < 1e-9);
	/* above: the last segment's slope (380 us over 12288 bytes) */
	assert_true(fabs(kj_coll_interp(b, t, 3, 16384 + 12288) - 780) < 1e-9);
	/* a last segment that falls (noise): the last point's bandwidth, never a figure that shrinks */
	double fall[] = {10, 20, 15};
	assert_true(fabs(kj_coll_interp(b, fall, 3, 32768) - 30) < 1e-9);
	/* one point: its bandwidth above it, its figure below */
	assert_true(fabs(kj_coll_interp(b, t, 1, 4096) - 40) < 1e-9);
	assert_true(kj_coll_interp(b, t, 1, 512) == 10);
}

/* a fitted entry's prediction at (gpus, bytes) */
static int predict(const json_t *e, int64_t gpus, int64_t bytes, double *value, char *err, size_t len)
{
	const struct kj_sweep_op *op = kj_sweep_op_find("all_reduce");
	int64_t v[KJ_SWEEP_MAX_COLS] = {gpus, bytes};
	json_t *grid = NULL;
	int rc = kj_coll_predict(e, "M", op, v, value, &grid, err, len);
	if (!rc) { /* the grid is this GPU count's own */
		json_t *g = json_object_get(json_object_get(grid, "shape_range"), "gpus");
		assert_int_equal(json_integer_value(json_array_get(g, 0)), gpus);
		assert_int_equal(json_integer_value(json_array_get(g, 1)), gpus);
	}
	json_decref(grid);
	return rc;
}

static void test_fit_predict(void **state)
{
	(void)state;
	int64_t b[NGRID];
	double t[NGRID];
	grid(b, t);
	/* gpus 4 rows first, then gpus 2 at twice the latency, both in descending order; one repeated
	 * shape whose later row must lose */
	struct kj_coll_row r[2 * NGRID + 1];
	int n = 0;
	for (int k = NGRID - 1; k >= 0; k--)
		r[n++] = (struct kj_coll_row){4, b[k], t[k]};
	for (int k = NGRID - 1; k >= 0; k--)
		r[n++] = (struct kj_coll_row){2, b[k], t[k] + ALPHA_US};
	r[n++] = (struct kj_coll_row){4, b[3], 1e6};
	json_t *models = json_array();
	struct kj_coll_fit_key key = {"G", "all_reduce", "fp16", "fwd", "time", "us", dir, 1};
	assert_int_equal(kj_coll_fit(&key, r, n, models), 0);
	json_t *e = json_array_get(models, 0);
	assert_string_equal(json_string_value(json_object_get(e, "kind")), KJ_COLL_MODEL_KIND);
	assert_int_equal(json_integer_value(json_object_get(e, "n_train")), 2 * NGRID);
	/* leave-one-out over the interior points: small on this curve */
	assert_int_equal(json_integer_value(json_object_get(e, "n_test")), 2 * (NGRID - 2));
	assert_true(json_number_value(json_object_get(e, "mape_test_pct")) < 1.0);
	char err[512];
	double v;
	int64_t mid = (b[10] + b[11]) / 2;
	assert_int_equal(predict(e, 4, mid, &v, err, sizeof(err)), 0);
	assert_true(fabs(v / alpha_beta(mid) - 1) < 0.01);
	assert_int_equal(predict(e, 2, mid, &v, err, sizeof(err)), 0);
	assert_true(fabs(v / (alpha_beta(mid) + ALPHA_US) - 1) < 0.01);
	assert_int_equal(predict(e, 4, b[3], &v, err, sizeof(err)), 0);
	assert_true(v == t[3]); /* the first row of the repeated shape */
	assert_int_equal(predict(e, 4, 8ll << 30, &v, err, sizeof(err)), 0);
	assert_true(fabs(v / alpha_beta(8ll << 30) - 1) < 0.01);
	assert_int_equal(predict(e, 2, 1024, &v, err, sizeof(err)), 0);
	assert_true(v == t[0] + ALPHA_US); /* gpus 2's own floor */
	/* a GPU count that was not measured: refused, naming the counts that were */
	assert_int_equal(predict(e, 3, mid, &v, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "gpus=3 was not measured (measured: gpus=2, 4)"));
	assert_int_equal(predict(e, 8, mid, &v, err, sizeof(err)), KJ_EINVAL);
	/* an index whose points were edited out of order: refused, naming the model */
	json_t *pb = json_object_get(json_array_get(json_object_get(e, "points"), 0), "bytes");
	json_array_set_new(pb, 1, json_integer(1));
	assert_int_equal(predict(e, 2, mid, &v, err, sizeof(err)), KJ_EINVAL);
	assert_non_null(strstr(err, "M/models.json: model G_all_reduce_fp16_fwd_time: the points of gpus=2"));
	/* no rows: no model */
	assert_int_equal(kj_coll_fit(&key, r, 0, models), 1);
	assert_int_equal(json_array_size(models), 1);
	json_decref(models);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alpha_beta),
		cmocka_unit_test(test_log_log),
		cmocka_unit_test(test_fit_predict),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
