/* Unit tests of compare, timeline and api on run databases built here with hand-computed
 * decompositions include this (after cmocka.h): kernel() (a kernel of pid 7 and the driver call
 * that launched it), make_main() (the main run below, at path, with power or without),
 * compare_json_text() and compare_json() (compare's JSON of a run; its text must never print NaN
 * or inf), jnum() (a JSON field that must be a number) and NEAR. The test includes kj_compare_out.h
 * and kj_db.h itself (tests/CMakeLists.txt links a test to the floors its own includes name).
 *
 * The main run (times in us; the database holds ns = us * 1000): four 'step' ranges (depth 0) at
 * 0, 2000, 4000, 6000, each 1000 long, so the first is skipped as warm-up by default. In each,
 * relative to its start o:
 *   K1 unique 1 (gemm) stream 1 [100, 300) launched at 50
 *   K2 unique 2 (norm) stream 2 [200, 400) launched at 60   (overlaps K1 by 100)
 *   K1 again             stream 1 [600, 700) launched at 550
 *   memcpy HtoD 100 B    stream 1 [800, 850) (no launch time: its start assigns it)
 *   'layer' range (depth 1) [40, 500): launches K1 and K2 -> GPU busy [100, 400) = 300
 *   cuStreamSynchronize [860, 900)
 * Per iteration, by hand: wall 1000; busy = |[100,400) u [600,700) u [800,850)| = 450;
 * span 750; idle in span 300; host-only 250; kernel sum 500; copy sum 50; overlap 100.
 * Replay warm: unique 1 150, unique 2 180 -> Σ = 480 (in situ 500), naive error -52%. Cold:
 * unique 1 only, 250 -> Σ 500 over 2/3 of launches (unique 2's cold replay failed and is
 * ignored). Isolated estimate (mean of warm and cold, warm without cold): 2 x 200 + 180 = 580;
 * with the 100 us overlap back in the wall, predicted wall 1000 + 100 + 80 = 1180.
 * Sequence replay eager 900, graph 600 -> framework/host 100, launch cost 300.
 * Energy: constant 200 W -> 0.2 J measured; replay 10 + 10 + 20 mJ = 0.04 J; idle 100 W over the
 * non-kernel time 1000 - 400 = 600 us -> 0.06 J; predicted 0.1 J, error -50%. */
#ifndef KJ_TEST_COMPARE_FIXTURE_H
#define KJ_TEST_COMPARE_FIXTURE_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kj_compare_out.h"
#include "kj_db.h"

#include "sqlexec.h"

#define US 1000LL /* ns per us */
#define T0 1000000000LL

static inline void kernel(sqlite3 *db, int64_t corr, int stream, int uid, int64_t s, int64_t e,
			  int64_t launch)
{
	exec(db,
	     "INSERT INTO kernel(pid, device_id, stream_id, correlation_id, start_ns, end_ns,"
	     " name_id, unique_id, launch_ns, launch_tid) VALUES(7, 0, %d, %lld, %lld, %lld, %d, %d,"
	     " %lld, 8)",
	     stream, (long long)corr, (long long)(T0 + s * US), (long long)(T0 + e * US), uid, uid,
	     (long long)(T0 + launch * US));
	exec(db,
	     "INSERT INTO api_call(pid, tid, domain, name, start_ns, end_ns, correlation_id)"
	     " VALUES(7, 8, 'driver', 'cuLaunchKernel', %lld, %lld, %lld)",
	     (long long)(T0 + launch * US), (long long)(T0 + (launch + 5) * US), (long long)corr);
}

