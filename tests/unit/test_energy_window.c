/* An energy window off the pace of the kernel's timed launches is told apart from one on pace
 * (kj_energy_window.h), with the figures seen on H200 replays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "kj_energy_window.h"

static void slow_window_is_off(void **state)
{
	(void)state;
	double r = 0;
	/* a cooperative solver kernel: 194.7 us a launch in its window, 110.4 us timed */
	assert_true(kj_energy_window_off_pace(194.7e3, 110.4e3, &r));
	assert_true(fabs(r - 194.7 / 110.4) < 1e-9);
	assert_true(kj_energy_window_off_pace(244e3, 144.7e3, NULL));
	/* far faster than timed: not the kernel's work either */
	assert_true(kj_energy_window_off_pace(50e3, 110e3, NULL));
}

static void on_pace_windows_pass(void **state)
{
	(void)state;
	double r = 0;
	assert_false(kj_energy_window_off_pace(111e3, 110.4e3, &r));
	assert_true(r > 1 && r < 1.01);
	/* a short kernel: the graph's launch gap is allowed (21 us timed, 25.5 in the window) */
	assert_false(kj_energy_window_off_pace(25.5e3, 20.6e3, NULL));
	assert_false(kj_energy_window_off_pace(4.5e3, 2.4e3, NULL));
	/* just inside the bound */
	assert_false(kj_energy_window_off_pace(1.3 * 100e3 + 1999, 100e3, NULL));
	assert_true(kj_energy_window_off_pace(1.3 * 100e3 + 2001, 100e3, NULL));
}

static void unknown_figures_are_not_off(void **state)
{
	(void)state;
	double r = 0;
	assert_false(kj_energy_window_off_pace(-1, 110e3, &r));
	assert_true(r == -1);
	assert_false(kj_energy_window_off_pace(200e3, 0, &r));
	assert_true(r == -1);
	assert_false(kj_energy_window_off_pace(NAN, 110e3, NULL));
	assert_false(kj_energy_window_off_pace(200e3, INFINITY, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slow_window_is_off),
		cmocka_unit_test(on_pace_windows_pass),
		cmocka_unit_test(unknown_figures_are_not_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
