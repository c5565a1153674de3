/* Unit tests that write files include this once: `dir`, a fresh directory made by tmpdir_setup()
 * and removed with everything in it by tmpdir_teardown(), the group setup and teardown given to
 * cmocka_run_group_tests(). */
#ifndef KJ_TEST_TMPDIR_H
#define KJ_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char dir[] = "/tmp/kjtest_XXXXXX";

static inline int tmpdir_setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static inline int tmpdir_teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