static inline void make_main(const char *path, int with_power)
{
	sqlite3 *db = NULL;
	unlink(path);
	assert_int_equal(kj_db_create(path, &db), 0);
	exec(db, "INSERT INTO process(pid, exe) VALUES(7, 'python3')");
	exec(db, "INSERT INTO kernel_name(id, mangled) VALUES(1, 'ampere_sgemm_128x64_tn'),"
		 " (2, 'vectorized_layer_norm_kernel')");
	exec(db, "INSERT INTO unique_kernel(id, key, name_id, tier) VALUES(1, 'a', 1, 'gemm'),"
		 " (2, 'b', 2, 'norm')");
	int64_t corr = 1;
	for (int i = 0; i < 4; i++) {
		int64_t o = 2000LL * i;
		exec(db,
		     "INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES"
		     " (7, 8, 'step', %lld, %lld, 0), (7, 8, 'layer', %lld, %lld, 1)",
		     (long long)(T0 + o * US), (long long)(T0 + (o + 1000) * US),
		     (long long)(T0 + (o + 40) * US), (long long)(T0 + (o + 500) * US));
		kernel(db, corr++, 1, 1, o + 100, o + 300, o + 50);
		kernel(db, corr++, 2, 2, o + 200, o + 400, o + 60);
		kernel(db, corr++, 1, 1, o + 600, o + 700, o + 550);
		exec(db,
		     "INSERT INTO memcpy(pid, device_id, stream_id, start_ns, end_ns, bytes, kind)"
		     " VALUES(7, 0, 1, %lld, %lld, 100, 'HtoD')",
		     (long long)(T0 + (o + 800) * US), (long long)(T0 + (o + 850) * US));
		exec(db,
		     "INSERT INTO api_call(pid, tid, name, start_ns, end_ns) VALUES(7, 8,"
		     " 'cuStreamSynchronize', %lld, %lld)",
		     (long long)(T0 + (o + 860) * US), (long long)(T0 + (o + 900) * US));
	}
	exec(db, "INSERT INTO replay_kernel(unique_id, cache, runs, median_ns) VALUES"
		 " (1, 'warm', 10, 150000), (2, 'warm', 10, 180000), (1, 'cold', 10, 250000),"
		 " (1, 'sequence', 20, 160000), (2, 'sequence', 20, 170000)");
	/* a failed replay is not a measurement */
	exec(db, "INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status, error) VALUES"
		 " (2, 'cold', 3, 999000, 'failed', 'illegal address')");
	exec(db, "INSERT INTO replay_sequence(iteration, mode, runs, median_ns) VALUES"
		 " (1, 'eager', 5, 900000), (1, 'graph', 5, 600000)");
	if (with_power) {
		exec(db, "INSERT INTO device(id, uuid, name) VALUES(0, 'GPU-x', 'test')");
		exec(db, "INSERT INTO replay_energy(unique_id, energy_mj_per_launch) VALUES(1, 10),"
			 " (2, 20)");
		exec(db, "INSERT INTO idle_power(device_id, median_mw, samples) VALUES(0, 100000, 10)");
		/* 200 W inside the iterations (the first 1000 us of every 2000), idle 100 W between
		 * them: one sample per 100 us, the counter gaining 20 or 10 mJ per sample */
		for (int k = 0, mj = 1000; k <= 80; k++) {
			int inside = k > 0 && ((k - 1) % 20) < 10;
			mj += k > 0 ? (inside ? 20 : 10) : 0;
			exec(db,
			     "INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw,"
			     " energy_mj, energy_updated) VALUES(0, %lld, %d, %d, %d, 1)",
			     (long long)(T0 + (k * 100LL - 50) * US), inside ? 200000 : 100000, inside ? 200000 : 100000, mj);
		}
	}
	kj_db_close(db);
}

/* compare's JSON of a run; *text (when asked) gets its text report, which must never print NaN
 * or inf */
static inline json_t *compare_json_text(const char *path, const char *region, int skip, int expect_rc, char **text)
{
	sqlite3 *db = NULL;
	struct kj_compare *c = NULL;
	struct kj_compare_opts o = {.region = region, .skip = skip, .top = 5, .quiet = 1};
	assert_int_equal(kj_db_open(path, 0, &db), 0);
	assert_int_equal(kj_compare_compute(db, &o, &c), expect_rc);
	json_t *j = c ? kj_compare_json(c) : NULL;
	if (c) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		kj_compare_print(c, f);
		fclose(f);
		assert_null(strstr(buf, "nan"));
		assert_null(strstr(buf, "inf "));
		if (text)
			*text = buf;
		else
			free(buf);
	}
	kj_compare_free(c);
	kj_db_close(db);
	return j;
}

static inline json_t *compare_json(const char *path, const char *region, int skip, int expect_rc)
{
	return compare_json_text(path, region, skip, expect_rc, NULL);
}

static inline double jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_number(v)) {
		fprintf(stderr, "field %s is not a number\n", k);
		fail();
	}
	return json_number_value(v);
}

static inline int near(double a, double b)
{
	return fabs(a - b) < 1e-6 * (fabs(b) + 1);
}
#define NEAR(a, b) assert_true(near((a), (double)(b)))

#endif
