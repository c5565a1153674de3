/* Clock and throttle state (src/energy/kj_clock_state.h): NVML clocks-event reasons told apart
 * into capping/throttling and benign ones and named, the verdict on a side and the mismatch
 * between two, and the readers on a run database built here (new schema, and tables of an older
 * kjoule without the replay clock columns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kj_clock_state.h"
#include "kj_db.h"
#include "tmpdir.h"

static void test_classify(void **state)
{
	(void)state;
	char w[128];
	assert_int_equal(kj_clock_throttled(0, w, sizeof(w)), 0);
	assert_string_equal(w, "");
	/* idle and clock settings are not throttling */
	assert_int_equal(kj_clock_throttled(KJ_CLOCK_GPU_IDLE, w, sizeof(w)), 0);
	assert_int_equal(kj_clock_throttled(KJ_CLOCK_GPU_IDLE | KJ_CLOCK_APP_CLOCKS | KJ_CLOCK_DISPLAY_CLOCKS, w,
					    sizeof(w)), 0);
	assert_string_equal(w, "");
	kj_clock_benign_words(0x103, w, sizeof(w));
	assert_string_equal(w, "GPU idle, applications clocks, display clocks");
	/* each capping or throttling bit alone */
	const struct {
		uint64_t bit;
		const char *name;
	} t[] = {{0x4, "SW power cap"},        {0x8, "HW slowdown"},         {0x10, "sync boost"},
		 {0x20, "SW thermal slowdown"}, {0x40, "HW thermal slowdown"}, {0x80, "HW power brake slowdown"}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(kj_clock_throttled(t[i].bit | KJ_CLOCK_GPU_IDLE, w, sizeof(w)), 1);
		assert_string_equal(w, t[i].name);
	}
	/* several, in bit order, the benign ones left out of the words */
	assert_int_equal(kj_clock_throttled(0x1 | 0x40 | 0x4, w, sizeof(w)), 1);
	assert_string_equal(w, "SW power cap, HW thermal slowdown");
	/* a bit this kjoule does not know counts as throttling, named by its value */
	assert_int_equal(kj_clock_throttled(0x200, w, sizeof(w)), 1);
	assert_string_equal(w, "reason 0x200");
	/* a short buffer keeps whole words */
	assert_int_equal(kj_clock_throttled(0x4 | 0x40, w, 16), 1);
	assert_string_equal(w, "SW power cap");
	assert_int_equal(kj_clock_throttled(0x4, NULL, 0), 1);
	assert_string_equal(kj_clock_reason_name(2), "SW power cap");
	assert_null(kj_clock_reason_name(9));
	assert_null(kj_clock_reason_name(-1));
}

static struct kj_clock_state side(int recorded, int64_t readings, int64_t throttled)
{
	struct kj_clock_state s;
	memset(&s, 0, sizeof(s));
	s.recorded = recorded;
	s.readings = readings;
	s.throttled = throttled;
	return s;
}

static void test_verdict_and_mismatch(void **state)
{
	(void)state;
	struct kj_clock_state none = side(0, 0, 0), empty = side(1, 0, 0), clean = side(1, 40, 2),
			      partly = side(1, 40, 3), thr = side(1, 40, 8), all = side(1, 3, 3);
	assert_int_equal(kj_clock_verdict_of(&none), KJ_CLOCK_UNKNOWN);
	assert_int_equal(kj_clock_verdict_of(&empty), KJ_CLOCK_UNKNOWN);
	assert_int_equal(kj_clock_verdict_of(&clean), KJ_CLOCK_CLEAN);     /* 5 % */
	assert_int_equal(kj_clock_verdict_of(&partly), KJ_CLOCK_PARTLY);   /* 7.5 % */
	assert_int_equal(kj_clock_verdict_of(&thr), KJ_CLOCK_THROTTLED);   /* 20 % */
	assert_string_equal(kj_clock_verdict_name(kj_clock_verdict_of(&all)), "throttled");
	assert_string_equal(kj_clock_verdict_name(KJ_CLOCK_UNKNOWN), "unknown");
	/* opposite states, either way round */
	assert_int_equal(kj_clock_mismatch(&thr, &clean), 1);
	assert_int_equal(kj_clock_mismatch(&clean, &all), 1);
	/* alike, or only partly apart */
	assert_int_equal(kj_clock_mismatch(&thr, &all), 0);
	assert_int_equal(kj_clock_mismatch(&clean, &clean), 0);
	assert_int_equal(kj_clock_mismatch(&partly, &clean), 0);
	assert_int_equal(kj_clock_mismatch(&thr, &partly), 0);
	/* both capped, to clocks 13 % apart (a duty-cycled program at 1980 MHz, its replays run flat
	 * out at 1724 MHz): apart; 3 % apart: alike; both clean at different clocks: alike */
	struct kj_clock_state p = thr, r = all, c1 = clean, c2 = clean;
	p.sm_clock_median_mhz = 1980, r.sm_clock_median_mhz = 1724;
	assert_int_equal(kj_clock_mismatch(&p, &r), 1);
	r.sm_clock_median_mhz = 1925;
	assert_int_equal(kj_clock_mismatch(&p, &r), 0);
	struct kj_clock_state q = partly;
	q.sm_clock_median_mhz = 1600;
	assert_int_equal(kj_clock_mismatch(&q, &r), 1); /* partly capped is capped */
	c1.sm_clock_median_mhz = 1980, c2.sm_clock_median_mhz = 1500;
	assert_int_equal(kj_clock_mismatch(&c1, &c2), 0);
	/* either side unknown */
	assert_int_equal(kj_clock_mismatch(&thr, &none), -1);
	assert_int_equal(kj_clock_mismatch(&empty, &clean), -1);
}

static void test_windows(void **state)
{
	(void)state;
	struct kj_clock_window w[] = {
	    {1, 1980, 1965, 1980, 0x1},
	    {2, 1755, 1600, 1980, 0x5},
	    {3, 1900, 1890, 1910, -1}, /* reasons not read */
	    {4, -1, -1, -1, 0x0},      /* clock not read */
	};
	struct kj_clock_state s;
	kj_clock_state_of_windows(w, 4, &s);
	assert_int_equal(s.recorded, 1);
	assert_int_equal(s.readings, 3);
	assert_int_equal(s.throttled, 1);
	assert_int_equal(s.reasons, 0x5);
	assert_int_equal(s.clock_readings, 3);
	assert_true(s.sm_clock_median_mhz == 1900);
	assert_int_equal(s.sm_clock_min_mhz, 1600);
	assert_int_equal(s.sm_clock_max_mhz, 1980);
	kj_clock_state_of_windows(NULL, 0, &s);
	assert_int_equal(s.recorded, 1);
	assert_int_equal(s.readings, 0);
	assert_true(s.sm_clock_median_mhz < 0);
	assert_int_equal(kj_clock_verdict_of(&s), KJ_CLOCK_UNKNOWN);
}

static void exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err);
}

/* A run of this kjoule: slow samples (every 20th) of two devices, device 1 capped from t = 1 s. */
static void test_program_reader(void **state)
{
	(void)state;
	char path[256];
	sqlite3 *db = NULL;
	struct kj_clock_state s;
	snprintf(path, sizeof(path), "%s/prog.kjdb", dir);
	assert_int_equal(kj_db_create(path, &db), 0);
	exec(db, "INSERT INTO device(id, uuid) VALUES(1, 'GPU-a'), (2, 'GPU-b'); BEGIN");
	for (int i = 0; i < 400; i++) {
		char sql[256];
		long long t = i * 5000000LL;
		if (i % 20) /* a power read: no clock state */
			snprintf(sql, sizeof(sql), "INSERT INTO power_sample(device_id, t_ns, power_mw) VALUES(1, %lld, 300000)", t);
		else
			snprintf(sql, sizeof(sql), "INSERT INTO power_sample(device_id, t_ns, power_mw, sm_clock_mhz,"
				 " throttle_reasons) VALUES(1, %lld, 700000, %d, %d), (2, %lld, 100000, 1980, 1)",
				 t, t >= 1000000000LL ? 1600 : 1980, t >= 1000000000LL ? 0x4 : 0x0, t);
		exec(db, sql);
	}
	exec(db, "COMMIT");
	/* device 1 over [0.5 s, 1.5 s]: slow samples at 0.5, 0.6, ... 1.5 s: 11, 6 of them capped */
	assert_int_equal(kj_clock_state_program(db, 1, 500000000LL, 1500000000LL, &s), 0);
	assert_int_equal(s.recorded, 1);
	assert_int_equal(s.readings, 11);
	assert_int_equal(s.throttled, 6);
	assert_int_equal(s.reasons, 0x4);
	assert_int_equal(s.clock_readings, 11);
	assert_true(s.sm_clock_median_mhz == 1600);
	assert_int_equal(s.sm_clock_min_mhz, 1600);
	assert_int_equal(s.sm_clock_max_mhz, 1980);
	assert_int_equal(kj_clock_verdict_of(&s), KJ_CLOCK_THROTTLED);
	/* every device: device 2's idle readings join (benign) */
	assert_int_equal(kj_clock_state_program(db, -1, 500000000LL, 1500000000LL, &s), 0);
	assert_int_equal(s.readings, 22);
	assert_int_equal(s.throttled, 6);
	assert_int_equal(s.reasons, 0x5);
	/* before the cap: clean */
	assert_int_equal(kj_clock_state_program(db, 1, 0, 900000000LL, &s), 0);
	assert_int_equal(kj_clock_verdict_of(&s), KJ_CLOCK_CLEAN);
	/* a window between two slow samples: no reading, unknown (not clean) */
	assert_int_equal(kj_clock_state_program(db, 1, 510000000LL, 590000000LL, &s), 0);
	assert_int_equal(s.readings, 0);
	assert_int_equal(kj_clock_verdict_of(&s), KJ_CLOCK_UNKNOWN);
	kj_db_close(db);
}

static void test_replay_reader(void **state)
{
	(void)state;
	char path[256];
	sqlite3 *db = NULL;
	struct kj_clock_state s;
	struct kj_clock_window *w = NULL;
	size_t n = 0;
	int recorded = -1;
	snprintf(path, sizeof(path), "%s/replay.kjdb", dir);
	assert_int_equal(kj_db_create(path, &db), 0);
	exec(db, "INSERT INTO replay_energy(unique_id, energy_mj_per_launch, sm_clock_mean_mhz, sm_clock_min_mhz,"
		 " sm_clock_max_mhz, throttle_reasons) VALUES(7, 1.0, 1755.5, 1600, 1980, 5), (3, 2.0, 1980, 1980, 1980, 0),"
		 " (9, 3.0, NULL, NULL, NULL, NULL), (4, NULL, 1980, 1980, 1980, 4)");
	exec(db, "INSERT INTO replay_sequence(iteration, mode, runs, energy_mj, sm_clock_mean_mhz, throttle_reasons)"
		 " VALUES(1, 'eager', 5, NULL, NULL, NULL), (1, 'graph', 5, 9.0, 1980, 0)");
	assert_int_equal(kj_clock_replay_windows(db, KJ_CLOCK_REPLAY_KERNELS, &w, &n, &recorded), 0);
	assert_int_equal(recorded, 1);
	assert_int_equal(n, 3); /* the row without an energy is no window */
	assert_int_equal(w[0].id, 3);
	assert_int_equal(w[1].id, 7);
	assert_true(w[1].sm_clock_mean_mhz == 1755.5);
	assert_int_equal(w[1].reasons, 5);
	assert_int_equal(w[2].reasons, -1);
	assert_true(w[2].sm_clock_mean_mhz < 0);
	free(w);
	assert_int_equal(kj_clock_state_replays(db, KJ_CLOCK_REPLAY_KERNELS, &s), 0);
	assert_int_equal(s.readings, 2);
	assert_int_equal(s.throttled, 1);
	assert_int_equal(kj_clock_state_replays(db, KJ_CLOCK_REPLAY_SEQUENCE, &s), 0);
	assert_int_equal(s.recorded, 1);
	assert_int_equal(s.readings, 1);
	assert_int_equal(s.throttled, 0);
	kj_db_close(db);

	/* tables of an older kjoule, without the clock columns: not recorded, nothing read */
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	exec(db, "CREATE TABLE replay_energy(unique_id INTEGER PRIMARY KEY, energy_mj_per_launch REAL);"
		 "INSERT INTO replay_energy VALUES(1, 1.0);"
		 "CREATE TABLE power_sample(id INTEGER PRIMARY KEY, device_id INTEGER, t_ns INTEGER);");
	assert_int_equal(kj_clock_replay_windows(db, KJ_CLOCK_REPLAY_KERNELS, &w, &n, &recorded), 0);
	assert_int_equal(recorded, 0);
	assert_int_equal(n, 0);
	assert_null(w);
	assert_int_equal(kj_clock_state_replays(db, KJ_CLOCK_REPLAY_KERNELS, &s), 0);
	assert_int_equal(s.recorded, 0);
	assert_int_equal(kj_clock_verdict_of(&s), KJ_CLOCK_UNKNOWN);
	/* no replay_sequence table at all */
	assert_int_equal(kj_clock_state_replays(db, KJ_CLOCK_REPLAY_SEQUENCE, &s), 0);
	assert_int_equal(s.recorded, 0);
	assert_int_equal(kj_clock_state_program(db, -1, 0, 1, &s), 0);
	assert_int_equal(s.recorded, 0);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classify),
	    cmocka_unit_test(test_verdict_and_mismatch),
	    cmocka_unit_test(test_windows),
	    cmocka_unit_test(test_program_reader),
	    cmocka_unit_test(test_replay_reader),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
